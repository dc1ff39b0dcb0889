using System.Text;
using PlayHouse.Core.Codec;
using PlayHouse.Core.Pooling;

namespace PlayHouse.Core.Tests.Codec;

public sealed class ClientFrameDecoderTests
{
    private static CopiedFrame First { get; } = new("로그인요청", 1, 1001, 0, 0, WireBytes.Pattern(64, seed: 3));
    private static CopiedFrame Second { get; } = new("Echo", 0, -5, 0, 0, WireBytes.Pattern(5, seed: 9));

    private static byte[] Encode(CopiedFrame frame) => WireBytes.Client(frame.MsgId, frame.MsgSeq, frame.StageId, frame.Payload);

    [Fact]
    public void Decode_FrameSplitAtEveryOffset_YieldsSameFrame()
    {
        var pool = DecodeHarness.CheckedPool();
        var bytes = Encode(First);
        for (var split = 0; split <= bytes.Length; split++)
        {
            using var decoder = new ClientFrameDecoder(pool);

            var frames = DecodeHarness.FeedClient(decoder, DecodeHarness.Cut(bytes, split));

            var frame = Assert.Single(frames);
            Assert.True(frame.Matches(First), $"split at {split}: {frame}");
            Assert.False(decoder.HasPartialFrame);
        }

        pool.ThrowIfLeaks();
    }

    [Fact]
    public void Decode_FrameCutIntoThreeChunksAtEveryPairOfOffsets_YieldsSameFrame()
    {
        var pool = DecodeHarness.CheckedPool();
        var bytes = WireBytes.Client("가나", 4, 8, WireBytes.Pattern(6));
        var expected = new CopiedFrame("가나", 4, 8, 0, 0, WireBytes.Pattern(6));
        for (var a = 0; a <= bytes.Length; a++)
        {
            for (var b = a; b <= bytes.Length; b++)
            {
                using var decoder = new ClientFrameDecoder(pool);

                var frame = Assert.Single(DecodeHarness.FeedClient(decoder, DecodeHarness.Cut(bytes, a, b)));

                Assert.True(frame.Matches(expected), $"cuts at {a},{b}: {frame}");
            }
        }

        pool.ThrowIfLeaks();
    }

    [Fact]
    public void Decode_TwoFramesBackToBackSplitAtEveryOffset_YieldsBothInOrder()
    {
        var pool = DecodeHarness.CheckedPool();
        byte[] bytes = [.. Encode(First), .. Encode(Second)];
        for (var split = 0; split <= bytes.Length; split++)
        {
            using var decoder = new ClientFrameDecoder(pool);

            var frames = DecodeHarness.FeedClient(decoder, DecodeHarness.Cut(bytes, split));

            Assert.Equal(2, frames.Count);
            Assert.True(frames[0].Matches(First), $"split at {split}: {frames[0]}");
            Assert.True(frames[1].Matches(Second), $"split at {split}: {frames[1]}");
        }

        pool.ThrowIfLeaks();
    }

    [Fact]
    public void Decode_TwoFramesFedByteByByte_YieldsBothInOrder()
    {
        var pool = DecodeHarness.CheckedPool();
        using var decoder = new ClientFrameDecoder(pool);

        var frames = DecodeHarness.FeedClient(decoder, DecodeHarness.ByteByByte([.. Encode(First), .. Encode(Second)]));

        Assert.Equal(2, frames.Count);
        Assert.True(frames[0].Matches(First));
        Assert.True(frames[1].Matches(Second));
        Assert.Equal(Encode(First).Length + Encode(Second).Length, decoder.StreamOffsetBytes);
        decoder.Complete();
        pool.ThrowIfLeaks();
    }

    [Fact]
    public void Decode_SmallestFrame_YieldsEmptyIdAndEmptyPayloadWithoutRenting()
    {
        var pool = DecodeHarness.CheckedPool();
        using var decoder = new ClientFrameDecoder(pool);
        var bytes = WireBytes.Client(string.Empty, 0, 0, []);
        Assert.Equal(4 + WireProtocol.MinClientBodyBytes, bytes.Length);

        ReadOnlySpan<byte> input = bytes;
        Assert.True(decoder.TryDecode(ref input, out var frame));

        Assert.Equal(string.Empty, frame.MsgId);
        Assert.True(frame.Payload.IsEmpty);
        Assert.Equal(0, pool.GetStatistics().Rents);
    }

