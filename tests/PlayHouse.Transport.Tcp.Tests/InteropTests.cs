using System.Buffers.Binary;
using System.Net;
using System.Net.Sockets;
using System.Text;
using PlayHouse.Core.Runtime;

namespace PlayHouse.Transport.Tcp.Tests;

/// <summary>
/// Interoperability with a client and a server written straight from PlayHouse's byte layout (raw sockets and
/// BinaryPrimitives, no shared codec code), so a codec mistake cannot hide on both sides.
/// </summary>
public sealed class InteropTests
{
    [Fact]
    public async Task RawClient_AuthenticateThenEcho_GetsByteExactReplies()
    {
        await using var server = TestServer.Start();
        using var raw = await RawClient.ConnectAsync(server.EndPoint);

        await raw.SendAsync(RawFrames.Client("AuthenticateRequest", 1, 42, RawFrames.Account(0x0102030405060708)));
        var auth = await raw.ReadFrameAsync();
        var payload = Encoding.UTF8.GetBytes("raw bytes, no codec");
        await raw.SendAsync(RawFrames.Client("EchoRequest", 0xBEEF, 42, payload));
        var echo = await raw.ReadFrameAsync();

        // Len = MsgIdLen(1) + "AuthenticateReply"(17) + MsgSeq(2) + StageId(8) + ErrorCode(2) + OriginalSize(4) + 8.
        Assert.Equal(1 + 17 + 2 + 8 + 2 + 4 + 8, auth.Length);
        Assert.Equal(("AuthenticateReply", (ushort)1, 42L, (ushort)0, 0), (auth.MsgId, auth.MsgSeq, auth.StageId, auth.ErrorCode, auth.OriginalSize));
        Assert.Equal(0x0102030405060708, BinaryPrimitives.ReadInt64LittleEndian(auth.Payload));
        Assert.Equal(("EchoReply", (ushort)0xBEEF, 42L, (ushort)0, 0), (echo.MsgId, echo.MsgSeq, echo.StageId, echo.ErrorCode, echo.OriginalSize));
        Assert.Equal(payload, echo.Payload);
    }

    [Fact]
    public async Task RawClient_HeartbeatBeforeAuthentication_IsEchoedByteForByte()
    {
        await using var server = TestServer.Start();
        using var raw = await RawClient.ConnectAsync(server.EndPoint);

        await raw.SendAsync(RawFrames.Client("@Heart@Beat@", 0, 0, []));
        var echo = await raw.ReadFrameAsync();

        Assert.Equal(1 + 12 + 2 + 8 + 2 + 4, echo.Length);
        Assert.Equal(("@Heart@Beat@", (ushort)0, 0L, (ushort)0, 0), (echo.MsgId, echo.MsgSeq, echo.StageId, echo.ErrorCode, echo.OriginalSize));
        Assert.Empty(echo.Payload);
    }

    [Fact]
    public async Task RawClient_OneWaySend_IsAnsweredByAPushWithSequenceZero()
    {
        await using var server = TestServer.Start();
        using var raw = await RawClient.ConnectAsync(server.EndPoint);
        await raw.SendAsync(RawFrames.Client("AuthenticateRequest", 1, 3, RawFrames.Account(9)));
        await raw.ReadFrameAsync();

        await raw.SendAsync(RawFrames.Client("SendPush", 0, 3, [5, 6, 7]));
        var push = await raw.ReadFrameAsync();

        Assert.Equal(("Push", (ushort)0, 3L, (ushort)0, 0), (push.MsgId, push.MsgSeq, push.StageId, push.ErrorCode, push.OriginalSize));
        Assert.Equal(new byte[] { 5, 6, 7 }, push.Payload);
    }

