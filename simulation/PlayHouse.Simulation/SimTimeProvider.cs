namespace PlayHouse.Simulation;

/// <summary>
/// Virtual time for the world: <see cref="GetTimestamp"/> is the world's clock in ticks, and every timer is an
/// event in the world queue at its exact due instant. Nothing sleeps; nothing reads the wall clock.
/// </summary>
/// <remarks>Not thread-safe; used on the simulation thread only.</remarks>
public sealed class SimTimeProvider : TimeProvider
{
    private static readonly DateTimeOffset Epoch = new(2026, 1, 1, 0, 0, 0, TimeSpan.Zero);
    private readonly SimWorld _world;

    internal SimTimeProvider(SimWorld world) => _world = world;

    public override long TimestampFrequency => TimeSpan.TicksPerSecond;

    public override long GetTimestamp() => _world.NowTicks;

    public override DateTimeOffset GetUtcNow() => Epoch.AddTicks(_world.NowTicks);

    public override TimeZoneInfo LocalTimeZone => TimeZoneInfo.Utc;

    /// <summary>Timers created so far (for reports).</summary>
    public long TimersCreated { get; private set; }

    public override ITimer CreateTimer(TimerCallback callback, object? state, TimeSpan dueTime, TimeSpan period)
    {
        ArgumentNullException.ThrowIfNull(callback);
        _world.CheckThread("create a timer");
        TimersCreated++;
        var timer = new SimTimer(_world, callback, state);
        timer.Change(dueTime, period);
        return timer;
    }

    /// <summary>
    /// A timer whose firing is a world event. Re-arming leaves the old event queued; it is recognised as stale
    /// (armed flag or due instant differ) and skipped when it comes up.
    /// </summary>
    private sealed class SimTimer(SimWorld world, TimerCallback callback, object? state) : ITimer, IThreadPoolWorkItem
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

            _armed = false;
            _periodTicks = period == Timeout.InfiniteTimeSpan ? 0 : period.Ticks;
            if (dueTime == Timeout.InfiniteTimeSpan)
            {
                return true;
            }

            ArgumentOutOfRangeException.ThrowIfLessThan(dueTime, TimeSpan.Zero);
            Arm(world.NowTicks + dueTime.Ticks);
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

/// <summary>
/// The simulation's executor: every stage turn, continuation and off-stage work item is an event on the one
/// simulation thread, queued at the current virtual instant.
/// </summary>
public sealed class SimExecutor : Core.Seams.IExecutor
{
    private readonly SimWorld _world;

    internal SimExecutor(SimWorld world) => _world = world;

    /// <summary>Work items scheduled so far.</summary>
    public long Scheduled { get; private set; }

    public void Schedule(IThreadPoolWorkItem workItem)
    {
        ArgumentNullException.ThrowIfNull(workItem);
        if (!_world.CheckThread("schedule a work item"))
        {
            // An escaped continuation is recorded; running it here on a foreign thread would race the world.
            return;
        }

        Scheduled++;

        // The thread is checked above; the world need not read it a second time.
        _world.ScheduleNowChecked(workItem);
    }
}
