using System.Buffers.Binary;
using System.Net.Security;
using System.Net.Sockets;
using System.Net.WebSockets;
using System.Threading.Channels;
using K4os.Compression.LZ4;
using PlayHouse.Core.Codec;
using PlayHouse.Core.Pooling;

namespace PlayHouse.Conformance.Tests;

/// <summary>The client transports a conformance test drives.</summary>
public enum ClientKind
{
    Tcp,
    Tls,
    WebSocket,
    SecureWebSocket,
}

/// <summary>A server frame as a client sees it: the payload already decompressed when OriginalSize says it was compressed.</summary>
public sealed record ReceivedFrame(string MsgId, ushort MsgSeq, long StageId, ushort ErrorCode, int OriginalSize, byte[] Payload)
{
    public bool IsSuccess => ErrorCode == 0;
}

/// <summary>
/// A test client for PlayHouse frames over plain TCP, TCP+TLS or WebSocket (ws:// and wss://), reading replies the way
/// PlayHouse's connectors do: one byte stream whatever the message boundaries, LZ4Pickler payloads when OriginalSize is
/// above 0. It can also write raw bytes and WebSocket text, which a well-behaved client never does.
/// </summary>
public sealed class StreamPlayClient : IAsyncDisposable
{
    private readonly Stream? _stream;
    private readonly ClientWebSocket? _webSocket;
    private readonly MessagePool _pool = new(new MessagePoolOptions { Name = "test-client" });
    private readonly Dictionary<ushort, TaskCompletionSource<ReceivedFrame>> _pending = [];
    private readonly Channel<ReceivedFrame> _pushes = Channel.CreateBounded<ReceivedFrame>(1024);
    private readonly SemaphoreSlim _sendLock = new(1, 1);
    private readonly TaskCompletionSource _closed = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly Task _readLoop;
    private readonly ConnectorUnpickler _unpickler = new();
    private ushort _nextSeq;
    private TaskCompletionSource? _resumeReading;

    private StreamPlayClient(Stream? stream, ClientWebSocket? webSocket)
    {
        _stream = stream;
        _webSocket = webSocket;
        _readLoop = ReadLoopAsync();
    }

    /// <summary>The largest WebSocket message received so far (0 on a stream transport).</summary>
    public int LargestMessageBytes { get; private set; }

    /// <summary>Completes when the server ends the connection (close, EOF or reset).</summary>
    public Task Closed => _closed.Task;

    public static async Task<StreamPlayClient> ConnectAsync(ConformanceServer server, ClientKind kind)
    {
        ArgumentNullException.ThrowIfNull(server);
        switch (kind)
        {
            case ClientKind.Tcp:
            case ClientKind.Tls:
                var endPoint = kind == ClientKind.Tcp ? server.TcpEndPoint : server.TcpTlsEndPoint!;
                var tcp = new TcpClient { NoDelay = true };
                await tcp.ConnectAsync(endPoint.Address, endPoint.Port);
                Stream stream = tcp.GetStream();
                if (kind == ClientKind.Tls)
                {
                    var ssl = new SslStream(stream, leaveInnerStreamOpen: false, (_, _, _, _) => true);
                    await ssl.AuthenticateAsClientAsync("127.0.0.1");
                    stream = ssl;
                }

                return new StreamPlayClient(stream, null);
            default:
                var socket = new ClientWebSocket();
                socket.Options.RemoteCertificateValidationCallback = (_, _, _, _) => true;
                await socket.ConnectAsync(kind == ClientKind.WebSocket ? server.WebSocketAddress! : server.SecureWebSocketAddress!, CancellationToken.None);
                return new StreamPlayClient(null, socket);
        }
    }

