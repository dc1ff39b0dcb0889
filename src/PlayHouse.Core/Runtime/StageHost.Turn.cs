using System.Runtime.CompilerServices;

namespace PlayHouse.Core.Runtime;

/// <summary>
/// The stage's turn: the executor runs it whenever the stage has work. It drains the continuations of a suspended
/// handler first, then (unless a handler is suspended) the mailbox, at most <see cref="ServerOptions.TurnMessageBudget"/>
/// messages, each through its handler or, past its deadline, through <see cref="StaleMessageShedding"/>.
/// </summary>
/// <remarks>
/// Invariant: one turn at a time (asserted at its start); within it one handler at a time, from its dispatch to the end
/// of its work, awaits included (<see cref="Finish"/>), and nothing is dequeued meanwhile.
/// Threading: runs on the executor, never concurrently with itself; it takes the stage's lock only to dequeue and to
/// change the flags that posting threads read.
/// </remarks>
internal sealed partial class StageHost
{
    public void Execute()
    {
        // A single-threaded node runs every turn on one thread, where only a nested turn could overlap, and a plain
        // read and write detect that; the interlocked exchange (a full fence per turn) is needed only across threads.
        if (_gate is null)
        {
            if (_executing != 0)
            {
                ThrowConcurrentTurns();
            }

            _executing = 1;
        }
        else if (Interlocked.Exchange(ref _executing, 1) != 0)
        {
            ThrowConcurrentTurns();
        }

        var turnEnd = TurnEnd.Enter();
        try
        {
            RunTurn();
        }
        finally
        {
            // Work the turn left for its end (the sends of the sessions it wrote to) runs after the turn has released
            // the stage, and before the stage is scheduled again.
            TurnEnd.Exit(turnEnd);
        }
    }

    private void RunTurn()
    {
        _turnTimestampRead = false;
        var previous = SynchronizationContext.Current;
        SynchronizationContext.SetSynchronizationContext(_syncContext);
        _callbackDispatch?.OnTurnStarting(this);
        var reschedule = false;
        var released = false;
        try
        {
            var budget = Options.TurnMessageBudget;
            while (true)
            {
                (SendOrPostCallback Callback, object? State) continuation = default;
                var hasContinuation = false;
                var hasMessage = false;
                var stale = false;
                StageMessage message = default;
                using (NodeLock.Enter(_gate))
                {
                    if (_continuations.Count > 0)
                    {
                        continuation = _continuations.Dequeue();
                        hasContinuation = true;
                    }
                    else if (!_suspended && budget > 0 && _mailbox.TryDequeue(out message))
                    {
                        // A message past its deadline is answered here instead of dispatched, so no handler starts for it.
                        stale = StaleMessageShedding.IsStale(message.StaleAtTimestamp, _server.Time);
                        _handlerInProgress = !stale;
                        hasMessage = true;
                        budget--;
                    }
                    else
                    {
                        // Keep the turn flag when work remains past the budget, and hand the executor back for fairness.
                        reschedule = _continuations.Count > 0 || (!_suspended && _mailbox.Count > 0);
                        _scheduled = reschedule;

                        // Release the turn before the lock: once _scheduled is false a post on another thread may start
                        // the next turn at once, and it must not find this one still marked as running (found by the
                        // TCP benchmark, where a post landing in that gap threw on a thread-pool thread).
                        Volatile.Write(ref _executing, 0);
                        released = true;
                        break;
                    }
                }

                if (hasContinuation)
                {
                    RunContinuation(continuation.Callback!, continuation.State);
                }
                else if (stale)
                {
                    StaleMessageShedding.Shed(this, ref message);
                }
                else if (hasMessage)
                {
                    RunMessage(ref message);
                }
            }
        }
        finally
        {
            SynchronizationContext.SetSynchronizationContext(previous);
            if (!released)
            {
                Volatile.Write(ref _executing, 0);
            }
        }

        if (reschedule)
        {
            _server.Executor.Schedule(this);
        }
    }

    // Out of line: the message formatting would otherwise widen Execute's stack frame, zeroed on every turn.
    [MethodImpl(MethodImplOptions.NoInlining)]
    private void ThrowConcurrentTurns() =>
        throw new InvalidOperationException($"Two turns of stage {StageId} on {NodeId} ran at once; the executor broke the one-turn-at-a-time rule.");

    private void RunContinuation(SendOrPostCallback callback, object? state)
    {
        _server.Observer.OnHandlerEntered(NodeId, StageId, _current.Kind, _current.MsgId);
        try
        {
            callback(state);
        }
        catch (Exception ex)
        {
            // A continuation outside any handler's task (an async void) threw; the handler's own exceptions land in its task.
            HandlerFailed(_current.Kind, _current.MsgId, ex);
        }
        finally
        {
            _server.Observer.OnHandlerExited(NodeId, StageId);
        }
    }

    private void RunMessage(ref StageMessage message)
    {
        // Who waits on this handler: read by requests it sends, to extend their await chains (forgotten in Finish).
        // Most messages have no waiter and leave the chains alone.
        if (message.WaiterStageId != 0)
        {
            ChainsForTurn().OnWaitedHandlerStarting(message);
        }

        if (_replyAddressing is not null && message.Reply.IsRequest)
        {
            _replyAddressing.OnRequestDispatched(message.Reply);
        }

        _server.OnHandlerStarted();
        _server.Observer.OnHandlerEntered(NodeId, StageId, message.Kind, message.MsgId);
        ValueTask task;
        try
        {
            task = Dispatch(ref message);
        }
        catch (Exception ex)
        {
            task = ValueTask.FromException(ex);
        }

        if (task.IsCompleted)
        {
            _server.Observer.OnHandlerExited(NodeId, StageId);
            Finish(ref message, task, wasSuspended: false);
            return;
        }

        using (NodeLock.Enter(_gate))
        {
            _suspended = true;
        }

        _completion.OnSuspended(this, ref message);

        _current = message;
        _currentTask = task;

        // The awaiter captures this stage's synchronization context (current during the turn), so the
        // resumption is posted back here as a continuation and never runs on a foreign thread.
        task.GetAwaiter().UnsafeOnCompleted(_onHandlerResumed);
        _server.Observer.OnHandlerExited(NodeId, StageId);
    }

