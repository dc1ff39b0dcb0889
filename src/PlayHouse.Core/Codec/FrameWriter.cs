using System.Buffers;
using System.Buffers.Binary;
using System.Runtime.CompilerServices;
using System.Text;

namespace PlayHouse.Core.Codec;

/// <summary>The validation and header writing shared by <see cref="ClientFrameEncoder"/> and <see cref="ServerFrameEncoder"/>.</summary>
internal static class FrameWriter
{
    // A throwing encoder: a lone surrogate in a msg id would otherwise be written as U+FFFD and decode as a
    // different id than the one sent.
    private static readonly UTF8Encoding StrictUtf8 = new(encoderShouldEmitUTF8Identifier: false, throwOnInvalidBytes: true);

    // Slots 2n and 2n + 1 hold the last two msg ids of n chars found to be ASCII (so n UTF-8 bytes, within the wire
    // limit). A frame usually carries a string instance a recent frame of that length did (a literal, or the decoder's
    // cached id), so a reference compare replaces the validation per encode. Two per length, because a request's id
    // and its reply's are often equal strings but different instances (the client's literal, the server decoder's
    // cached copy), and one slot flipped between them at every frame. Strings are immutable and a reference store is
    // atomic, so any thread may read or replace a slot: whatever it finds there was validated.
    private static readonly string?[] AsciiMsgIdsByLength = new string?[2 * (WireProtocol.MaxMsgIdBytes + 1)];

    /// <summary>Counts the msg id in UTF-8 bytes (not chars, see bug B16) and rejects ids the length byte cannot hold.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static int GetMsgIdByteCount(string msgId)
    {
        ArgumentNullException.ThrowIfNull(msgId);
        var length = msgId.Length;
        var known = AsciiMsgIdsByLength;
        var slot = 2 * length;
        return (uint)(slot + 1) < (uint)known.Length && (ReferenceEquals(known[slot], msgId) || ReferenceEquals(known[slot + 1], msgId)) ? length : CountMsgIdBytes(msgId);
    }

    /// <summary>Computes <c>Len</c> and rejects bodies over <paramref name="maxBodyBytes"/>.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static int GetBodyBytes(int msgIdBytes, int fixedFieldsBytes, int payloadBytes, int maxBodyBytes)
    {
        // Compare in 64 bits: a payload near int.MaxValue must not wrap into an acceptable length.
        var bodyBytes = (long)WireProtocol.MsgIdLengthBytes + msgIdBytes + fixedFieldsBytes + payloadBytes;
        if (maxBodyBytes < 1 || maxBodyBytes > WireProtocol.MaxBodyBytes || bodyBytes > maxBodyBytes)
        {
            ThrowBadBody(bodyBytes, payloadBytes, maxBodyBytes);
        }

        return (int)bodyBytes;
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static void CheckDestination(int destinationBytes, int frameBytes)
    {
        if (destinationBytes < frameBytes)
        {
            ThrowDestinationTooShort(destinationBytes, frameBytes);
        }
    }

    // The slow and failing paths are out of line: their message formatting would otherwise widen the stack frame
    // (and its zeroing) of every encoder caller they are inlined into.
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static int CountMsgIdBytes(string msgId)
    {
        int count;
        bool ascii;
        try
        {
            // Msg ids are nearly always ASCII, one byte per char; the vectorised check is far cheaper than counting.
            ascii = Ascii.IsValid(msgId);
            count = ascii ? msgId.Length : StrictUtf8.GetByteCount(msgId);
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

        if (ascii)
        {
            // The id found before moves to the second slot, so the one dropped is the one found longest ago.
            var slot = 2 * count;
            AsciiMsgIdsByLength[slot + 1] = AsciiMsgIdsByLength[slot];
            AsciiMsgIdsByLength[slot] = msgId;
        }

        return count;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void ThrowBadBody(long bodyBytes, int payloadBytes, int maxBodyBytes)
    {
        if (maxBodyBytes < 1 || maxBodyBytes > WireProtocol.MaxBodyBytes)
        {
            throw new ArgumentOutOfRangeException(nameof(maxBodyBytes), maxBodyBytes, $"maxBodyBytes must lie in [1, {WireProtocol.MaxBodyBytes}].");
        }

        throw new ArgumentException(
            $"The frame body would be {bodyBytes} bytes ({payloadBytes} B payload); the limit is {maxBodyBytes} bytes.",
            nameof(payloadBytes));
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void ThrowDestinationTooShort(int destinationBytes, int frameBytes) =>
        throw new ArgumentException($"The destination holds {destinationBytes} bytes; the frame needs {frameBytes}.", "destination");

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
