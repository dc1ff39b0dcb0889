namespace PlayHouse.Core.Runtime;

/// <summary>Something that posts ticks into a stage (a timer or a game loop).</summary>
internal interface ITickSource
{
    int PendingTicks { get; set; }

    bool IsActive { get; }
}

/// <summary>A per-stage timer: the clock's timer posts ticks; the callback runs in a stage turn.</summary>
internal sealed class StageTimer(StageHost stage, long id, int count, Action callback) : ITickSource
{
    private ITimer? _timer;
    private volatile bool _active = true;

    public long Id { get; } = id;

    /// <summary>The stage that added the timer.</summary>
    public StageHost Stage => stage;

    public Action Callback { get; } = callback;

    /// <summary>Callbacks left for a count timer (0 for a repeat timer). Ticks that were coalesced do not count.</summary>
    public int CountRemaining { get; set; } = count;

    public int PendingTicks { get; set; }

    public bool IsActive => _active;

    public void Start(TimeSpan initialDelay, TimeSpan period)
    {
        _timer = stage.Time.CreateTimer(static s => ((StageTimer)s!).Fire(), this, initialDelay, period);
    }

    public void Cancel()
    {
        _active = false;
        _timer?.Dispose();
    }

    public void OnTickDiscarded() => PendingTicks = Math.Max(0, PendingTicks - 1);

    private void Fire() => stage.Timers.PostTick(StageWorkKind.Timer, this);
}

/// <summary>
/// A fixed-timestep loop. The clock ticks every step; each tick runs as many whole steps as real (or virtual)
/// time has accumulated, at most the catch-up cap; steps beyond the cap are dropped and counted.
/// </summary>
internal sealed class GameLoop(StageHost stage, TimeSpan fixedStep, int catchUpStepsMax, Action<GameLoopStep> callback) : ITickSource
{
    private ITimer? _timer;
    private volatile bool _active;
    private long _lastTimestamp;
    private TimeSpan _accumulated;
    private TimeSpan _total;
    private long _stepIndex;

    public int PendingTicks { get; set; }

    public bool IsActive => _active;

    public void Start()
    {
        _active = true;
        _lastTimestamp = stage.Time.GetTimestamp();
        _timer = stage.Time.CreateTimer(static s => ((GameLoop)s!).Fire(), this, fixedStep, fixedStep);
    }

    public void Stop()
    {
        _active = false;
        _timer?.Dispose();
    }

    /// <summary>Runs the due steps; returns how many steps were dropped by the catch-up cap.</summary>
    public long RunDueSteps()
    {
        var now = stage.Time.GetTimestamp();
        _accumulated += stage.Time.GetElapsedTime(_lastTimestamp, now);
        _lastTimestamp = now;
        var cap = fixedStep * catchUpStepsMax;
        long dropped = 0;
        if (_accumulated > cap)
        {
            dropped = (_accumulated - cap).Ticks / fixedStep.Ticks;
            _accumulated -= fixedStep * dropped;
        }

        while (_accumulated >= fixedStep && _active)
        {
            _accumulated -= fixedStep;
            _total += fixedStep;
            callback(new GameLoopStep(fixedStep, _total, ++_stepIndex));
        }

        return dropped;
    }

    private void Fire() => stage.Timers.PostTick(StageWorkKind.GameLoop, this);
}
