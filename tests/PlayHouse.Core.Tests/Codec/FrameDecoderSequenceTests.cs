using System.Buffers;
using PlayHouse.Core.Codec;

namespace PlayHouse.Core.Tests.Codec;

/// <summary>The ReadOnlySequence path, the shape a System.IO.Pipelines reader uses.</summary>
public sealed class FrameDecoderSequenceTests
{
    private static CopiedFrame First { get; } = new("로그인요청", 1, 1001, 0, 0, WireBytes.Pattern(64, seed: 3));
    private static CopiedFrame Second { get; } = new("Echo", 0, -5, 0, 0, WireBytes.Pattern(1024, seed: 9));

    private static byte[] Both { get; } =
    [
        .. WireBytes.Client(First.MsgId, First.MsgSeq, First.StageId, First.Payload),
        .. WireBytes.Client(Second.MsgId, Second.MsgSeq, Second.StageId, Second.Payload),
    ];

    [Fact]
    public void TryDecode_TwoSegmentsSplitAtEveryOffset_YieldsBothFramesAndConsumesAll()
    {
        var pool = DecodeHarness.CheckedPool();
        for (var split = 0; split <= Both.Length; split++)
        {
            using var decoder = new ClientFrameDecoder(pool);
            var buffer = WireBytes.Segmented(Both[..split], Both[split..]);

            var frames = DecodeHarness.DrainClient(decoder, ref buffer);

            Assert.Equal(2, frames.Count);
            Assert.True(frames[0].Matches(First), $"split at {split}");
            Assert.True(frames[1].Matches(Second), $"split at {split}");
            Assert.True(buffer.IsEmpty);
            decoder.Complete(buffer);
        }

        pool.ThrowIfLeaks();
    }

    [Fact]
    public void TryDecode_OneByteSegments_YieldsBothFrames()
    {
        var pool = DecodeHarness.CheckedPool();
        using var decoder = new ClientFrameDecoder(pool);
        var buffer = WireBytes.OneBytePerSegment(Both);

        var frames = DecodeHarness.DrainClient(decoder, ref buffer);

        Assert.Equal(2, frames.Count);
        Assert.True(frames[1].Matches(Second));
        pool.ThrowIfLeaks();
    }

    [Fact]
    public void TryDecode_BytesArrivingOneAtATime_LeavesIncompleteFramesInTheBuffer()
    {
        // A pipe reader keeps unconsumed bytes and appends new ones; the decoder must not consume a partial frame.
        var pool = DecodeHarness.CheckedPool();
        using var decoder = new ClientFrameDecoder(pool);
        var frames = new List<CopiedFrame>();
        var consumed = 0;
        for (var arrived = 1; arrived <= Both.Length; arrived++)
        {
            var buffer = new ReadOnlySequence<byte>(Both, consumed, arrived - consumed);
            var before = buffer.Length;
            frames.AddRange(DecodeHarness.DrainClient(decoder, ref buffer));
            consumed += (int)(before - buffer.Length);
        }

        Assert.Equal(2, frames.Count);
        Assert.Equal(Both.Length, consumed);
        Assert.Equal(Both.Length, decoder.StreamOffsetBytes);
        pool.ThrowIfLeaks();
    }

    [Fact]
    public void TryDecode_IncompleteFrame_ReturnsFalseAndLeavesTheBufferUntouched()
    {
        var pool = DecodeHarness.CheckedPool();
        using var decoder = new ClientFrameDecoder(pool);
        var buffer = new ReadOnlySequence<byte>(Both, 0, 30);

        Assert.False(decoder.TryDecode(ref buffer, out _));

        Assert.Equal(30, buffer.Length);
        Assert.Equal(0, pool.GetStatistics().Rents);
        var error = Assert.Throws<FrameDecodeException>(() => decoder.Complete(buffer));
        Assert.Equal(FrameError.TruncatedFrame, error.Error);
    }

