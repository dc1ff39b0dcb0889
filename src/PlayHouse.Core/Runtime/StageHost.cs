using System.Runtime.CompilerServices;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Seams;

namespace PlayHouse.Core.Runtime;

/// <summary>
/// Runs one stage: a capped mailbox drained by one logical executor, one handler at a time. A handler that
/// awaits suspends the mailbox; only its own continuations (posted through the stage's synchronization
/// context) run until it completes. Also owns the stage's timers, game loop, actors and off-stage work.
/// </summary>
/// <remarks>
/// Posting is thread-safe (a lock guards the queues and scheduling flags). Everything else runs inside the
/// stage's turns, which the executor never runs concurrently: <see cref="Execute"/> asserts it.
/// </remarks>
internal sealed class StageHost : IThreadPoolWorkItem, IStageLink
{
    private readonly PlayServer _server;
    private readonly Lock? _gate;
    private readonly IStageMailbox _mailbox;
    private readonly Queue<(SendOrPostCallback Callback, object? State)> _continuations = new();
    private readonly StageSynchronizationContext _syncContext;
    private readonly Action _onHandlerResumed;
    private readonly IHandlerCompletion _completion;
    private readonly IMeshSendPayloads _meshSends;
    private readonly Dictionary<long, ActorHost> _actorsByAccount = [];
    private readonly List<IActor> _actorOrder = [];
    private readonly IStageTimerTable _timers;
    private readonly List<PendingRequest> _awaitedRequests = [];
    private readonly StageRegistration _registration;

    // Replaceable parts (NodeParts); null in the standard node, which needs neither.
    private readonly IReplyAddressing? _replyAddressing;
    private readonly IReplyCallbackDispatch? _callbackDispatch;
    private IStage? _stage;
    private bool _scheduled;
    private bool _suspended;
    private bool _handlerInProgress;
    private int _executing;

    // The turn's clock reading for closing ledger entries (ReplyTimestamp); forgotten when a turn starts.
    private long _turnTimestamp;
    private bool _turnTimestampRead;
    private StageMessage _current;
    private ValueTask _currentTask;
    private StageState _state = StageState.Creating;
    private bool _closeRequested;
    private long _nextTimerId;
    private GameLoop? _gameLoop;
    private int _offStageInFlight;
    private long _handlingWaiterStageId;
    private string? _handlingWaiterNodeId;
    private ulong _handlingWaiterMsgSeq;
    private AwaitingStage[]? _handlingChainIn;
    private AwaitingStage[]? _handlingChainOut;

    // Housekeeping: disconnected actors expire and an idle stage closes (ServerOptions.DisconnectedActorExpiry and
    // IdleStageCloseAfter), both through one timer on the node's TimeProvider, armed for the earliest deadline.
    private readonly long _expiryDelta;
    private readonly long _idleDelta;
    private IDisconnectedActorTable? _disconnected;
    private ITimer? _housekeepingTimer;
    private long _housekeepingDueTimestamp = long.MaxValue;
    private bool _housekeepingPosted;
    private bool _empty;
    private bool _idleArmPending;
    private EmptyStage? _emptyEntry;
    private bool _closeEarly;
    private long _emptySinceTimestamp;

    public StageHost(PlayServer server, StageRegistration registration, long stageId)
    {
        _server = server;
        _gate = NodeLock.Create(server.Options);
        _registration = registration;
        StageId = stageId;
        StageType = registration.StageType;
        _syncContext = new StageSynchronizationContext(this);
        _onHandlerResumed = OnHandlerResumed;
        _mailbox = server.Parts.StageMailbox(server.Options);
        _replyAddressing = server.ReplyAddressing;
        _callbackDispatch = server.Parts.CallbackDispatch;
        _timers = server.Parts.StageTimers(this);
        _expiryDelta = ToDelta(server.Options.DisconnectedActorExpiry, server.Time);
        _idleDelta = ToDelta(server.Options.IdleStageCloseAfter, server.Time);
        _completion = server.Parts.HandlerCompletion;
        _meshSends = server.Parts.MeshSendPayloads;
    }

    private enum StageState
    {
        Creating,
        Running,
        Closed,
    }

    public long StageId { get; }

    public string StageType { get; }

    public string NodeId => _server.NodeId;

    public TimeProvider Time => _server.Time;

    public MessagePool Pool => _server.Pool;

    public IRandomSource Random => _server.Random;

    public IReadOnlyList<IActor> Actors => _actorOrder;

    public bool IsGameLoopRunning => _gameLoop is not null;

    /// <summary>The most messages this mailbox held at once.</summary>
    public int MailboxHighWater { get; private set; }

    public int MailboxLength
    {
        get
        {
            using (NodeLock.Enter(_gate))
            {
                return _mailbox.Count;
            }
        }
    }

    public bool IsClosed
    {
        get
        {
            using (NodeLock.Enter(_gate))
            {
                return _state == StageState.Closed;
            }
        }
    }

    internal ServerCounters Counters => _server.Counters;

    /// <summary>The play server this stage runs on.</summary>
    internal PlayServer Server => _server;

    /// <summary>The user's stage object (set by <see cref="Instantiate"/>).</summary>
    internal IStage User => _stage!;

    internal ExecutorSynchronizationContext OffStageContext => _server.OffStageContext;

    internal ServerOptions Options => _server.Options;

    /// <summary>Creates the user's stage object; called once, before the Create message is posted.</summary>
    public void Instantiate() => _stage = _registration.StageFactory(this);

    // ---- Posting (any thread) ----

