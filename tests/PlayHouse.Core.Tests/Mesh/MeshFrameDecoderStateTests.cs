using System.Buffers;
using Google.Protobuf;
using PlayHouse.Core.Codec;
using PlayHouse.Core.Mesh;
using PlayHouse.Core.Mesh.Proto;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Tests.Codec;

namespace PlayHouse.Core.Tests.Mesh;

/// <summary>
/// What <see cref="MeshFrameDecoder"/> holds between calls: its partial-frame flag, stream offset, end of stream,
/// disposal and poisoning, and the checks of its sequence path on frames that arrive a byte at a time.
/// </summary>
public sealed class MeshFrameDecoderStateTests
{
    private static readonly byte[] PingFrame = MeshFrameCodecTests.Encode(new RouteHeader { MsgId = "Ping", MsgSeq = 1 }, WireBytes.Pattern(6));

    [Fact]
    public void TryDecode_RefusesANullHeader_OnBothPaths()
    {
        using var decoder = new MeshFrameDecoder(new MessagePool());
        var sequence = new ReadOnlySequence<byte>(PingFrame);

        Assert.Equal("header", Assert.Throws<ArgumentNullException>(() =>
        {
            ReadOnlySpan<byte> input = PingFrame;
            decoder.TryDecode(ref input, null!, out _);
        }).ParamName);
        Assert.Equal("header", Assert.Throws<ArgumentNullException>(() => decoder.TryDecode(ref sequence, null!, out _)).ParamName);
    }

    [Fact]
    public void HasPartialFrame_IsTrueFromTheFirstByteOfAFrame_UntilItsLast()
    {
        using var decoder = new MeshFrameDecoder(DecodeHarness.CheckedPool());
        var header = new RouteHeader();
        Assert.False(decoder.HasPartialFrame);

        ReadOnlySpan<byte> input = PingFrame.AsSpan(0, 2);
        Assert.False(decoder.TryDecode(ref input, header, out _));
        Assert.True(decoder.HasPartialFrame);

        input = PingFrame.AsSpan(2);
        Assert.True(decoder.TryDecode(ref input, header, out var payload));
        payload.Dispose();
        Assert.False(decoder.HasPartialFrame);
        Assert.Equal(PingFrame.Length, decoder.StreamOffsetBytes);
    }

