using System.Buffers;
using PlayHouse.Core.Codec;
using PlayHouse.Core.Pooling;

namespace PlayHouse.Core.Tests.Codec;

public sealed class ServerFrameCodecTests
{
    private static CopiedFrame Reply { get; } = new("로그인응답", 12, 1001, 0, 0, WireBytes.Pattern(64, seed: 5));
    private static CopiedFrame Push { get; } = new("Notice", 0, 7, 503, 0, WireBytes.Pattern(3, seed: 11));

    private static byte[] Encode(CopiedFrame frame) =>
        WireBytes.Server(frame.MsgId, frame.MsgSeq, frame.StageId, frame.ErrorCode, frame.OriginalSize, frame.Payload);

    [Theory]
    [MemberData(nameof(ClientFrameCodecTests.MsgIdsAndPayloadSizes), MemberType = typeof(ClientFrameCodecTests))]
    public void EncodeThenDecode_ServerFrame_MatchesLayoutAndRoundTrips(string msgId, int payloadBytes)
    {
        var pool = DecodeHarness.CheckedPool();
        var payload = WireBytes.Pattern(payloadBytes, seed: 2);
        var encoded = new byte[ServerFrameEncoder.GetEncodedLength(msgId, payloadBytes)];

        ServerFrameEncoder.Encode(encoded, msgId, 40000, -1, 65535, payload);

        Assert.Equal(WireBytes.Server(msgId, 40000, -1, 65535, 0, payload), encoded);
        using var decoder = new ServerFrameDecoder(pool);
        var frame = Assert.Single(DecodeHarness.FeedServer(decoder, [encoded]));
        Assert.True(frame.Matches(new CopiedFrame(msgId, 40000, -1, 65535, 0, payload)), frame.ToString());
        pool.ThrowIfLeaks();
    }

    [Fact]
    public void Encode_ServerFrameIntoBufferWriter_WritesTheSameBytesAsIntoASpan()
    {
        var writer = new ArrayBufferWriter<byte>();

        var written = ServerFrameEncoder.Encode(writer, Reply.MsgId, Reply.MsgSeq, Reply.StageId, Reply.ErrorCode, Reply.Payload);

        Assert.Equal(Encode(Reply), writer.WrittenSpan.ToArray());
        Assert.Equal(written, writer.WrittenCount);
    }

    [Fact]
    public void Encode_DecodedServerFrame_ReproducesTheOriginalBytes()
    {
        var pool = DecodeHarness.CheckedPool();
        using var decoder = new ServerFrameDecoder(pool);
        ReadOnlySpan<byte> input = Encode(Push);
        Assert.True(decoder.TryDecode(ref input, out var frame));

        var reencoded = new byte[ServerFrameEncoder.GetEncodedLength(frame.MsgId, frame.Payload.Length)];
        ServerFrameEncoder.Encode(reencoded, frame);

        Assert.Equal(Encode(Push), reencoded);
        Assert.False(frame.IsReply);
        frame.Dispose();
        pool.ThrowIfLeaks();
    }

    [Fact]
    public void Decode_ServerFramesSplitAtEveryOffset_YieldBothInOrder()
    {
        var pool = DecodeHarness.CheckedPool();
        byte[] bytes = [.. Encode(Reply), .. Encode(Push)];
        for (var split = 0; split <= bytes.Length; split++)
        {
            using var decoder = new ServerFrameDecoder(pool);

            var frames = DecodeHarness.FeedServer(decoder, DecodeHarness.Cut(bytes, split));

            Assert.Equal(2, frames.Count);
            Assert.True(frames[0].Matches(Reply), $"split at {split}: {frames[0]}");
            Assert.True(frames[1].Matches(Push), $"split at {split}: {frames[1]}");
        }

        pool.ThrowIfLeaks();
    }

