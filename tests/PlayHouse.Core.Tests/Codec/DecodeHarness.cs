using System.Buffers;
using PlayHouse.Core.Codec;
using PlayHouse.Core.Pooling;

namespace PlayHouse.Core.Tests.Codec;

/// <summary>A decoded frame copied out of its pooled payload, so tests can compare frames by value.</summary>
internal sealed record CopiedFrame(string MsgId, ushort MsgSeq, long StageId, ushort ErrorCode, int OriginalSize, byte[] Payload)
{
    public bool Matches(CopiedFrame other) =>
        MsgId == other.MsgId && MsgSeq == other.MsgSeq && StageId == other.StageId && ErrorCode == other.ErrorCode
        && OriginalSize == other.OriginalSize && Payload.AsSpan().SequenceEqual(other.Payload);
}

/// <summary>Feeds chunks into decoders and collects what comes out, returning every payload to the pool.</summary>
internal static class DecodeHarness
{
    public static MessagePool CheckedPool() => new(new MessagePoolOptions { CheckedMode = true });

    public static List<CopiedFrame> FeedClient(ClientFrameDecoder decoder, IEnumerable<byte[]> chunks)
    {
        var frames = new List<CopiedFrame>();
        foreach (var chunk in chunks)
        {
            ReadOnlySpan<byte> input = chunk;
            while (decoder.TryDecode(ref input, out var frame))
            {
                frames.Add(new CopiedFrame(frame.MsgId, frame.MsgSeq, frame.StageId, 0, 0, frame.Payload.Span.ToArray()));
                frame.Dispose();
            }

            Assert.Equal(0, input.Length);
        }

        return frames;
    }

    public static List<CopiedFrame> FeedServer(ServerFrameDecoder decoder, IEnumerable<byte[]> chunks)
    {
        var frames = new List<CopiedFrame>();
        foreach (var chunk in chunks)
        {
            ReadOnlySpan<byte> input = chunk;
            while (decoder.TryDecode(ref input, out var frame))
            {
                frames.Add(new CopiedFrame(frame.MsgId, frame.MsgSeq, frame.StageId, frame.ErrorCode, frame.OriginalSize, frame.Payload.Span.ToArray()));
                frame.Dispose();
            }

            Assert.Equal(0, input.Length);
        }

        return frames;
    }

    public static List<CopiedFrame> DrainClient(ClientFrameDecoder decoder, ref ReadOnlySequence<byte> buffer)
    {
        var frames = new List<CopiedFrame>();
        while (decoder.TryDecode(ref buffer, out var frame))
        {
            frames.Add(new CopiedFrame(frame.MsgId, frame.MsgSeq, frame.StageId, 0, 0, frame.Payload.Span.ToArray()));
            frame.Dispose();
        }

        return frames;
    }

    public static List<CopiedFrame> DrainServer(ServerFrameDecoder decoder, ref ReadOnlySequence<byte> buffer)
    {
        var frames = new List<CopiedFrame>();
        while (decoder.TryDecode(ref buffer, out var frame))
        {
            frames.Add(new CopiedFrame(frame.MsgId, frame.MsgSeq, frame.StageId, frame.ErrorCode, frame.OriginalSize, frame.Payload.Span.ToArray()));
            frame.Dispose();
        }

        return frames;
    }

    /// <summary>Cuts <paramref name="bytes"/> at the given ascending offsets.</summary>
    public static byte[][] Cut(byte[] bytes, params int[] offsets)
    {
        var chunks = new List<byte[]>();
        var start = 0;
        foreach (var offset in offsets)
        {
            chunks.Add(bytes[start..offset]);
            start = offset;
        }

        chunks.Add(bytes[start..]);
        return [.. chunks];
    }

    public static IEnumerable<byte[]> ByteByByte(byte[] bytes) => bytes.Select(b => new[] { b });
}
