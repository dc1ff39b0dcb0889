using System.Buffers;
using System.Text;
using PlayHouse.Core.Codec;

namespace PlayHouse.Core.Tests.Codec;

public sealed class ClientFrameCodecTests
{
    public static TheoryData<string, int> MsgIdsAndPayloadSizes()
    {
        var data = new TheoryData<string, int>();
        string[] msgIds =
        [
            "Echo",
            "로그인요청",
            "🎮play",
            string.Empty,
            WireProtocol.HeartbeatMsgId,
            new string('m', 255),
            new string('가', 85), // 85 x 3 UTF-8 bytes = 255 bytes.
        ];
        foreach (var msgId in msgIds)
        {
            foreach (var payloadBytes in new[] { 0, 64, 1024 })
            {
                data.Add(msgId, payloadBytes);
            }
        }

        return data;
    }

    [Theory]
    [MemberData(nameof(MsgIdsAndPayloadSizes))]
    public void Encode_ClientFrame_MatchesHandBuiltWireLayout(string msgId, int payloadBytes)
    {
        var payload = WireBytes.Pattern(payloadBytes);
        var expected = WireBytes.Client(msgId, 513, -0x0102030405060708, payload);

        var encoded = new byte[ClientFrameEncoder.GetEncodedLength(msgId, payloadBytes)];
        var written = ClientFrameEncoder.Encode(encoded, msgId, 513, -0x0102030405060708, payload);

        Assert.Equal(expected.Length, written);
        Assert.Equal(expected, encoded);
    }

    [Theory]
    [MemberData(nameof(MsgIdsAndPayloadSizes))]
    public void Decode_EncodedClientFrame_RoundTripsEveryField(string msgId, int payloadBytes)
    {
        var pool = DecodeHarness.CheckedPool();
        var payload = WireBytes.Pattern(payloadBytes, seed: 7);
        var encoded = new byte[ClientFrameEncoder.GetEncodedLength(msgId, payloadBytes)];
        ClientFrameEncoder.Encode(encoded, msgId, ushort.MaxValue, long.MaxValue, payload);

        using var decoder = new ClientFrameDecoder(pool);
        ReadOnlySpan<byte> input = encoded;
        Assert.True(decoder.TryDecode(ref input, out var frame));

        Assert.Equal(0, input.Length);
        Assert.Equal(msgId, frame.MsgId);
        Assert.Equal(ushort.MaxValue, frame.MsgSeq);
        Assert.Equal(long.MaxValue, frame.StageId);
        Assert.Equal(payload, frame.Payload.Span.ToArray());
        Assert.Equal(payloadBytes > 0 ? 1 : 0, pool.GetStatistics().Outstanding);
        frame.Dispose();
        pool.ThrowIfLeaks();
        Assert.False(decoder.HasPartialFrame);
    }

    [Fact]
    public void Encode_IntoBufferWriter_WritesTheSameBytesAsIntoASpan()
    {
        var payload = WireBytes.Pattern(64);
        var span = new byte[ClientFrameEncoder.GetEncodedLength("Move", payload.Length)];
        ClientFrameEncoder.Encode(span, "Move", 9, 42, payload);

        var writer = new ArrayBufferWriter<byte>();
        writer.Write(new byte[] { 0xEE }); // Something already in the writer must stay in front.
        var written = ClientFrameEncoder.Encode(writer, "Move", 9, 42, payload);

        Assert.Equal(span.Length, written);
        Assert.Equal([0xEE, .. span], writer.WrittenSpan.ToArray());
    }

    [Fact]
    public void Encode_FrameStruct_WritesItsFields()
    {
        var pool = DecodeHarness.CheckedPool();
        using var frame = new ClientFrame("Chat", 3, 77, pool.Copy(WireBytes.Pattern(10), "test"));
        var encoded = new byte[ClientFrameEncoder.GetEncodedLength(frame.MsgId, frame.Payload.Length)];

        ClientFrameEncoder.Encode(encoded, frame);

        Assert.Equal(WireBytes.Client("Chat", 3, 77, WireBytes.Pattern(10)), encoded);
    }

    [Fact]
    public void Encode_MsgIdOf256Bytes_ThrowsBeforeWritingAnything()
    {
        var msgId = new string('x', 256);
        var destination = Enumerable.Repeat((byte)0xAA, 1024).ToArray();

        var error = Assert.Throws<ArgumentException>(() => ClientFrameEncoder.Encode(destination, msgId, 1, 1, []));

        Assert.Contains("256 UTF-8 bytes", error.Message, StringComparison.Ordinal);
        Assert.All(destination, b => Assert.Equal(0xAA, b));
        Assert.Throws<ArgumentException>(() => ClientFrameEncoder.GetEncodedLength(msgId, 0));
        Assert.Throws<ArgumentException>(() => ServerFrameEncoder.Encode(destination, msgId, 1, 1, 0, []));
    }