    /// <summary>Queues a message; false when the stage is closed or (for external messages) the mailbox is at its cap.</summary>
    public bool Post(in StageMessage message)
    {
        bool schedule;
        int length;
        int external;
        using (NodeLock.Enter(_gate))
        {
            if (_state == StageState.Closed)
            {
                return false;
            }

            // The mailbox refuses a message from outside at its cap (MailboxCapacityMax); the stage's own completions
            // always go in, each holding a slot capped where its work started.
            if (!_mailbox.TryEnqueue(message))
            {
                return false;
            }

            length = _mailbox.Count;
            external = _mailbox.ExternalCount;
            if (length > MailboxHighWater)
            {
                MailboxHighWater = length;
            }

            schedule = !_scheduled;
            _scheduled = true;
        }

        if (schedule)
        {
            _server.Executor.Schedule(this);
        }

        // Hooks hear of the post once the stage's state is whole (queued and scheduled): a hook that throws here used
        // to leave the stage marked scheduled with no turn ever coming, a stage stuck for good (found by the
        // receive-fault scenario, whose hook throws while a frame is received).
        _server.Observer.OnMailboxPosted(NodeId, StageId, length, external);
        return true;
    }

    /// <summary>
    /// Queues a batch's messages that the ledger accepted, in order, under one lock, each as <see cref="Post"/> would
    /// queue it alone: a message is refused (marked <see cref="BatchedFrameState.RefusedByStage"/>) when the stage is
    /// closed or the mailbox is at its cap. The hooks hear of each queued message afterwards, in order, once the stage's
    /// state is whole.
    /// </summary>
    internal void PostBatch(ClientFrameBatch batch, long staleAtTimestamp)
    {
        Span<int> lengths = stackalloc int[ClientFrameBatch.CapacityMax];
        Span<int> externals = stackalloc int[ClientFrameBatch.CapacityMax];
        var schedule = false;
        var posted = 0;
        using (NodeLock.Enter(_gate))
        {
            for (var i = 0; i < batch.Count; i++)
            {
                ref var entry = ref batch[i];
                if (entry.State != BatchedFrameState.Held)
                {
                    continue;
                }

                if (_state == StageState.Closed || !_mailbox.TryEnqueue(entry.ToStageMessage(staleAtTimestamp)))
                {
                    entry.State = BatchedFrameState.RefusedByStage;
                    continue;
                }

                entry.State = BatchedFrameState.Posted;
                posted++;
                lengths[i] = _mailbox.Count;
                externals[i] = _mailbox.ExternalCount;
                if (lengths[i] > MailboxHighWater)
                {
                    MailboxHighWater = lengths[i];
                }
            }

            if (posted > 0)
            {
                schedule = !_scheduled;
                _scheduled = true;
            }
        }

        // An idle stage whose turn this receiving thread may run itself runs it here, once the hooks have heard of the
        // posts: the messages are answered on the thread that received them, with no work item between (the turn's own
        // budget bounds how long the receive waits; work past it goes to the executor).
        var runHere = schedule && RunsTurnOnReceiveThread();
        if (schedule && !runHere)
        {
            _server.Executor.Schedule(this);
        }

        for (var i = 0; i < batch.Count && posted > 0; i++)
        {
            if (batch[i].State == BatchedFrameState.Posted)
            {
                posted--;
                _server.Observer.OnMailboxPosted(NodeId, StageId, lengths[i], externals[i]);
            }
        }

        if (runHere)
        {
            ExecuteOnReceiveThread();
        }
    }

    /// <summary>
    /// Runs a turn on the receiving thread as the executor would run it: the execution context the turn leaves behind
    /// (an async-local a handler set) is not the receive loop's afterwards, as a work item's is not the next item's.
    /// </summary>
    private void ExecuteOnReceiveThread()
    {
        var context = ExecutionContext.Capture();
        try
        {
            Execute();
        }
        finally
        {
            if (context is not null)
            {
                ExecutionContext.Restore(context);
            }
        }
    }

    /// <summary>
    /// Whether the thread posting a receive's messages runs the stage's turn itself: when the options allow it, the
    /// executor lets this thread run its work, and no turn runs on it already (turns never nest).
    /// </summary>
    private bool RunsTurnOnReceiveThread() =>
        Options.RunClientTurnsOnReceiveThread && _server.Executor.CanRunInline && !TurnEnd.IsInTurn;

    /// <summary>Queues the continuation of a suspended handler; it runs even while the mailbox is suspended.</summary>
    public void PostContinuation(SendOrPostCallback callback, object? state)
    {
        bool schedule;
        using (NodeLock.Enter(_gate))
        {
            _continuations.Enqueue((callback, state));
            schedule = !_scheduled;
            _scheduled = true;
        }

        if (schedule)
        {
            _server.Executor.Schedule(this);
        }
    }

    /// <summary>
    /// True when queuing <paramref name="request"/> (a request whose sending stage awaits it) would close a cycle of
    /// awaiting stages: this stage's current handler awaits a request to the sender (A&lt;-&gt;B), or this stage is in
    /// the request's await chain and still awaits the request named there (A-&gt;B-&gt;C-&gt;A, any length up to
    /// <see cref="AwaitingStage.ChainLengthMax"/>, across nodes). Either way the request would wait behind a handler
    /// that waits for it, until the timeout.
    /// </summary>
    public bool IsInCycleWith(in MeshMessage request)
    {
        if (IsInChainedCycleWith(request))
        {
            return true;
        }

        // Waits that started independently (three handlers, each started by its own client, each awaiting the next)
        // carry no chain that names them all; on one server the stages' own waits show the cycle.
        return string.Equals(request.From, NodeId, StringComparison.Ordinal) && _server.AwaitsLocalStage(this, request.FromStageId);
    }

    /// <summary>
    /// Adds the stages of this server that the current handler awaits to <paramref name="into"/>; nothing when no
    /// handler is in progress. Takes only this stage's lock.
    /// </summary>
    internal void CollectLocalAwaitTargets(List<long> into)
    {
        using (NodeLock.Enter(_gate))
        {
            if (!_handlerInProgress)
            {
                return;
            }

            foreach (var awaited in _awaitedRequests)
            {
                if (awaited.TargetStageId != 0 && string.Equals(awaited.TargetNodeId, NodeId, StringComparison.Ordinal))
                {
                    into.Add(awaited.TargetStageId);
                }
            }
        }
    }

