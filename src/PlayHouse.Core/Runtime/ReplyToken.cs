using System.Runtime.CompilerServices;

namespace PlayHouse.Core.Runtime;

/// <summary>Where a reply goes.</summary>
internal enum ReplyRoute : byte
{
    None = 0,
    Client = 1,
    Mesh = 2,
}

/// <summary>
/// The address of a reply, captured when the request arrived and carried explicitly by the packet, so a
/// reply after an await or from a callback still reaches its own request (never a mutable "current request").
/// </summary>
public readonly struct ReplyToken
{
    // The reply's destination: the client session (ReplyRoute.Client) or the requesting node's id (ReplyRoute.Mesh).
    // One field for both keeps the token, and every mailbox entry that carries one, a reference and 8 bytes smaller.
    private readonly object? _target;

    // The request's sequence on its route: the client's 16-bit msg seq or the mesh sender's 64-bit one. One field
    // for both leaves three non-reference words after the token's references, which the JIT copies with plain moves
    // where four took a rep movsq (a packet is passed by value to every handler).
    private readonly ulong _seq;

    private ReplyToken(ReplyRoute route, long inboundId, string requestMsgId, object? target, ulong seq, long stageId)
    {
        Route = route;
        InboundId = inboundId;
        RequestMsgId = requestMsgId;
        _target = target;
        _seq = seq;
        StageId = stageId;
    }

    /// <summary>True when the packet is a request that expects exactly one reply.</summary>
    public bool IsRequest => Route != ReplyRoute.None;

    internal ReplyRoute Route { get; }

    /// <summary>Node-unique id of the inbound request; the node refuses a second reply to the same id.</summary>
    internal long InboundId { get; }

    internal string RequestMsgId { get; }

    /// <summary>The session a client request came from; null for other routes.</summary>
    /// <remarks>The session object, not its id, so the reply reaches it without a lookup by id.</remarks>
    internal ClientSession? Session => Route == ReplyRoute.Client ? Unsafe.As<ClientSession>(_target) : null;

    internal long SessionId => Session?.SessionId ?? 0;

    internal ushort ClientMsgSeq => Route == ReplyRoute.Client ? (ushort)_seq : (ushort)0;

    internal string? MeshNodeId => Route == ReplyRoute.Mesh ? Unsafe.As<string>(_target) : null;

    internal ulong MeshMsgSeq => Route == ReplyRoute.Mesh ? _seq : 0;

    internal long StageId { get; }

    public override string ToString() => Route switch
    {
        ReplyRoute.Client => $"reply->session {SessionId} seq {ClientMsgSeq}",
        ReplyRoute.Mesh => $"reply->{MeshNodeId} seq {MeshMsgSeq}",
        _ => "no-reply",
    };

    internal static ReplyToken ToClient(long inboundId, string requestMsgId, ClientSession session, ushort clientMsgSeq, long stageId) =>
        new(ReplyRoute.Client, inboundId, requestMsgId, session, clientMsgSeq, stageId);

    internal static ReplyToken ToMesh(long inboundId, string requestMsgId, string? meshNodeId, ulong meshMsgSeq, long stageId) =>
        new(ReplyRoute.Mesh, inboundId, requestMsgId, meshNodeId, meshMsgSeq, stageId);
}
