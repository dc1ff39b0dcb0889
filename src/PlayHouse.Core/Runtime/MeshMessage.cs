using PlayHouse.Core.Pooling;

namespace PlayHouse.Core.Runtime;

/// <summary>
/// A server-to-server message as the runtime sees it: the fields of the wire <c>RouteHeader</c> plus the
/// payload. Transports convert it to and from the protobuf header at the wire boundary.
/// </summary>
public struct MeshMessage
{
    /// <summary>Request correlation id (64-bit, never wraps within a timeout); 0 for one-way messages.</summary>
    public ulong MsgSeq;
    public int ServiceId;
    public string MsgId;
    public ushort ErrorCode;

    /// <summary>The sending server's id.</summary>
    public string From;

    /// <summary>The target stage (or the replying stage on a reply).</summary>
    public long StageId;
    public long FromStageId;
    public long AccountId;
    public long Sid;
    public bool IsReply;
    public bool IsSystem;
    public bool SenderAwaits;

    /// <summary>The requester's timeout in milliseconds when it passed one explicitly; 0: the receiver assumes its own default.</summary>
    public uint TimeoutMs;

    /// <summary>
    /// Stages upstream of the sender that wait (transitively) for this request: each awaits a request whose handler
    /// led to this one. Null or empty in the common case. Used to fail request cycles of any length fast.
    /// </summary>
    public AwaitingStage[]? AwaitChain;
    public string? StageType;
    public Payload Payload;

    /// <summary>A reply is recognised by <c>IsReply &amp;&amp; MsgSeq &gt; 0</c>.</summary>
    public readonly bool IsReplyFrame => IsReply && MsgSeq > 0;

    public readonly bool IsRequest => !IsReply && MsgSeq > 0;

    public override readonly string ToString() =>
        $"Mesh({From}->{(IsReply ? "reply" : "msg")} {MsgId} seq={MsgSeq} stage={StageId} err={ErrorCode} {Payload.Length} B)";
}

/// <summary>
/// One stage in a request's await chain: the stage <paramref name="StageId"/> on <paramref name="NodeId"/> awaits
/// its own request <paramref name="MsgSeq"/> (an id of that node's request table).
/// </summary>
public readonly record struct AwaitingStage(string NodeId, long StageId, ulong MsgSeq)
{
    /// <summary>
    /// The most entries a chain carries; a cycle through more stages than this plus the sender is not recognised
    /// and waits for its timeout. It bounds the header (each entry is a server id and two numbers).
    /// </summary>
    public const int ChainLengthMax = 16;
}

/// <summary>
/// The server-to-server transport seam. Ownership of <see cref="MeshMessage.Payload"/> passes to the transport
/// on <see cref="Send"/>, whether or not delivery succeeds.
/// </summary>
/// <remarks>Implementations must be callable from any executor thread and must keep per-peer order.</remarks>
public interface IMeshTransport
{
    /// <summary>Sends to a server; returns false (and disposes the payload) when the server is unknown.</summary>
    bool Send(string targetNodeId, in MeshMessage message);

    /// <summary>
    /// Sends to a server and says how that went: handed over (which promises no delivery), refused because the server
    /// is unknown, or refused because the send queue towards it is at its cap. Ownership of the payload passes either
    /// way. A transport with a capped send queue implements this; the default knows only <see cref="Send"/>'s answer.
    /// </summary>
    MeshSendResult TrySend(string targetNodeId, in MeshMessage message) =>
        Send(targetNodeId, message) ? MeshSendResult.Sent : MeshSendResult.UnknownServer;
}

/// <summary>How handing a message to the mesh went (<see cref="IMeshTransport.TrySend"/>).</summary>
public enum MeshSendResult
{
    /// <summary>Queued for the peer; it may still be lost in flight (its request then times out).</summary>
    Sent,

    /// <summary>The target server is not known to the mesh.</summary>
    UnknownServer,

    /// <summary>The send queue towards the target is at its cap: the message was refused, not queued.</summary>
    QueueFull,
}

/// <summary>The receiving side of the mesh: every server node implements it.</summary>
public interface IMeshEndpoint
{
    string NodeId { get; }

    /// <summary>Delivers a message; ownership of its payload passes to the endpoint.</summary>
    void OnMeshMessage(in MeshMessage message);
}

/// <summary>The system operation of an <c>IsSystem</c> mesh message, carried in its service id.</summary>
public enum SystemOp
{
    None = 0,
    CreateStage = 1,
    GetOrCreateStage = 2,
}

/// <summary>Reply msg ids of system operations.</summary>
public static class SystemMsgIds
{
    /// <summary>Reply msg id of a create that made the stage.</summary>
    public const string StageCreated = "@System@StageCreated";

    /// <summary>Reply msg id of a get-or-create that found the stage already there.</summary>
    public const string StageExisted = "@System@StageExisted";
}
