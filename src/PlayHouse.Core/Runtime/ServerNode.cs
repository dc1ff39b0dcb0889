using System.Runtime.CompilerServices;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Seams;

namespace PlayHouse.Core.Runtime;

/// <summary>The seams a server node runs on. Only a composition root (a cluster builder) picks them.</summary>
public sealed record NodeSeams(TimeProvider Time, IExecutor Executor, IRandomSource Random, MessagePool Pool)
{
    public RuntimeObserver Observer { get; init; } = RuntimeObserver.None;

    /// <summary>The components the node builds itself from (standard unless a test bed plugs variants in).</summary>
    public NodeParts Parts { get; init; } = NodeParts.Standard;
}

/// <summary>
/// What play and API servers share: the request table, reply routing with its exactly-once ledger, and
/// the mesh endpoint. Replies are recognised here and only ever complete requests: they never reach a
/// handler and never produce another message (B12).
/// </summary>
/// <remarks>Thread-safe.</remarks>
public abstract class ServerNode : IMeshEndpoint, IDisposable
{
    // The exactly-once ledger of inbound requests (see InboundLedger).
    private readonly InboundLedger _inbound;

    protected ServerNode(string nodeId, NodeSeams seams, ServerOptions? options)
    {
        ArgumentException.ThrowIfNullOrEmpty(nodeId);
        ArgumentNullException.ThrowIfNull(seams);
        NodeId = nodeId;
        Time = seams.Time;
        Executor = seams.Executor;
        Random = seams.Random;
        Pool = seams.Pool;
        Observer = seams.Observer;
        Parts = seams.Parts;
        Options = options ?? new ServerOptions();
        Options.Validate();
        if (Options.SingleThreaded && Executor is ThreadPoolExecutor)
        {
            // Skipping the locks on the ThreadPool would race silently; refuse the combination where it is made.
            throw new ArgumentException($"Node {nodeId}: ServerOptions.SingleThreaded needs a single-threaded executor, not the ThreadPool executor.", nameof(options));
        }

        _inbound = new InboundLedger(Options, Counters);
        OffStageContext = new ExecutorSynchronizationContext(Executor);
        Requests = Parts.RequestTable(this);
        ReplyAddressing = Parts.ReplyAddressing?.Invoke(this);
        TickAdmission = Parts.TickAdmission(Options);
        SenderIds = Parts.SenderIds(this);
    }

    public string NodeId { get; }

    public TimeProvider Time { get; }

    public IExecutor Executor { get; }

    public IRandomSource Random { get; }

    public MessagePool Pool { get; }

    public RuntimeObserver Observer { get; }

    /// <summary>The components this node was built from (<see cref="NodeSeams.Parts"/>).</summary>
    public NodeParts Parts { get; }

    public ServerOptions Options { get; }

    public ServerCounters Counters { get; } = new();

    /// <summary>The context off-stage work and API handlers run under, so their awaits resume through the executor.</summary>
    internal ExecutorSynchronizationContext OffStageContext { get; }

    /// <summary>
    /// The sender ids of mesh frames this node received, as shared strings: its mesh transports hand it to their
    /// decoders, so a peer's id is one string however many frames it sends.
    /// </summary>
    public Mesh.ISenderIdCache SenderIds { get; }

    /// <summary>The mesh this node sends through; wired by the cluster builder.</summary>
    public IMeshTransport? Mesh { get; set; }

    /// <summary>Outgoing requests still waiting for a reply or a timeout.</summary>
    public int PendingRequestCount => Requests.PendingCount;

    /// <summary>Inbound requests that a handler has not answered yet and whose requesters' deadlines have not passed.</summary>
    /// <remarks>Reading it first drops the entries that expired (counted in <see cref="ServerCounters.UnansweredRequestsExpired"/>).</remarks>
    public int UnansweredRequestCount => _inbound.Count(Time.GetTimestamp());

    internal IRequestTable Requests { get; }

    /// <summary>The part that addresses replies, or null for the standard rule (the packet's own token).</summary>
    internal IReplyAddressing? ReplyAddressing { get; }

    /// <summary>Decides which timer and game-loop ticks of this node's stages are posted (<see cref="NodeParts.TickAdmission"/>).</summary>
    internal ITickAdmission TickAdmission { get; }

    public void OnMeshMessage(in MeshMessage message)
    {
        if (message.IsReply)
        {
            if (message.IsReplyFrame)
            {
                Requests.CompleteWithReply(message);
            }
            else
            {
                Counters.AddUnknownReply();
                Observer.OnDropped(NodeId, "reply-without-seq", message.MsgId);
                message.Payload.DisposeIfOwner();
            }

            return;
        }

        OnInboundMessage(message);
    }