    private bool IsInChainedCycleWith(in MeshMessage request)
    {
        using (NodeLock.Enter(_gate))
        {
            if (!_handlerInProgress || _awaitedRequests.Count == 0)
            {
                return false;
            }

            foreach (var awaited in _awaitedRequests)
            {
                if (awaited.TargetStageId == request.FromStageId && string.Equals(awaited.TargetNodeId, request.From, StringComparison.Ordinal))
                {
                    return true;
                }
            }

            var chain = request.AwaitChain;
            if (chain is null)
            {
                return false;
            }

            foreach (var upstream in chain)
            {
                if (upstream.StageId != StageId || !string.Equals(upstream.NodeId, NodeId, StringComparison.Ordinal))
                {
                    continue;
                }

                // Still awaiting the very request the chain started from: the chain is live, not a memory of a wait
                // that has ended (a timed-out or answered request no longer counts).
                foreach (var awaited in _awaitedRequests)
                {
                    if (awaited.MsgSeq == upstream.MsgSeq)
                    {
                        return true;
                    }
                }
            }

            return false;
        }
    }

    /// <summary>
    /// The await chain for a request the current handler sends and awaits: the stage awaiting the message this handler
    /// serves, then that message's own chain (nearest first, cut at <see cref="AwaitingStage.ChainLengthMax"/>). Null
    /// when no stage awaits the handler, the common case, so it allocates only for chains of two awaiting hops or more.
    /// </summary>
    /// <remarks>Called only from this stage's turns.</remarks>
    internal AwaitingStage[]? AwaitChainOfCurrentHandler()
    {
        if (_handlingWaiterStageId == 0)
        {
            return null;
        }

        if (_handlingChainOut is not null)
        {
            return _handlingChainOut;
        }

        var upstream = _handlingChainIn;
        var chain = new AwaitingStage[Math.Min(AwaitingStage.ChainLengthMax, 1 + (upstream?.Length ?? 0))];
        chain[0] = new AwaitingStage(_handlingWaiterNodeId!, _handlingWaiterStageId, _handlingWaiterMsgSeq);
        for (var i = 1; i < chain.Length; i++)
        {
            chain[i] = upstream![i - 1];
        }

        _handlingChainOut = chain;
        return chain;
    }

    internal void NoteAwaiting(PendingRequest request)
    {
        using (NodeLock.Enter(_gate))
        {
            _awaitedRequests.Add(request);
        }
    }

    internal void OnRequestCompleted(PendingRequest request)
    {
        if (!request.SenderAwaits)
        {
            return;
        }

        using (NodeLock.Enter(_gate))
        {
            _awaitedRequests.Remove(request);
        }
    }

    // ---- The turn (executor) ----

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
                        stale = message.StaleAtTimestamp != 0 && _server.Time.GetTimestamp() >= message.StaleAtTimestamp;
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
                    ShedStale(ref message);
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

    /// <summary>
    /// Ends a message that came up for dispatch past its deadline (<see cref="StageMessage.StaleAtTimestamp"/>) without
    /// dispatching it: a request gets its one reply, <see cref="ErrorCodes.RequestExpired"/>; a one-way message is dropped.
    /// Either way it is counted and its payload released.
    /// </summary>
    /// <remarks>
    /// Its requester has given up (a mesh request past the deadline it carried) or is assumed to have (a client message
    /// older than <see cref="ServerOptions.ClientMessageQueueTimeMax"/>): running the handler would only spend the
    /// stage's time on an answer that arrives too late, while the requests behind it wait longer still.
    /// Out of line: it is the rare path of the turn loop.
    /// </remarks>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private void ShedStale(ref StageMessage message)
    {
        if (message.Reply.IsRequest)
        {
            Counters.AddRequestExpiredInMailbox();
            _server.TryReplyError(message.Reply, ErrorCodes.RequestExpired, StageId);
        }
        else
        {
            Counters.AddSendExpiredInMailbox();
        }

        _server.Observer.OnDropped(NodeId, nameof(ErrorCodes.RequestExpired), message.MsgId);
        message.Payload.DisposeIfOwner();
    }

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
        // Who waits on this handler: read by requests it sends, to extend their await chains (cleared in Finish).
        // The waiter's node, sequence and chain are read only while a stage waits (AwaitChainOfCurrentHandler checks
        // the stage id first), and Finish cleared them after the last handler, so most messages skip their stores.
        _handlingWaiterStageId = message.WaiterStageId;
        if (message.WaiterStageId != 0)
        {
            _handlingWaiterNodeId = message.Reply.MeshNodeId;
            _handlingWaiterMsgSeq = message.Reply.MeshMsgSeq;
            _handlingChainIn = message.AwaitChain;
        }

