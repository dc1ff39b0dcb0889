using System.Buffers;
using PlayHouse.Core.Codec;
using PlayHouse.Core.Mesh;
using PlayHouse.Core.Mesh.Proto;
using PlayHouse.Core.Tests.Codec;

namespace PlayHouse.Core.Tests.Mesh;

public sealed class MeshFrameDecoderTests
{
    private static RouteHeader SecondHeader { get; } = new() { MsgId = "Ping", From = "api-1" };

    private static byte[] FirstPayload { get; } = WireBytes.Pattern(64, seed: 4);

    private static byte[] SecondPayload { get; } = WireBytes.Pattern(3, seed: 8);

    private static byte[] BothFrames { get; } =
    [
        .. MeshFrameCodecTests.Encode(MeshFrameCodecTests.FullHeader(64), FirstPayload),
        .. MeshFrameCodecTests.Encode(SecondHeader, SecondPayload),
    ];

    private static List<(RouteHeader Header, byte[] Payload)> Feed(MeshFrameDecoder decoder, RouteHeader reused, IEnumerable<byte[]> chunks)
    {
        var frames = new List<(RouteHeader, byte[])>();
        foreach (var chunk in chunks)
        {
            ReadOnlySpan<byte> input = chunk;
            while (decoder.TryDecode(ref input, reused, out var payload))
            {
                frames.Add((reused.Clone(), payload.Span.ToArray()));
                payload.Dispose();
            }

            Assert.Equal(0, input.Length);
        }

        return frames;
    }

    private static void AssertBoth(List<(RouteHeader Header, byte[] Payload)> frames, string context)
    {
        Assert.True(frames.Count == 2, $"{context}: {frames.Count} frames");
        Assert.Equal(MeshFrameCodecTests.FullHeader(64), frames[0].Header);
        Assert.Equal(FirstPayload, frames[0].Payload);

        // The reused header must carry nothing over from the first frame.
        Assert.Equal(SecondHeader, frames[1].Header);
        Assert.Equal(SecondPayload, frames[1].Payload);
    }

    [Fact]
    public void Decode_TwoMeshFramesSplitAtEveryOffset_YieldBothWithAReusedHeader()
    {
        var pool = DecodeHarness.CheckedPool();
        for (var split = 0; split <= BothFrames.Length; split++)
        {
            using var decoder = new MeshFrameDecoder(pool);

            AssertBoth(Feed(decoder, new RouteHeader(), DecodeHarness.Cut(BothFrames, split)), $"split at {split}");
        }

        pool.ThrowIfLeaks();
    }

    [Fact]
    public void Decode_TwoMeshFramesByteByByte_YieldBoth()
    {
        var pool = DecodeHarness.CheckedPool();
        using var decoder = new MeshFrameDecoder(pool);

        AssertBoth(Feed(decoder, new RouteHeader(), DecodeHarness.ByteByByte(BothFrames)), "byte by byte");

        decoder.Complete();
        Assert.Equal(BothFrames.Length, decoder.StreamOffsetBytes);
        pool.ThrowIfLeaks();
    }

    [Fact]
    public void TryDecode_TwoMeshFramesInSegmentsSplitAtEveryOffset_YieldBoth()
    {
        var pool = DecodeHarness.CheckedPool();
        for (var split = 0; split <= BothFrames.Length; split++)
        {
            using var decoder = new MeshFrameDecoder(pool);
            var buffer = WireBytes.Segmented(BothFrames[..split], BothFrames[split..]);
            var header = new RouteHeader();
            var frames = new List<(RouteHeader, byte[])>();
            while (decoder.TryDecode(ref buffer, header, out var payload))
            {
                frames.Add((header.Clone(), payload.Span.ToArray()));
                payload.Dispose();
            }

            AssertBoth(frames, $"split at {split}");
            decoder.Complete(buffer);
        }

        pool.ThrowIfLeaks();
    }

    [Fact]
    public void TryDecode_MeshBytesArrivingOneAtATime_LeavesPartialFramesInTheBuffer()
    {
        var pool = DecodeHarness.CheckedPool();
        using var decoder = new MeshFrameDecoder(pool);
        var header = new RouteHeader();
        var count = 0;
        var consumed = 0;
        for (var arrived = 1; arrived <= BothFrames.Length; arrived++)
        {
            var buffer = new ReadOnlySequence<byte>(BothFrames, consumed, arrived - consumed);
            var before = buffer.Length;
            while (decoder.TryDecode(ref buffer, header, out var payload))
            {
                count++;
                payload.Dispose();
            }

            consumed += (int)(before - buffer.Length);
        }

        Assert.Equal(2, count);
        Assert.Equal(BothFrames.Length, consumed);
        pool.ThrowIfLeaks();
    }