    /// <summary>Handles a non-reply mesh message; ownership of its payload passes here.</summary>
    protected abstract void OnInboundMessage(in MeshMessage message);

    /// <summary>
    /// Hands a mesh message to the node's dispatcher as any inbound message (routed by its stage id or msg id),
    /// whatever its header says; ownership of its payload passes here. The standard reply path never calls it: a
    /// reply only ever completes a request (B12).
    /// </summary>
    internal void DispatchAsMessage(in MeshMessage message) => OnInboundMessage(message);

    public virtual void Dispose()
    {
        // Every request completes exactly once, a stop included: what still waits for a reply is failed now, since
        // nothing would ever answer it once the node's timer is gone.
        Requests.FailAll(ErrorCodes.ServerStopping);
        Requests.Dispose();
        GC.SuppressFinalize(this);
    }

    /// <summary>
    /// Opens the exactly-once ledger entry of a request that arrived over the mesh (a one-way message needs none and
    /// gets the default token). False when the ledger is at <see cref="ServerOptions.UnansweredRequestsMax"/>: the
    /// requester was already answered with <see cref="ErrorCodes.TooManyUnansweredRequests"/> (counted), and the caller
    /// must release the payload and drop the message.
    /// </summary>
    internal bool TryOpenMeshToken(in MeshMessage message, long stageId, out ReplyToken token) =>
        TryOpenMeshToken(message, stageId, out token, out _);

    /// <summary>
    /// As <see cref="TryOpenMeshToken(in MeshMessage, long, out ReplyToken)"/>; also gives the timestamp from which the
    /// request is stale in a stage's mailbox: its requester's deadline when the request carries its timeout and
    /// <see cref="ServerOptions.ShedMeshRequestsPastDeadline"/> is on, else 0 (never).
    /// </summary>
    internal bool TryOpenMeshToken(in MeshMessage message, long stageId, out ReplyToken token, out long staleAtTimestamp)
    {
        token = default;
        staleAtTimestamp = 0;
        if (!message.IsRequest)
        {
            return true;
        }

        // The entry lives as long as its requester waits: the timeout the request carries, else this node's default
        // (a sender that passed no timeout used its own default, and the nodes of one cluster share their options).
        var timeout = message.TimeoutMs > 0 ? TimeSpan.FromMilliseconds(message.TimeoutMs) : Options.RequestTimeout;
        var unanswered = ReplyToken.ToMesh(0, message.MsgId, message.From, message.MsgSeq, stageId);
        if (!TryOpenInbound(timeout, Time.GetTimestamp(), out var id, out var deadline))
        {
            RefuseOverLedgerCap(unanswered, stageId);
            return false;
        }

        // Only a deadline the requester stated is grounds to shed: this node's default is a guess about the requester.
        if (message.TimeoutMs > 0 && Options.ShedMeshRequestsPastDeadline)
        {
            staleAtTimestamp = deadline;
        }

        token = ReplyToken.ToMesh(id, message.MsgId, message.From, message.MsgSeq, stageId);
        return true;
    }

    /// <summary>
    /// Opens the exactly-once ledger entry of a request from a client session; false as for
    /// <see cref="TryOpenMeshToken(in MeshMessage, long, out ReplyToken)"/>. The entry expires
    /// <see cref="ServerOptions.RequestTimeout"/> after <paramref name="receivedTimestamp"/>, the arrival of the request on
    /// this node's clock, or after now when it is null.
    /// </summary>
    internal bool TryOpenClientToken(ClientSession session, ushort msgSeq, long stageId, string msgId, long? receivedTimestamp, out ReplyToken token)
    {
        token = default;
        if (msgSeq == 0)
        {
            return true;
        }

        // A client's timeout is not on the wire; PlayHouse clients default to the same 30 s as RequestTimeout.
        if (!TryOpenInbound(Options.RequestTimeout, receivedTimestamp ?? Time.GetTimestamp(), out var id, out _))
        {
            RefuseOverLedgerCap(ReplyToken.ToClient(0, msgId, session, msgSeq, stageId), stageId);
            return false;
        }

        token = ReplyToken.ToClient(id, msgId, session, msgSeq, stageId);
        return true;
    }

