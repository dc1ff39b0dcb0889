using PlayHouse.Core.Pooling;

namespace PlayHouse.Core.Runtime;

/// <summary>
/// The handle the user's stage holds (<see cref="IStageLink"/>), and the stage's entry points for the rest of the node:
/// each hands the call to the part that owns it (sending to the server, timers and the game loop to
/// <see cref="StageTimers"/>, off-stage work to <see cref="OffStageSlots"/>, awaited requests to
/// <see cref="StageRequestChains"/>).
/// </summary>
/// <remarks>
/// Invariant: the link adds no state of its own beyond the one clock reading per turn its replies share.
/// Threading: the link is called from the stage's own callbacks (its turns), as <see cref="IStageLink"/> says; the
/// entry points say which thread calls them.
/// </remarks>
internal sealed partial class StageHost
{
    private readonly IMeshSendPayloads _meshSends;

    public IReadOnlyList<IActor> Actors => ActorDirectory.InJoinOrder;

    public bool IsGameLoopRunning => Timers.IsGameLoopRunning;

    // ---- Sending ----

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

    // ---- Timers, the game loop, off-stage work ----

    public long AddRepeatTimer(TimeSpan initialDelay, TimeSpan period, Action callback) => Timers.AddTimer(initialDelay, period, 0, callback);

    public long AddCountTimer(TimeSpan initialDelay, TimeSpan period, int count, Action callback)
    {
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(count);
        return Timers.AddTimer(initialDelay, period, count, callback);
    }

    public bool CancelTimer(long timerId) => Timers.CancelTimer(timerId);

    public bool HasTimer(long timerId) => Timers.HasTimer(timerId);

    public void StartGameLoop(TimeSpan fixedStep, Action<GameLoopStep> callback, int catchUpStepsMax = 5) =>
        Timers.StartGameLoop(fixedStep, callback, catchUpStepsMax);

    public void StopGameLoop() => Timers.StopGameLoop();

    public void RunOffStage<T>(Func<T> work, Action<OffStageResult<T>> continuation)
    {
        ArgumentNullException.ThrowIfNull(work);
        ArgumentNullException.ThrowIfNull(continuation);
        OffStage.Start(new OffStageWork<T>(this, work, null, continuation));
    }

    public void RunOffStageAsync<T>(Func<Task<T>> work, Action<OffStageResult<T>> continuation)
    {
        ArgumentNullException.ThrowIfNull(work);
        ArgumentNullException.ThrowIfNull(continuation);
        OffStage.Start(new OffStageWork<T>(this, null, work, continuation));
    }

    // ---- Entry points for the rest of the node ----

    /// <summary>
    /// True when queuing <paramref name="request"/> (a request whose sending stage awaits it) would close a cycle of
    /// awaiting stages: this stage's current handler awaits a request to the sender (A&lt;-&gt;B), or this stage is in
    /// the request's await chain and still awaits the request named there (A-&gt;B-&gt;C-&gt;A, any length up to
    /// <see cref="AwaitingStage.ChainLengthMax"/>, across nodes). Either way the request would wait behind a handler
    /// that waits for it, until the timeout. Any thread.
    /// </summary>
    public bool IsInCycleWith(in MeshMessage request)
    {
        if (Chains is { } chains && chains.IsInChainedCycleWith(request))
        {
            return true;
        }

        // Waits that started independently (three handlers, each started by its own client, each awaiting the next)
        // carry no chain that names them all; on one server the stages' own waits show the cycle.
        return string.Equals(request.From, NodeId, StringComparison.Ordinal) && _server.AwaitsLocalStage(this, request.FromStageId);
    }

    /// <summary>
    /// Adds the stages of this server that the current handler awaits to <paramref name="into"/>; nothing when no
    /// handler is in progress. Takes only this stage's lock; any thread.
    /// </summary>
    internal void CollectLocalAwaitTargets(List<long> into) => Chains?.CollectLocalAwaitTargets(into);

    /// <summary>The await chain for a request the current handler sends and awaits (see <see cref="StageRequestChains"/>); from the stage's turns.</summary>
    internal AwaitingStage[]? AwaitChainOfCurrentHandler() => Chains?.AwaitChainOfCurrentHandler();

    /// <summary>The current handler sent <paramref name="request"/> and awaits it; from the stage's turns.</summary>
    internal void NoteAwaiting(PendingRequest request) => ChainsForTurn().NoteAwaiting(request);

    /// <summary><paramref name="request"/>, sent from this stage, completed; any thread.</summary>
    internal void OnRequestCompleted(PendingRequest request)
    {
        if (request.SenderAwaits)
        {
            Chains?.OnRequestCompleted(request);
        }
    }

    /// <summary>Posts the eviction of a waiting actor the server's ledger chose to make room under its cap (any thread).</summary>
    internal void PostEviction(WaitingActor entry)
    {
        // A closed stage refuses the post; closing destroyed the actor already.
        Post(new StageMessage { Kind = StageWorkKind.EvictDisconnected, State = entry });
    }

    /// <summary>Posts a reply callback of a request this stage sent (any thread); false when the stage closed.</summary>
    internal bool PostReplyCallback(Action<Response> callback, in Response response) =>
        Post(new StageMessage
        {
            Kind = StageWorkKind.ReplyCallback,
            State = callback,
            MsgId = response.MsgId,
            ErrorCode = response.ErrorCode,
            Payload = response.Payload,
        });
}