    [Fact]
    public void TryDecode_HostileLengthPrefixAlone_FailsBeforeTheBodyArrives()
    {
        var pool = DecodeHarness.CheckedPool();
        using var decoder = new ClientFrameDecoder(pool);
        var buffer = new ReadOnlySequence<byte>(WireBytes.I32(WireProtocol.MaxBodyBytes + 1));

        var error = Assert.Throws<FrameDecodeException>(() => decoder.TryDecode(ref buffer, out _));

        Assert.Equal(FrameError.LengthTooLarge, error.Error);
    }

    [Fact]
    public void TryDecode_MsgIdLengthPastFrameWithOnlyFiveBytes_FailsAtOnce()
    {
        var pool = DecodeHarness.CheckedPool();
        using var decoder = new ClientFrameDecoder(pool);
        var buffer = new ReadOnlySequence<byte>(WireBytes.RawClient(11, 200, [], 0, 0, [])[..5]);

        var error = Assert.Throws<FrameDecodeException>(() => decoder.TryDecode(ref buffer, out _));

        Assert.Equal(FrameError.MsgIdLengthPastFrame, error.Error);
    }

    [Theory]
    [MemberData(nameof(ClientFrameDecoderTests.MalformedFrames), MemberType = typeof(ClientFrameDecoderTests))]
    public void TryDecode_MalformedFrameInSegments_ThrowsItsFrameErrorAndLeaksNothing(string description, byte[] bytes, FrameError expected)
    {
        var pool = DecodeHarness.CheckedPool();
        using var decoder = new ClientFrameDecoder(pool);
        var buffer = WireBytes.OneBytePerSegment(bytes);

        var error = Assert.Throws<FrameDecodeException>(() => DecodeHarness.DrainClient(decoder, ref buffer));

        Assert.True(expected == error.Error, $"{description}: expected {expected}, got {error.Error}");
        Assert.Equal(expected, decoder.Fault);
        pool.ThrowIfLeaks();
        var next = new ReadOnlySequence<byte>(Both);
        Assert.Throws<FrameDecodeException>(() => decoder.TryDecode(ref next, out _));
    }

    [Fact]
    public void TryDecode_SequenceAfterAPartialSpanFrame_IsRejected()
    {
        var pool = DecodeHarness.CheckedPool();
        using var decoder = new ClientFrameDecoder(pool);
        DecodeHarness.FeedClient(decoder, [Both[..10]]);
        var buffer = new ReadOnlySequence<byte>(Both);

        Assert.Throws<InvalidOperationException>(() => decoder.TryDecode(ref buffer, out _));
    }

    [Fact]
    public void TryDecode_CompressedServerFrameAcrossSegments_InflatesAndReturnsTheScratchBuffer()
    {
        var pool = DecodeHarness.CheckedPool();
        using var decoder = new ServerFrameDecoder(pool, options: new FrameDecoderOptions { Decompressor = new ReverseDecompressor() });
        var compressed = WireBytes.Pattern(50);
        var bytes = WireBytes.Server("Z", 2, 3, 4, 50, compressed);
        var buffer = WireBytes.Segmented(bytes[..40], bytes[40..60], bytes[60..]);

        var frame = Assert.Single(DecodeHarness.DrainServer(decoder, ref buffer));

        Assert.Equal(compressed.Reverse(), frame.Payload);
        Assert.Equal(0, frame.OriginalSize);
        Assert.Equal(4, frame.ErrorCode);
        pool.ThrowIfLeaks();
    }

    [Fact]
    public void TryDecode_CompressedServerFrameWithoutDecompressor_IsCompressionNotSupported()
    {
        var pool = DecodeHarness.CheckedPool();
        using var decoder = new ServerFrameDecoder(pool);
        var buffer = new ReadOnlySequence<byte>(WireBytes.Server("Z", 0, 0, 0, 10, [1, 2, 3]));

        var error = Assert.Throws<FrameDecodeException>(() => decoder.TryDecode(ref buffer, out _));

        Assert.Equal(FrameError.CompressionNotSupported, error.Error);
        pool.ThrowIfLeaks();
    }

    private sealed class ReverseDecompressor : IPayloadDecompressor
    {
        public int Decompress(ReadOnlySpan<byte> source, Span<byte> destination)
        {
            source.CopyTo(destination);
            destination[..source.Length].Reverse();
            return source.Length;
        }
    }
}
