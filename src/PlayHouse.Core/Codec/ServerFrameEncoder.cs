using System.Buffers;
using System.Buffers.Binary;

namespace PlayHouse.Core.Codec;

/// <summary>
/// Writes server -> client frames (<see cref="WireProtocol"/>). Every argument is validated before the first byte
/// is written. Nothing is allocated per frame. The encoder does not compress: a caller that passes
/// <c>originalSize</c> above 0 must pass an already compressed payload.
/// </summary>
public static class ServerFrameEncoder
{
    /// <summary>The exact number of bytes an Encode call writes, prefix included.</summary>
    /// <exception cref="ArgumentException">The msg id is over 255 UTF-8 bytes or the body would exceed <paramref name="maxBodyBytes"/>.</exception>
    public static int GetEncodedLength(string msgId, int payloadLengthBytes, int maxBodyBytes = WireProtocol.MaxBodyBytes)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(payloadLengthBytes);
        var msgIdBytes = FrameWriter.GetMsgIdByteCount(msgId);
        return WireProtocol.LengthPrefixBytes + FrameWriter.GetBodyBytes(msgIdBytes, WireProtocol.ServerFixedFieldsBytes, payloadLengthBytes, maxBodyBytes);
    }

    /// <summary>Writes one frame at the start of <paramref name="destination"/> and returns the bytes written.</summary>
    /// <exception cref="ArgumentException">A limit is exceeded, <paramref name="originalSize"/> is negative, or the destination is too short.</exception>
    public static int Encode(
        Span<byte> destination,
        string msgId,
        ushort msgSeq,
        long stageId,
        ushort errorCode,
        ReadOnlySpan<byte> payload,
        int originalSize = 0,
        int maxBodyBytes = WireProtocol.MaxBodyBytes)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(originalSize);
        var msgIdBytes = FrameWriter.GetMsgIdByteCount(msgId);
        var bodyBytes = FrameWriter.GetBodyBytes(msgIdBytes, WireProtocol.ServerFixedFieldsBytes, payload.Length, maxBodyBytes);
        var frameBytes = WireProtocol.LengthPrefixBytes + bodyBytes;
        FrameWriter.CheckDestination(destination.Length, frameBytes);

        var offset = FrameWriter.WriteCommonHeader(destination, bodyBytes, msgId, msgIdBytes, msgSeq, stageId);
        BinaryPrimitives.WriteUInt16LittleEndian(destination[offset..], errorCode);
        offset += sizeof(ushort);
        BinaryPrimitives.WriteInt32LittleEndian(destination[offset..], originalSize);
        offset += sizeof(int);
        payload.CopyTo(destination[offset..]);
        return frameBytes;
    }

    /// <summary>Writes one frame into <paramref name="writer"/> (one GetSpan, one Advance) and returns the bytes written.</summary>
    public static int Encode(
        IBufferWriter<byte> writer,
        string msgId,
        ushort msgSeq,
        long stageId,
        ushort errorCode,
        ReadOnlySpan<byte> payload,
        int originalSize = 0,
        int maxBodyBytes = WireProtocol.MaxBodyBytes)
    {
        ArgumentNullException.ThrowIfNull(writer);
        ArgumentOutOfRangeException.ThrowIfNegative(originalSize);
        var frameBytes = GetEncodedLength(msgId, payload.Length, maxBodyBytes);
        var written = Encode(writer.GetSpan(frameBytes), msgId, msgSeq, stageId, errorCode, payload, originalSize, maxBodyBytes);
        writer.Advance(written);
        return written;
    }

    /// <summary>Writes <paramref name="frame"/> as it is (its OriginalSize included); the frame keeps ownership of its payload.</summary>
    public static int Encode(Span<byte> destination, in ServerFrame frame, int maxBodyBytes = WireProtocol.MaxBodyBytes) =>
        Encode(destination, frame.MsgId, frame.MsgSeq, frame.StageId, frame.ErrorCode, frame.Payload.Span, frame.OriginalSize, maxBodyBytes);

    /// <summary>Writes <paramref name="frame"/> as it is (its OriginalSize included); the frame keeps ownership of its payload.</summary>
    public static int Encode(IBufferWriter<byte> writer, in ServerFrame frame, int maxBodyBytes = WireProtocol.MaxBodyBytes) =>
        Encode(writer, frame.MsgId, frame.MsgSeq, frame.StageId, frame.ErrorCode, frame.Payload.Span, frame.OriginalSize, maxBodyBytes);
}
