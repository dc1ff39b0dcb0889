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
