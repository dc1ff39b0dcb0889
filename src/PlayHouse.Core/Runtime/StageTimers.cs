namespace PlayHouse.Core.Runtime;

/// <summary>
/// A stage's timers and its game loop: both are tick sources whose clock timers post ticks into the stage's mailbox
/// (through the node's tick admission, which coalesces ticks past a cap per source), and whose callbacks run in the
/// stage's turns. Timer ids are scoped to the stage (B13); the table that holds them is a replaceable part.
/// </summary>
/// <remarks>
/// Invariant: a timer is in the table from its start until it is cancelled (by the stage, by its last count, or by the
/// stage's close), and a tick runs its callback only while its source is active; a source's pending ticks count the
/// ticks queued for it, one up per post and one down per run or discard.
/// Threading: called from the stage's turns, except <see cref="PostTick"/> (the clock's thread), which shares the
/// pending-tick counts with the turn under the stage's lock.
/// </remarks>
internal sealed class StageTimers
{
    private readonly StageHost _stage;
    private readonly IStageTimerTable _table;
    private long _nextTimerId;
    private GameLoop? _gameLoop;

    public StageTimers(StageHost stage)
    {
        _stage = stage;
        _table = stage.Server.Parts.StageTimers(stage);
    }

    public bool IsGameLoopRunning => _gameLoop is not null;

    /// <summary>True when no timer is registered and no game loop runs: nothing will tick into the stage.</summary>
    public bool IsIdle => _table.Count == 0 && _gameLoop is null;

    public long AddTimer(TimeSpan initialDelay, TimeSpan period, int count, Action callback)
    {
        ArgumentNullException.ThrowIfNull(callback);
        ArgumentOutOfRangeException.ThrowIfLessThanOrEqual(period, TimeSpan.Zero);
        ArgumentOutOfRangeException.ThrowIfLessThan(initialDelay, TimeSpan.Zero);

        // Timer ids are scoped to this stage: two stages may both own timer 1 (PlayHouse shared one table, B13).
        var id = ++_nextTimerId;
        var timer = new StageTimer(_stage, id, count, callback);
        _table.Add(timer);
        timer.Start(initialDelay, period);
        return id;
    }

    public bool CancelTimer(long timerId)
    {
        if (!_table.Remove(timerId, out var timer))
        {
            return false;
        }

        timer.Cancel();
        return true;
    }

    public bool HasTimer(long timerId) => _table.Contains(timerId);

    public void StartGameLoop(TimeSpan fixedStep, Action<GameLoopStep> callback, int catchUpStepsMax)
    {
        ArgumentNullException.ThrowIfNull(callback);
        ArgumentOutOfRangeException.ThrowIfLessThanOrEqual(fixedStep, TimeSpan.Zero);
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(catchUpStepsMax);
        if (_gameLoop is not null)
        {
            throw new InvalidOperationException($"Stage {_stage.StageId} already runs a game loop; stop it first.");
        }

        _gameLoop = new GameLoop(_stage, fixedStep, catchUpStepsMax, callback);
        _gameLoop.Start();
    }

    public void StopGameLoop()
    {
        _gameLoop?.Stop();
        _gameLoop = null;
    }

    /// <summary>The stage closes: every timer is cancelled and the game loop stops.</summary>
    public void StopAll()
    {
        if (_table.Count > 0)
        {
            var timers = new List<StageTimer>(_table.Count);
            _table.RemoveAll(timers);
            foreach (var timer in timers)
            {
                timer.Cancel();
            }
        }

        StopGameLoop();
    }

    /// <summary>Posts a tick unless the node's tick admission coalesces it (the source already has the maximum of ticks
    /// waiting; then it is counted). Called on the clock's thread.</summary>
    public void PostTick(StageWorkKind kind, ITickSource source)
    {
        int pendingTicks;
        using (NodeLock.Enter(_stage.Gate))
        {
            if (_stage.IsClosedUnderGate || !source.IsActive)
            {
                return;
            }

            if (!_stage.Server.TickAdmission.Admit(source))
            {
                _stage.Counters.AddTimerTickCoalesced();
                return;
            }

            pendingTicks = source.PendingTicks;
        }

        _stage.Server.Observer.OnTickPosted(_stage.NodeId, _stage.StageId, pendingTicks);
        _stage.Post(new StageMessage { Kind = kind, State = source });
    }

    /// <summary>Runs a timer's tick: its callback, unless it was cancelled meanwhile; a count timer's last tick cancels it.</summary>
    public void RunTimer(StageTimer timer)
    {
        TakePendingTick(timer);
        if (!timer.IsActive)
        {
            return;
        }

        timer.Callback();
        if (timer.CountRemaining > 0 && --timer.CountRemaining == 0)
        {
            CancelTimer(timer.Id);
        }
    }

    /// <summary>Runs a game-loop tick: the steps due, at most the catch-up cap; the steps dropped past it are counted.</summary>
    public void RunGameLoop(GameLoop loop)
    {
        TakePendingTick(loop);
        if (!loop.IsActive)
        {
            return;
        }

        var dropped = loop.RunDueSteps();
        if (dropped > 0)
        {
            _stage.Counters.AddGameLoopStepsDropped(dropped);
        }
    }

    private void TakePendingTick(ITickSource source)
    {
        _stage.AssertInTurn(nameof(TakePendingTick));
        using (NodeLock.Enter(_stage.Gate))
        {
            if (source.PendingTicks <= 0)
            {
                throw new InvalidOperationException($"Stage {_stage.StageId} on {_stage.NodeId} ran a tick that was never posted.");
            }

            source.PendingTicks--;
        }
    }
}