    private void OnHandlerResumed()
    {
        var message = _current;
        var task = _currentTask;
        _current = default;
        _currentTask = default;
        using (NodeLock.Enter(_gate))
        {
            _suspended = false;
        }

        Finish(ref message, task, wasSuspended: true);
    }

    private void Finish(ref StageMessage message, ValueTask task, bool wasSuspended)
    {
        try
        {
            task.GetAwaiter().GetResult();
        }
        catch (Exception ex)
        {
            HandlerFailed(message.Kind, message.MsgId, ex);
            if (message.Reply.IsRequest)
            {
                _server.TryReplyError(message.Reply, ErrorCodes.HandlerFailed, StageId);
            }
        }

        // Only this turn writes the flag; the cycle checks on other threads read it under the lock with the list of
        // awaited requests, which this write leaves alone, so a release write serves them as the lock did (one lock
        // fewer per message).
        Volatile.Write(ref _handlerInProgress, false);
        _chains?.OnHandlerFinished();
        _server.Observer.OnMessageCompleted(NodeId, StageId, message.Kind, message.MsgId);
        if (Housekeeping.IdleArmPending)
        {
            Housekeeping.ArmIdleCloseOnceDrained();
        }

        // The handler's work, awaits included, is over: it leaves the node's pending work and its payload is released.
        _completion.OnCompleted(this, ref message, wasSuspended);
    }

    private ValueTask Dispatch(ref StageMessage message)
    {
        // Messages to the stage's handlers are the steady stream; every other kind goes through DispatchOther, whose
        // by-value messages and rarer calls would otherwise widen this frame (and its zeroing) on every message.
        switch (message.Kind)
        {
            case StageWorkKind.ClientMessage:
                var actor = message.Actor;
                if (actor is null || !actor.IsJoined)
                {
                    FailMessage(ref message, ErrorCodes.NotInStage);
                    return ValueTask.CompletedTask;
                }

                return _stage!.OnDispatch(actor.User, new Packet(message.MsgId!, message.Payload, message.Reply));
            case StageWorkKind.ServerMessage:
                return _stage!.OnDispatch(new Packet(message.MsgId!, message.Payload, message.Reply));
            default:
                return DispatchOther(ref message);
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private ValueTask DispatchOther(ref StageMessage message)
    {
        switch (message.Kind)
        {
            case StageWorkKind.Timer:
                Timers.RunTimer((StageTimer)message.State!);
                return ValueTask.CompletedTask;
            case StageWorkKind.GameLoop:
                Timers.RunGameLoop((GameLoop)message.State!);
                return ValueTask.CompletedTask;
            case StageWorkKind.ReplyCallback:
                RunReplyCallback(ref message);
                return ValueTask.CompletedTask;
            case StageWorkKind.OffStageResult:
                ((IStageCompletion)message.State!).Complete(this);
                return ValueTask.CompletedTask;
            case StageWorkKind.Create:
                return Lifecycle.RunCreate(message);
            case StageWorkKind.Join:
                return ActorDirectory.RunJoin(message);
            case StageWorkKind.ConnectionChanged:
                return ActorDirectory.RunConnectionChanged(message);
            case StageWorkKind.Leave:
                return ActorDirectory.RunLeave(message.Actor!);
            case StageWorkKind.Destroy:
                return Lifecycle.RunDestroy();
            case StageWorkKind.Housekeeping:
                return Housekeeping.RunHousekeeping();
            case StageWorkKind.EvictDisconnected:
                return ActorDirectory.RunEviction((WaitingActor)message.State!);
            default:
                throw new InvalidOperationException($"Unknown stage work kind {message.Kind}.");
        }
    }

    private static void RunReplyCallback(ref StageMessage message)
    {
        var response = new Response(message.ErrorCode, message.MsgId ?? string.Empty, message.Payload);
        ((Action<Response>)message.State!)(response);
    }

    /// <summary>Ends a message that will not run: its request gets an error reply and its payload is released.</summary>
    internal void FailMessage(ref StageMessage message, ushort errorCode)
    {
        switch (message.Kind)
        {
            case StageWorkKind.Join:
                _server.TryReplyError(message.Reply, errorCode == ErrorCodes.StageNotFound ? ErrorCodes.StageNotFound : ErrorCodes.CreateStageFailed, StageId);
                _server.OnJoinFailed(message.Session!);
                break;
            case StageWorkKind.ReplyCallback:
                // The requester still hears its outcome exactly once, with the reply it got.
                RunReplyCallback(ref message);
                break;
            case StageWorkKind.OffStageResult:
                ((IStageCompletion)message.State!).Complete(this);
                break;
            case StageWorkKind.Timer:
                ((StageTimer)message.State!).OnTickDiscarded();
                break;
            default:
                if (message.Reply.IsRequest)
                {
                    _server.TryReplyError(message.Reply, errorCode, StageId);
                }

                break;
        }

        message.Payload.DisposeIfOwner();
    }
}