    [Fact]
    public void Decode_ManyFramesInOneChunk_ReturnsThemOneAtATime()
    {
        var pool = DecodeHarness.CheckedPool();
        using var decoder = new ClientFrameDecoder(pool);
        byte[] bytes = [.. Encode(First), .. Encode(Second), .. Encode(First)];
        ReadOnlySpan<byte> input = bytes;

        Assert.True(decoder.TryDecode(ref input, out var a));
        Assert.Equal(bytes.Length - Encode(First).Length, input.Length);
        Assert.True(decoder.TryDecode(ref input, out var b));
        Assert.True(decoder.TryDecode(ref input, out var c));
        Assert.False(decoder.TryDecode(ref input, out _));

        // The caller owns all three payloads at once until it disposes them.
        Assert.Equal(3, pool.GetStatistics().Outstanding);
        a.Dispose();
        b.Dispose();
        c.Dispose();
        pool.ThrowIfLeaks();
    }

    [Fact]
    public void Decode_SameMsgIdTwice_ReturnsTheSameStringInstance()
    {
        var pool = DecodeHarness.CheckedPool();
        var cache = new Utf8StringCache();
        using var decoder = new ClientFrameDecoder(pool, cache);
        byte[] bytes = [.. Encode(First), .. Encode(First)];
        ReadOnlySpan<byte> input = bytes;

        Assert.True(decoder.TryDecode(ref input, out var a));
        Assert.True(decoder.TryDecode(ref input, out var b));

        Assert.Same(a.MsgId, b.MsgId);
        Assert.Equal(1, cache.GetStatistics().Hits);
        Assert.Equal(1, cache.GetStatistics().Misses);
        a.Dispose();
        b.Dispose();
    }

    [Fact]
    public void Decode_SteadyState_AllocatesNothingPerFrame()
    {
        var pool = new MessagePool();
        using var decoder = new ClientFrameDecoder(pool);
        var bytes = Encode(First);
        for (var i = 0; i < 100; i++)
        {
            DecodeOnce(decoder, bytes);
        }

        var before = GC.GetAllocatedBytesForCurrentThread();
        for (var i = 0; i < 1000; i++)
        {
            DecodeOnce(decoder, bytes);
        }

        Assert.Equal(0, GC.GetAllocatedBytesForCurrentThread() - before);

        static void DecodeOnce(ClientFrameDecoder decoder, byte[] bytes)
        {
            // Two chunks, so the partial-frame path is measured too.
            ReadOnlySpan<byte> head = bytes.AsSpan(0, 7);
            ReadOnlySpan<byte> rest = bytes.AsSpan(7);
            Assert.False(decoder.TryDecode(ref head, out _));
            Assert.True(decoder.TryDecode(ref rest, out var frame));
            frame.Dispose();
        }
    }

    public static TheoryData<string, byte[], FrameError> MalformedFrames() => new()
    {
        { "negative length", WireBytes.RawClient(-1, null, [], 0, 0, []), FrameError.NegativeLength },
        { "int.MinValue length", WireBytes.RawClient(int.MinValue, null, [], 0, 0, []), FrameError.NegativeLength },
        { "length 10 (< 11)", WireBytes.RawClient(10, null, [], 0, 0, []), FrameError.LengthTooSmall },
        { "length 0", WireBytes.RawClient(0, null, [], 0, 0, []), FrameError.LengthTooSmall },
        { "length 2 MiB + 1", WireBytes.RawClient(WireProtocol.MaxBodyBytes + 1, null, [], 0, 0, []), FrameError.LengthTooLarge },
        { "length int.MaxValue", WireBytes.RawClient(int.MaxValue, null, [], 0, 0, []), FrameError.LengthTooLarge },
        { "msg id length 1 in an 11-byte body", WireBytes.RawClient(11, 1, [], 0, 0, []), FrameError.MsgIdLengthPastFrame },
        { "msg id length 255 in a 20-byte body", WireBytes.RawClient(20, 255, [], 0, 0, new byte[9]), FrameError.MsgIdLengthPastFrame },
        { "msg id 0xFF", WireBytes.RawClient(null, null, [0x41, 0xFF], 0, 0, []), FrameError.InvalidUtf8MsgId },
        { "msg id with a cut-off 3-byte sequence", WireBytes.RawClient(null, null, [0xEA, 0xB0], 0, 0, [1, 2]), FrameError.InvalidUtf8MsgId },
        { "msg id with an encoded surrogate", WireBytes.RawClient(null, null, [0xED, 0xA0, 0x80], 0, 0, []), FrameError.InvalidUtf8MsgId },
    };

