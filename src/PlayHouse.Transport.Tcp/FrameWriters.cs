using PlayHouse.Core.Codec;
using PlayHouse.Core.Pooling;

namespace PlayHouse.Transport.Tcp;

/// <summary>A server -> client frame for the send queue; the payload is read, not owned.</summary>
/// <remarks><paramref name="originalSize"/> above 0 marks <paramref name="payload"/> as LZ4-compressed from that many bytes.</remarks>
internal readonly struct ServerFrameWriter(string msgId, ushort msgSeq, long stageId, ushort errorCode, Payload payload, int frameBytes, int originalSize = 0) : IFrameWriter
{
    public int FrameBytes { get; } = frameBytes;

    public void Write(Span<byte> destination) => ServerFrameEncoder.Encode(destination, msgId, msgSeq, stageId, errorCode, payload.Span, originalSize);
}

/// <summary>A client -> server frame for the send queue, from a caller's span copied at enqueue time.</summary>
internal readonly ref struct ClientFrameWriter(string msgId, ushort msgSeq, long stageId, ReadOnlySpan<byte> payload, int frameBytes) : IFrameWriter
{
    private readonly ReadOnlySpan<byte> _payload = payload;

    public int FrameBytes { get; } = frameBytes;

    public void Write(Span<byte> destination) => ClientFrameEncoder.Encode(destination, msgId, msgSeq, stageId, _payload);
}

/// <summary>Raw, already framed bytes (mesh frames encoded ahead, or bytes held while a link connected).</summary>
internal readonly struct RawBytesWriter(ReadOnlyMemory<byte> bytes) : IFrameWriter
{
    public int FrameBytes => bytes.Length;

    public void Write(Span<byte> destination) => bytes.Span.CopyTo(destination);
}