        _handlingChainOut = null;
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
        _handlingWaiterStageId = 0;
        _handlingWaiterNodeId = null;
        _handlingChainIn = null;
        _handlingChainOut = null;
        _server.Observer.OnMessageCompleted(NodeId, StageId, message.Kind, message.MsgId);
        if (_idleArmPending)
        {
            ArmIdleCloseOnceDrained();
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
                RunTimer((StageTimer)message.State!);
                return ValueTask.CompletedTask;
            case StageWorkKind.GameLoop:
                RunGameLoop((GameLoop)message.State!);
                return ValueTask.CompletedTask;
            case StageWorkKind.ReplyCallback:
                RunReplyCallback(ref message);
                return ValueTask.CompletedTask;
            case StageWorkKind.OffStageResult:
                ((IStageCompletion)message.State!).Complete(this);
                return ValueTask.CompletedTask;
            case StageWorkKind.Create:
                return RunCreate(message);
            case StageWorkKind.Join:
                return RunJoin(message);
            case StageWorkKind.ConnectionChanged:
                return RunConnectionChanged(message);
            case StageWorkKind.Leave:
                return RunLeave(message.Actor!);
            case StageWorkKind.Destroy:
                return RunDestroy();
            case StageWorkKind.Housekeeping:
                return RunHousekeeping();
            case StageWorkKind.EvictDisconnected:
                return RunEviction((WaitingActor)message.State!);
            default:
                throw new InvalidOperationException($"Unknown stage work kind {message.Kind}.");
        }
    }

    private void RunReplyCallback(ref StageMessage message)
    {
        var response = new Response(message.ErrorCode, message.MsgId ?? string.Empty, message.Payload);
        ((Action<Response>)message.State!)(response);
    }

    // ---- Lifecycle ----

    private async ValueTask RunCreate(StageMessage message)
    {
        CreateResult result;
        try
        {
            Lifecycle(null, LifecycleEvent.StageCreate);
            result = await _stage!.OnCreate(new Packet(message.MsgId ?? string.Empty, message.Payload, message.Reply));
        }
        catch (Exception ex)
        {
            HandlerFailed(StageWorkKind.Create, message.MsgId, ex);
            result = CreateResult.Refuse(ErrorCodes.CreateStageFailed);
        }

        if (!result.Ok)
        {
            result.ReplyPayload.DisposeIfOwner();
            var code = result.ErrorCode == ErrorCodes.Success ? ErrorCodes.CreateStageFailed : result.ErrorCode;
            if (message.Reply.IsRequest)
            {
                _server.TryReplyError(message.Reply, code, StageId);
            }

            // A stage whose creation failed is removed at once, so no zombie keeps its id (B16).
            CloseNow(ErrorCodes.CreateStageFailed, StageRemoval.CreateFailed);
            return;
        }

        using (NodeLock.Enter(_gate))
        {
            _state = StageState.Running;
        }

        _server.OnStageCreated(this);
        if (_actorsByAccount.Count == 0)
        {
            // Usually the first join is queued right behind the create: the idle timer is armed only if the stage is
            // still empty once its queue has drained, so a stage created for a join leaves no idle wake-up behind (in
            // simulation that would be an event a minute ahead, keeping a world that is otherwise quiet busy).
            _empty = true;
            _emptySinceTimestamp = Time.GetTimestamp();
            _idleArmPending = true;
        }

        if (message.Reply.IsRequest)
        {
            _server.SendReply(message.Reply, SystemMsgIds.StageCreated, result.ReplyPayload.Move("reply"), ErrorCodes.Success, StageId);
        }
        else
        {
            result.ReplyPayload.DisposeIfOwner();
        }

        Lifecycle(null, LifecycleEvent.StagePostCreate);
        await _stage!.OnPostCreate();
    }

    private async ValueTask RunJoin(StageMessage message)
    {
        var session = message.Session!;
        var actorHost = new ActorHost(this, _server.NextActorInstance());
        try
        {
            await RunJoinSteps(message, session, actorHost);
        }
        catch (Exception ex) when (!actorHost.IsJoined)
        {
            // A join callback threw before the actor joined: the client hears HandlerFailed, its session may
            // authenticate again, and an actor that was created is destroyed, so no session or actor is stuck.
            HandlerFailed(StageWorkKind.Join, message.MsgId, ex);
            _server.TryReplyError(message.Reply, ErrorCodes.HandlerFailed, StageId);
            _server.OnJoinFailed(session);
            if (actorHost.User is not null && !actorHost.IsDestroyed)
            {
                actorHost.IsDestroyed = true;
                Lifecycle(actorHost, LifecycleEvent.ActorDestroy);
                try
                {
                    await actorHost.User.OnDestroy();
                }
                catch (Exception destroyError)
                {
                    HandlerFailed(StageWorkKind.Join, message.MsgId, destroyError);
                }
            }
        }
    }

    private async ValueTask RunJoinSteps(StageMessage message, ClientSession session, ActorHost actorHost)
    {
        var actor = _registration.ActorFactory(actorHost);
        actorHost.User = actor;
        var packet = new Packet(message.MsgId!, message.Payload, message.Reply);

        Lifecycle(actorHost, LifecycleEvent.ActorCreate);
        await actor.OnCreate();
        Lifecycle(actorHost, LifecycleEvent.ActorAuthenticate);
        var auth = await actor.OnAuthenticate(packet);
        if (!auth.Ok)
        {
            auth.ReplyPayload.DisposeIfOwner();
            _server.TryReplyError(message.Reply, auth.ErrorCode == ErrorCodes.Success ? ErrorCodes.AuthenticationFailed : auth.ErrorCode, StageId);
            _server.OnJoinFailed(session);
            actorHost.IsDestroyed = true;
            Lifecycle(actorHost, LifecycleEvent.ActorDestroy);
            await actor.OnDestroy();
            return;
        }

        if (_actorsByAccount.TryGetValue(auth.AccountId, out var existing))
        {
            // A reconnect: the account already has its actor here (the rejoin part decides what happens, B11).
            await _server.Parts.Rejoin.RejoinAsync(new ActorRejoin(this, message, session, actorHost, auth, existing));
            return;
        }

        if (_actorsByAccount.Count >= Options.ActorsPerStageMax)
        {
            // At the cap only an account that is already here (a reconnect, above) gets in; a new one is refused before
            // any join callback runs, and the actor made for it is destroyed.
            Counters.AddJoinRefusedAtCap();
            auth.ReplyPayload.DisposeIfOwner();
            _server.TryReplyError(message.Reply, ErrorCodes.StageFull, StageId);
            _server.OnJoinFailed(session);
            actorHost.IsDestroyed = true;
            Lifecycle(actorHost, LifecycleEvent.ActorDestroy);
            await actor.OnDestroy();
            return;
        }

        actorHost.AccountId = auth.AccountId;
        Lifecycle(actorHost, LifecycleEvent.ActorPostAuthenticate);
        await actor.OnPostAuthenticate();
        Lifecycle(actorHost, LifecycleEvent.ActorJoinStage);
        var joined = await _stage!.OnJoinStage(actor);
        if (!joined)
        {
            auth.ReplyPayload.DisposeIfOwner();
            _server.TryReplyError(message.Reply, ErrorCodes.JoinStageRejected, StageId);
            _server.OnJoinFailed(session);
            actorHost.IsDestroyed = true;
            Lifecycle(actorHost, LifecycleEvent.ActorDestroy);
            await actor.OnDestroy();
            return;
        }

        actorHost.IsJoined = true;
        _actorsByAccount.Add(auth.AccountId, actorHost);
        _actorOrder.Add(actor);
        _empty = false;
        UnlistEmpty();
        _server.OnActorAdded();
        var bound = _server.CompleteJoin(session, actorHost);
        if (bound)
        {
            _server.SendReply(message.Reply, ReplyMsgId(auth.ReplyMsgId, message.MsgId!), auth.ReplyPayload.Move("reply"), ErrorCodes.Success, StageId);
        }
        else
        {
            auth.ReplyPayload.DisposeIfOwner();
        }

        Lifecycle(actorHost, LifecycleEvent.ActorPostJoinStage);
        await _stage.OnPostJoinStage(actor);
        if (!bound)
        {
            // The client left while joining: the actor stays, disconnected, as after any disconnect.
            BeginExpiry(actorHost);
            Lifecycle(actorHost, LifecycleEvent.ActorDisconnected);
            await _stage.OnConnectionChanged(actor, false);
        }
    }

    /// <summary>The msg id of a join's reply: the one authentication chose, else the request's own.</summary>
    internal static string ReplyMsgId(string replyMsgId, string requestMsgId) => string.IsNullOrEmpty(replyMsgId) ? requestMsgId : replyMsgId;

    private async ValueTask RunConnectionChanged(StageMessage message)
    {
        var actor = message.Actor!;
        if (!actor.IsJoined || !ReferenceEquals(actor.Session, message.Session))
        {
            // The actor was rebound to a newer session or left; this news is stale.
            return;
        }

        actor.Session = null;
        BeginExpiry(actor);
        Lifecycle(actor, LifecycleEvent.ActorDisconnected);
        await _stage!.OnConnectionChanged(actor.User, false);
    }

    private async ValueTask RunLeave(ActorHost actor)
    {
        if (!actor.IsJoined)
        {
            return;
        }

        RemoveActor(actor);
        if (_actorsByAccount.Count == 0)
        {
            BecameEmpty();
        }

        Lifecycle(actor, LifecycleEvent.ActorDestroy);
        await actor.User.OnDestroy();
    }

    private async ValueTask RunDestroy()
    {
        if (IsClosed)
        {
            return;
        }

        await DestroyStage();
    }

    /// <summary>Destroys every actor, then the stage, and closes it (the stage may already refuse posts).</summary>
    private async ValueTask DestroyStage()
    {
        foreach (var actor in _actorsByAccount.Values.OrderBy(a => a.Instance).ToList())
        {
            RemoveActor(actor);
            Lifecycle(actor, LifecycleEvent.ActorDestroy);
            await actor.User.OnDestroy();
        }

        Lifecycle(null, LifecycleEvent.StageDestroy);
        await _stage!.OnDestroy();
        CloseNow(ErrorCodes.StageNotFound, StageRemoval.Destroyed);
    }

    private void RemoveActor(ActorHost actor)
    {
        actor.IsJoined = false;
        if (_actorsByAccount.Remove(actor.AccountId))
        {
            _server.OnActorRemoved();
        }

        _actorOrder.Remove(actor.User);
        _server.UnbindActor(actor);
        _server.EndWait(actor);
        actor.Session = null;
    }

    /// <summary>Closes the stage: timers stop, the registry forgets it, and queued messages fail with <paramref name="errorCode"/>.</summary>
    private void CloseNow(ushort errorCode, StageRemoval why)
    {
        UnlistEmpty();
        List<StageMessage> orphans;
        using (NodeLock.Enter(_gate))
        {
            _state = StageState.Closed;
            orphans = new List<StageMessage>(_mailbox.Count);
            while (_mailbox.TryDequeue(out var orphan))
            {
                orphans.Add(orphan);
            }
        }

        if (_timers.Count > 0)
        {
            var timers = new List<StageTimer>(_timers.Count);
            _timers.RemoveAll(timers);
            foreach (var timer in timers)
            {
                timer.Cancel();
            }
        }
        _gameLoop?.Stop();
        _gameLoop = null;
        _housekeepingTimer?.Dispose();
        _server.RemoveStage(this, why);
        for (var i = 0; i < orphans.Count; i++)
        {
            var orphan = orphans[i];
            FailMessage(ref orphan, errorCode);
        }
    }

    /// <summary>Ends a message that will not run: its request gets an error reply and its payload is released.</summary>
    private void FailMessage(ref StageMessage message, ushort errorCode)
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

    /// <summary>Counts a handler failure and tells the observer which handler threw what.</summary>
    private void HandlerFailed(StageWorkKind kind, string? msgId, Exception error)
    {
        Counters.AddHandlerFailure();
        _server.Observer.OnHandlerFailed(NodeId, StageId, kind, msgId, error);
    }

    /// <summary>Tells the observer a lifecycle callback is about to run (for parts that run lifecycle steps).</summary>
    internal void ReportLifecycle(ActorHost? actor, LifecycleEvent lifecycleEvent) => Lifecycle(actor, lifecycleEvent);

    private void Lifecycle(ActorHost? actor, LifecycleEvent lifecycleEvent) =>
        _server.Observer.OnLifecycle(NodeId, StageId, actor?.Instance ?? 0, actor?.AccountId ?? 0, lifecycleEvent);

    // ---- IStageLink: sending ----

    public void Reply(in Packet request, ushort errorCode) => _server.SendReply(AddressOf(request), request.MsgId, Payload.Empty, errorCode, StageId, ReplyTimestamp());

    public void Reply(in Packet request, string msgId, Payload payload, ushort errorCode = ErrorCodes.Success) =>
        _server.SendReply(AddressOf(request), msgId, payload.Move("reply"), errorCode, StageId, ReplyTimestamp());

    /// <summary>
    /// The clock reading a reply's ledger entry is closed at: inside a turn, the turn's first reply reads the clock and
    /// its later replies reuse that reading (a turn runs at most <see cref="ServerOptions.TurnMessageBudget"/> messages,
    /// and in simulation time does not move within one), one clock read per turn instead of one per reply; outside a
    /// turn, a fresh reading.
    /// </summary>
    private long ReplyTimestamp()
    {
        if (Volatile.Read(ref _executing) == 0)
        {
            return Time.GetTimestamp();
        }

        if (!_turnTimestampRead)
        {
            _turnTimestamp = Time.GetTimestamp();
            _turnTimestampRead = true;
        }

        return _turnTimestamp;
    }

    /// <summary>The packet's own token, unless a replaced part addresses replies (NodeParts.ReplyAddressing).</summary>
    private ReplyToken AddressOf(in Packet request) => _replyAddressing is null ? request.ReplyToken : _replyAddressing.AddressOf(request);

    public void SendToStage(string nodeId, long stageId, string msgId, Payload payload) =>
        _server.SendOneWay(nodeId, stageId, msgId, _meshSends.Wrap(payload), StageId);

    public Task<Response> RequestToStage(string nodeId, long stageId, string msgId, Payload payload, TimeSpan? timeout = null) =>
        _server.RequestAsync(nodeId, stageId, msgId, _meshSends.Wrap(payload), timeout, this, SystemOp.None, stageType: null);

    public void RequestToStage(string nodeId, long stageId, string msgId, Payload payload, Action<Response> callback, TimeSpan? timeout = null) =>
        _server.RequestWithCallback(nodeId, stageId, msgId, _meshSends.Wrap(payload), callback, timeout, this);

    public void SendToApi(string nodeId, string msgId, Payload payload) => SendToStage(nodeId, 0, msgId, payload);

    public Task<Response> RequestToApi(string nodeId, string msgId, Payload payload, TimeSpan? timeout = null) =>
        RequestToStage(nodeId, 0, msgId, payload, timeout);

    public void RequestToApi(string nodeId, string msgId, Payload payload, Action<Response> callback, TimeSpan? timeout = null) =>
        RequestToStage(nodeId, 0, msgId, payload, callback, timeout);

    public void SendToClient(IActor actor, string msgId, Payload payload)
    {
        ArgumentNullException.ThrowIfNull(actor);
        actor.Link.SendToClient(msgId, payload);
    }

    public void CloseStage() => RequestClose();

    /// <summary>Posts the destroy step once; callable from any thread.</summary>
    internal void RequestClose()
    {
        using (NodeLock.Enter(_gate))
        {
            if (_closeRequested)
            {
                return;
            }

            _closeRequested = true;
        }

        Post(new StageMessage { Kind = StageWorkKind.Destroy });
    }

    // ---- Housekeeping: expiry of disconnected actors, closing when idle ----

    /// <summary>The stage handled the disconnect of <paramref name="actor"/>: it expires after the configured time unless its account reconnects.</summary>
    private void BeginExpiry(ActorHost actor)
    {
        actor.DisconnectGeneration++;
        _server.EndWait(actor);
        var wait = _server.WaitingActors.Begin(this, actor, actor.DisconnectGeneration);
        actor.Wait = wait;
        if (_expiryDelta < 0)
        {
            return;
        }

        var deadline = SaturatingAdd(Time.GetTimestamp(), _expiryDelta);
        _disconnected ??= _server.Parts.DisconnectedActors(this);
        _disconnected.Add(new DisconnectedActor(wait, deadline));
        ArmHousekeeping(deadline);
    }

    /// <summary>The stage has no actor left (or was created without one): it closes once it has been idle long enough.</summary>
    private void BecameEmpty()
    {
        _idleArmPending = false;
        _empty = true;
        _emptySinceTimestamp = Time.GetTimestamp();
        using (NodeLock.Enter(_gate))
        {
            _mailbox.ReleaseStorageIfEmpty();
        }

        ListEmpty();
        if (_idleDelta >= 0)
        {
            ArmHousekeeping(SaturatingAdd(_emptySinceTimestamp, _idleDelta));
        }
    }

    /// <summary>Enters the server's list of empty stages; the ones empty longest past its cap are asked to close early.</summary>
    private void ListEmpty()
    {
        if (_emptyEntry is not null)
        {
            return;
        }

        _emptyEntry = new EmptyStage(this);
        if (_server.EmptyStages.Add(_emptyEntry) is { } evicted)
        {
            foreach (var oldest in evicted)
            {
                oldest.Stage.RequestEarlyClose();
            }
        }
    }

    /// <summary>Leaves the server's list of empty stages (an actor joined, or the stage closes).</summary>
    private void UnlistEmpty()
    {
        if (_emptyEntry is { } entry)
        {
            _emptyEntry = null;
            _server.EmptyStages.End(entry);
        }
    }

    /// <summary>
    /// The server's cap on empty stages chose this one (any thread): its housekeeping closes it now if it is still empty
    /// and idle, as its idle close would later.
    /// </summary>
    private void RequestEarlyClose()
    {
        using (NodeLock.Enter(_gate))
        {
            if (_state == StageState.Closed)
            {
                return;
            }

            _closeEarly = true;
        }

        OnHousekeepingDue();
    }

    /// <summary>After a message: a stage created empty arms its idle close once nothing is queued any more and it is still empty.</summary>
    private void ArmIdleCloseOnceDrained()
    {
        if (!_empty)
        {
            _idleArmPending = false;
            return;
        }

        using (NodeLock.Enter(_gate))
        {
            if (_mailbox.Count > 0)
            {
                return;
            }
        }

        _idleArmPending = false;
        ListEmpty();
        if (_idleDelta >= 0)
        {
            ArmHousekeeping(SaturatingAdd(_emptySinceTimestamp, _idleDelta));
        }
    }

    /// <summary>Arms the housekeeping timer for <paramref name="dueTimestamp"/> unless it is already armed for that or earlier.</summary>
    /// <remarks>Called only from this stage's turns.</remarks>
    private void ArmHousekeeping(long dueTimestamp)
    {
        // Only ever brought forward: the housekeeping turn re-arms for whatever is due next, so a later deadline needs no
        // timer change (each change is a queued event in simulation).
        if (dueTimestamp >= _housekeepingDueTimestamp)
        {
            return;
        }

        _housekeepingDueTimestamp = dueTimestamp;
        var now = Time.GetTimestamp();
        var delay = dueTimestamp <= now ? TimeSpan.Zero : Time.GetElapsedTime(now, dueTimestamp);
        _housekeepingTimer ??= Time.CreateTimer(static s => ((StageHost)s!).OnHousekeepingDue(), this, Timeout.InfiniteTimeSpan, Timeout.InfiniteTimeSpan);
        _housekeepingTimer.Change(delay, Timeout.InfiniteTimeSpan);
    }

    /// <summary>The housekeeping timer fired (on the clock's thread): one housekeeping message at a time goes into the mailbox.</summary>
    private void OnHousekeepingDue()
    {
        using (NodeLock.Enter(_gate))
        {
            if (_state == StageState.Closed || _housekeepingPosted)
            {
                return;
            }

            _housekeepingPosted = true;
        }

        Post(new StageMessage { Kind = StageWorkKind.Housekeeping });
    }

    private async ValueTask RunHousekeeping()
    {
        bool early;
        using (NodeLock.Enter(_gate))
        {
            _housekeepingPosted = false;
            early = _closeEarly;
            _closeEarly = false;
        }

        _housekeepingDueTimestamp = long.MaxValue;
        var now = Time.GetTimestamp();
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

                Counters.AddDisconnectedActorExpired();
                await DestroyWaitingActor(actor, StageWorkKind.Housekeeping);
            }
        }

        var idleTimeUp = _idleDelta >= 0 && now - _emptySinceTimestamp >= _idleDelta;
        if (_empty && (idleTimeUp || early))
        {
            if (_timers.Count == 0 && _gameLoop is null && _offStageInFlight == 0 && _server.TryRetireIdleStage(this))
            {
                if (idleTimeUp)
                {
                    Counters.AddIdleStageClosed();
                }
                else
                {
                    Counters.AddEmptyStageClosedAtCap();
                }

                await DestroyStage();
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
            ArmHousekeeping(next);
        }
    }

    /// <summary>Posts the eviction of a waiting actor the server's ledger chose to make room under its cap (any thread).</summary>
    internal void PostEviction(WaitingActor entry)
    {
        // A closed stage refuses the post; closing destroyed the actor already.
        Post(new StageMessage { Kind = StageWorkKind.EvictDisconnected, State = entry });
    }

    private async ValueTask RunEviction(WaitingActor entry)
    {
        var actor = entry.Actor;
        if (actor is null || !actor.IsJoined || actor.Session is not null || !ReferenceEquals(actor.Wait, entry))
        {
            // The account reconnected or the actor left before the eviction came up; it is no longer waiting.
            return;
        }

        Counters.AddDisconnectedActorEvictedAtCap();
        await DestroyWaitingActor(actor, StageWorkKind.EvictDisconnected);
    }

    /// <summary>Destroys a disconnected actor as if it had left: its expiry came, or the server's cap evicted it.</summary>
    private async ValueTask DestroyWaitingActor(ActorHost actor, StageWorkKind kind)
    {
        RemoveActor(actor);
        if (_actorsByAccount.Count == 0)
        {
            BecameEmpty();
        }

        Lifecycle(actor, LifecycleEvent.ActorDestroy);
        try
        {
            await actor.User.OnDestroy();
        }
        catch (Exception ex)
        {
            // One actor's failing OnDestroy must not keep the others past their expiry or over the cap.
            HandlerFailed(kind, null, ex);
        }
    }

    /// <summary>
    /// Closes the stage if nothing is queued for it and no close was asked for; called by the play server under its
    /// registry lock, so the stage leaves the registry in the same step and a join that finds it closed can create its
    /// successor at once.
    /// </summary>
    internal bool TryCloseIfQuiet()
    {
        using (NodeLock.Enter(_gate))
        {
            if (_closeRequested || _mailbox.Count > 0 || _continuations.Count > 0)
            {
                return false;
            }

            _closeRequested = true;
            _state = StageState.Closed;
            return true;
        }
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

    // ---- Timers ----

    public long AddRepeatTimer(TimeSpan initialDelay, TimeSpan period, Action callback) => AddTimer(initialDelay, period, 0, callback);

    public long AddCountTimer(TimeSpan initialDelay, TimeSpan period, int count, Action callback)
    {
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(count);
        return AddTimer(initialDelay, period, count, callback);
    }

    public bool CancelTimer(long timerId)
    {
        if (!_timers.Remove(timerId, out var timer))
        {
            return false;
        }

        timer.Cancel();
        return true;
    }

    public bool HasTimer(long timerId) => _timers.Contains(timerId);

    private long AddTimer(TimeSpan initialDelay, TimeSpan period, int count, Action callback)
    {
        ArgumentNullException.ThrowIfNull(callback);
        ArgumentOutOfRangeException.ThrowIfLessThanOrEqual(period, TimeSpan.Zero);
        ArgumentOutOfRangeException.ThrowIfLessThan(initialDelay, TimeSpan.Zero);

        // Timer ids are scoped to this stage: two stages may both own timer 1 (PlayHouse shared one table, B13).
        var id = ++_nextTimerId;
        var timer = new StageTimer(this, id, count, callback);
        _timers.Add(timer);
        timer.Start(initialDelay, period);
        return id;
    }

    /// <summary>Posts a timer tick unless the node's tick admission coalesces it (the timer already has the maximum of
    /// ticks waiting; then it is counted).</summary>
    internal void PostTick(StageWorkKind kind, ITickSource source)
    {
        int pendingTicks;
        using (NodeLock.Enter(_gate))
        {
            if (_state == StageState.Closed || !source.IsActive)
            {
                return;
            }

            if (!_server.TickAdmission.Admit(source))
            {
                Counters.AddTimerTickCoalesced();
                return;
            }

            pendingTicks = source.PendingTicks;
        }

        _server.Observer.OnTickPosted(NodeId, StageId, pendingTicks);
        Post(new StageMessage { Kind = kind, State = source });
    }

    private void RunTimer(StageTimer timer)
    {
        using (NodeLock.Enter(_gate))
        {
            timer.PendingTicks--;
        }

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

    // ---- Game loop ----

    public void StartGameLoop(TimeSpan fixedStep, Action<GameLoopStep> callback, int catchUpStepsMax = 5)
    {
        ArgumentNullException.ThrowIfNull(callback);
        ArgumentOutOfRangeException.ThrowIfLessThanOrEqual(fixedStep, TimeSpan.Zero);
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(catchUpStepsMax);
        if (_gameLoop is not null)
        {
            throw new InvalidOperationException($"Stage {StageId} already runs a game loop; stop it first.");
        }

        _gameLoop = new GameLoop(this, fixedStep, catchUpStepsMax, callback);
        _gameLoop.Start();
    }

    public void StopGameLoop()
    {
        _gameLoop?.Stop();
        _gameLoop = null;
    }

    private void RunGameLoop(GameLoop loop)
    {
        using (NodeLock.Enter(_gate))
        {
            loop.PendingTicks--;
        }

        if (!loop.IsActive)
        {
            return;
        }

        var dropped = loop.RunDueSteps();
        if (dropped > 0)
        {
            Counters.AddGameLoopStepsDropped(dropped);
        }
    }

    // ---- Off-stage work ----

    public void RunOffStage<T>(Func<T> work, Action<OffStageResult<T>> continuation)
    {
        ArgumentNullException.ThrowIfNull(work);
        ArgumentNullException.ThrowIfNull(continuation);
        StartOffStage(new OffStageWork<T>(this, work, null, continuation));
    }

    public void RunOffStageAsync<T>(Func<Task<T>> work, Action<OffStageResult<T>> continuation)
    {
        ArgumentNullException.ThrowIfNull(work);
        ArgumentNullException.ThrowIfNull(continuation);
        StartOffStage(new OffStageWork<T>(this, null, work, continuation));
    }

    private void StartOffStage<T>(OffStageWork<T> work)
    {
        // Each piece of work holds one completion slot from here until its continuation has run, so the off-stage
        // results waiting in the mailbox never exceed OffStageInFlightMax. Work past the cap is refused at once:
        // posting a refusal notice would itself be a mailbox entry without a bound (a loop of calls floods it).
        if (_offStageInFlight >= Options.OffStageInFlightMax)
        {
            Counters.AddOffStageRefused();
            throw new OffStageQueueFullException(NodeId, StageId, Options.OffStageInFlightMax);
        }

        _offStageInFlight++;
        _server.Executor.Schedule(work);
    }

    /// <summary>Frees the completion slot of finished off-stage work; runs on the stage, before its continuation.</summary>
    internal void OnOffStageCompleted()
    {
        _offStageInFlight--;
        if (_offStageInFlight < 0)
        {
            throw new InvalidOperationException($"Stage {StageId} on {NodeId} freed more off-stage slots than it took.");
        }
    }

    /// <summary>Posts the result of off-stage work. It bypasses the external cap because it holds one of the stage's
    /// <see cref="ServerOptions.OffStageInFlightMax"/> completion slots, taken when the work started.</summary>
    internal void PostCompletion(IStageCompletion completion)
    {
        if (!Post(new StageMessage { Kind = StageWorkKind.OffStageResult, State = completion }))
        {
            // The stage closed meanwhile: no continuation will run, so what the result owns is released here.
            Counters.AddOffStageResultDiscarded();
            completion.Discard();
        }
    }

    internal bool PostReplyCallback(Action<Response> callback, in Response response) =>
        Post(new StageMessage
        {
            Kind = StageWorkKind.ReplyCallback,
            State = callback,
            MsgId = response.MsgId,
            ErrorCode = response.ErrorCode,
            Payload = response.Payload,
        });

    public override string ToString() => $"Stage({NodeId}/{StageId}, {StageType})";
}

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

    private void Fire() => stage.PostTick(StageWorkKind.Timer, this);
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

    private void Fire() => stage.PostTick(StageWorkKind.GameLoop, this);
}

