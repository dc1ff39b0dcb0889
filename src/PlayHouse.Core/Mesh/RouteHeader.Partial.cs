using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;

namespace PlayHouse.Core.Mesh.Proto;

/// <summary>Additions to the generated <see cref="RouteHeader"/>.</summary>
public sealed partial class RouteHeader
{
    /// <summary>
    /// Resets every field, unknown fields included, so one instance can be reused for each received frame.
    /// Protobuf's MergeFrom merges rather than replaces, so a reused header must be cleared first or fields absent
    /// from the new frame would keep the previous frame's values.
    /// </summary>
    public void Clear()
    {
        MsgSeq = 0;
        ServiceId = 0;
        MsgId = string.Empty;
        ErrorCode = 0;
        From = string.Empty;
        StageId = 0;
        AccountId = 0;
        Sid = 0;
        IsReply = false;
        PayloadSize = 0;
        IsSystem = false;
        FromStageId = 0;
        SenderAwaits = false;
        StageType = string.Empty;
        TimeoutMs = 0;
        AwaitChain.Clear();
        _unknownFields = null;
    }

    /// <summary>
    /// Makes this header describe <paramref name="message"/> (every field replaced), ready to encode in front of its
    /// payload. Every mesh transport maps messages to frames here, so a new header field is carried by all of them.
    /// </summary>
    public void Fill(in MeshMessage message)
    {
        Clear();
        MsgSeq = message.MsgSeq;
        ServiceId = message.ServiceId;
        MsgId = message.MsgId ?? string.Empty;
        ErrorCode = message.ErrorCode;
        From = message.From ?? string.Empty;
        StageId = message.StageId;
        FromStageId = message.FromStageId;
        AccountId = message.AccountId;
        Sid = message.Sid;
        IsReply = message.IsReply;
        IsSystem = message.IsSystem;
        SenderAwaits = message.SenderAwaits;
        TimeoutMs = message.TimeoutMs;
        SetAwaitChain(message.AwaitChain);
        StageType = message.StageType ?? string.Empty;
        PayloadSize = message.Payload.Length;
    }

    /// <summary>The mesh message a decoded header describes, carrying <paramref name="payload"/> (ownership passes to the message).</summary>
    public MeshMessage ToMessage(Payload payload) => new()
    {
        MsgSeq = MsgSeq,
        ServiceId = ServiceId,
        MsgId = MsgId,
        ErrorCode = (ushort)ErrorCode,
        From = From,
        StageId = StageId,
        FromStageId = FromStageId,
        AccountId = AccountId,
        Sid = Sid,
        IsReply = IsReply,
        IsSystem = IsSystem,
        SenderAwaits = SenderAwaits,
        TimeoutMs = TimeoutMs,
        AwaitChain = GetAwaitChain(),
        StageType = StageType.Length == 0 ? null : StageType,
        Payload = payload,
    };

    /// <summary>Replaces the await chain with <paramref name="chain"/> (null or empty writes nothing on the wire).</summary>
    public void SetAwaitChain(AwaitingStage[]? chain)
    {
        AwaitChain.Clear();
        if (chain is null)
        {
            return;
        }

        foreach (var stage in chain)
        {
            AwaitChain.Add(new AwaitEdge { NodeId = stage.NodeId, StageId = stage.StageId, MsgSeq = stage.MsgSeq });
        }
    }

    /// <summary>The await chain as the runtime carries it: null when empty (no allocation), at most
    /// <see cref="AwaitingStage.ChainLengthMax"/> entries (a longer chain from a peer is cut, nearest kept).</summary>
    public AwaitingStage[]? GetAwaitChain()
    {
        if (AwaitChain.Count == 0)
        {
            return null;
        }

        var chain = new AwaitingStage[Math.Min(AwaitChain.Count, AwaitingStage.ChainLengthMax)];
        for (var i = 0; i < chain.Length; i++)
        {
            var edge = AwaitChain[i];
            chain[i] = new AwaitingStage(edge.NodeId, edge.StageId, edge.MsgSeq);
        }

        return chain;
    }
}
