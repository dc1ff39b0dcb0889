using System.Net.Security;
using System.Net.Sockets;
using System.Net.WebSockets;

namespace PlayHouse.Transport.Tcp;

/// <summary>A TCP socket under an authenticated <see cref="SslStream"/> (the TLS client transport).</summary>
internal sealed class TlsChannel(SslStream stream, Socket socket) : ByteChannel
{
    public override ValueTask<int> ReadAsync(Memory<byte> buffer) => stream.ReadAsync(buffer);

    public override ValueTask WriteAsync(ReadOnlyMemory<byte> data) => stream.WriteAsync(data);

    public override void Close(bool abortive, bool writeIdle)
    {
        try
        {
            if (abortive)
            {
                socket.LingerState = new LingerOption(true, 0);
            }
            else
            {
                // A FIN, as on plain TCP; a TLS close_notify would be one more write racing a send in flight.
                socket.Shutdown(SocketShutdown.Both);
            }
        }
        catch (Exception e) when (e is SocketException or ObjectDisposedException)
        {
            // The peer may be gone already; the socket is disposed either way.
        }

        // Disposing the stream disposes the NetworkStream, which owns the socket: pending operations then fail.
        stream.Dispose();
    }
}

/// <summary>
/// A server-side <see cref="WebSocket"/> (the WebSocket client transport): binary messages carry PlayHouse frames as
/// one byte stream in both directions (a frame may span messages, a message may hold several frames), which is how
/// PlayHouse's connectors read and write them. A text message is a protocol violation that closes the session.
/// </summary>
internal sealed class WebSocketChannel(WebSocket socket, int messageBytesMax, TimeSpan closeGrace, TimeProvider time, TcpTransportCounters counters) : ByteChannel
{
    private ITimer? _abortTimer;

    public override async ValueTask<int> ReadAsync(Memory<byte> buffer)
    {
        while (true)
        {
            var result = await socket.ReceiveAsync(buffer, CancellationToken.None).ConfigureAwait(false);
            switch (result.MessageType)
            {
                case WebSocketMessageType.Close:
                    return 0;
                case WebSocketMessageType.Text:
                    counters.AddWebSocketTextMessage();
                    Violation = "the client sent a text message; PlayHouse frames travel in binary messages";
                    return -1;
            }

            // An empty binary message carries no bytes: read on rather than report the end of the stream.
            if (result.Count > 0)
            {
                return result.Count;
            }
        }
    }

    public override async ValueTask WriteAsync(ReadOnlyMemory<byte> data)
    {
        // PlayHouse's C# connector gathers a whole message into a fixed 64 KiB ring before it parses frames, so
        // long runs of queued frames leave as several bounded messages.
        while (data.Length > 0)
        {
            var take = Math.Min(data.Length, messageBytesMax);
            await socket.SendAsync(data[..take], WebSocketMessageType.Binary, endOfMessage: true, CancellationToken.None).ConfigureAwait(false);
            data = data[take..];
        }
    }

    public override void Close(bool abortive, bool writeIdle)
    {
        if (abortive || !writeIdle || socket.State is not (WebSocketState.Open or WebSocketState.CloseReceived))
        {
            socket.Abort();
            return;
        }

        _ = CloseGracefullyAsync();
    }

    private async Task CloseGracefullyAsync()
    {
        // The close message is the last write; a peer that never answers it is cut off after the grace period.
        _abortTimer = time.CreateTimer(static s => ((WebSocket)s!).Abort(), socket, closeGrace, Timeout.InfiniteTimeSpan);
        try
        {
            await socket.CloseOutputAsync(WebSocketCloseStatus.NormalClosure, null, CancellationToken.None).ConfigureAwait(false);
        }
        catch (Exception e) when (e is WebSocketException or IOException or ObjectDisposedException or OperationCanceledException or InvalidOperationException)
        {
            socket.Abort();
        }

        if (socket.State == WebSocketState.Closed)
        {
            _abortTimer.Dispose();
        }
    }
}
