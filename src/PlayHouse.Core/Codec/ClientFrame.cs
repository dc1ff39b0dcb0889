using PlayHouse.Core.Pooling;

namespace PlayHouse.Core.Codec;

/// <summary>
/// One client -> server message: <c>[Len][MsgIdLen][MsgId][MsgSeq][StageId][Payload]</c> without the length fields.
/// A decoded frame owns its <see cref="Payload"/>; dispose the frame (or the payload, or move it on) exactly once.
/// </summary>
public readonly struct ClientFrame : IDisposable
{
    private readonly string? _msgId;

    public ClientFrame(string msgId, ushort msgSeq, long stageId, Payload payload)
    {
        ArgumentNullException.ThrowIfNull(msgId);
        _msgId = msgId;
        MsgSeq = msgSeq;
        StageId = stageId;
        Payload = payload;
    }

    public string MsgId => _msgId ?? string.Empty;

    /// <summary>0 for a one-way send; above 0 for a request, echoed in the reply.</summary>
    public ushort MsgSeq { get; }

    public long StageId { get; }

    public Payload Payload { get; }

    public bool IsRequest => MsgSeq > 0;

    public bool IsHeartbeat => string.Equals(MsgId, WireProtocol.HeartbeatMsgId, StringComparison.Ordinal);

    /// <summary>Returns the payload's buffer to its pool.</summary>
    public void Dispose() => Payload.Dispose();

    public override string ToString() => $"ClientFrame(msgId '{MsgId}', seq {MsgSeq}, stage {StageId}, {Payload})";
}