    [Fact]
    public void TryDecode_SequenceAfterSpanBytesOfAFrame_IsRefusedSayingNotToMixThem()
    {
        using var decoder = new MeshFrameDecoder(DecodeHarness.CheckedPool());
        ReadOnlySpan<byte> input = PingFrame.AsSpan(0, 3);
        Assert.False(decoder.TryDecode(ref input, new RouteHeader(), out _));
        var sequence = new ReadOnlySequence<byte>(PingFrame.AsMemory(3));

        var error = Assert.Throws<InvalidOperationException>(() => decoder.TryDecode(ref sequence, new RouteHeader(), out _));

        Assert.Contains("either span chunks or a ReadOnlySequence", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void TryDecode_Sequence_AdvancesTheStreamOffset_RentsNothingForAnEmptyPayload_AndUsesTheOwner()
    {
        var pool = DecodeHarness.CheckedPool();
        using var decoder = new MeshFrameDecoder(pool, new MeshFrameOptions { PayloadOwner = "mesh-in" });
        var empty = MeshFrameCodecTests.Encode(new RouteHeader { MsgId = "Bare" }, []);
        var buffer = new ReadOnlySequence<byte>([.. empty, .. PingFrame]);
        var header = new RouteHeader();

        Assert.True(decoder.TryDecode(ref buffer, header, out var none));
        Assert.True(none.IsEmpty);
        Assert.Equal(0, pool.GetStatistics().Rents);
        Assert.Equal(empty.Length, decoder.StreamOffsetBytes);

        Assert.True(decoder.TryDecode(ref buffer, header, out var ping));
        Assert.Equal("mesh-in", ping.Owner);
        ping.Dispose();
        Assert.Equal(empty.Length + PingFrame.Length, decoder.StreamOffsetBytes);
    }

    [Fact]
    public void TryDecode_Span_GivesThePayloadToTheConfiguredOwner()
    {
        using var decoder = new MeshFrameDecoder(DecodeHarness.CheckedPool(), new MeshFrameOptions { PayloadOwner = "mesh-in" });
        ReadOnlySpan<byte> input = PingFrame;

        Assert.True(decoder.TryDecode(ref input, new RouteHeader(), out var payload));

        Assert.Equal("mesh-in", payload.Owner);
        payload.Dispose();
    }

    [Fact]
    public void TryDecode_SequenceOfJustTheFrameLen_ChecksIt()
    {
        using var decoder = new MeshFrameDecoder(DecodeHarness.CheckedPool());
        var negative = new ReadOnlySequence<byte>(WireBytes.I32(-1));
        var three = new ReadOnlySequence<byte>(WireBytes.I32(20).AsMemory(0, 3));

        Assert.False(decoder.TryDecode(ref three, new RouteHeader(), out _));
        Assert.Equal(FrameError.NegativeLength, Assert.Throws<FrameDecodeException>(() => decoder.TryDecode(ref negative, new RouteHeader(), out _)).Error);
    }

    [Fact]
    public void TryDecode_SequenceFrameAtEveryLimitArrivingByteByByte_WaitsForItsHeaderLen()
    {
        // Until HeaderLen arrives the decoder must not judge the payload's size: taken as 0, the header bytes would
        // count as payload and push it over its limit.
        var header = new RouteHeader { MsgId = "abcdef" };
        var options = new MeshFrameOptions { MaxHeaderBytes = header.CalculateSize(), MaxPayloadBytes = 4 };
        var frame = MeshFrameCodecTests.Encode(header, [1, 2, 3, 4]);
        using var decoder = new MeshFrameDecoder(DecodeHarness.CheckedPool(), options);
        var decoded = new RouteHeader();

        for (var length = 0; length < frame.Length; length++)
        {
            var partial = WireBytes.OneBytePerSegment(frame[..length]);
            Assert.False(decoder.TryDecode(ref partial, decoded, out _));
        }

        var whole = WireBytes.OneBytePerSegment(frame);
        Assert.True(decoder.TryDecode(ref whole, decoded, out var payload));
        Assert.Equal(header, decoded);
        Assert.Equal([1, 2, 3, 4], payload.Span.ToArray());
        payload.Dispose();
    }

    [Fact]
    public void TryDecode_SegmentedHeaderThatBreaksOff_IsInvalidHeaderAndLeavesTheHeaderClear()
    {
        byte[] headerBytes = [.. new RouteHeader { MsgId = "Ping" }.ToByteArray(), 0x2A, 0x09, 0x61];
        var frame = MeshFrameCodecTests.Raw(null, null, headerBytes, []);
        using var decoder = new MeshFrameDecoder(DecodeHarness.CheckedPool());
        var header = new RouteHeader();
        var buffer = WireBytes.OneBytePerSegment(frame);

        var error = Assert.Throws<FrameDecodeException>(() => decoder.TryDecode(ref buffer, header, out _));

        Assert.Equal(FrameError.InvalidHeader, error.Error);
        Assert.StartsWith($"InvalidHeader: The {headerBytes.Length}-byte RouteHeader does not parse: ", error.Message, StringComparison.Ordinal);
        Assert.Equal(new RouteHeader(), header);
    }

    [Fact]
    public void TryDecode_SingleSegmentSequence_TakesTheSenderFromTheCache()
    {
        var cache = new Utf8SenderIdCache(singleThreaded: true);
        Assert.True(cache.TryGetString("play-7"u8, out var shared));
        using var decoder = new MeshFrameDecoder(DecodeHarness.CheckedPool(), senderIds: cache);
        var buffer = new ReadOnlySequence<byte>(MeshFrameCodecTests.Encode(new RouteHeader { MsgSeq = 2, From = "play-7" }, []));
        var header = new RouteHeader();

        Assert.True(decoder.TryDecode(ref buffer, header, out _));

        Assert.Same(shared, header.From);
        Assert.Equal(2UL, header.MsgSeq);
    }

    [Fact]
    public void AfterAMalformedFrame_EveryCallIsRefusedWithTheSameError()
    {
        using var decoder = new MeshFrameDecoder(DecodeHarness.CheckedPool());
        Assert.Throws<FrameDecodeException>(() =>
        {
            ReadOnlySpan<byte> input = WireBytes.I32(-1);
            decoder.TryDecode(ref input, new RouteHeader(), out _);
        });
        var sequence = new ReadOnlySequence<byte>(PingFrame);

        var span = Assert.Throws<FrameDecodeException>(() =>
        {
            ReadOnlySpan<byte> input = PingFrame;
            decoder.TryDecode(ref input, new RouteHeader(), out _);
        });
        var seq = Assert.Throws<FrameDecodeException>(() => decoder.TryDecode(ref sequence, new RouteHeader(), out _));
        var complete = Assert.Throws<FrameDecodeException>(decoder.Complete);
        var completeRest = Assert.Throws<FrameDecodeException>(() => decoder.Complete(ReadOnlySequence<byte>.Empty));
        // Bytes left over on a failed decoder are not a truncated frame: the error that broke the stream is.
        var completeWithBytes = Assert.Throws<FrameDecodeException>(() => decoder.Complete(new ReadOnlySequence<byte>(PingFrame.AsMemory(0, 3))));

        Assert.All(new[] { span, seq, complete, completeRest, completeWithBytes }, e => Assert.Equal(FrameError.NegativeLength, e.Error));
        Assert.Contains("already failed", span.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void ARentThePoolRefuses_BreaksTheDecoder_AndLaterCallsSaySo()
    {
        var pool = new MessagePool(new MessagePoolOptions { MaxRentBytes = 4 });
        using var span = new MeshFrameDecoder(pool);
        using var sequence = new MeshFrameDecoder(pool);
        var buffer = new ReadOnlySequence<byte>(PingFrame);

        Assert.Throws<ArgumentOutOfRangeException>(() =>
        {
            ReadOnlySpan<byte> input = PingFrame;
            span.TryDecode(ref input, new RouteHeader(), out _);
        });
        Assert.Throws<ArgumentOutOfRangeException>(() => sequence.TryDecode(ref buffer, new RouteHeader(), out _));

        Assert.Contains("unexpected exception", Assert.Throws<InvalidOperationException>(span.Complete).Message, StringComparison.Ordinal);
        Assert.Contains("unexpected exception", Assert.Throws<InvalidOperationException>(sequence.Complete).Message, StringComparison.Ordinal);
        Assert.Equal(FrameError.None, span.Fault);
    }

    [Fact]
    public void Complete_Twice_IsRefused_AndDecodingAfterItToo()
    {
        using var decoder = new MeshFrameDecoder(DecodeHarness.CheckedPool());
        decoder.Complete();

        Assert.Contains("already completed", Assert.Throws<InvalidOperationException>(decoder.Complete).Message, StringComparison.Ordinal);
        Assert.Throws<InvalidOperationException>(() =>
        {
            ReadOnlySpan<byte> input = PingFrame;
            decoder.TryDecode(ref input, new RouteHeader(), out _);
        });
    }

    [Fact]
    public void CompleteWithNothingLeft_EndsTheStream_AndASecondCallIsRefused()
    {
        using var decoder = new MeshFrameDecoder(DecodeHarness.CheckedPool());
        var buffer = new ReadOnlySequence<byte>(PingFrame);
        Assert.True(decoder.TryDecode(ref buffer, new RouteHeader(), out var payload));
        payload.Dispose();

        decoder.Complete(buffer);

        Assert.Throws<InvalidOperationException>(() => decoder.Complete(buffer));
        Assert.Throws<InvalidOperationException>(() => decoder.TryDecode(ref buffer, new RouteHeader(), out _));
    }

    [Fact]
    public void CompleteWithBytesLeft_IsTruncatedFrameSayingHowMany()
    {
        using var decoder = new MeshFrameDecoder(DecodeHarness.CheckedPool());

        var error = Assert.Throws<FrameDecodeException>(() => decoder.Complete(new ReadOnlySequence<byte>(PingFrame.AsMemory(0, 3))));

        Assert.Equal(FrameError.TruncatedFrame, error.Error);
        Assert.Equal("TruncatedFrame: the stream ended inside a mesh frame; 3 bytes are left over (stream offset 0).", error.Message);
        Assert.Equal(FrameError.TruncatedFrame, decoder.Fault);
    }

    [Fact]
    public void Complete_InsideTheLengthsOrThePayload_SaysHowManyBytesArrived_AndReturnsThePayloadAtOnce()
    {
        var pool = DecodeHarness.CheckedPool();
        using (var lengths = new MeshFrameDecoder(pool))
        {
            ReadOnlySpan<byte> input = PingFrame.AsSpan(0, 6);
            Assert.False(lengths.TryDecode(ref input, new RouteHeader(), out _));

            var error = Assert.Throws<FrameDecodeException>(lengths.Complete);

            Assert.Equal("TruncatedFrame: the stream ended inside a mesh frame after 6 bytes (stream offset 6).", error.Message);
        }

        using var inPayload = new MeshFrameDecoder(pool);
        var cut = PingFrame.Length - 2;
        ReadOnlySpan<byte> bytes = PingFrame.AsSpan(0, cut);
        Assert.False(inPayload.TryDecode(ref bytes, new RouteHeader(), out _));
        Assert.Equal(1, pool.GetStatistics().Outstanding);

        var truncated = Assert.Throws<FrameDecodeException>(inPayload.Complete);

        Assert.Equal($"TruncatedFrame: the stream ended inside a mesh frame after {cut} bytes (stream offset {cut}).", truncated.Message);
        Assert.Equal(0, pool.GetStatistics().Outstanding);
    }

    [Fact]
    public void Dispose_MakesEveryLaterCallThrowObjectDisposed()
    {
        var decoder = new MeshFrameDecoder(DecodeHarness.CheckedPool());
        var buffer = new ReadOnlySequence<byte>(PingFrame);

        decoder.Dispose();
        decoder.Dispose();

        Assert.Throws<ObjectDisposedException>(() =>
        {
            ReadOnlySpan<byte> input = PingFrame;
            decoder.TryDecode(ref input, new RouteHeader(), out _);
        });
        Assert.Throws<ObjectDisposedException>(() => decoder.TryDecode(ref buffer, new RouteHeader(), out _));
        Assert.Throws<ObjectDisposedException>(decoder.Complete);
    }
}