    [Fact]
    public void Decode_ServerFramesFedByteByByte_YieldBothInOrder()
    {
        var pool = DecodeHarness.CheckedPool();
        using var decoder = new ServerFrameDecoder(pool);

        var frames = DecodeHarness.FeedServer(decoder, DecodeHarness.ByteByByte([.. Encode(Reply), .. Encode(Push)]));

        Assert.Equal(2, frames.Count);
        Assert.True(frames[0].Matches(Reply));
        Assert.True(frames[1].Matches(Push));
        pool.ThrowIfLeaks();
    }

    [Fact]
    public void Decode_SmallestServerFrame_Is17ByteBody()
    {
        var pool = DecodeHarness.CheckedPool();
        using var decoder = new ServerFrameDecoder(pool);
        var bytes = WireBytes.Server(string.Empty, 0, 0, 0, 0, []);

        var frame = Assert.Single(DecodeHarness.FeedServer(decoder, [bytes]));

        Assert.Equal(4 + 17, bytes.Length);
        Assert.Equal(string.Empty, frame.MsgId);
        Assert.Empty(frame.Payload);
    }

    public static TheoryData<string, byte[], FrameError> MalformedServerFrames() => new()
    {
        { "negative length", WireBytes.RawServer(-2, null, [], 0, 0, 0, 0, []), FrameError.NegativeLength },
        { "length 16 (< 17)", WireBytes.RawServer(16, null, [], 0, 0, 0, 0, []), FrameError.LengthTooSmall },
        { "length 11 is a client minimum, not a server one", WireBytes.RawServer(11, null, [], 0, 0, 0, 0, []), FrameError.LengthTooSmall },
        { "length 2 MiB + 1", WireBytes.RawServer(WireProtocol.MaxBodyBytes + 1, null, [], 0, 0, 0, 0, []), FrameError.LengthTooLarge },
        { "msg id length 1 in a 17-byte body", WireBytes.RawServer(17, 1, [], 0, 0, 0, 0, []), FrameError.MsgIdLengthPastFrame },
        { "msg id 0xC3 0x28", WireBytes.RawServer(null, null, [0xC3, 0x28], 0, 0, 0, 0, []), FrameError.InvalidUtf8MsgId },
        { "OriginalSize -1", WireBytes.RawServer(null, null, "a"u8.ToArray(), 0, 0, 0, -1, [1]), FrameError.NegativeOriginalSize },
        { "OriginalSize 100 without a decompressor", WireBytes.RawServer(null, null, "a"u8.ToArray(), 0, 0, 0, 100, [1, 2]), FrameError.CompressionNotSupported },
    };

    [Theory]
    [MemberData(nameof(MalformedServerFrames))]
    public void Decode_MalformedServerFrame_ThrowsItsFrameErrorAndLeaksNothing(string description, byte[] bytes, FrameError expected)
    {
        foreach (var chunks in new[] { new[] { bytes }, DecodeHarness.ByteByByte(bytes).ToArray() })
        {
            var pool = DecodeHarness.CheckedPool();
            using var decoder = new ServerFrameDecoder(pool);

            var error = Assert.Throws<FrameDecodeException>(() => DecodeHarness.FeedServer(decoder, chunks));

            Assert.True(expected == error.Error, $"{description}: expected {expected}, got {error.Error}: {error.Message}");
            pool.ThrowIfLeaks();
            Assert.Throws<FrameDecodeException>(() => DecodeHarness.FeedServer(decoder, [Encode(Push)]));
        }
    }

    [Fact]
    public void Decode_CompressedFrameWithDecompressor_YieldsTheInflatedPayloadMarkedRaw()
    {
        var pool = DecodeHarness.CheckedPool();
        using var decoder = new ServerFrameDecoder(pool, options: new FrameDecoderOptions { Decompressor = new RepeatDecompressor() });
        var bytes = WireBytes.Server("Big", 3, 4, 0, 7, "ab"u8.ToArray());

        for (var split = 0; split <= bytes.Length; split++)
        {
            var frame = Assert.Single(DecodeHarness.FeedServer(decoder, DecodeHarness.Cut(bytes, split)));

            Assert.Equal("abababa"u8.ToArray(), frame.Payload);
            Assert.Equal(0, frame.OriginalSize);
        }

        pool.ThrowIfLeaks();
    }