    public static TheoryData<string, byte[], FrameError> MalformedMeshFrames()
    {
        var header = new RouteHeader { MsgId = "Ping" }.ToByteArrayForTest();
        return new()
        {
            { "negative FrameLen", MeshFrameCodecTests.Raw(-1, null, header, []), FrameError.NegativeLength },
            { "FrameLen 3", MeshFrameCodecTests.Raw(3, null, [], []), FrameError.LengthTooSmall },
            { "FrameLen over 2 MiB + header cap + 4", MeshFrameCodecTests.Raw(new MeshFrameOptions().MaxFrameLengthBytes + 1, 0, [], []), FrameError.LengthTooLarge },
            { "payload over 2 MiB with a small header", MeshFrameCodecTests.Raw(4 + 10 + MeshFrameCodec.MaxPayloadBytes + 1, 10, [], []), FrameError.LengthTooLarge },
            { "negative HeaderLen", MeshFrameCodecTests.Raw(null, -1, header, []), FrameError.NegativeHeaderLength },
            { "HeaderLen past the frame", MeshFrameCodecTests.Raw(null, header.Length + 1, header, []), FrameError.HeaderLengthPastFrame },
            { "HeaderLen over the cap", MeshFrameCodecTests.Raw(4 + 5000, 5000, [], []), FrameError.HeaderTooLarge },
            { "header starting with tag 0", MeshFrameCodecTests.Raw(null, null, [0x00, .. header], [1, 2, 3]), FrameError.InvalidHeader },
            { "header with a cut-off varint", MeshFrameCodecTests.Raw(null, null, [.. header, 0x08, 0xFF], [1, 2, 3]), FrameError.InvalidHeader },
            { "header string longer than the header", MeshFrameCodecTests.Raw(null, null, [0x1A, 0x7F, 0x61], [1, 2, 3]), FrameError.InvalidHeader },
            { "header with wire type 7", MeshFrameCodecTests.Raw(null, null, [0x0F, 0x01], [1, 2, 3]), FrameError.InvalidHeader },
            { "payload_size 5 with 3 payload bytes", MeshFrameCodecTests.Raw(null, null, new RouteHeader { PayloadSize = 5 }.ToByteArrayForTest(), [1, 2, 3]), FrameError.PayloadSizeMismatch },
        };
    }

    [Theory]
    [MemberData(nameof(MalformedMeshFrames))]
    public void Decode_MalformedMeshFrame_ThrowsItsFrameErrorAndLeaksNothing(string description, byte[] bytes, FrameError expected)
    {
        foreach (var chunks in new[] { new[] { bytes }, DecodeHarness.ByteByByte(bytes).ToArray() })
        {
            var pool = DecodeHarness.CheckedPool();
            using var decoder = new MeshFrameDecoder(pool);
            var header = new RouteHeader();

            var error = Assert.Throws<FrameDecodeException>(() => Feed(decoder, header, chunks));

            Assert.True(expected == error.Error, $"{description}: expected {expected}, got {error.Error}: {error.Message}");
            Assert.Equal(expected, decoder.Fault);
            pool.ThrowIfLeaks();
            Assert.Throws<FrameDecodeException>(() => Feed(decoder, header, [BothFrames]));
        }
    }

    [Theory]
    [MemberData(nameof(MalformedMeshFrames))]
    public void TryDecode_MalformedMeshFrameInSegments_ThrowsItsFrameErrorAndLeaksNothing(string description, byte[] bytes, FrameError expected)
    {
        var pool = DecodeHarness.CheckedPool();
        using var decoder = new MeshFrameDecoder(pool);
        var buffer = WireBytes.OneBytePerSegment(bytes);

        var error = Assert.Throws<FrameDecodeException>(() => decoder.TryDecode(ref buffer, new RouteHeader(), out _));

        Assert.True(expected == error.Error, $"{description}: expected {expected}, got {error.Error}");
        pool.ThrowIfLeaks();
    }

