using PlayHouse.Simulation;

namespace PlayHouse.Properties.Tests.Machinery;

/// <summary>
/// DELIBERATELY FLAWED. The simulated clock's timer (as <see cref="SimTimeProvider"/> builds it: each arming queues a
/// world event at the due instant, and a re-arm leaves the old event queued to be recognised as stale when it comes
/// up) with the stale-event check reduced to the due instant (the timer keeps no armed flag): an event whose instant
/// equals the timer's last due time fires it, armed or not. A timer cancelled (disposed, or changed to an infinite due time) still fires at the due
/// time it had. Only the timer model test uses it, to show that the model catches it.
/// </summary>
internal sealed class DueInstantOnlyTimeProvider(SimWorld world) : TimeProvider
{
    public override long TimestampFrequency => TimeSpan.TicksPerSecond;

    public override long GetTimestamp() => world.NowTicks;

    public override ITimer CreateTimer(TimerCallback callback, object? state, TimeSpan dueTime, TimeSpan period)
    {
        var timer = new Timer(world, callback, state);
        timer.Change(dueTime, period);
        return timer;
    }

    private sealed class Timer(SimWorld world, TimerCallback callback, object? state) : ITimer, IThreadPoolWorkItem
    {
        private long _dueTicks = -1;
        private long _periodTicks;
        private bool _disposed;

        public bool Change(TimeSpan dueTime, TimeSpan period)
        {
            if (_disposed)
            {
                return false;
            }

            _periodTicks = period == Timeout.InfiniteTimeSpan ? 0 : period.Ticks;
            if (dueTime != Timeout.InfiniteTimeSpan)
            {
                Arm(world.NowTicks + dueTime.Ticks);
            }

            return true;
        }

        public void Execute()
        {
            // The flaw: a stale event is told only by its instant; whether the timer is still armed is not asked.
            if (world.NowTicks != _dueTicks)
            {
                return;
            }

            if (_periodTicks > 0)
            {
                Arm(world.NowTicks + _periodTicks);
            }

            callback(state);
        }

        public void Dispose() => _disposed = true;

        public ValueTask DisposeAsync()
        {
            Dispose();
            return ValueTask.CompletedTask;
        }

        private void Arm(long dueTicks)
        {
            _dueTicks = Math.Max(dueTicks, world.NowTicks);
            world.ScheduleAt(_dueTicks, this);
        }
    }
}

/// <summary>
/// DELIBERATELY FLAWED. The simulated clock's timer with a "saving": a Change of a timer that is already armed keeps the
/// event it has queued (and so its old due time) and only takes the new period, instead of arming afresh. A re-arm
/// while armed fires at the old due time. Only the timer model test uses it, to show that the model catches it.
/// </summary>
internal sealed class KeepsOldDueTimeProvider(SimWorld world) : TimeProvider
{
    public override long TimestampFrequency => TimeSpan.TicksPerSecond;

    public override long GetTimestamp() => world.NowTicks;

    public override ITimer CreateTimer(TimerCallback callback, object? state, TimeSpan dueTime, TimeSpan period)
    {
        var timer = new Timer(world, callback, state);
        timer.Change(dueTime, period);
        return timer;
    }

    private sealed class Timer(SimWorld world, TimerCallback callback, object? state) : ITimer, IThreadPoolWorkItem
    {
        private long _dueTicks;
        private long _periodTicks;
        private bool _armed;
        private bool _disposed;

        public bool Change(TimeSpan dueTime, TimeSpan period)
        {
            if (_disposed)
            {
                return false;
            }

            _periodTicks = period == Timeout.InfiniteTimeSpan ? 0 : period.Ticks;

            // The flaw: an armed timer with a finite due time is left on the event it already has.
            if (_armed && dueTime != Timeout.InfiniteTimeSpan)
            {
                return true;
            }

            _armed = false;
            if (dueTime != Timeout.InfiniteTimeSpan)
            {
                Arm(world.NowTicks + dueTime.Ticks);
            }

            return true;
        }

        public void Execute()
        {
            if (!_armed || _disposed || world.NowTicks != _dueTicks)
            {
                return;
            }

            _armed = false;
            if (_periodTicks > 0)
            {
                Arm(world.NowTicks + _periodTicks);
            }

            callback(state);
        }

        public void Dispose()
        {
            _armed = false;
            _disposed = true;
        }

        public ValueTask DisposeAsync()
        {
            Dispose();
            return ValueTask.CompletedTask;
        }

        private void Arm(long dueTicks)
        {
            _dueTicks = Math.Max(dueTicks, world.NowTicks);
            _armed = true;
            world.ScheduleAt(_dueTicks, this);
        }
    }
}