    /// <summary>
    /// Answers a mesh request at once with a runtime error, without a ledger entry: the runtime replies before anything
    /// else can, so exactly once holds by construction, and a full ledger cannot stop the answer.
    /// </summary>
    internal void ReplyErrorNow(in MeshMessage message, ushort errorCode, long stageId)
    {
        if (!message.IsRequest)
        {
            return;
        }

        RouteReply(ReplyToken.ToMesh(0, message.MsgId, message.From, message.MsgSeq, stageId), message.MsgId, Payload.Empty, errorCode, stageId);
    }

    private void RefuseOverLedgerCap(in ReplyToken unanswered, long stageId)
    {
        Counters.AddUnansweredRequestRefused();
        Observer.OnDropped(NodeId, nameof(ErrorCodes.TooManyUnansweredRequests), unanswered.RequestMsgId);
        RouteReply(unanswered, unanswered.RequestMsgId, Payload.Empty, ErrorCodes.TooManyUnansweredRequests, stageId);
    }

    private bool TryOpenInbound(TimeSpan timeout, long now, out long id, out long deadline)
    {
        deadline = now + TimestampSpan.ToDelta(timeout, Time.TimestampFrequency);
        return _inbound.TryOpen(now, deadline, out id);
    }

    /// <summary>
    /// Opens the ledger entries of a batch's client requests under one lock, as <see cref="TryOpenClientToken"/> would one
    /// by one (the entries are swept once, as the later ones of a run of opens at one instant would find nothing more to
    /// sweep). A request over the cap is marked <see cref="BatchedFrameState.RefusedByLedger"/> and answered afterwards.
    /// </summary>
    internal void OpenClientTokens(ClientFrameBatch batch, long now) =>
        _inbound.OpenBatch(batch, now, now + TimestampSpan.ToDelta(Options.RequestTimeout, Time.TimestampFrequency));

    /// <summary>Answers a batched request the ledger refused (<see cref="OpenClientTokens"/>), as <see cref="TryOpenClientToken"/> does at once.</summary>
    internal void RefuseOverLedgerCap(in ClientFrameBatch.Entry entry) =>
        RefuseOverLedgerCap(ReplyToken.ToClient(0, entry.MsgId, entry.Session, entry.MsgSeq, entry.StageId), entry.StageId);

    /// <summary>Sends the one reply a request accepts; a second reply throws and is counted.</summary>
    /// <remarks>
    /// A reply after the request's ledger entry expired is counted and still sent, without an exception. Kept out of
    /// line: with profile-guided devirtualisation the whole reply path (ledger, routing, the connection's send and
    /// the frame encoder) was inlined into the handler that replies, which used up the JIT's inlining budget there,
    /// so trivial calls in the handler and on this path stayed calls and their results went through the stack.
    /// </remarks>
    [MethodImpl(MethodImplOptions.NoInlining)]
    internal void SendReply(in ReplyToken token, string msgId, Payload payload, ushort errorCode, long fromStageId) =>
        SendReply(token, msgId, payload, errorCode, fromStageId, nowTimestamp: null);

    /// <summary>
    /// <see cref="SendReply(in ReplyToken, string, Payload, ushort, long)"/> judging the entry's expiry at
    /// <paramref name="nowTimestamp"/> (a reading of this node's clock the caller already holds), or at a fresh reading
    /// when it is null.
    /// </summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    internal void SendReply(in ReplyToken token, string msgId, Payload payload, ushort errorCode, long fromStageId, long? nowTimestamp)
    {
        switch (CloseInbound(token, nowTimestamp))
        {
            case InboundClose.Closed:
                RouteReply(token, msgId, payload, errorCode, fromStageId);
                return;
            case InboundClose.Expired:
                // Still sent: the deadline was this node's estimate (a client's timeout is not on the wire), and the
                // requester tells a late reply from a useful one itself (its LateReplies counter).
                Counters.AddReplyAfterExpiry();
                RouteReply(token, msgId, payload, errorCode, fromStageId);
                return;
            case InboundClose.NotRequest:
                payload.DisposeIfOwner();
                throw new InvalidOperationException($"Reply({msgId}) to a packet that is not a request: one-way messages take no reply.");
            default:
                payload.DisposeIfOwner();
                throw new InvalidOperationException($"Request {token.RequestMsgId} ({token}) was already answered; a request takes exactly one reply.");
        }
    }

    /// <summary>Replies with an error unless the request was answered already; used by the runtime's own failure paths.</summary>
    internal bool TryReplyError(in ReplyToken token, ushort errorCode, long fromStageId)
    {
        var closed = CloseInbound(token, nowTimestamp: null);
        if (closed == InboundClose.Expired)
        {
            Counters.AddReplyAfterExpiry();
        }
        else if (closed != InboundClose.Closed)
        {
            return false;
        }

        RouteReply(token, token.RequestMsgId, Payload.Empty, errorCode, fromStageId);
        return true;
    }