    [Theory]
    [MemberData(nameof(MalformedMeshFrames))]
    public void TryDecode_MalformedWholeMeshFrame_ThrowsItsFrameError(string description, byte[] bytes, FrameError expected)
    {
        var pool = DecodeHarness.CheckedPool();

        var error = Assert.Throws<FrameDecodeException>(() => MeshFrameCodec.TryDecode(bytes, new RouteHeader(), pool, out _, out _));

        Assert.True(expected == error.Error, $"{description}: expected {expected}, got {error.Error}");
        pool.ThrowIfLeaks();
    }

    [Fact]
    public void Decode_CorruptedProtobufHeader_ReturnsThePayloadBufferAndClearsTheHeader()
    {
        var pool = DecodeHarness.CheckedPool();
        using var decoder = new MeshFrameDecoder(pool);
        var bytes = MeshFrameCodecTests.Encode(MeshFrameCodecTests.FullHeader(64), FirstPayload);
        bytes[8] = 0x00; // The header's first tag becomes tag 0, which protobuf rejects.
        var header = MeshFrameCodecTests.FullHeader(1);

        // Feed all but the last byte: the payload buffer is rented and partly filled when the header is parsed.
        Feed(decoder, header, [bytes[..^1]]);
        Assert.Equal(1, pool.GetStatistics().Outstanding);
        var error = Assert.Throws<FrameDecodeException>(() => Feed(decoder, header, [bytes[^1..]]));

        Assert.Equal(FrameError.InvalidHeader, error.Error);
        Assert.IsType<Google.Protobuf.InvalidProtocolBufferException>(error.InnerException);
        Assert.Equal(new RouteHeader(), header);
        pool.ThrowIfLeaks();
    }

    [Fact]
    public void Complete_InsideAMeshPayload_IsTruncatedFrameAndLeaksNothing()
    {
        var pool = DecodeHarness.CheckedPool();
        using var decoder = new MeshFrameDecoder(pool);
        Feed(decoder, new RouteHeader(), [BothFrames[..40]]);
        Assert.True(decoder.HasPartialFrame);

        var error = Assert.Throws<FrameDecodeException>(decoder.Complete);

        Assert.Equal(FrameError.TruncatedFrame, error.Error);
        pool.ThrowIfLeaks();
    }

    [Fact]
    public void Dispose_InsideAMeshPayload_ReturnsThePartialBuffer()
    {
        var pool = DecodeHarness.CheckedPool();
        var decoder = new MeshFrameDecoder(pool);
        Feed(decoder, new RouteHeader(), [BothFrames[..^1]]);
        Assert.Equal(1, pool.GetStatistics().Outstanding);

        decoder.Dispose();

        pool.ThrowIfLeaks();
    }

    [Fact]
    public void Decode_HeaderOverALoweredCap_IsHeaderTooLarge()
    {
        var pool = DecodeHarness.CheckedPool();
        using var decoder = new MeshFrameDecoder(pool, new MeshFrameOptions { MaxHeaderBytes = 16 });
        var bytes = MeshFrameCodecTests.Encode(new RouteHeader { MsgId = new string('m', 20) }, []);

        var error = Assert.Throws<FrameDecodeException>(() => Feed(decoder, new RouteHeader(), [bytes]));

        Assert.Equal(FrameError.HeaderTooLarge, error.Error);
    }

    [Fact]
    public void Decode_ServerIdsThroughASharedCache_AreTheSameInstances()
    {
        // The mesh reads sender ids with protobuf; a shared Utf8StringCache turns them into one instance per peer.
        var cache = new Utf8StringCache(capacity: 8);
        var pool = DecodeHarness.CheckedPool();
        using var decoder = new MeshFrameDecoder(pool);
        var header = new RouteHeader();
        var senders = new List<string>();
        foreach (var from in new[] { "play-8638", "play-754906", "play-8638", "play-754906" })
        {
            var bytes = MeshFrameCodecTests.Encode(new RouteHeader { From = from, MsgSeq = 1 }, []);
            var got = Feed(decoder, header, [bytes]);
            senders.Add(cache.GetString(System.Text.Encoding.UTF8.GetBytes(Assert.Single(got).Header.From)));
        }

        Assert.Equal(["play-8638", "play-754906", "play-8638", "play-754906"], senders);
        Assert.Same(senders[0], senders[2]);
        Assert.Same(senders[1], senders[3]);
        Assert.Equal(2, cache.GetStatistics().Count);
    }
}

internal static class RouteHeaderTestExtensions
{
    public static byte[] ToByteArrayForTest(this RouteHeader header) => Google.Protobuf.MessageExtensions.ToByteArray(header);
}
