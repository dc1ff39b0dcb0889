namespace PlayHouse.Core.Runtime;

/// <summary>
/// A stage's housekeeping: disconnected actors expire (<see cref="ServerOptions.DisconnectedActorExpiry"/>) and an empty
/// stage closes once idle (<see cref="ServerOptions.IdleStageCloseAfter"/>), or early when the server's cap on empty
/// stages chooses it; all through one timer on the node's TimeProvider, armed for the earliest deadline, whose tick
/// posts one housekeeping message at a time into the stage's mailbox.
/// </summary>
/// <remarks>
/// Invariant: the timer is armed for the earliest deadline held or earlier (a later one needs no change: the
/// housekeeping turn re-arms for what is due next), and at most one housekeeping message is queued at a time. The
/// stage is in the server's list of empty stages only while it is empty.
/// Threading: called from the stage's turns, except <see cref="RequestEarlyClose"/> and the timer's tick (any thread),
/// which share only the posted and early-close flags with the turn, under the stage's lock.
/// </remarks>
internal sealed class StageHousekeeping
{
    private readonly StageHost _stage;
    private readonly long _expiryDelta;
    private readonly long _idleDelta;
    private IDisconnectedActorTable? _disconnected;
    private ITimer? _timer;
    private long _dueTimestamp = long.MaxValue;
    private bool _posted;
    private bool _empty;
    private EmptyStage? _emptyEntry;
    private bool _closeEarly;
    private long _emptySinceTimestamp;

    public StageHousekeeping(StageHost stage)
    {
        _stage = stage;
        _expiryDelta = ToDelta(stage.Options.DisconnectedActorExpiry, stage.Time);
        _idleDelta = ToDelta(stage.Options.IdleStageCloseAfter, stage.Time);
    }

    /// <summary>True when the stage was created empty and its idle close waits for its mailbox to drain (checked after each message).</summary>
    public bool IdleArmPending { get; private set; }

    /// <summary>The stage was created with no actor: it counts as empty from now, and its idle close is armed once its queue drained.</summary>
    public void OnCreatedEmpty()
    {
        _empty = true;
        _emptySinceTimestamp = _stage.Time.GetTimestamp();
        IdleArmPending = true;
    }

    /// <summary>An actor joined: the stage is no longer empty and leaves the server's list of empty stages.</summary>
    public void OnNoLongerEmpty()
    {
        _empty = false;
        UnlistEmpty();
    }

    /// <summary>The stage handled the disconnect of <paramref name="actor"/>: it expires after the configured time unless its account reconnects.</summary>
    public void BeginExpiry(ActorHost actor)
    {
        _stage.AssertInTurn(nameof(BeginExpiry));
        var server = _stage.Server;
        actor.DisconnectGeneration++;
        server.EndWait(actor);
        var wait = server.WaitingActors.Begin(_stage, actor, actor.DisconnectGeneration);
        actor.Wait = wait;
        if (_expiryDelta < 0)
        {
            return;
        }

        var deadline = SaturatingAdd(_stage.Time.GetTimestamp(), _expiryDelta);
        _disconnected ??= server.Parts.DisconnectedActors(_stage);
        _disconnected.Add(new DisconnectedActor(wait, deadline));
        Arm(deadline);
    }

    /// <summary>The stage has no actor left: it closes once it has been idle long enough.</summary>
    public void BecameEmpty()
    {
        IdleArmPending = false;
        _empty = true;
        _emptySinceTimestamp = _stage.Time.GetTimestamp();
        _stage.ReleaseMailboxStorageIfEmpty();
        ListEmpty();
        if (_idleDelta >= 0)
        {
            Arm(SaturatingAdd(_emptySinceTimestamp, _idleDelta));
        }
    }

    /// <summary>After a message: a stage created empty arms its idle close once nothing is queued any more and it is still empty.</summary>
    public void ArmIdleCloseOnceDrained()
    {
        if (!_empty)
        {
            IdleArmPending = false;
            return;
        }

        if (!_stage.IsMailboxEmpty())
        {
            return;
        }

        IdleArmPending = false;
        ListEmpty();
        if (_idleDelta >= 0)
        {
            Arm(SaturatingAdd(_emptySinceTimestamp, _idleDelta));
        }
    }

    /// <summary>Leaves the server's list of empty stages (an actor joined, or the stage closes).</summary>
    public void UnlistEmpty()
    {
        if (_emptyEntry is { } entry)
        {
            _emptyEntry = null;
            _stage.Server.EmptyStages.End(entry);
        }
    }

    /// <summary>The stage closes: its timer stops for good.</summary>
    public void StopTimer() => _timer?.Dispose();

    /// <summary>
    /// The server's cap on empty stages chose this one (any thread): its housekeeping closes it now if it is still empty
    /// and idle, as its idle close would later.
    /// </summary>
    public void RequestEarlyClose()
    {
        using (NodeLock.Enter(_stage.Gate))
        {
            if (_stage.IsClosedUnderGate)
            {
                return;
            }

            _closeEarly = true;
        }

        OnDue();
    }

