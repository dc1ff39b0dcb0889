using System.Buffers;
using System.Buffers.Binary;
using System.Text;

namespace PlayHouse.Core.Tests.Codec;

/// <summary>
/// Builds frames by hand from the protocol description, independently of the encoders under test, so encoder and
/// decoder cannot agree on a wrong layout.
/// </summary>
internal static class WireBytes
{
    public static byte[] Client(string msgId, ushort msgSeq, long stageId, byte[] payload) =>
        RawClient(null, null, Encoding.UTF8.GetBytes(msgId), msgSeq, stageId, payload);

    public static byte[] Server(string msgId, ushort msgSeq, long stageId, ushort errorCode, int originalSize, byte[] payload) =>
        RawServer(null, null, Encoding.UTF8.GetBytes(msgId), msgSeq, stageId, errorCode, originalSize, payload);

    /// <summary>A client frame with optional overrides of Len and MsgIdLen for malformed cases.</summary>
    public static byte[] RawClient(int? lengthOverride, byte? msgIdLengthOverride, byte[] msgIdUtf8, ushort msgSeq, long stageId, byte[] payload)
    {
        var body = new List<byte> { msgIdLengthOverride ?? checked((byte)msgIdUtf8.Length) };
        body.AddRange(msgIdUtf8);
        body.AddRange(U16(msgSeq));
        body.AddRange(I64(stageId));
        body.AddRange(payload);
        return [.. I32(lengthOverride ?? body.Count), .. body];
    }

    /// <summary>A server frame with optional overrides of Len and MsgIdLen for malformed cases.</summary>
    public static byte[] RawServer(int? lengthOverride, byte? msgIdLengthOverride, byte[] msgIdUtf8, ushort msgSeq, long stageId, ushort errorCode, int originalSize, byte[] payload)
    {
        var body = new List<byte> { msgIdLengthOverride ?? checked((byte)msgIdUtf8.Length) };
        body.AddRange(msgIdUtf8);
        body.AddRange(U16(msgSeq));
        body.AddRange(I64(stageId));
        body.AddRange(U16(errorCode));
        body.AddRange(I32(originalSize));
        body.AddRange(payload);
        return [.. I32(lengthOverride ?? body.Count), .. body];
    }

    public static byte[] I32(int value)
    {
        var bytes = new byte[4];
        BinaryPrimitives.WriteInt32LittleEndian(bytes, value);
        return bytes;
    }

    public static byte[] Pattern(int lengthBytes, int seed = 1)
    {
        var bytes = new byte[lengthBytes];
        for (var i = 0; i < bytes.Length; i++)
        {
            bytes[i] = (byte)((i * 31) + seed);
        }

        return bytes;
    }

    /// <summary>32-bit FNV-1a, the hash PlayHouse's sender-id cache trusted alone (bug B4).</summary>
    public static uint Fnv1a32(ReadOnlySpan<byte> bytes)
    {
        var hash = 2166136261u;
        foreach (var b in bytes)
        {
            hash ^= b;
            hash *= 16777619u;
        }

        return hash;
    }

    /// <summary>A multi-segment sequence with one segment per part (empty parts included).</summary>
    public static ReadOnlySequence<byte> Segmented(params byte[][] parts)
    {
        if (parts.Length == 0)
        {
            return ReadOnlySequence<byte>.Empty;
        }

        var first = new Segment(parts[0], 0);
        var last = first;
        for (var i = 1; i < parts.Length; i++)
        {
            last = last.Append(parts[i]);
        }

        return new ReadOnlySequence<byte>(first, 0, last, last.Memory.Length);
    }

    /// <summary>The same bytes cut into one-byte segments.</summary>
    public static ReadOnlySequence<byte> OneBytePerSegment(byte[] bytes) => Segmented([.. bytes.Select(b => new[] { b })]);

    private static byte[] U16(ushort value)
    {
        var bytes = new byte[2];
        BinaryPrimitives.WriteUInt16LittleEndian(bytes, value);
        return bytes;
    }

    private static byte[] I64(long value)
    {
        var bytes = new byte[8];
        BinaryPrimitives.WriteInt64LittleEndian(bytes, value);
        return bytes;
    }

    private sealed class Segment : ReadOnlySequenceSegment<byte>
    {
        public Segment(ReadOnlyMemory<byte> memory, long runningIndex)
        {
            Memory = memory;
            RunningIndex = runningIndex;
        }

        public Segment Append(ReadOnlyMemory<byte> memory)
        {
            var next = new Segment(memory, RunningIndex + Memory.Length);
            Next = next;
            return next;
        }
    }
}