    [Theory]
    [MemberData(nameof(MalformedFrames))]
    public void Decode_MalformedFrame_ThrowsItsFrameErrorAndLeaksNothing(string description, byte[] bytes, FrameError expected)
    {
        foreach (var chunks in new[] { new[] { bytes }, DecodeHarness.ByteByByte(bytes).ToArray() })
        {
            var pool = DecodeHarness.CheckedPool();
            using var decoder = new ClientFrameDecoder(pool);

            var error = Assert.Throws<FrameDecodeException>(() => DecodeHarness.FeedClient(decoder, chunks));

            Assert.True(expected == error.Error, $"{description}: expected {expected}, got {error.Error}: {error.Message}");
            Assert.Equal(expected, decoder.Fault);
            pool.ThrowIfLeaks();
        }
    }

    [Fact]
    public void Decode_AfterAnError_RejectsFurtherInputAsPoisoned()
    {
        var pool = DecodeHarness.CheckedPool();
        using var decoder = new ClientFrameDecoder(pool);
        Assert.Throws<FrameDecodeException>(() => DecodeHarness.FeedClient(decoder, [WireBytes.RawClient(-7, null, [], 0, 0, [])]));

        var again = Assert.Throws<FrameDecodeException>(() => DecodeHarness.FeedClient(decoder, [Encode(Second)]));

        Assert.Equal(FrameError.NegativeLength, again.Error);
        Assert.Contains("already failed", again.Message, StringComparison.Ordinal);
        Assert.Throws<FrameDecodeException>(decoder.Complete);
        pool.ThrowIfLeaks();
    }

    [Fact]
    public void Decode_LengthOverALoweredLimit_IsLengthTooLarge()
    {
        var pool = DecodeHarness.CheckedPool();
        using var decoder = new ClientFrameDecoder(pool, options: new FrameDecoderOptions { MaxBodyBytes = 64 });
        var fits = WireBytes.Client("a", 1, 1, new byte[64 - 12]);
        var tooBig = WireBytes.Client("a", 1, 1, new byte[64 - 11]);

        Assert.Single(DecodeHarness.FeedClient(decoder, [fits]));
        var error = Assert.Throws<FrameDecodeException>(() => DecodeHarness.FeedClient(decoder, [tooBig]));

        Assert.Equal(FrameError.LengthTooLarge, error.Error);
        pool.ThrowIfLeaks();
    }

    [Fact]
    public void Options_MaxBodyAboveTwoMebibytes_AreRejected()
    {
        var pool = new MessagePool();

        Assert.Throws<ArgumentOutOfRangeException>(() => new ClientFrameDecoder(pool, options: new FrameDecoderOptions { MaxBodyBytes = WireProtocol.MaxBodyBytes + 1 }));
        Assert.Throws<ArgumentOutOfRangeException>(() => new ClientFrameDecoder(pool, options: new FrameDecoderOptions { MaxBodyBytes = 10 }));
    }

    [Fact]
    public void Complete_InsideTheLengthPrefix_IsTruncatedFrame()
    {
        var pool = DecodeHarness.CheckedPool();
        using var decoder = new ClientFrameDecoder(pool);
        DecodeHarness.FeedClient(decoder, [Encode(Second)[..3]]);

        var error = Assert.Throws<FrameDecodeException>(decoder.Complete);

        Assert.Equal(FrameError.TruncatedFrame, error.Error);
    }