    [Fact]
    public async Task RawClient_NonAsciiMsgId_IsCountedInUtf8BytesBothWays()
    {
        // B16: PlayHouse counted the msg id length in chars, which breaks for any non-ASCII id.
        await using var server = TestServer.Start();
        using var raw = await RawClient.ConnectAsync(server.EndPoint);
        await raw.SendAsync(RawFrames.Client("AuthenticateRequest", 1, 1, RawFrames.Account(10)));
        await raw.ReadFrameAsync();
        const string Korean = "에코요청";

        var request = RawFrames.Client(Korean, 7, 1, [1]);
        await raw.SendAsync(request);
        var reply = await raw.ReadFrameAsync();

        Assert.Equal(12, request[4]);
        Assert.Equal(Korean, reply.MsgId);
        Assert.Equal(1 + 12 + 2 + 8 + 2 + 4, reply.Length);
        Assert.Equal(ErrorCodes.HandlerNotFound, reply.ErrorCode);
        Assert.Equal(7, reply.MsgSeq);
    }

    [Fact]
    public async Task OurClient_AgainstAHandWrittenServer_EncodesAndDecodesTheLayoutExactly()
    {
        using var listener = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        listener.Bind(new IPEndPoint(IPAddress.Loopback, 0));
        listener.Listen(1);
        var serverSide = Task.Run(async () =>
        {
            using var peer = await listener.AcceptAsync();
            var prefix = await ReadExactlyAsync(peer, 4);
            var body = await ReadExactlyAsync(peer, BinaryPrimitives.ReadInt32LittleEndian(prefix));

            // [MsgIdLen]["EchoRequest"][MsgSeq][StageId][Payload]
            var idLength = body[0];
            var msgId = Encoding.UTF8.GetString(body, 1, idLength);
            var seq = BinaryPrimitives.ReadUInt16LittleEndian(body.AsSpan(1 + idLength));
            var stage = BinaryPrimitives.ReadInt64LittleEndian(body.AsSpan(3 + idLength));
            var payload = body.AsSpan(11 + idLength).ToArray();

            // Reply by hand: [Len][MsgIdLen]["Answer"][MsgSeq][StageId][ErrorCode=7][OriginalSize=0][payload reversed]
            var answer = "Answer"u8.ToArray();
            var reply = new byte[4 + 1 + answer.Length + 2 + 8 + 2 + 4 + payload.Length];
            BinaryPrimitives.WriteInt32LittleEndian(reply, reply.Length - 4);
            reply[4] = (byte)answer.Length;
            answer.CopyTo(reply, 5);
            BinaryPrimitives.WriteUInt16LittleEndian(reply.AsSpan(5 + answer.Length), seq);
            BinaryPrimitives.WriteInt64LittleEndian(reply.AsSpan(7 + answer.Length), stage);
            BinaryPrimitives.WriteUInt16LittleEndian(reply.AsSpan(15 + answer.Length), 7);
            BinaryPrimitives.WriteInt32LittleEndian(reply.AsSpan(17 + answer.Length), 0);
            payload.Reverse().ToArray().CopyTo(reply, 21 + answer.Length);
            await peer.SendAsync(reply);
            return (msgId, seq, stage, payload, body.Length);
        });
        using var client = await TcpPlayClient.ConnectAsync((IPEndPoint)listener.LocalEndPoint!, new TcpPlayClientOptions { RequestTimeout = TestServer.Patience });

        var reply = await client.RequestAsync("EchoRequest", -9_000_000_000, [1, 2, 3]).WaitAsync(TestServer.Patience);
        var seen = await serverSide.WaitAsync(TestServer.Patience);

        Assert.Equal(("EchoRequest", (ushort)1, -9_000_000_000L, 1 + 11 + 2 + 8 + 3), (seen.msgId, seen.seq, seen.stage, seen.Item5));
        Assert.Equal(new byte[] { 1, 2, 3 }, seen.payload);
        Assert.Equal(("Answer", (ushort)1, (ushort)7), (reply.MsgId, reply.MsgSeq, reply.ErrorCode));
        Assert.Equal(new byte[] { 3, 2, 1 }, reply.Payload);
    }

    private static async Task<byte[]> ReadExactlyAsync(Socket socket, int count)
    {
        var buffer = new byte[count];
        var read = 0;
        while (read < count)
        {
            var n = await socket.ReceiveAsync(buffer.AsMemory(read));
            if (n == 0)
            {
                throw new IOException("closed");
            }

            read += n;
        }

        return buffer;
    }
}