/// <summary>Work run off the stage on the executor; its result is posted back into the stage's mailbox.</summary>
internal sealed class OffStageWork<T>(StageHost stage, Func<T>? work, Func<Task<T>>? asyncWork, Action<OffStageResult<T>> continuation)
    : IThreadPoolWorkItem, IStageCompletion
{
    private OffStageResult<T> _result;

    public void Execute()
    {
        // Off-stage code must not see the stage's context, or its awaits would hop back onto the stage; it runs
        // under the executor's context instead, so its continuations stay on the executor seam.
        var previous = SynchronizationContext.Current;
        SynchronizationContext.SetSynchronizationContext(stage.OffStageContext);
        try
        {
            if (work is not null)
            {
                try
                {
                    _result = new OffStageResult<T>(work(), null, ErrorCodes.Success);
                }
                catch (Exception ex)
                {
                    _result = new OffStageResult<T>(default, ex, ErrorCodes.HandlerFailed);
                }

                stage.PostCompletion(this);
            }
            else
            {
                _ = RunAsync();
            }
        }
        finally
        {
            SynchronizationContext.SetSynchronizationContext(previous);
        }
    }

    public void Complete(StageHost host)
    {
        host.OnOffStageCompleted();
        continuation(_result);
    }

    public void Discard()
    {
        // The continuation owned the value; with the stage gone, a pooled buffer (or anything disposable) in it
        // is returned here, exactly once.
        var value = _result.Value;
        if (value is Payload payload)
        {
            payload.DisposeIfOwner();
        }
        else if (value is IDisposable disposable)
        {
            disposable.Dispose();
        }
    }

    private async Task RunAsync()
    {
        try
        {
            var value = await asyncWork!();
            _result = new OffStageResult<T>(value, null, ErrorCodes.Success);
        }
        catch (Exception ex)
        {
            _result = new OffStageResult<T>(default, ex, ErrorCodes.HandlerFailed);
        }

        stage.PostCompletion(this);
    }
}
