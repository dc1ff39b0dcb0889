using PlayHouse.Core.Pooling;

namespace PlayHouse.Core.Runtime;

/// <summary>An API handler: stateless, keyed by msg id.</summary>
public delegate ValueTask ApiHandler(IApiLink link, Packet packet);

/// <summary>
/// Stateless request handlers (<c>msgId -> handler</c>) that create stages and talk to them. Each message runs
/// as its own work item on the executor; handlers may run concurrently in real mode.
/// </summary>
/// <remarks>Thread-safe.</remarks>
public sealed class ApiServer : ServerNode, IApiLink
{
    private readonly Dictionary<string, ApiHandler> _handlers = new(StringComparer.Ordinal);

    public ApiServer(string nodeId, NodeSeams seams, ServerOptions? options = null)
        : base(nodeId, seams, options)
    {
    }

    /// <summary>Registers the handler of a msg id; register everything before messages arrive.</summary>
    public ApiServer Handle(string msgId, ApiHandler handler)
    {
        ArgumentException.ThrowIfNullOrEmpty(msgId);
        ArgumentNullException.ThrowIfNull(handler);
        if (!_handlers.TryAdd(msgId, handler))
        {
            throw new InvalidOperationException($"API msg id '{msgId}' already has a handler on {NodeId}.");
        }

        return this;
    }

    protected override void OnInboundMessage(in MeshMessage message)
    {
        if (!_handlers.TryGetValue(message.MsgId, out var handler))
        {
            Counters.AddUnknownApiMessage();
            Observer.OnDropped(NodeId, "unknown-api-msg", message.MsgId);
            message.Payload.DisposeIfOwner();
            ReplyErrorNow(message, ErrorCodes.HandlerNotFound, 0);
            return;
        }

        if (!TryOpenMeshToken(message, 0, out var reply))
        {
            message.Payload.DisposeIfOwner();
            return;
        }

        Executor.Schedule(new ApiInvocation(this, handler, new Packet(message.MsgId, message.Payload, reply)));
    }

    // ---- IApiLink ----

    public void Reply(in Packet request, ushort errorCode) => SendReply(AddressOf(request), request.MsgId, Payload.Empty, errorCode, 0);

    public void Reply(in Packet request, string msgId, Payload payload, ushort errorCode = ErrorCodes.Success) =>
        SendReply(AddressOf(request), msgId, payload.Move("reply"), errorCode, 0);

    private ReplyToken AddressOf(in Packet request) => ReplyAddressing is { } addressing ? addressing.AddressOf(request) : request.ReplyToken;

    public void SendToStage(string nodeId, long stageId, string msgId, Payload payload) => SendOneWay(nodeId, stageId, msgId, Parts.MeshSendPayloads.Wrap(payload), 0);

    public Task<Response> RequestToStage(string nodeId, long stageId, string msgId, Payload payload, TimeSpan? timeout = null) =>
        RequestAsync(nodeId, stageId, msgId, Parts.MeshSendPayloads.Wrap(payload), timeout, null, SystemOp.None, null);

    public void RequestToStage(string nodeId, long stageId, string msgId, Payload payload, Action<Response> callback, TimeSpan? timeout = null) =>
        RequestWithCallback(nodeId, stageId, msgId, Parts.MeshSendPayloads.Wrap(payload), callback, timeout, null);

    public void SendToApi(string nodeId, string msgId, Payload payload) => SendToStage(nodeId, 0, msgId, payload);

    public Task<Response> RequestToApi(string nodeId, string msgId, Payload payload, TimeSpan? timeout = null) => RequestToStage(nodeId, 0, msgId, payload, timeout);

    public void RequestToApi(string nodeId, string msgId, Payload payload, Action<Response> callback, TimeSpan? timeout = null) =>
        RequestToStage(nodeId, 0, msgId, payload, callback, timeout);

    public Task<Response> CreateStage(string playNodeId, string stageType, long stageId, string msgId, Payload payload, TimeSpan? timeout = null) =>
        RequestAsync(playNodeId, stageId, msgId, payload.Move("mesh"), timeout, null, SystemOp.CreateStage, stageType);

    public Task<Response> CreateStage(string playNodeId, string stageType, string msgId, Payload payload, TimeSpan? timeout = null) =>
        RequestAsync(playNodeId, PlayServer.NewStageId, msgId, payload.Move("mesh"), timeout, null, SystemOp.CreateStage, stageType);

    public Task<Response> GetOrCreateStage(string playNodeId, string stageType, long stageId, string msgId, Payload payload, TimeSpan? timeout = null) =>
        RequestAsync(playNodeId, stageId, msgId, payload.Move("mesh"), timeout, null, SystemOp.GetOrCreateStage, stageType);

    /// <summary>One API message in flight: runs the handler, then releases the payload it lent.</summary>
    private sealed class ApiInvocation(ApiServer server, ApiHandler handler, Packet packet) : IThreadPoolWorkItem
    {
        // API handlers run under the executor's context so their awaits resume through the executor seam.
        public void Execute()
        {
            if (packet.IsRequest)
            {
                server.ReplyAddressing?.OnRequestDispatched(packet.ReplyToken);
            }

            server.OffStageContext.Run(() => _ = RunAsync());
        }

        private async Task RunAsync()
        {
            try
            {
                await handler(server, packet);
            }
            catch (Exception)
            {
                server.Counters.AddHandlerFailure();
                server.TryReplyError(packet.ReplyToken, ErrorCodes.HandlerFailed, 0);
            }
            finally
            {
                packet.Payload.DisposeIfOwner();
            }
        }
    }
}