    /// <summary>Runs the housekeeping message: destroys the actors whose expiry came, closes the stage if idle, re-arms.</summary>
    public async ValueTask RunHousekeeping()
    {
        _stage.AssertInTurn(nameof(RunHousekeeping));
        bool early;
        using (NodeLock.Enter(_stage.Gate))
        {
            _posted = false;
            early = _closeEarly;
            _closeEarly = false;
        }

        _dueTimestamp = long.MaxValue;
        var now = _stage.Time.GetTimestamp();
        if (_disconnected is not null)
        {
            while (_disconnected.TryTakeDue(now, out var entry))
            {
                var actor = entry.Actor;
                if (actor is null || !actor.IsJoined || actor.Session is not null || actor.DisconnectGeneration != entry.Generation)
                {
                    // The wait ended: the account reconnected, the actor left or was evicted, or it disconnected again
                    // (a later entry times that).
                    continue;
                }

                _stage.Counters.AddDisconnectedActorExpired();
                await _stage.ActorDirectory.DestroyWaitingActor(actor, StageWorkKind.Housekeeping);
            }
        }

        var idleTimeUp = _idleDelta >= 0 && now - _emptySinceTimestamp >= _idleDelta;
        if (_empty && (idleTimeUp || early))
        {
            if (_stage.Timers.IsIdle && _stage.OffStage.InFlight == 0 && _stage.Server.TryRetireIdleStage(_stage))
            {
                if (idleTimeUp)
                {
                    _stage.Counters.AddIdleStageClosed();
                }
                else
                {
                    _stage.Counters.AddEmptyStageClosedAtCap();
                }

                await _stage.Lifecycle.DestroyStage();
                return;
            }

            // Timers, a game loop, work in flight or queued messages: the stage is not idle, so the span starts again
            // (an early close asked by the cap just does not happen; the stage has left the list of empty stages).
            if (idleTimeUp)
            {
                _emptySinceTimestamp = now;
            }
        }

        var next = _disconnected?.NextDeadlineTimestamp ?? long.MaxValue;
        if (_empty && _idleDelta >= 0)
        {
            next = Math.Min(next, SaturatingAdd(_emptySinceTimestamp, _idleDelta));
        }

        if (next != long.MaxValue)
        {
            Arm(next);
        }
    }

    /// <summary>Enters the server's list of empty stages; the ones empty longest past its cap are asked to close early.</summary>
    private void ListEmpty()
    {
        if (!_empty)
        {
            throw new InvalidOperationException($"Stage {_stage.StageId} on {_stage.NodeId} entered the list of empty stages while it holds actors.");
        }

        if (_emptyEntry is not null)
        {
            return;
        }

        _emptyEntry = new EmptyStage(_stage);
        if (_stage.Server.EmptyStages.Add(_emptyEntry) is { } evicted)
        {
            foreach (var oldest in evicted)
            {
                oldest.Stage.Housekeeping.RequestEarlyClose();
            }
        }
    }

    /// <summary>Arms the timer for <paramref name="dueTimestamp"/> unless it is already armed for that or earlier.</summary>
    private void Arm(long dueTimestamp)
    {
        // Only ever brought forward: the housekeeping turn re-arms for whatever is due next, so a later deadline needs no
        // timer change (each change is a queued event in simulation).
        if (dueTimestamp >= _dueTimestamp)
        {
            return;
        }

        _dueTimestamp = dueTimestamp;
        var time = _stage.Time;
        var now = time.GetTimestamp();
        var delay = dueTimestamp <= now ? TimeSpan.Zero : time.GetElapsedTime(now, dueTimestamp);
        _timer ??= time.CreateTimer(static s => ((StageHousekeeping)s!).OnDue(), this, Timeout.InfiniteTimeSpan, Timeout.InfiniteTimeSpan);
        _timer.Change(delay, Timeout.InfiniteTimeSpan);
    }

    /// <summary>The timer fired (on the clock's thread): one housekeeping message at a time goes into the mailbox.</summary>
    private void OnDue()
    {
        using (NodeLock.Enter(_stage.Gate))
        {
            if (_stage.IsClosedUnderGate || _posted)
            {
                return;
            }

            _posted = true;
        }

        _stage.Post(new StageMessage { Kind = StageWorkKind.Housekeeping });
    }

    /// <summary>A span as a delta of <paramref name="time"/>'s timestamps; -1 for none (null), saturated far beyond any run.</summary>
    private static long ToDelta(TimeSpan? span, TimeProvider time)
    {
        if (span is not { } value)
        {
            return -1;
        }

        try
        {
            return TimestampSpan.ToDelta(value, time.TimestampFrequency);
        }
        catch (OverflowException)
        {
            return long.MaxValue / 4;
        }
    }

    private static long SaturatingAdd(long timestamp, long delta) => timestamp > long.MaxValue - delta ? long.MaxValue - 1 : timestamp + delta;
}
