using PlayHouse.Core.Codec;

namespace PlayHouse.Core.Tests.Codec;

public sealed class WebSocketFramingTests
{
    [Theory]
    [InlineData(0, true)]
    [InlineData(125, true)]
    [InlineData(126, false)]
    [InlineData(65_535, true)]
    [InlineData(65_536, false)]
    public void Frame_SplitAtEveryByte_DecodesToTheSamePayload(int payloadBytes, bool masked)
    {
        var payload = WireBytes.Pattern(payloadBytes);
        var frame = new byte[WebSocketFraming.GetHeaderLength(payloadBytes, masked) + payloadBytes];
        var written = WebSocketFraming.Encode(frame, payload, masked ? 0x1234ABCDu : null);
        Assert.Equal(frame.Length, written);
        Assert.Equal(payloadBytes < 126 ? 2 : payloadBytes <= 65_535 ? 4 : 10, frame.Length - payloadBytes - (masked ? 4 : 0));

        // In two pieces at every split point of the small frames and at the header's edges of the large ones.
        var splits = payloadBytes <= 200 ? Enumerable.Range(0, frame.Length + 1) : [0, 1, 2, 3, 4, 9, 10, 13, 14, frame.Length / 2, frame.Length - 1, frame.Length];
        foreach (var split in splits)
        {
            var decoder = new WebSocketFrameDecoder(expectMasked: masked, maxPayloadBytes: 1 << 20);
            ReadOnlySpan<byte> first = frame.AsSpan(0, split);
            ReadOnlySpan<byte> second = frame.AsSpan(split);
            byte[]? decoded = null;
            var completedEarly = decoder.TryDecode(ref first, out var opcode, out var message);
            if (completedEarly)
            {
                decoded = message.ToArray();
            }
            else if (decoder.TryDecode(ref second, out opcode, out message))
            {
                decoded = message.ToArray();
            }

            // A frame completes exactly when its last byte has arrived.
            Assert.Equal(split == frame.Length, completedEarly);
            Assert.Equal(WebSocketOpcode.Binary, opcode);
            Assert.NotNull(decoded);
            Assert.Equal(payload, decoded);
            Assert.False(decoder.HasPartialFrame);
        }
    }

    [Fact]
    public void MaskedFrame_OnTheWire_DiffersFromThePayloadAndUnmasksBack()
    {
        var payload = WireBytes.Pattern(64);
        var frame = new byte[WebSocketFraming.GetHeaderLength(64, masked: true) + 64];
        WebSocketFraming.Encode(frame, payload, 0xDEADBEEFu);

        Assert.NotEqual(payload, frame[6..]);
        Assert.Equal(0x82, frame[0]);
        Assert.Equal(0x80 | 64, frame[1]);
        var decoder = new WebSocketFrameDecoder(expectMasked: true, maxPayloadBytes: 1024);
        ReadOnlySpan<byte> input = frame;
        Assert.True(decoder.TryDecode(ref input, out _, out var message));
        Assert.Equal(payload, message.ToArray());
        Assert.True(input.IsEmpty);
    }

    [Theory]
    [InlineData(new byte[] { 0x02, 0x80, 0, 0, 0, 0 }, "fragmented")]
    [InlineData(new byte[] { 0xC2, 0x80, 0, 0, 0, 0 }, "reserved bits")]
    [InlineData(new byte[] { 0x81, 0x80, 0, 0, 0, 0 }, "opcode 1")]
    [InlineData(new byte[] { 0x82, 0x00 }, "unmasked client frame")]
    [InlineData(new byte[] { 0x82, 0xFE, 0x04, 0x01, 0, 0, 0, 0 }, "over the limit")]
    public void ServerDecoder_ProtocolBreaches_ThrowAndPoisonTheDecoder(byte[] frame, string reason)
    {
        var decoder = new WebSocketFrameDecoder(expectMasked: true, maxPayloadBytes: 1024);

        var error = Assert.Throws<FrameDecodeException>(() =>
        {
            ReadOnlySpan<byte> input = frame;
            decoder.TryDecode(ref input, out _, out _);
        });

        Assert.Equal(FrameError.WebSocketProtocol, error.Error);
        Assert.Contains(reason, error.Message, StringComparison.Ordinal);
        Assert.Throws<FrameDecodeException>(() =>
        {
            ReadOnlySpan<byte> more = new byte[] { 0x82, 0x80, 0, 0, 0, 0 };
            decoder.TryDecode(ref more, out _, out _);
        });
    }

    [Fact]
    public void ClientDecoder_MaskedServerFrame_IsRefused()
    {
        var frame = new byte[WebSocketFraming.GetHeaderLength(3, masked: true) + 3];
        WebSocketFraming.Encode(frame, "abc"u8, 7u);
        var decoder = new WebSocketFrameDecoder(expectMasked: false, maxPayloadBytes: 1024);

        var error = Assert.Throws<FrameDecodeException>(() =>
        {
            ReadOnlySpan<byte> input = frame;
            decoder.TryDecode(ref input, out _, out _);
        });

        Assert.Contains("a masked server frame", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void TwoFramesInOneChunk_DecodeOneAfterTheOther()
    {
        var a = new byte[WebSocketFraming.GetHeaderLength(3, masked: false) + 3];
        WebSocketFraming.Encode(a, "one"u8, null);
        var b = new byte[WebSocketFraming.GetHeaderLength(4, masked: false) + 4];
        WebSocketFraming.Encode(b, "pong"u8, null, WebSocketOpcode.Pong);
        byte[] both = [.. a, .. b];
        var decoder = new WebSocketFrameDecoder(expectMasked: false, maxPayloadBytes: 1024);
        ReadOnlySpan<byte> input = both;

        Assert.True(decoder.TryDecode(ref input, out var first, out var one));
        Assert.Equal(WebSocketOpcode.Binary, first);
        Assert.Equal("one"u8.ToArray(), one.ToArray());
        Assert.True(decoder.TryDecode(ref input, out var second, out var pong));
        Assert.Equal(WebSocketOpcode.Pong, second);
        Assert.Equal("pong"u8.ToArray(), pong.ToArray());
        Assert.False(decoder.TryDecode(ref input, out _, out _));
    }
}
