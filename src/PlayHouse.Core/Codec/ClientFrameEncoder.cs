using System.Buffers;

namespace PlayHouse.Core.Codec;

/// <summary>
/// Writes client -> server frames (<see cref="WireProtocol"/>). Every argument is validated before the first byte
/// is written, so a rejected frame leaves the destination untouched. Nothing is allocated per frame.
/// </summary>
public static class ClientFrameEncoder
{
    /// <summary>The exact number of bytes <see cref="Encode(Span{byte}, string, ushort, long, ReadOnlySpan{byte}, int)"/> writes, prefix included.</summary>
    /// <exception cref="ArgumentException">The msg id is over 255 UTF-8 bytes or the body would exceed <paramref name="maxBodyBytes"/>.</exception>
    public static int GetEncodedLength(string msgId, int payloadLengthBytes, int maxBodyBytes = WireProtocol.MaxBodyBytes)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(payloadLengthBytes);
        var msgIdBytes = FrameWriter.GetMsgIdByteCount(msgId);
        return WireProtocol.LengthPrefixBytes + FrameWriter.GetBodyBytes(msgIdBytes, WireProtocol.ClientFixedFieldsBytes, payloadLengthBytes, maxBodyBytes);
    }

    /// <summary>Writes one frame at the start of <paramref name="destination"/> and returns the bytes written.</summary>
    /// <exception cref="ArgumentException">The msg id is over 255 UTF-8 bytes, the body would exceed <paramref name="maxBodyBytes"/>, or the destination is too short.</exception>
    public static int Encode(Span<byte> destination, string msgId, ushort msgSeq, long stageId, ReadOnlySpan<byte> payload, int maxBodyBytes = WireProtocol.MaxBodyBytes)
    {
        var msgIdBytes = FrameWriter.GetMsgIdByteCount(msgId);
        var bodyBytes = FrameWriter.GetBodyBytes(msgIdBytes, WireProtocol.ClientFixedFieldsBytes, payload.Length, maxBodyBytes);
        var frameBytes = WireProtocol.LengthPrefixBytes + bodyBytes;
        FrameWriter.CheckDestination(destination.Length, frameBytes);

        var offset = FrameWriter.WriteCommonHeader(destination, bodyBytes, msgId, msgIdBytes, msgSeq, stageId);
        payload.CopyTo(destination[offset..]);
        return frameBytes;
    }

    /// <summary>Writes one frame into <paramref name="writer"/> (one GetSpan, one Advance) and returns the bytes written.</summary>
    public static int Encode(IBufferWriter<byte> writer, string msgId, ushort msgSeq, long stageId, ReadOnlySpan<byte> payload, int maxBodyBytes = WireProtocol.MaxBodyBytes)
    {
        ArgumentNullException.ThrowIfNull(writer);
        var frameBytes = GetEncodedLength(msgId, payload.Length, maxBodyBytes);
        var written = Encode(writer.GetSpan(frameBytes), msgId, msgSeq, stageId, payload, maxBodyBytes);
        writer.Advance(written);
        return written;
    }

    /// <summary>Writes <paramref name="frame"/>; the frame keeps ownership of its payload.</summary>
    public static int Encode(Span<byte> destination, in ClientFrame frame, int maxBodyBytes = WireProtocol.MaxBodyBytes) =>
        Encode(destination, frame.MsgId, frame.MsgSeq, frame.StageId, frame.Payload.Span, maxBodyBytes);

    /// <summary>Writes <paramref name="frame"/>; the frame keeps ownership of its payload.</summary>
    public static int Encode(IBufferWriter<byte> writer, in ClientFrame frame, int maxBodyBytes = WireProtocol.MaxBodyBytes) =>
        Encode(writer, frame.MsgId, frame.MsgSeq, frame.StageId, frame.Payload.Span, maxBodyBytes);
}
