using PlayHouse.Core.Codec;
using PlayHouse.Core.Mesh;
using PlayHouse.Core.Mesh.Proto;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Tests.Mesh;

namespace PlayHouse.Core.Tests.Codec;

/// <summary>
/// The size limits of the client codec, the mesh codec and WebSocket framing one below, at and one above each limit:
/// a body, an original size, a header or a payload at its limit decodes, one byte more fails with its error; the
/// options' own bounds accept the limit and refuse one past it; and WebSocket's length field switches encoding exactly
/// at 126 and 65,536 bytes.
/// </summary>
public sealed class CodecLimitTests
{
    private const int Limit = 64;

    [Theory]
    [InlineData(Limit - 1)]
    [InlineData(Limit)]
    [InlineData(Limit + 1)]
    public void ClientDecoder_TakesABodyUpToMaxBodyBytes_AndFailsOneByteMoreAsLengthTooLarge(int bodyBytes)
    {
        // A body is the msg id's length byte, the id "a", MsgSeq (2), StageId (8) and the payload.
        var pool = DecodeHarness.CheckedPool();
        using var decoder = new ClientFrameDecoder(pool, options: new FrameDecoderOptions { MaxBodyBytes = Limit });
        var frame = WireBytes.Client("a", 1, 1, new byte[bodyBytes - 12]);

        if (bodyBytes > Limit)
        {
            var error = Assert.Throws<FrameDecodeException>(() => DecodeHarness.FeedClient(decoder, [frame]));
            Assert.Equal(FrameError.LengthTooLarge, error.Error);
        }
        else
        {
            Assert.Equal(bodyBytes - 12, Assert.Single(DecodeHarness.FeedClient(decoder, [frame])).Payload.Length);
        }

        pool.ThrowIfLeaks();
    }

    [Theory]
    [InlineData(999)]
    [InlineData(1000)]
    [InlineData(1001)]
    public void ServerDecoder_InflatesAnOriginalSizeUpToMaxOriginalSizeBytes_AndFailsOneMoreAsOriginalSizeTooLarge(int originalSize)
    {
        var pool = DecodeHarness.CheckedPool();
        using var decoder = new ServerFrameDecoder(pool, options: new FrameDecoderOptions { Decompressor = new FillDecompressor(), MaxOriginalSizeBytes = 1000 });
        var frame = WireBytes.Server("Big", 0, 0, 0, originalSize, [1]);

        if (originalSize > 1000)
        {
            var error = Assert.Throws<FrameDecodeException>(() => DecodeHarness.FeedServer(decoder, [frame]));
            Assert.Equal(FrameError.OriginalSizeTooLarge, error.Error);
        }
        else
        {
            Assert.Equal(originalSize, Assert.Single(DecodeHarness.FeedServer(decoder, [frame])).Payload.Length);
        }

        pool.ThrowIfLeaks();
    }

    [Fact]
    public void DecoderOptions_AcceptEachBodyLimitAtItsBound_AndRefuseOnePastIt()
    {
        var pool = new MessagePool();

        _ = new ClientFrameDecoder(pool, options: new FrameDecoderOptions { MaxBodyBytes = WireProtocol.MinClientBodyBytes });
        _ = new ClientFrameDecoder(pool, options: new FrameDecoderOptions { MaxBodyBytes = WireProtocol.MaxBodyBytes });
        _ = new ServerFrameDecoder(pool, options: new FrameDecoderOptions { MaxBodyBytes = WireProtocol.MinServerBodyBytes });
        _ = new ServerFrameDecoder(pool, options: new FrameDecoderOptions { MaxOriginalSizeBytes = 1 });
        _ = new ServerFrameDecoder(pool, options: new FrameDecoderOptions { MaxOriginalSizeBytes = WireProtocol.MaxBodyBytes });

        Assert.Throws<ArgumentOutOfRangeException>(() => new ClientFrameDecoder(pool, options: new FrameDecoderOptions { MaxBodyBytes = WireProtocol.MinClientBodyBytes - 1 }));
        Assert.Throws<ArgumentOutOfRangeException>(() => new ClientFrameDecoder(pool, options: new FrameDecoderOptions { MaxBodyBytes = WireProtocol.MaxBodyBytes + 1 }));
        Assert.Throws<ArgumentOutOfRangeException>(() => new ServerFrameDecoder(pool, options: new FrameDecoderOptions { MaxBodyBytes = WireProtocol.MinServerBodyBytes - 1 }));
        Assert.Throws<ArgumentOutOfRangeException>(() => new ServerFrameDecoder(pool, options: new FrameDecoderOptions { MaxOriginalSizeBytes = 0 }));
        Assert.Throws<ArgumentOutOfRangeException>(() => new ServerFrameDecoder(pool, options: new FrameDecoderOptions { MaxOriginalSizeBytes = WireProtocol.MaxBodyBytes + 1 }));
    }