    private InboundClose CloseInbound(in ReplyToken token, long? nowTimestamp)
    {
        if (!token.IsRequest)
        {
            return InboundClose.NotRequest;
        }

        var closed = _inbound.Close(token.InboundId, nowTimestamp ?? Time.GetTimestamp());
        if (closed == InboundClose.AlreadyAnswered)
        {
            Counters.AddSecondReplyAttempt();
        }

        return closed;
    }

    private void RouteReply(in ReplyToken token, string msgId, Payload payload, ushort errorCode, long fromStageId)
    {
        switch (token.Route)
        {
            case ReplyRoute.Client:
                SendToSession(token.Session!, msgId, token.ClientMsgSeq, token.StageId, errorCode, payload);
                break;
            case ReplyRoute.Mesh:
                SendMesh(token.MeshNodeId!, new MeshMessage
                {
                    IsReply = true,
                    MsgSeq = token.MeshMsgSeq,
                    MsgId = msgId,
                    ErrorCode = errorCode,
                    From = NodeId,
                    StageId = fromStageId,
                    Payload = payload,
                });
                break;
            default:
                payload.DisposeIfOwner();
                break;
        }
    }

    /// <summary>Delivers a reply to a client session; API servers have none.</summary>
    internal virtual void SendToSession(ClientSession session, string msgId, ushort msgSeq, long stageId, ushort errorCode, Payload payload)
    {
        Counters.AddReplyToClosedSession();
        payload.DisposeIfOwner();
    }

    /// <summary>
    /// Sends over the mesh, or delivers locally when the target is this node. A message the mesh refuses is counted
    /// and reported as dropped: to an unknown server, or past the cap of the send queue towards it (a slow or clogged
    /// peer), where it is refused rather than queued without a bound.
    /// </summary>
    internal MeshSendResult SendMesh(string targetNodeId, in MeshMessage message)
    {
        if (string.Equals(targetNodeId, NodeId, StringComparison.Ordinal))
        {
            OnMeshMessage(message);
            return MeshSendResult.Sent;
        }

        var result = MeshSendResult.UnknownServer;
        if (Mesh is not null)
        {
            result = Mesh.TrySend(targetNodeId, message);
        }
        else
        {
            message.Payload.DisposeIfOwner();
        }

        switch (result)
        {
            case MeshSendResult.Sent:
                break;
            case MeshSendResult.QueueFull:
                Counters.AddMeshSendRefused();
                Observer.OnDropped(NodeId, "mesh-send-queue-full", message.MsgId);
                break;
            default:
                Counters.AddMeshSendToUnknownServer();
                Observer.OnDropped(NodeId, "unknown-server", message.MsgId);
                break;
        }

        return result;
    }

    internal void SendOneWay(string targetNodeId, long stageId, string msgId, Payload payload, long fromStageId) =>
        SendMesh(targetNodeId, new MeshMessage
        {
            MsgId = msgId,
            From = NodeId,
            StageId = stageId,
            FromStageId = fromStageId,
            Payload = payload,
        });

    internal Task<Response> RequestAsync(string targetNodeId, long stageId, string msgId, Payload payload, TimeSpan? timeout, StageHost? fromStage, SystemOp systemOp, string? stageType)
    {
        var request = new PendingRequest
        {
            Completion = new TaskCompletionSource<Response>(TaskCreationOptions.RunContinuationsAsynchronously),
            SenderAwaits = fromStage is not null,
        };
        StartRequest(request, targetNodeId, stageId, msgId, payload, timeout, fromStage, systemOp, stageType);
        return request.Completion.Task;
    }

    internal void RequestWithCallback(string targetNodeId, long stageId, string msgId, Payload payload, Action<Response> callback, TimeSpan? timeout, StageHost? fromStage)
    {
        ArgumentNullException.ThrowIfNull(callback);
        var request = new PendingRequest { Callback = callback };
        StartRequest(request, targetNodeId, stageId, msgId, payload, timeout, fromStage, SystemOp.None, stageType: null);
    }