    [Fact]
    public void Decode_OriginalSizeOverTheLimit_IsOriginalSizeTooLarge()
    {
        var pool = DecodeHarness.CheckedPool();
        var options = new FrameDecoderOptions { Decompressor = new RepeatDecompressor(), MaxOriginalSizeBytes = 1000 };
        using var decoder = new ServerFrameDecoder(pool, options: options);

        var error = Assert.Throws<FrameDecodeException>(() => DecodeHarness.FeedServer(decoder, [WireBytes.Server("Big", 0, 0, 0, 1001, [1])]));

        Assert.Equal(FrameError.OriginalSizeTooLarge, error.Error);
        pool.ThrowIfLeaks();
    }

    public static TheoryData<string> FailingDecompressors() => ["throws", "short"];

    [Theory]
    [MemberData(nameof(FailingDecompressors))]
    public void Decode_DecompressorFailing_IsDecompressionFailedAndReturnsBothBuffers(string kind)
    {
        var pool = DecodeHarness.CheckedPool();
        IPayloadDecompressor decompressor = kind == "throws" ? new ThrowingDecompressor() : new ShortDecompressor();
        using var decoder = new ServerFrameDecoder(pool, options: new FrameDecoderOptions { Decompressor = decompressor });
        var bytes = WireBytes.Server("Big", 0, 0, 0, 300, WireBytes.Pattern(40));

        var error = Assert.Throws<FrameDecodeException>(() => DecodeHarness.FeedServer(decoder, DecodeHarness.Cut(bytes, 30)));

        Assert.Equal(FrameError.DecompressionFailed, error.Error);
        Assert.Equal(kind == "throws", error.InnerException is InvalidDataException);
        pool.ThrowIfLeaks();
        Assert.True(pool.GetStatistics().Rents >= 2, "both the compressed and the inflated buffer were rented");
    }

    [Fact]
    public void Decode_ClientDecoderGivenADecompressor_StillReadsClientLayout()
    {
        var pool = DecodeHarness.CheckedPool();
        using var decoder = new ClientFrameDecoder(pool, options: new FrameDecoderOptions { Decompressor = new ThrowingDecompressor() });

        var frame = Assert.Single(DecodeHarness.FeedClient(decoder, [WireBytes.Client("a", 1, 2, [9, 9])]));

        Assert.Equal([9, 9], frame.Payload);
    }

    [Fact]
    public void Decode_SteadyStateServerFrames_AllocateNothingPerFrame()
    {
        var pool = new MessagePool();
        using var decoder = new ServerFrameDecoder(pool);
        var bytes = Encode(Reply);
        for (var i = 0; i < 100; i++)
        {
            DecodeOnce(decoder, bytes);
        }

        // A per-frame allocation shows in every window of 1,000 frames; a one-off one (the runtime's or a coverage
        // collector's, once per process) can land in one window only, so the quietest of three windows is judged.
        var leastWindowBytes = long.MaxValue;
        for (var window = 0; window < 3; window++)
        {
            var before = GC.GetAllocatedBytesForCurrentThread();
            for (var i = 0; i < 1000; i++)
            {
                DecodeOnce(decoder, bytes);
            }

            leastWindowBytes = Math.Min(leastWindowBytes, GC.GetAllocatedBytesForCurrentThread() - before);
        }

        Assert.Equal(0, leastWindowBytes);

        static void DecodeOnce(ServerFrameDecoder decoder, byte[] bytes)
        {
            ReadOnlySpan<byte> input = bytes;
            Assert.True(decoder.TryDecode(ref input, out var frame));
            frame.Dispose();
        }
    }
}
