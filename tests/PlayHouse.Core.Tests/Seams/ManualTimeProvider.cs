namespace PlayHouse.Core.Tests.Seams;

/// <summary>
/// The runtime tests' virtual clock: time moves only through <see cref="Advance"/>, <see cref="AdvanceTo"/> and
/// <see cref="TryFireNext"/>, and timers fire in (due time, creation order) on the caller's thread, each with the
/// clock at its own due time. Nothing reads the wall clock.
/// </summary>
/// <remarks>
/// <para>
/// Every other test uses Microsoft.Extensions.TimeProvider.Testing's <c>FakeTimeProvider</c>. It does not fit the
/// runtime harness, which fires one timer, runs the work that timer queued, and only then fires the next
/// (<see cref="TryFireNext"/>), so that the queued work sees its timer's due time (a repeat timer's ticks are
/// stamped 0, 100, 200 ms, not all at the end of the advance) and a timer armed by that work can still fall due
/// within the same advance. <c>FakeTimeProvider</c> 10.11.0 moves its clock to the end of an advance before it
/// fires the timers that fell due on the way, has no next-due time to step to, and fires a zero-due timer inside
/// <c>CreateTimer</c>, on the stack of the stage turn that arms it. <c>SeamTests</c> pins those behaviours, so a
/// version that changes them shows up there.
/// </para>
/// <para>Not thread-safe; the owning test is the only caller.</para>
/// </remarks>
internal sealed class ManualTimeProvider : TimeProvider
{
    private readonly PriorityQueue<ManualTimer, (long DueTicks, long Sequence)> _timers = new();
    private readonly DateTimeOffset _epoch;
    private long _nowTicks;
    private long _nextSequence;

    public ManualTimeProvider()
        : this(new DateTimeOffset(2026, 1, 1, 0, 0, 0, TimeSpan.Zero))
    {
    }

    public ManualTimeProvider(DateTimeOffset epoch) => _epoch = epoch;

    /// <summary>Virtual time elapsed since the epoch, in ticks of 100 ns.</summary>
    public long NowTicks => _nowTicks;

    public override long TimestampFrequency => TimeSpan.TicksPerSecond;

    public override long GetTimestamp() => _nowTicks;

    public override DateTimeOffset GetUtcNow() => _epoch.AddTicks(_nowTicks);

    public override TimeZoneInfo LocalTimeZone => TimeZoneInfo.Utc;

    /// <summary>The due time of the earliest armed timer, or null when none is armed.</summary>
    public long? NextDueTicks
    {
        get
        {
            DiscardCancelledHeads();
            return _timers.TryPeek(out _, out var key) ? key.DueTicks : null;
        }
    }

    /// <summary>Timers currently armed.</summary>
    public int ArmedTimerCount { get; private set; }

    public override ITimer CreateTimer(TimerCallback callback, object? state, TimeSpan dueTime, TimeSpan period)
    {
        ArgumentNullException.ThrowIfNull(callback);
        var timer = new ManualTimer(this, callback, state);
        timer.Change(dueTime, period);
        return timer;
    }

    /// <summary>Moves time forward, firing every timer that falls due on the way, in order.</summary>
    public void Advance(TimeSpan delta)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(delta, TimeSpan.Zero);
        AdvanceTo(_nowTicks + delta.Ticks);
    }

    /// <summary>Moves time to an absolute virtual instant, firing due timers in order.</summary>
    public void AdvanceTo(long targetTicks)
    {
        if (targetTicks < _nowTicks)
        {
            throw new ArgumentOutOfRangeException(nameof(targetTicks), $"Time cannot go backwards: now={_nowTicks} target={targetTicks}.");
        }

        while (TryFireNext(targetTicks))
        {
        }

        _nowTicks = targetTicks;
    }

    /// <summary>Fires the earliest timer due at or before <paramref name="limitTicks"/>, moving time to its due instant.</summary>
    public bool TryFireNext(long limitTicks)
    {
        DiscardCancelledHeads();
        if (!_timers.TryPeek(out var timer, out var key) || key.DueTicks > limitTicks)
        {
            return false;
        }

        _timers.Dequeue();
        ArmedTimerCount--;
        // Time never goes back: a timer armed in the past fires "now".
        _nowTicks = Math.Max(_nowTicks, key.DueTicks);
        timer.Fire(key.Sequence);
        return true;
    }

    private void DiscardCancelledHeads()
    {
        while (_timers.TryPeek(out var timer, out var key) && timer.ArmedSequence != key.Sequence)
        {
            _timers.Dequeue();
        }
    }

    private void Arm(ManualTimer timer, long dueTicks)
    {
        var sequence = ++_nextSequence;
        timer.ArmedSequence = sequence;
        ArmedTimerCount++;
        _timers.Enqueue(timer, (Math.Max(dueTicks, _nowTicks), sequence));
    }

    private void Disarm(ManualTimer timer)
    {
        if (timer.ArmedSequence != 0)
        {
            // The heap entry stays and is skipped lazily; the sequence mismatch marks it dead.
            timer.ArmedSequence = 0;
            ArmedTimerCount--;
        }
    }

    private sealed class ManualTimer(ManualTimeProvider owner, TimerCallback callback, object? state) : ITimer
    {
        private long _periodTicks;
        private bool _disposed;

        public long ArmedSequence { get; set; }

        public bool Change(TimeSpan dueTime, TimeSpan period)
        {
            if (_disposed)
            {
                return false;
            }

            owner.Disarm(this);
            _periodTicks = period == Timeout.InfiniteTimeSpan ? 0 : period.Ticks;
            if (dueTime != Timeout.InfiniteTimeSpan)
            {
                ArgumentOutOfRangeException.ThrowIfLessThan(dueTime, TimeSpan.Zero);
                owner.Arm(this, owner._nowTicks + dueTime.Ticks);
            }

            return true;
        }

        public void Fire(long sequence)
        {
            if (sequence != ArmedSequence)
            {
                return;
            }

            ArmedSequence = 0;
            if (_periodTicks > 0)
            {
                owner.Arm(this, owner._nowTicks + _periodTicks);
            }

            callback(state);
        }

        public void Dispose()
        {
            owner.Disarm(this);
            _disposed = true;
        }

        public ValueTask DisposeAsync()
        {
            Dispose();
            return ValueTask.CompletedTask;
        }
    }
}
