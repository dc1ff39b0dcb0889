using System.Runtime.CompilerServices;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Seams;

namespace PlayHouse.Core.Runtime;

/// <summary>
/// Runs one stage: a capped mailbox drained by one logical executor, one handler at a time. This file holds the stage's
/// identity, its parts and the posting into its mailbox; <c>StageHost.Turn.cs</c> is the turn that drains it, and
/// <c>StageHost.Link.cs</c> the handle the user's stage holds. What the handlers do beyond running belongs to the parts:
/// creation and closing (<see cref="StageLifecycle"/>), the actors (<see cref="ActorDirectory"/>), the expiry and idle
/// timer (<see cref="StageHousekeeping"/>), the requests its handlers await (<see cref="StageRequestChains"/>), timers
/// and the game loop (<see cref="StageTimers"/>), off-stage work (<see cref="OffStageSlots"/>) and the shedding of stale
/// messages (<see cref="StaleMessageShedding"/>).
/// </summary>
/// <remarks>
/// Invariant: a closed stage queues nothing (every post checks the state under the lock), and the stage is scheduled on
/// the executor at most once at a time (the scheduled flag, set by the post that schedules and cleared by the turn that
/// finds no work).
/// Threading: posting is thread-safe (the stage's lock, <see cref="Gate"/>, guards the queues, the scheduling flags and
/// the state, and the parts take it for what they share with other threads). Everything else runs inside the stage's
/// turns, which the executor never runs concurrently.
/// </remarks>
internal sealed partial class StageHost : IThreadPoolWorkItem, IStageLink
{
    private readonly PlayServer _server;
    private readonly Lock? _gate;
    private readonly IStageMailbox _mailbox;
    private readonly Queue<(SendOrPostCallback Callback, object? State)> _continuations = new();
    private readonly StageSynchronizationContext _syncContext;
    private readonly Action _onHandlerResumed;
    private readonly IHandlerCompletion _completion;
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

    // Made at the first request a handler awaits or the first message a stage waits on: most stages never see either.
    private StageRequestChains? _chains;

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
        _completion = server.Parts.HandlerCompletion;
        _meshSends = server.Parts.MeshSendPayloads;
        Lifecycle = new StageLifecycle(this);
        ActorDirectory = new ActorDirectory(this, registration);
        Housekeeping = new StageHousekeeping(this);
        Timers = new StageTimers(this);
        OffStage = new OffStageSlots(this);
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

    /// <summary>The stage's lock (null on a single-threaded node): the parts take it for the state they share with other threads.</summary>
    internal Lock? Gate => _gate;

    /// <summary>True once the stage closed; read under <see cref="Gate"/>.</summary>
    internal bool IsClosedUnderGate => _state == StageState.Closed;

    /// <summary>True while a handler of this stage is in progress (suspended at an await included); read under <see cref="Gate"/>.</summary>
    internal bool IsHandlerInProgressUnderGate => _handlerInProgress;

    /// <summary>True while a turn of this stage runs (on some thread).</summary>
    internal bool IsInTurn => Volatile.Read(ref _executing) != 0;

    internal StageLifecycle Lifecycle { get; }

    internal ActorDirectory ActorDirectory { get; }

    internal StageHousekeeping Housekeeping { get; }

    internal StageTimers Timers { get; }

    internal OffStageSlots OffStage { get; }

    /// <summary>The requests this stage's handlers await and who awaits them; null until the first such request or message.</summary>
    internal StageRequestChains? Chains => Volatile.Read(ref _chains);

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

    // ---- State shared with the parts ----

    /// <summary>The create succeeded: the stage runs (called from its Create turn).</summary>
    internal void MarkRunning()
    {
        using (NodeLock.Enter(_gate))
        {
            _state = StageState.Running;
        }
    }

    /// <summary>Marks the stage closed, so it refuses every post, and takes what its mailbox still held, in order.</summary>
    internal List<StageMessage> CloseMailbox()
    {
        using (NodeLock.Enter(_gate))
        {
            _state = StageState.Closed;
            var orphans = new List<StageMessage>(_mailbox.Count);
            while (_mailbox.TryDequeue(out var orphan))
            {
                orphans.Add(orphan);
            }

            return orphans;
        }
    }

    /// <summary>True when nothing waits in the mailbox (checked once a handler ends).</summary>
    internal bool IsMailboxEmpty()
    {
        using (NodeLock.Enter(_gate))
        {
            return _mailbox.Count == 0;
        }
    }

    /// <summary>Lets the mailbox drop its storage when it is empty (the stage has no actor left).</summary>
    internal void ReleaseMailboxStorageIfEmpty()
    {
        using (NodeLock.Enter(_gate))
        {
            _mailbox.ReleaseStorageIfEmpty();
        }
    }

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

    /// <summary>The request chains, made on first use; called from this stage's turns (or under its lock).</summary>
    internal StageRequestChains ChainsForTurn()
    {
        if (_chains is { } chains)
        {
            return chains;
        }

        // Published under the lock: the cycle checks of other threads read it there.
        using (NodeLock.Enter(_gate))
        {
            return _chains ??= new StageRequestChains(this);
        }
    }

    /// <summary>Counts a handler failure and tells the observer which handler threw what.</summary>
    internal void HandlerFailed(StageWorkKind kind, string? msgId, Exception error)
    {
        Counters.AddHandlerFailure();
        _server.Observer.OnHandlerFailed(NodeId, StageId, kind, msgId, error);
    }

    /// <summary>Tells the observer a lifecycle callback is about to run (for parts that run lifecycle steps).</summary>
    internal void ReportLifecycle(ActorHost? actor, LifecycleEvent lifecycleEvent) =>
        _server.Observer.OnLifecycle(NodeId, StageId, actor?.Instance ?? 0, actor?.AccountId ?? 0, lifecycleEvent);

    /// <summary>Asserts that the caller runs inside a turn of this stage: the parts' turn-only entry points call it.</summary>
    internal void AssertInTurn(string operation)
    {
        if (Volatile.Read(ref _executing) == 0)
        {
            ThrowOutsideTurn(operation);
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private void ThrowOutsideTurn(string operation) =>
        throw new InvalidOperationException($"{operation} of stage {StageId} on {NodeId} ran outside the stage's turns; it is called only from them.");

    /// <summary>The msg id of a join's reply: the one authentication chose, else the request's own.</summary>
    internal static string ReplyMsgId(string replyMsgId, string requestMsgId) => string.IsNullOrEmpty(replyMsgId) ? requestMsgId : replyMsgId;

    public override string ToString() => $"Stage({NodeId}/{StageId}, {StageType})";
}