    [Theory]
    [InlineData(254)]
    [InlineData(255)]
    [InlineData(256)]
    public void ClientEncoder_TakesAMsgIdUpTo255Bytes_AndRefusesOneMore(int msgIdBytes)
    {
        var msgId = new string('m', msgIdBytes);

        if (msgIdBytes > WireProtocol.MaxMsgIdBytes)
        {
            Assert.Throws<ArgumentException>(() => ClientFrameEncoder.GetEncodedLength(msgId, 0));
            return;
        }

        Assert.Equal(WireProtocol.LengthPrefixBytes + WireProtocol.MinClientBodyBytes + msgIdBytes, ClientFrameEncoder.GetEncodedLength(msgId, 0));
    }

    [Theory]
    [InlineData(Limit - 1)]
    [InlineData(Limit)]
    [InlineData(Limit + 1)]
    public void MeshDecoder_TakesAPayloadUpToMaxPayloadBytes_AndFailsOneByteMoreAsLengthTooLarge(int payloadBytes)
    {
        var pool = DecodeHarness.CheckedPool();
        using var decoder = new MeshFrameDecoder(pool, new MeshFrameOptions { MaxPayloadBytes = Limit });
        var frame = MeshFrameCodecTests.Raw(null, null, new RouteHeader { MsgId = "m" }.ToByteArrayForTest(), new byte[payloadBytes]);

        var outcome = DecodeMesh(decoder, frame);

        Assert.Equal(payloadBytes > Limit ? FrameError.LengthTooLarge : FrameError.None, outcome.Error);
        Assert.Equal(payloadBytes > Limit ? -1 : payloadBytes, outcome.PayloadBytes);
        pool.ThrowIfLeaks();
    }

    [Theory]
    [InlineData(15)]
    [InlineData(16)]
    [InlineData(17)]
    public void MeshDecoder_TakesAHeaderUpToMaxHeaderBytes_AndFailsOneByteMoreAsHeaderTooLarge(int headerBytes)
    {
        // A RouteHeader holding only a short MsgId serializes to a tag byte, a length byte and the id.
        var header = new RouteHeader { MsgId = new string('m', headerBytes - 2) }.ToByteArrayForTest();
        Assert.Equal(headerBytes, header.Length);
        var pool = DecodeHarness.CheckedPool();
        using var decoder = new MeshFrameDecoder(pool, new MeshFrameOptions { MaxHeaderBytes = 16 });

        var outcome = DecodeMesh(decoder, MeshFrameCodecTests.Raw(null, null, header, [1, 2, 3]));

        Assert.Equal(headerBytes > 16 ? FrameError.HeaderTooLarge : FrameError.None, outcome.Error);
        pool.ThrowIfLeaks();
    }

    [Fact]
    public void MeshOptions_AcceptEachLimitAtItsBound_AndRefuseOnePastIt()
    {
        var pool = new MessagePool();

        _ = new MeshFrameDecoder(pool, new MeshFrameOptions { MaxPayloadBytes = 0, MaxHeaderBytes = 0 });
        _ = new MeshFrameDecoder(pool, new MeshFrameOptions { MaxPayloadBytes = MeshFrameCodec.MaxPayloadBytes, MaxHeaderBytes = MeshFrameCodec.MaxHeaderBytesLimit });

        Assert.Throws<ArgumentOutOfRangeException>(() => new MeshFrameDecoder(pool, new MeshFrameOptions { MaxPayloadBytes = -1 }));
        Assert.Throws<ArgumentOutOfRangeException>(() => new MeshFrameDecoder(pool, new MeshFrameOptions { MaxHeaderBytes = -1 }));
        Assert.Throws<ArgumentOutOfRangeException>(() => new MeshFrameDecoder(pool, new MeshFrameOptions { MaxPayloadBytes = MeshFrameCodec.MaxPayloadBytes + 1 }));
        Assert.Throws<ArgumentOutOfRangeException>(() => new MeshFrameDecoder(pool, new MeshFrameOptions { MaxHeaderBytes = MeshFrameCodec.MaxHeaderBytesLimit + 1 }));
    }