    private void StartRequest(PendingRequest request, string targetNodeId, long stageId, string msgId, Payload payload, TimeSpan? timeout, StageHost? fromStage, SystemOp systemOp, string? stageType)
    {
        request.TargetNodeId = targetNodeId;
        request.TargetStageId = stageId;
        request.MsgId = msgId;
        request.Stage = fromStage;
        if (fromStage is not null && stageId != 0 && IsSelfRequest(fromStage, targetNodeId, stageId))
        {
            // A stage requesting itself would wait behind its own handler until the timeout (B9): fail fast.
            Counters.AddSelfRequestRefused();
            payload.DisposeIfOwner();
            Requests.Deliver(request, RequestOutcome.FailedFast, Response.Error(ErrorCodes.SelfRequest, msgId));
            return;
        }

        if (!Requests.TryRegister(request, timeout ?? Options.RequestTimeout))
        {
            Counters.AddPendingRequestRefused();
            payload.DisposeIfOwner();
            Requests.Deliver(request, RequestOutcome.FailedFast, Response.Error(ErrorCodes.TooManyPendingRequests, msgId));
            return;
        }

        if (request.SenderAwaits)
        {
            fromStage!.NoteAwaiting(request);
        }

        Observer.OnRequestIssued(NodeId, request.MsgSeq, targetNodeId, stageId, msgId);

        var sent = SendMesh(targetNodeId, new MeshMessage
        {
            MsgSeq = request.MsgSeq,
            MsgId = msgId,
            From = NodeId,
            StageId = stageId,
            FromStageId = fromStage?.StageId ?? 0,
            SenderAwaits = request.SenderAwaits,
            TimeoutMs = timeout is { } explicitTimeout ? ToWireTimeoutMs(explicitTimeout) : 0,
            AwaitChain = request.SenderAwaits ? fromStage!.AwaitChainOfCurrentHandler() : null,
            IsSystem = systemOp != SystemOp.None,
            ServiceId = (int)systemOp,
            StageType = stageType,
            Payload = payload,
        });
        if (sent != MeshSendResult.Sent)
        {
            // Refused at once, never queued: the requester hears why now instead of waiting for its timeout.
            Requests.FailFast(request, sent == MeshSendResult.QueueFull ? ErrorCodes.MeshSendQueueFull : ErrorCodes.ServerNotFound);
        }
    }

    private bool IsSelfRequest(StageHost fromStage, string targetNodeId, long stageId) =>
        Parts.CycleGuard is { } guard
            ? guard.RefusesSelfRequest(this, fromStage, targetNodeId, stageId)
            : stageId == fromStage.StageId && string.Equals(targetNodeId, NodeId, StringComparison.Ordinal);

    /// <summary>A timeout in whole milliseconds for the route header, rounded up so the receiver never expires the
    /// ledger entry before the requester gives up.</summary>
    private static uint ToWireTimeoutMs(TimeSpan timeout) =>
        (uint)Math.Clamp(Math.Ceiling(timeout.TotalMilliseconds), 1, uint.MaxValue);

    /// <summary>Runs a reply callback: on the requesting stage when there is one, otherwise on the executor.</summary>
    internal void DeliverCallback(PendingRequest request, Response response)
    {
        if (request.Stage is not null)
        {
            if (Parts.CallbackDispatch is { } dispatch && dispatch.TryRunNow(request, response))
            {
                return;
            }

            if (!request.Stage.PostReplyCallback(request.Callback!, response))
            {
                // The requesting stage closed; nobody is left to hear the outcome.
                response.Dispose();
            }

            return;
        }

        Executor.Schedule(new CallbackWorkItem(request.Callback!, response));
    }

    private sealed class CallbackWorkItem(Action<Response> callback, Response response) : IThreadPoolWorkItem
    {
        public void Execute()
        {
            try
            {
                callback(response);
            }
            finally
            {
                response.Dispose();
            }
        }
    }
}

/// <summary>How closing a ledger entry went.</summary>
internal enum InboundClose
{
    Closed,
    AlreadyAnswered,
    Expired,
    NotRequest,
}

/// <summary>A bounded set of the most recent ids added: the oldest is forgotten when it is full.</summary>
/// <remarks>Not thread-safe; the owner locks.</remarks>
internal sealed class RecentIds(int capacity)
{
    private readonly HashSet<long> _ids = [];
    private readonly Queue<long> _order = new();

    public void Add(long id)
    {
        if (capacity == 0)
        {
            return;
        }

        if (_order.Count >= capacity)
        {
            _ids.Remove(_order.Dequeue());
        }

        _order.Enqueue(id);
        _ids.Add(id);
    }

    /// <summary>Forgets an id; true when it was remembered. Its place in the order is freed when it comes up.</summary>
    public bool Remove(long id) => _ids.Remove(id);
}
