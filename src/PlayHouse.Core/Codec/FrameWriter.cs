using System.Buffers;
using System.Buffers.Binary;
using System.Text;

namespace PlayHouse.Core.Codec;

/// <summary>The validation and header writing shared by <see cref="ClientFrameEncoder"/> and <see cref="ServerFrameEncoder"/>.</summary>
internal static class FrameWriter
{
    // A throwing encoder: a lone surrogate in a msg id would otherwise be written as U+FFFD and decode as a
    // different id than the one sent.
    private static readonly UTF8Encoding StrictUtf8 = new(encoderShouldEmitUTF8Identifier: false, throwOnInvalidBytes: true);

    /// <summary>Counts the msg id in UTF-8 bytes (not chars, see bug B16) and rejects ids the length byte cannot hold.</summary>
    public static int GetMsgIdByteCount(string msgId)
    {
        ArgumentNullException.ThrowIfNull(msgId);
        int count;
        try
        {
            // Msg ids are nearly always ASCII, one byte per char; the vectorised check is far cheaper than counting.
            count = Ascii.IsValid(msgId) ? msgId.Length : StrictUtf8.GetByteCount(msgId);
        }
        catch (EncoderFallbackException e)
        {
            throw new ArgumentException("The msg id is not valid UTF-16 (it holds a lone surrogate) and cannot be encoded as UTF-8.", nameof(msgId), e);
        }

        if (count > WireProtocol.MaxMsgIdBytes)
        {
            throw new ArgumentException(
                $"The msg id is {count} UTF-8 bytes ({msgId.Length} chars); the wire limit is {WireProtocol.MaxMsgIdBytes} bytes.",
                nameof(msgId));
        }

        return count;
    }

    /// <summary>Computes <c>Len</c> and rejects bodies over <paramref name="maxBodyBytes"/>.</summary>
    public static int GetBodyBytes(int msgIdBytes, int fixedFieldsBytes, int payloadBytes, int maxBodyBytes)
    {
        if (maxBodyBytes < 1 || maxBodyBytes > WireProtocol.MaxBodyBytes)
        {
            throw new ArgumentOutOfRangeException(nameof(maxBodyBytes), maxBodyBytes, $"maxBodyBytes must lie in [1, {WireProtocol.MaxBodyBytes}].");
        }

        // Compare in 64 bits: a payload near int.MaxValue must not wrap into an acceptable length.
        var bodyBytes = (long)WireProtocol.MsgIdLengthBytes + msgIdBytes + fixedFieldsBytes + payloadBytes;
        if (bodyBytes > maxBodyBytes)
        {
            throw new ArgumentException(
                $"The frame body would be {bodyBytes} bytes ({payloadBytes} B payload); the limit is {maxBodyBytes} bytes.",
                nameof(payloadBytes));
        }

        return (int)bodyBytes;
    }

    public static void CheckDestination(int destinationBytes, int frameBytes)
    {
        if (destinationBytes < frameBytes)
        {
            throw new ArgumentException($"The destination holds {destinationBytes} bytes; the frame needs {frameBytes}.", "destination");
        }
    }

    /// <summary>Writes <c>[Len][MsgIdLen][MsgId][MsgSeq][StageId]</c> and returns the offset after StageId.</summary>
    public static int WriteCommonHeader(Span<byte> destination, int bodyBytes, string msgId, int msgIdBytes, ushort msgSeq, long stageId)
    {
        BinaryPrimitives.WriteInt32LittleEndian(destination, bodyBytes);
        var offset = WireProtocol.LengthPrefixBytes;
        destination[offset++] = (byte)msgIdBytes;
        var target = destination.Slice(offset, msgIdBytes);
        var written = msgIdBytes == msgId.Length && Ascii.FromUtf16(msgId, target, out var narrowed) == OperationStatus.Done
            ? narrowed
            : StrictUtf8.GetBytes(msgId, target);
        if (written != msgIdBytes)
        {
            throw new InvalidOperationException($"UTF-8 wrote {written} bytes for a msg id counted as {msgIdBytes}.");
        }

        offset += msgIdBytes;
        BinaryPrimitives.WriteUInt16LittleEndian(destination[offset..], msgSeq);
        offset += sizeof(ushort);
        BinaryPrimitives.WriteInt64LittleEndian(destination[offset..], stageId);
        return offset + sizeof(long);
    }
}