    [Theory]
    [InlineData(0, 2)]
    [InlineData(125, 2)]
    [InlineData(126, 4)]
    [InlineData(127, 4)]
    [InlineData(65_534, 4)]
    [InlineData(65_535, 4)]
    [InlineData(65_536, 10)]
    [InlineData(65_537, 10)]
    public void WebSocketHeader_UsesTheSevenBitLengthUpTo125_SixteenBitsUpTo65535_AndSixtyFourBitsPastIt(int payloadBytes, int headerBytes)
    {
        var unmasked = new byte[headerBytes + payloadBytes];
        var masked = new byte[headerBytes + 4 + payloadBytes];

        Assert.Equal(headerBytes, WebSocketFraming.GetHeaderLength(payloadBytes, masked: false));
        Assert.Equal(headerBytes + 4, WebSocketFraming.GetHeaderLength(payloadBytes, masked: true));
        Assert.Equal(unmasked.Length, WebSocketFraming.Encode(unmasked, new byte[payloadBytes], null));
        Assert.Equal(masked.Length, WebSocketFraming.Encode(masked, new byte[payloadBytes], 0x01020304u));

        // The second byte holds the length itself, or 126 / 127 naming the wider field that follows.
        Assert.Equal(headerBytes switch { 2 => payloadBytes, 4 => 126, _ => 127 }, unmasked[1] & 0x7F);
        Assert.Equal(0x80, masked[1] & 0x80);
    }

    [Theory]
    [InlineData(Limit - 1)]
    [InlineData(Limit)]
    [InlineData(Limit + 1)]
    public void WebSocketDecoder_TakesAPayloadUpToItsMaximum_AndRefusesOneByteMore(int payloadBytes)
    {
        var frame = new byte[WebSocketFraming.GetHeaderLength(payloadBytes, masked: true) + payloadBytes];
        WebSocketFraming.Encode(frame, WireBytes.Pattern(payloadBytes), 0x0A0B0C0Du);
        var decoder = new WebSocketFrameDecoder(expectMasked: true, maxPayloadBytes: Limit);

        if (payloadBytes > Limit)
        {
            var error = Assert.Throws<FrameDecodeException>(() =>
            {
                ReadOnlySpan<byte> input = frame;
                decoder.TryDecode(ref input, out _, out _);
            });
            Assert.Equal(FrameError.WebSocketProtocol, error.Error);
            Assert.Contains("over the limit", error.Message, StringComparison.Ordinal);
            return;
        }

        ReadOnlySpan<byte> bytes = frame;
        Assert.True(decoder.TryDecode(ref bytes, out _, out var payload));
        Assert.Equal(WireBytes.Pattern(payloadBytes), payload.ToArray());
    }

    private static (FrameError Error, int PayloadBytes) DecodeMesh(MeshFrameDecoder decoder, byte[] frame)
    {
        try
        {
            ReadOnlySpan<byte> input = frame;
            Assert.True(decoder.TryDecode(ref input, new RouteHeader(), out var payload));
            using (payload)
            {
                return (FrameError.None, payload.Length);
            }
        }
        catch (FrameDecodeException e)
        {
            return (e.Error, -1);
        }
    }

    /// <summary>Inflates any payload into its original size of a repeated first byte.</summary>
    private sealed class FillDecompressor : IPayloadDecompressor
    {
        public int Decompress(ReadOnlySpan<byte> source, Span<byte> destination)
        {
            destination.Fill(source[0]);
            return destination.Length;
        }
    }
}
