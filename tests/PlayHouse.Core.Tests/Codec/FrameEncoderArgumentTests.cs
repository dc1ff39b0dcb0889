using System.Buffers;
using System.Buffers.Binary;
using PlayHouse.Core.Codec;
using PlayHouse.Core.Pooling;

namespace PlayHouse.Core.Tests.Codec;

/// <summary>
/// The argument checks of the frame types and encoders, the body limit of one byte, the messages of a refused body or
/// destination, and the OriginalSize field a server frame carries.
/// </summary>
public sealed class FrameEncoderArgumentTests
{
    [Fact]
    public void Frames_RefuseANullMsgId_AndANegativeOriginalSize()
    {
        Assert.Equal("msgId", Assert.Throws<ArgumentNullException>(() => new ClientFrame(null!, 1, 2, Payload.Empty)).ParamName);
        Assert.Equal("msgId", Assert.Throws<ArgumentNullException>(() => new ServerFrame(null!, 1, 2, 0, 0, Payload.Empty)).ParamName);
        Assert.Equal("originalSize", Assert.Throws<ArgumentOutOfRangeException>(() => new ServerFrame("Ping", 1, 2, 0, -1, Payload.Empty)).ParamName);
    }

    [Fact]
    public void DefaultFrames_HaveAnEmptyMsgId_AndAreNeitherRequestNorReply()
    {
        Assert.Equal(string.Empty, default(ClientFrame).MsgId);
        Assert.Equal(string.Empty, default(ServerFrame).MsgId);
        Assert.False(default(ClientFrame).IsRequest);
        Assert.False(default(ServerFrame).IsReply);
        Assert.True(new ClientFrame("Ask", 1, 0, Payload.Empty).IsRequest);
        Assert.True(new ServerFrame("Ask", ushort.MaxValue, 0, 0, 0, Payload.Empty).IsReply);
    }

    [Fact]
    public void ToString_NamesTheFrameFields()
    {
        Assert.StartsWith("ClientFrame(msgId 'Ask', seq 3, stage 7, ", new ClientFrame("Ask", 3, 7, Payload.Empty).ToString(), StringComparison.Ordinal);
        Assert.StartsWith("ServerFrame(msgId 'Ask', seq 3, stage 7, error 9, originalSize 5, ", new ServerFrame("Ask", 3, 7, 9, 5, Payload.Empty).ToString(), StringComparison.Ordinal);
    }

    [Fact]
    public void Encoders_RefuseANegativePayloadLength_ANegativeOriginalSize_AndANullWriter()
    {
        Assert.Equal("payloadLengthBytes", Assert.Throws<ArgumentOutOfRangeException>(() => ClientFrameEncoder.GetEncodedLength("Ping", -1)).ParamName);
        Assert.Equal("payloadLengthBytes", Assert.Throws<ArgumentOutOfRangeException>(() => ServerFrameEncoder.GetEncodedLength("Ping", -1)).ParamName);
        Assert.Equal("originalSize", Assert.Throws<ArgumentOutOfRangeException>(() => ServerFrameEncoder.Encode(new byte[64], "Ping", 1, 2, 0, [], originalSize: -1)).ParamName);
        Assert.Equal("writer", Assert.Throws<ArgumentNullException>(() => ClientFrameEncoder.Encode((IBufferWriter<byte>)null!, "Ping", 1, 2, [])).ParamName);
        Assert.Equal("writer", Assert.Throws<ArgumentNullException>(() => ServerFrameEncoder.Encode((IBufferWriter<byte>)null!, "Ping", 1, 2, 0, [])).ParamName);
        Assert.Equal("msgId", Assert.Throws<ArgumentNullException>(() => ClientFrameEncoder.GetEncodedLength(null!, 0)).ParamName);
    }

    [Fact]
    public void BodyLimitOfOneByte_RefusesEveryFrameAsTooLong_AndZeroAsOutOfRange()
    {
        var tooLong = Assert.Throws<ArgumentException>(() => ClientFrameEncoder.GetEncodedLength("Ping", 0, maxBodyBytes: 1));
        var outOfRange = Assert.Throws<ArgumentOutOfRangeException>(() => ClientFrameEncoder.GetEncodedLength("Ping", 0, maxBodyBytes: 0));

        Assert.StartsWith("The frame body would be 15 bytes (0 B payload); the limit is 1 bytes.", tooLong.Message, StringComparison.Ordinal);
        Assert.Equal("maxBodyBytes", outOfRange.ParamName);
        Assert.Contains($"maxBodyBytes must lie in [1, {WireProtocol.MaxBodyBytes}].", outOfRange.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void ServerEncode_DestinationOneByteShort_SaysBothSizes()
    {
        var frameBytes = ServerFrameEncoder.GetEncodedLength("Ping", 0);

        var error = Assert.Throws<ArgumentException>(() => ServerFrameEncoder.Encode(new byte[frameBytes - 1], "Ping", 1, 2, 0, []));
        var client = Assert.Throws<ArgumentException>(() => ClientFrameEncoder.Encode(new byte[3], "Ping", 1, 2, []));

        Assert.Equal("destination", error.ParamName);
        Assert.StartsWith($"The destination holds {frameBytes - 1} bytes; the frame needs {frameBytes}.", error.Message, StringComparison.Ordinal);
        Assert.StartsWith($"The destination holds 3 bytes; the frame needs {ClientFrameEncoder.GetEncodedLength("Ping", 0)}.", client.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void ServerEncode_WritesTheOriginalSizeBeforeThePayload()
    {
        byte[] payload = [1, 2, 3];
        var bytes = new byte[ServerFrameEncoder.GetEncodedLength("Ping", payload.Length)];

        ServerFrameEncoder.Encode(bytes, "Ping", 1, 2, 3, payload, originalSize: 70_000);

        Assert.Equal(70_000, BinaryPrimitives.ReadInt32LittleEndian(bytes.AsSpan(bytes.Length - payload.Length - 4)));
        Assert.Equal(WireBytes.Server("Ping", 1, 2, 3, 70_000, payload), bytes);
    }
}