    [Fact]
    public void Encode_TwoCharNonAsciiMsgId_CountsLengthInUtf8Bytes()
    {
        const string msgId = "가나"; // 2 chars, 6 UTF-8 bytes.
        var encoded = new byte[ClientFrameEncoder.GetEncodedLength(msgId, 0)];

        ClientFrameEncoder.Encode(encoded, msgId, 0, 0, []);

        Assert.Equal(4 + 1 + 6 + 10, encoded.Length);
        Assert.Equal(6, encoded[4]);
        Assert.Equal(Encoding.UTF8.GetBytes(msgId), encoded[5..11]);
    }

    [Fact]
    public void Encode_MsgIdUnder256CharsButOver255Bytes_IsRejected()
    {
        // 128 chars pass a char count check (B16's flaw) but are 256 bytes, which overflows the length byte.
        var msgId = new string('é', 128);

        var error = Assert.Throws<ArgumentException>(() => ClientFrameEncoder.GetEncodedLength(msgId, 0));

        Assert.Contains("256 UTF-8 bytes (128 chars)", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void Encode_MsgIdWithLoneSurrogate_IsRejected()
    {
        var error = Assert.Throws<ArgumentException>(() => ClientFrameEncoder.GetEncodedLength("bad\uD800id", 0));

        Assert.Contains("lone surrogate", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void Encode_BodyOverTwoMebibytes_ThrowsBeforeWriting()
    {
        // Body = 1 + msg id bytes + 10 + payload: with msg id "a" this is exactly 2 MiB, with "ab" one byte over.
        var payload = new byte[WireProtocol.MaxBodyBytes - 12];
        var destination = new byte[WireProtocol.MaxFrameBytes + 64];

        Assert.Throws<ArgumentException>(() => ClientFrameEncoder.Encode(destination, "ab", 1, 1, payload));
        Assert.All(destination.AsSpan(0, 8).ToArray(), b => Assert.Equal(0, b));

        var fits = ClientFrameEncoder.Encode(destination, "a", 1, 1, payload);
        Assert.Equal(WireProtocol.MaxFrameBytes, fits);
    }

    [Fact]
    public void Encode_BodyOverALoweredLimit_Throws()
    {
        var error = Assert.Throws<ArgumentException>(() => ClientFrameEncoder.GetEncodedLength("a", 100, maxBodyBytes: 100));

        Assert.Contains("limit is 100", error.Message, StringComparison.Ordinal);
        Assert.Equal(4 + 100, ClientFrameEncoder.GetEncodedLength("a", 100 - 12, maxBodyBytes: 100));
        Assert.Throws<ArgumentOutOfRangeException>(() => ClientFrameEncoder.GetEncodedLength("a", 0, maxBodyBytes: WireProtocol.MaxBodyBytes + 1));
    }

    [Fact]
    public void Encode_DestinationTooShort_ThrowsWithoutWriting()
    {
        var destination = new byte[ClientFrameEncoder.GetEncodedLength("Echo", 8) - 1];

        Assert.Throws<ArgumentException>(() => ClientFrameEncoder.Encode(destination, "Echo", 1, 1, new byte[8]));

        Assert.All(destination, b => Assert.Equal(0, b));
    }

    [Fact]
    public void Encode_SteadyState_AllocatesNothing()
    {
        var payload = WireBytes.Pattern(64);
        var destination = new byte[256];
        var writer = new ArrayBufferWriter<byte>(4096);
        for (var i = 0; i < 100; i++)
        {
            ClientFrameEncoder.Encode(destination, "로그인요청", 1, 2, payload);
            ServerFrameEncoder.Encode(destination, "로그인요청", 1, 2, 3, payload);
            ClientFrameEncoder.Encode(writer, "Echo", 1, 2, payload);
            writer.ResetWrittenCount();
        }

        // Three windows of 1,000 rounds: a per-call allocation shows in every one of them, while a one-off on the thread
        // (a tier-up recompile, a coverage tool's first hit) shows in one at most.
        var fewest = long.MaxValue;
        for (var window = 0; window < 3; window++)
        {
            var before = GC.GetAllocatedBytesForCurrentThread();
            for (var i = 0; i < 1000; i++)
            {
                ClientFrameEncoder.Encode(destination, "로그인요청", 1, 2, payload);
                ServerFrameEncoder.Encode(destination, "로그인요청", 1, 2, 3, payload);
                ClientFrameEncoder.Encode(writer, "Echo", 1, 2, payload);
                writer.ResetWrittenCount();
            }

            fewest = Math.Min(fewest, GC.GetAllocatedBytesForCurrentThread() - before);
        }

        Assert.Equal(0, fewest);
    }
}