    [Fact]
    public void Complete_InsideThePayload_IsTruncatedFrameAndReturnsThePartialBuffer()
    {
        var pool = DecodeHarness.CheckedPool();
        using var decoder = new ClientFrameDecoder(pool);
        var bytes = Encode(First);
        DecodeHarness.FeedClient(decoder, [bytes[..^10]]);
        Assert.Equal(1, pool.GetStatistics().Outstanding);

        var error = Assert.Throws<FrameDecodeException>(decoder.Complete);

        Assert.Equal(FrameError.TruncatedFrame, error.Error);
        Assert.Contains($"{bytes.Length - 10} of {bytes.Length} bytes", error.Message, StringComparison.Ordinal);
        pool.ThrowIfLeaks();
    }

    [Fact]
    public void Complete_BetweenFrames_SucceedsAndEndsTheStream()
    {
        var pool = DecodeHarness.CheckedPool();
        using var decoder = new ClientFrameDecoder(pool);
        DecodeHarness.FeedClient(decoder, [Encode(Second)]);

        decoder.Complete();

        Assert.Throws<InvalidOperationException>(() => DecodeHarness.FeedClient(decoder, [Encode(Second)]));
    }

    [Fact]
    public void Dispose_InsideThePayload_ReturnsThePartialBuffer()
    {
        var pool = DecodeHarness.CheckedPool();
        var decoder = new ClientFrameDecoder(pool);
        DecodeHarness.FeedClient(decoder, [Encode(First)[..^1]]);
        Assert.Equal(1, pool.GetStatistics().Outstanding);

        decoder.Dispose();

        pool.ThrowIfLeaks();
        Assert.Throws<ObjectDisposedException>(() => DecodeHarness.FeedClient(decoder, [[1]]));
    }

    [Fact]
    public void Decode_PoolRefusingTheRent_PoisonsTheDecoderAndLeaksNothing()
    {
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = true, MaxRentBytes = 32 });
        using var decoder = new ClientFrameDecoder(pool);

        Assert.Throws<ArgumentOutOfRangeException>(() => DecodeHarness.FeedClient(decoder, [Encode(First)]));

        Assert.Throws<InvalidOperationException>(() => DecodeHarness.FeedClient(decoder, [Encode(Second)]));
        pool.ThrowIfLeaks();
    }

    [Fact]
    public void Decode_GoodFrameThenGarbage_DeliversTheGoodFrameFirst()
    {
        var pool = DecodeHarness.CheckedPool();
        using var decoder = new ClientFrameDecoder(pool);
        byte[] bytes = [.. Encode(First), .. WireBytes.I32(-1)];
        ReadOnlySpan<byte> input = bytes;

        Assert.True(decoder.TryDecode(ref input, out var good));
        var error = Assert.Throws<FrameDecodeException>(() =>
        {
            ReadOnlySpan<byte> rest = bytes.AsSpan(Encode(First).Length);
            decoder.TryDecode(ref rest, out _);
        });

        Assert.Equal(FrameError.NegativeLength, error.Error);
        Assert.Equal(bytes.Length, error.StreamOffsetBytes);
        Assert.Equal(First.Payload, good.Payload.Span.ToArray());
        good.Dispose();
        pool.ThrowIfLeaks();
    }

    [Fact]
    public void Decode_PayloadOwner_IsTheConfiguredLabel()
    {
        var pool = DecodeHarness.CheckedPool();
        using var decoder = new ClientFrameDecoder(pool, options: new FrameDecoderOptions { PayloadOwner = "session-7" });
        ReadOnlySpan<byte> input = Encode(First);

        Assert.True(decoder.TryDecode(ref input, out var frame));

        Assert.Equal("session-7", frame.Payload.Owner);
        Assert.Equal("session-7", Assert.Single(pool.GetOutstanding()).Owner);
        frame.Dispose();
    }

    [Fact]
    public void Decode_HeartbeatFrame_IsRecognised()
    {
        var pool = DecodeHarness.CheckedPool();
        using var decoder = new ClientFrameDecoder(pool);
        ReadOnlySpan<byte> input = WireBytes.Client("@Heart@Beat@", 0, 0, []);

        Assert.True(decoder.TryDecode(ref input, out var frame));

        Assert.True(frame.IsHeartbeat);
        Assert.False(frame.IsRequest);
        Assert.Equal(Encoding.UTF8.GetBytes(WireProtocol.HeartbeatMsgId), Encoding.UTF8.GetBytes(frame.MsgId));
    }
}
