using PlayHouse.Core.Codec;

namespace PlayHouse.Core.Tests.Codec;

/// <summary>
/// WebSocket framing at its edges: argument checks, the destination size, the header a masked frame writes, the
/// payload of a frame resumed in the next chunk, unmasked frames after a longer header, and a poisoned decoder.
/// </summary>
public sealed class WebSocketFramingLimitTests
{
    private static byte[] Frame(int payloadBytes, uint? maskKey, int seed = 1)
    {
        var payload = WireBytes.Pattern(payloadBytes, seed);
        var frame = new byte[WebSocketFraming.GetHeaderLength(payloadBytes, maskKey is not null) + payloadBytes];
        Assert.Equal(frame.Length, WebSocketFraming.Encode(frame, payload, maskKey));
        return frame;
    }

    private static List<byte[]> DecodeAll(WebSocketFrameDecoder decoder, params byte[][] chunks)
    {
        var messages = new List<byte[]>();
        foreach (var chunk in chunks)
        {
            ReadOnlySpan<byte> input = chunk;
            while (decoder.TryDecode(ref input, out _, out var payload))
            {
                messages.Add(payload.ToArray());
            }

            Assert.Equal(0, input.Length);
        }

        return messages;
    }

    [Fact]
    public void NegativeSizes_AreRefused()
    {
        Assert.Equal("payloadBytes", Assert.Throws<ArgumentOutOfRangeException>(() => WebSocketFraming.GetHeaderLength(-1, false)).ParamName);
        Assert.Equal("maxPayloadBytes", Assert.Throws<ArgumentOutOfRangeException>(() => new WebSocketFrameDecoder(false, -1)).ParamName);
        Assert.Equal(2, WebSocketFraming.GetHeaderLength(0, false));
    }

    [Fact]
    public void Encode_IntoALargerDestination_Writes_AndIntoOneByteShortIsRefusedWithBothSizes()
    {
        var payload = WireBytes.Pattern(10);

        Assert.Equal(12, WebSocketFraming.Encode(new byte[64], payload, null));
        var error = Assert.Throws<ArgumentException>(() => WebSocketFraming.Encode(new byte[11], payload, null));

        Assert.Equal("destination", error.ParamName);
        Assert.StartsWith("The destination holds 11 bytes; the frame needs 12.", error.Message, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData(125)]
    [InlineData(126)]
    [InlineData(65_535)]
    [InlineData(65_536)]
    public void WriteHeader_OfAMaskedFrame_ReturnsTheHeaderLength_WithTheKeyAtItsEnd(int payloadBytes)
    {
        var header = new byte[WebSocketFraming.MaxHeaderBytes];

        var written = WebSocketFraming.WriteHeader(header, payloadBytes, 0xA1B2C3D4u);

        Assert.Equal(WebSocketFraming.GetHeaderLength(payloadBytes, masked: true), written);
        Assert.Equal(new byte[] { 0xA1, 0xB2, 0xC3, 0xD4 }, header[(written - 4)..written]);
        Assert.Equal(0x80 | (payloadBytes < 126 ? payloadBytes : payloadBytes <= ushort.MaxValue ? 126 : 127), header[1]);
    }

    [Fact]
    public void PayloadResumedInAChunkThatAlsoHoldsTheNextFrame_EndsWhereItsFrameEnds()
    {
        var first = Frame(40, 0x01020304u, seed: 1);
        var second = Frame(30, 0x0A0B0C0Du, seed: 2);
        var decoder = new WebSocketFrameDecoder(expectMasked: true, maxPayloadBytes: 1024);

        var messages = DecodeAll(decoder, first[..20], [.. first[20..], .. second]);

        Assert.Equal(2, messages.Count);
        Assert.Equal(WireBytes.Pattern(40, 1), messages[0]);
        Assert.Equal(WireBytes.Pattern(30, 2), messages[1]);
    }

    [Fact]
    public void UnmaskedFrameAfterALongerHeader_IsNotUnmaskedWithLeftoverBytes()
    {
        // The 16-bit length of the first frame stays in the header buffer where a mask key would sit.
        var decoder = new WebSocketFrameDecoder(expectMasked: false, maxPayloadBytes: 1024);

        var messages = DecodeAll(decoder, Frame(300, null, seed: 3), Frame(5, null, seed: 4));

        Assert.Equal(WireBytes.Pattern(300, 3), messages[0]);
        Assert.Equal(WireBytes.Pattern(5, 4), messages[1]);
    }

    [Fact]
    public void HasPartialFrame_IsTrueFromTheFirstHeaderByte()
    {
        var decoder = new WebSocketFrameDecoder(expectMasked: false, maxPayloadBytes: 1024);
        var frame = Frame(5, null);

        DecodeAll(decoder, frame[..1]);
        Assert.True(decoder.HasPartialFrame);
        DecodeAll(decoder, frame[1..]);
        Assert.False(decoder.HasPartialFrame);
    }

    [Fact]
    public void AfterAProtocolError_EveryCallIsRefused_AndErrorsSayTheStreamOffset()
    {
        var decoder = new WebSocketFrameDecoder(expectMasked: false, maxPayloadBytes: 1024);
        var good = Frame(7, null);

        // A reserved bit is found once the two header bytes of the second frame have arrived.
        var error = Assert.Throws<FrameDecodeException>(() => DecodeAll(decoder, good, [0xC2, 0x00]));
        var again = Assert.Throws<FrameDecodeException>(() => DecodeAll(decoder, good));

        Assert.Equal($"WebSocketProtocol: reserved bits are set (no extension was negotiated) (stream offset {good.Length + 2}).", error.Message);
        Assert.Equal(FrameError.WebSocketProtocol, again.Error);
        Assert.Equal("WebSocketProtocol: the decoder already failed on this stream.", again.Message);
        Assert.Equal(good.Length + 2, again.StreamOffsetBytes);
    }
}
