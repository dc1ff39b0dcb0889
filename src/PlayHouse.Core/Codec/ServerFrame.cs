using PlayHouse.Core.Pooling;

namespace PlayHouse.Core.Codec;

/// <summary>
/// One server -> client message: <c>[Len][MsgIdLen][MsgId][MsgSeq][StageId][ErrorCode][OriginalSize][Payload]</c>
/// without the length fields. A decoded frame owns its <see cref="Payload"/>; dispose it exactly once.
/// </summary>
public readonly struct ServerFrame : IDisposable
{
    private readonly string? _msgId;

    public ServerFrame(string msgId, ushort msgSeq, long stageId, ushort errorCode, int originalSize, Payload payload)
    {
        ArgumentNullException.ThrowIfNull(msgId);
        ArgumentOutOfRangeException.ThrowIfNegative(originalSize);
        _msgId = msgId;
        MsgSeq = msgSeq;
        StageId = stageId;
        ErrorCode = errorCode;
        OriginalSize = originalSize;
        Payload = payload;
    }

    public string MsgId => _msgId ?? string.Empty;

    /// <summary>0 for a push; above 0 for the reply to the request with that sequence number.</summary>
    public ushort MsgSeq { get; }

    public long StageId { get; }

    public ushort ErrorCode { get; }

    /// <summary>
    /// Describes <see cref="Payload"/>: 0 when it is raw, otherwise the inflated size of the compressed bytes it holds.
    /// A decoder inflates compressed frames and hands them out raw, with 0 here, so a decoded frame re-encodes correctly.
    /// </summary>
    public int OriginalSize { get; }

    public Payload Payload { get; }

    public bool IsReply => MsgSeq > 0;

    public bool IsHeartbeat => string.Equals(MsgId, WireProtocol.HeartbeatMsgId, StringComparison.Ordinal);

    /// <summary>Returns the payload's buffer to its pool.</summary>
    public void Dispose() => Payload.Dispose();

    public override string ToString() => $"ServerFrame(msgId '{MsgId}', seq {MsgSeq}, stage {StageId}, error {ErrorCode}, originalSize {OriginalSize}, {Payload})";
}
