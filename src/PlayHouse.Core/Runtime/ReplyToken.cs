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
    internal ReplyToken(ReplyRoute route, long inboundId, string requestMsgId, long sessionId, ushort clientMsgSeq, string? meshNodeId, ulong meshMsgSeq, long stageId)
    {
        Route = route;
        InboundId = inboundId;
        RequestMsgId = requestMsgId;
        SessionId = sessionId;
        ClientMsgSeq = clientMsgSeq;
        MeshNodeId = meshNodeId;
        MeshMsgSeq = meshMsgSeq;
        StageId = stageId;
    }

    /// <summary>True when the packet is a request that expects exactly one reply.</summary>
    public bool IsRequest => Route != ReplyRoute.None;

    internal ReplyRoute Route { get; }

    /// <summary>Node-unique id of the inbound request; the node refuses a second reply to the same id.</summary>
    internal long InboundId { get; }

    internal string RequestMsgId { get; }

    internal long SessionId { get; }

    internal ushort ClientMsgSeq { get; }

    internal string? MeshNodeId { get; }

    internal ulong MeshMsgSeq { get; }

    internal long StageId { get; }

    public override string ToString() => Route switch
    {
        ReplyRoute.Client => $"reply->session {SessionId} seq {ClientMsgSeq}",
        ReplyRoute.Mesh => $"reply->{MeshNodeId} seq {MeshMsgSeq}",
        _ => "no-reply",
    };
}