    /// <summary>Stops reading from the connection (after the read in progress), as a slow or stuck client does.</summary>
    public void PauseReading() => Volatile.Write(ref _resumeReading, new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously));

    /// <summary>Writes bytes as they are: on a WebSocket, as one binary message.</summary>
    public async Task SendRawAsync(ReadOnlyMemory<byte> bytes)
    {
        await _sendLock.WaitAsync();
        try
        {
            if (_webSocket is not null)
            {
                await _webSocket.SendAsync(bytes, WebSocketMessageType.Binary, endOfMessage: true, CancellationToken.None);
            }
            else
            {
                await _stream!.WriteAsync(bytes);
                await _stream.FlushAsync();
            }
        }
        finally
        {
            _sendLock.Release();
        }
    }

    /// <summary>Sends a WebSocket text message, which PlayHouse's protocol never uses.</summary>
    public async Task SendTextAsync(string text)
    {
        await _webSocket!.SendAsync(System.Text.Encoding.UTF8.GetBytes(text), WebSocketMessageType.Text, endOfMessage: true, CancellationToken.None);
    }

    public static byte[] Encode(string msgId, ushort msgSeq, long stageId, ReadOnlySpan<byte> payload)
    {
        var frame = new byte[ClientFrameEncoder.GetEncodedLength(msgId, payload.Length)];
        ClientFrameEncoder.Encode(frame, msgId, msgSeq, stageId, payload);
        return frame;
    }

    /// <summary>Sends a request and waits for its reply; null when none came within <paramref name="timeout"/>.</summary>
    public async Task<ReceivedFrame?> RequestAsync(string msgId, long stageId, byte[] payload, TimeSpan? timeout = null)
    {
        var (seq, reply) = Expect();
        await SendRawAsync(Encode(msgId, seq, stageId, payload));
        return await WaitAsync(reply, timeout ?? TimeSpan.FromSeconds(10));
    }

    /// <summary>Sends one request cut into pieces of <paramref name="pieceBytes"/>, each its own write (or WebSocket message).</summary>
    public async Task<ReceivedFrame?> RequestInPiecesAsync(string msgId, long stageId, byte[] payload, int pieceBytes)
    {
        var (seq, reply) = Expect();
        var frame = Encode(msgId, seq, stageId, payload);
        for (var offset = 0; offset < frame.Length; offset += pieceBytes)
        {
            await SendRawAsync(frame.AsMemory(offset, Math.Min(pieceBytes, frame.Length - offset)));
        }

        return await WaitAsync(reply, TimeSpan.FromSeconds(10));
    }

    /// <summary>The next push (a frame with sequence 0), or null after <paramref name="timeout"/>.</summary>
    public async Task<ReceivedFrame?> NextPushAsync(TimeSpan timeout)
    {
        using var cancel = new CancellationTokenSource(timeout);
        try
        {
            return await _pushes.Reader.ReadAsync(cancel.Token);
        }
        catch (Exception e) when (e is OperationCanceledException or ChannelClosedException)
        {
            return null;
        }
    }

    public async ValueTask DisposeAsync()
    {
        if (_webSocket is not null)
        {
            if (_webSocket.State == WebSocketState.Open)
            {
                using var cancel = new CancellationTokenSource(TimeSpan.FromSeconds(2));
                try
                {
                    await _webSocket.CloseAsync(WebSocketCloseStatus.NormalClosure, null, cancel.Token);
                }
                catch (Exception e) when (e is WebSocketException or OperationCanceledException or IOException)
                {
                    // The server may have gone first.
                }
            }

            _webSocket.Dispose();
        }
        else
        {
            await _stream!.DisposeAsync();
        }

        Volatile.Read(ref _resumeReading)?.TrySetResult();
        await _readLoop.WaitAsync(TimeSpan.FromSeconds(5));
        _sendLock.Dispose();
    }

    private (ushort Seq, Task<ReceivedFrame> Reply) Expect()
    {
        var reply = new TaskCompletionSource<ReceivedFrame>(TaskCreationOptions.RunContinuationsAsynchronously);
        lock (_pending)
        {
            _nextSeq = (ushort)(_nextSeq == ushort.MaxValue ? 1 : _nextSeq + 1);
            _pending[_nextSeq] = reply;
            return (_nextSeq, reply.Task);
        }
    }

    private static async Task<ReceivedFrame?> WaitAsync(Task<ReceivedFrame> reply, TimeSpan timeout)
    {
        try
        {
            return await reply.WaitAsync(timeout);
        }
        catch (TimeoutException)
        {
            return null;
        }
    }

    private async Task ReadLoopAsync()
    {
        using var decoder = new ServerFrameDecoder(_pool, options: new FrameDecoderOptions { Decompressor = _unpickler });
        var buffer = new byte[64 * 1024];
        try
        {
            while (true)
            {
                if (Volatile.Read(ref _resumeReading) is { } paused)
                {
                    await paused.Task.WaitAsync(TimeSpan.FromSeconds(30));
                }

                int received;
                if (_webSocket is not null)
                {
                    var messageBytes = 0;
                    ValueWebSocketReceiveResult result;
                    do
                    {
                        result = await _webSocket.ReceiveAsync(buffer.AsMemory(), CancellationToken.None);
                        if (result.MessageType == WebSocketMessageType.Close)
                        {
                            return;
                        }

                        messageBytes += result.Count;
                        Deliver(decoder, buffer.AsSpan(0, result.Count));
                    }
                    while (!result.EndOfMessage);

                    LargestMessageBytes = Math.Max(LargestMessageBytes, messageBytes);
                    continue;
                }

                received = await _stream!.ReadAsync(buffer);
                if (received == 0)
                {
                    return;
                }

                Deliver(decoder, buffer.AsSpan(0, received));
            }
        }
        catch (Exception e) when (e is IOException or WebSocketException or ObjectDisposedException or SocketException or OperationCanceledException or TimeoutException)
        {
            // The connection ended; Closed says so below.
        }
        finally
        {
            _closed.TrySetResult();
            _pushes.Writer.TryComplete();
        }
    }

    private void Deliver(ServerFrameDecoder decoder, ReadOnlySpan<byte> data)
    {
        while (decoder.TryDecode(ref data, out var frame))
        {
            using (frame)
            {
                // The decoder reports the inflated frame with OriginalSize 0; the unpickler saw the size on the wire.
                var received = new ReceivedFrame(frame.MsgId, frame.MsgSeq, frame.StageId, frame.ErrorCode, _unpickler.TakeInflatedBytes(), frame.Payload.Span.ToArray());
                TaskCompletionSource<ReceivedFrame>? waiter = null;
                if (frame.MsgSeq > 0 && !frame.IsHeartbeat)
                {
                    lock (_pending)
                    {
                        _pending.Remove(frame.MsgSeq, out waiter);
                    }
                }

                if (waiter is not null)
                {
                    waiter.TrySetResult(received);
                }
                else
                {
                    _pushes.Writer.TryWrite(received);
                }
            }
        }
    }

    /// <summary>A frame header announcing <paramref name="bodyBytes"/> bytes, then nothing more.</summary>
    public static byte[] LengthPrefix(int bodyBytes)
    {
        var prefix = new byte[4];
        BinaryPrimitives.WriteInt32LittleEndian(prefix, bodyBytes);
        return prefix;
    }

    /// <summary>Inflates as PlayHouse's C# connector does, with <c>LZ4Pickler.Unpickle</c>, and notes the size of the last frame it inflated.</summary>
    /// <remarks>Called only by the read loop.</remarks>
    private sealed class ConnectorUnpickler : IPayloadDecompressor
    {
        private int _inflatedBytes;

        public int Decompress(ReadOnlySpan<byte> source, Span<byte> destination)
        {
            var inflated = LZ4Pickler.Unpickle(source);
            inflated.CopyTo(destination);
            _inflatedBytes = inflated.Length;
            return inflated.Length;
        }

        public int TakeInflatedBytes()
        {
            var bytes = _inflatedBytes;
            _inflatedBytes = 0;
            return bytes;
        }
    }
}
