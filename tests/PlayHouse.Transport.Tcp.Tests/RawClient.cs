using System.Buffers.Binary;
using System.Net;
using System.Net.Sockets;
using System.Text;

namespace PlayHouse.Transport.Tcp.Tests;

/// <summary>
/// Frames built by hand from PlayHouse's byte layout, with no shared codec code, so a codec mistake cannot hide on
/// both sides: client -> server <c>[Len:i32][MsgIdLen:u8][MsgId][MsgSeq:u16][StageId:i64][Payload]</c>, little-endian,
/// Len counting every byte after itself.
/// </summary>
internal static class RawFrames
{
    public static byte[] Client(string msgId, ushort msgSeq, long stageId, ReadOnlySpan<byte> payload)
    {
        var id = Encoding.UTF8.GetBytes(msgId);
        var body = 1 + id.Length + 2 + 8 + payload.Length;
        var frame = new byte[4 + body];
        BinaryPrimitives.WriteInt32LittleEndian(frame, body);
        frame[4] = (byte)id.Length;
        id.CopyTo(frame, 5);
        BinaryPrimitives.WriteUInt16LittleEndian(frame.AsSpan(5 + id.Length), msgSeq);
        BinaryPrimitives.WriteInt64LittleEndian(frame.AsSpan(7 + id.Length), stageId);
        payload.CopyTo(frame.AsSpan(15 + id.Length));
        return frame;
    }

    /// <summary>A length prefix followed by arbitrary bytes (for lengths that lie).</summary>
    public static byte[] LengthThen(int length, params byte[] rest)
    {
        var frame = new byte[4 + rest.Length];
        BinaryPrimitives.WriteInt32LittleEndian(frame, length);
        rest.CopyTo(frame, 4);
        return frame;
    }

    public static byte[] Account(long accountId)
    {
        var bytes = new byte[8];
        BinaryPrimitives.WriteInt64LittleEndian(bytes, accountId);
        return bytes;
    }
}

/// <summary>A server -> client frame parsed by hand: <c>[Len][MsgIdLen][MsgId][MsgSeq][StageId][ErrorCode:u16][OriginalSize:i32][Payload]</c>.</summary>
internal sealed record RawServerFrame(int Length, string MsgId, ushort MsgSeq, long StageId, ushort ErrorCode, int OriginalSize, byte[] Payload);

/// <summary>A bare socket that sends hand-made bytes and reads server frames by hand.</summary>
internal sealed class RawClient : IDisposable
{
    private readonly Socket _socket;

    private RawClient(Socket socket) => _socket = socket;

    public Socket Socket => _socket;

    public static async Task<RawClient> ConnectAsync(IPEndPoint endPoint, int receiveBufferBytes = 0)
    {
        var socket = new Socket(endPoint.AddressFamily, SocketType.Stream, ProtocolType.Tcp) { NoDelay = true };
        if (receiveBufferBytes > 0)
        {
            socket.ReceiveBufferSize = receiveBufferBytes;
        }

        await socket.ConnectAsync(endPoint).WaitAsync(TestServer.Patience);
        return new RawClient(socket);
    }

    public async Task SendAsync(byte[] bytes)
    {
        var sent = 0;
        while (sent < bytes.Length)
        {
            sent += await _socket.SendAsync(bytes.AsMemory(sent), SocketFlags.None).AsTask().WaitAsync(TestServer.Patience);
        }
    }

    public async Task<RawServerFrame> ReadFrameAsync()
    {
        var prefix = await ReadExactlyAsync(4);
        var length = BinaryPrimitives.ReadInt32LittleEndian(prefix);
        Assert.InRange(length, 17, 2 * 1024 * 1024);
        var body = await ReadExactlyAsync(length);
        var idLength = body[0];
        var msgId = Encoding.UTF8.GetString(body, 1, idLength);
        var at = 1 + idLength;
        var msgSeq = BinaryPrimitives.ReadUInt16LittleEndian(body.AsSpan(at));
        var stageId = BinaryPrimitives.ReadInt64LittleEndian(body.AsSpan(at + 2));
        var errorCode = BinaryPrimitives.ReadUInt16LittleEndian(body.AsSpan(at + 10));
        var originalSize = BinaryPrimitives.ReadInt32LittleEndian(body.AsSpan(at + 12));
        var payload = body.AsSpan(at + 16).ToArray();
        return new RawServerFrame(length, msgId, msgSeq, stageId, errorCode, originalSize, payload);
    }

    /// <summary>Reads until the server closes the connection (FIN or reset); returns the bytes that came first.</summary>
    public async Task<int> WaitClosedAsync()
    {
        var buffer = new byte[4096];
        var total = 0;
        using var cts = new CancellationTokenSource(TestServer.Patience);
        try
        {
            while (true)
            {
                var read = await _socket.ReceiveAsync(buffer, SocketFlags.None, cts.Token);
                if (read == 0)
                {
                    return total;
                }

                total += read;
            }
        }
        catch (SocketException)
        {
            return total;
        }
    }

    /// <summary>Closes with a reset (linger 0) instead of a FIN.</summary>
    public void Reset()
    {
        _socket.LingerState = new LingerOption(true, 0);
        _socket.Close();
    }

    public void Dispose() => _socket.Dispose();

    private async Task<byte[]> ReadExactlyAsync(int count)
    {
        var buffer = new byte[count];
        using var cts = new CancellationTokenSource(TestServer.Patience);
        var read = 0;
        while (read < count)
        {
            var n = await _socket.ReceiveAsync(buffer.AsMemory(read), SocketFlags.None, cts.Token);
            if (n == 0)
            {
                throw new IOException($"The server closed the connection after {read} of {count} bytes.");
            }

            read += n;
        }

        return buffer;
    }
}
