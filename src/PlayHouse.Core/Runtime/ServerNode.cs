using PlayHouse.Core.Pooling;
using PlayHouse.Core.Seams;

namespace PlayHouse.Core.Runtime;

/// <summary>The seams a server node runs on. Only a composition root (a cluster builder) picks them.</summary>
public sealed record NodeSeams(TimeProvider Time, IExecutor Executor, IRandomSource Random, MessagePool Pool)
{
    public RuntimeObserver Observer { get; init; } = RuntimeObserver.None;
}

/// <summary>
/// What play and API servers share: the request table, reply routing with its exactly-once ledger, and
/// the mesh endpoint. Replies are recognised here and only ever complete requests: they never reach a
/// handler and never produce another message (B12).
/// </summary>
/// <remarks>Thread-safe.</remarks>
public abstract class ServerNode : IMeshEndpoint, IDisposable
{
    private readonly Lock _inboundGate = new();
    private readonly HashSet<long> _openInbound = [];
    private long _nextInboundId;

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
        Options = options ?? new ServerOptions();
        Options.Validate();
        OffStageContext = new ExecutorSynchronizationContext(Executor);
        Requests = new RequestTable(this);
    }

    public string NodeId { get; }

    public TimeProvider Time { get; }

    public IExecutor Executor { get; }

    public IRandomSource Random { get; }

    public MessagePool Pool { get; }

    public RuntimeObserver Observer { get; }

    public ServerOptions Options { get; }

    public ServerCounters Counters { get; } = new();

    /// <summary>The context off-stage work and API handlers run under, so their awaits resume through the executor.</summary>
    internal ExecutorSynchronizationContext OffStageContext { get; }

    /// <summary>The mesh this node sends through; wired by the cluster builder.</summary>
    public IMeshTransport? Mesh { get; set; }

    /// <summary>Outgoing requests still waiting for a reply or a timeout.</summary>
    public int PendingRequestCount => Requests.PendingCount;

    /// <summary>Inbound requests that a handler has not answered yet.</summary>
    public int UnansweredRequestCount
    {
        get
        {
            lock (_inboundGate)
            {
                return _openInbound.Count;
            }
        }
    }

    internal RequestTable Requests { get; }

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

    public virtual void Dispose()
    {
        Requests.Dispose();
        GC.SuppressFinalize(this);
    }

    /// <summary>Opens the exactly-once ledger entry of a request that arrived over the mesh.</summary>
    internal ReplyToken OpenMeshToken(in MeshMessage message, long stageId)
    {
        if (!message.IsRequest)
        {
            return default;
        }

        return new ReplyToken(ReplyRoute.Mesh, OpenInbound(), message.MsgId, 0, 0, message.From, message.MsgSeq, stageId);
    }

    /// <summary>Opens the exactly-once ledger entry of a request from a client session.</summary>
    internal ReplyToken OpenClientToken(long sessionId, ushort msgSeq, long stageId, string msgId)
    {
        if (msgSeq == 0)
        {
            return default;
        }

        return new ReplyToken(ReplyRoute.Client, OpenInbound(), msgId, sessionId, msgSeq, null, 0, stageId);
    }

    private long OpenInbound()
    {
        lock (_inboundGate)
        {
            var id = ++_nextInboundId;
            _openInbound.Add(id);
            return id;
        }
    }

    /// <summary>Sends the one reply a request accepts; a second reply throws and is counted.</summary>
    internal void SendReply(in ReplyToken token, string msgId, Payload payload, ushort errorCode, long fromStageId)
    {
        if (!TryCloseInbound(token))
        {
            payload.DisposeIfOwner();
            if (!token.IsRequest)
            {
                throw new InvalidOperationException($"Reply({msgId}) to a packet that is not a request: one-way messages take no reply.");
            }

            throw new InvalidOperationException($"Request {token.RequestMsgId} ({token}) was already answered; a request takes exactly one reply.");
        }

        RouteReply(token, msgId, payload, errorCode, fromStageId);
    }

    /// <summary>Replies with an error unless the request was answered already; used by the runtime's own failure paths.</summary>
    internal bool TryReplyError(in ReplyToken token, ushort errorCode, long fromStageId)
    {
        if (!token.IsRequest || !TryCloseInbound(token))
        {
            return false;
        }

        RouteReply(token, token.RequestMsgId, Payload.Empty, errorCode, fromStageId);
        return true;
    }

    private bool TryCloseInbound(in ReplyToken token)
    {
        if (!token.IsRequest)
        {
            return false;
        }

        lock (_inboundGate)
        {
            if (_openInbound.Remove(token.InboundId))
            {
                return true;
            }
        }

        Counters.AddSecondReplyAttempt();
        return false;
    }

    private void RouteReply(in ReplyToken token, string msgId, Payload payload, ushort errorCode, long fromStageId)
    {
        switch (token.Route)
        {
            case ReplyRoute.Client:
                SendToSession(token.SessionId, msgId, token.ClientMsgSeq, token.StageId, errorCode, payload);
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
    internal virtual void SendToSession(long sessionId, string msgId, ushort msgSeq, long stageId, ushort errorCode, Payload payload)
    {
        Counters.AddReplyToClosedSession();
        payload.DisposeIfOwner();
    }

    /// <summary>Sends over the mesh, or delivers locally when the target is this node.</summary>
    internal bool SendMesh(string targetNodeId, in MeshMessage message)
    {
        if (string.Equals(targetNodeId, NodeId, StringComparison.Ordinal))
        {
            OnMeshMessage(message);
            return true;
        }

        if (Mesh is not null && Mesh.Send(targetNodeId, message))
        {
            return true;
        }

        if (Mesh is null)
        {
            message.Payload.DisposeIfOwner();
        }

        Counters.AddMeshSendToUnknownServer();
        Observer.OnDropped(NodeId, "unknown-server", message.MsgId);
        return false;
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
        if (fromStage is not null && stageId != 0 && stageId == fromStage.StageId && string.Equals(targetNodeId, NodeId, StringComparison.Ordinal))
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
            IsSystem = systemOp != SystemOp.None,
            ServiceId = (int)systemOp,
            StageType = stageType,
            Payload = payload,
        });
        if (!sent)
        {
            Requests.FailFast(request, ErrorCodes.ServerNotFound);
        }
    }

    /// <summary>Runs a reply callback: on the requesting stage when there is one, otherwise on the executor.</summary>
    internal void DeliverCallback(PendingRequest request, Response response)
    {
        if (request.Stage is not null)
        {
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
