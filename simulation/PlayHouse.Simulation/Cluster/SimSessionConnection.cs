using PlayHouse.Core.Codec;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;
using PlayHouse.Simulation.Clients;
using PlayHouse.Simulation.Network;

namespace PlayHouse.Simulation.Cluster;

/// <summary>
/// The server side of one client session in simulation, modelled on the TCP session: bytes from the
/// <see cref="SimConnection"/> land in the session's pooled receive buffer, go through the real client codec and into
/// the play server; the server's frames are encoded and sent back as bytes. A malformed frame closes the session with
/// the decoder's reason. The session's send queue is capped (<see cref="StreamSendQueueFactory"/>, standard: the path's
/// queue cap): a frame past the cap, for a client that reads slowly, is refused (the server counts it as a refused
/// client send), never buffered without a bound.
/// <para>A WebSocket session (the server's second transport) carries each packet in one WebSocket binary frame: client
/// frames arrive masked and each must hold exactly one packet; the server's frames go unmasked.</para>
/// <para>Ownership follows the TCP session (B7e): the receive buffer and the decoder belong to the receive side and
/// are returned exactly once, when it ends. A close from any side (the server, a send that found the connection
/// broken, the peer or a reset) only marks the session closed and tells the server once; a close that happens inside a
/// receive callback leaves the buffer to that callback, which returns it when it unwinds.</para>
/// <para>No exception escapes a network callback (B16c): an exception from the server while a frame is received is
/// counted in <see cref="SimSessionStatistics.CallbackFaults"/> and closes this session; the process and every other
/// session go on.</para>
/// <para>The bug zoo's flawed sessions derive from this class and replace one step (<see cref="SendFrame"/>,
/// <see cref="Receive"/>, <see cref="OnSendFailed"/>, <see cref="OnReceiveEnded"/>) through
/// <see cref="SimClusterBuilder.WithSessionConnections"/>.</para>
/// </summary>
/// <remarks>Not thread-safe; runs on the simulation thread.</remarks>
public class SimSessionConnection : IClientConnection, IStreamReceiver
{
    /// <summary>The session's receive buffer: a socket receive hands the decoder at most this many bytes at a time.</summary>
    public const int ReceiveBufferBytes = 1024;

    private readonly SimConnection _connection;
    private readonly IStreamSendQueue _sendQueue;
    private readonly PlayServer _server;
    private readonly ClientFrameDecoder _decoder;
    private readonly SimSessionStatistics _statistics;
    private readonly WebSocketFrameDecoder? _webSocket;

    // The server's record of this session: every frame names it, so the server finds it without a lookup by id.
    private readonly ClientSession _session;
    private Payload _receiveBuffer;
    private bool _receiving;
    private bool _receiveEnded;
    private bool _closed;

    /// <param name="connection">The server end of the client's connection.</param>
    /// <param name="server">The play server the session belongs to.</param>
    /// <param name="msgIds">Shared msg-id strings.</param>
    /// <param name="statistics">The node's session counters.</param>
    /// <param name="sendQueue">The session's send queue on <paramref name="connection"/>; null: the connection's own, capped by its path.</param>
    /// <param name="transport">The transport the client came over (a WebSocket session frames each packet).</param>
    public SimSessionConnection(SimConnection connection, PlayServer server, Utf8StringCache msgIds, SimSessionStatistics statistics, IStreamSendQueue? sendQueue = null, SimClientTransport transport = SimClientTransport.Tcp)
    {
        ArgumentNullException.ThrowIfNull(connection);
        ArgumentNullException.ThrowIfNull(server);
        ArgumentNullException.ThrowIfNull(statistics);
        _connection = connection;
        _sendQueue = sendQueue ?? new ConnectionSendQueue(connection, int.MaxValue);
        _server = server;
        _statistics = statistics;
        _decoder = new ClientFrameDecoder(server.Pool, msgIds, new FrameDecoderOptions { PayloadOwner = "session-receive" });
        _webSocket = transport == SimClientTransport.WebSocket ? new WebSocketFrameDecoder(expectMasked: true, WireProtocol.MaxFrameBytes) : null;
        TransportKind = transport == SimClientTransport.WebSocket ? ClientTransports.WebSocket : ClientTransports.Tcp;
        _receiveBuffer = server.Pool.Rent(ReceiveBufferBytes, "session-receive-buffer");
        _session = server.ConnectSession(this);
        SessionId = _session.SessionId;
        connection.SetReceiver(this);
    }

    public long SessionId { get; }

    public string TransportKind { get; }

    /// <summary>The play server this session belongs to.</summary>
    protected PlayServer Server => _server;

    protected SimSessionStatistics Statistics => _statistics;

    /// <summary>True once the session closed (from any side); it then receives and sends nothing more.</summary>
    protected bool IsClosed => _closed;

    /// <summary>The receive buffer's handle while the receive side holds it (empty once it was returned).</summary>
    protected Payload ReceiveBuffer => _receiveBuffer;

    public bool TrySend(string msgId, ushort msgSeq, long stageId, ushort errorCode, Payload payload)
    {
        try
        {
            if (_closed || !_connection.IsOpen)
            {
                return false;
            }

            return SendFrame(msgId, msgSeq, stageId, errorCode, payload);
        }
        finally
        {
            payload.DisposeIfOwner();
        }
    }

    /// <summary>The server closes the session (first message not authentication, a newer login, ...).</summary>
    public void Close(string reason)
    {
        if (_closed)
        {
            return;
        }

        _closed = true;
        _statistics.ClosedByServer++;
        _connection.Close(reason);
        Finish();
    }

    void IStreamReceiver.OnStreamData(SimConnection connection, ReadOnlySpan<byte> data) => OnStreamData(data);

    void IPrefetchParts.PrefetchParts(int depth)
    {
        // What a delivery reads after the session, level by level: the decoder, the counters, the receive buffer, the
        // send queue and the server's session; then the decoder's reader, the buffer's bytes and the session's actor;
        // then the actor's user object, which the stage's handler reads.
        switch (depth)
        {
            case 0:
                Prefetch.Object(_decoder);
                Prefetch.Object(_statistics);
                Prefetch.Object(_receiveBuffer.Buffer);
                Prefetch.Object(_sendQueue);
                Prefetch.Object(_session);
                break;
            case 1:
                Prefetch.Object(_decoder.Reader, 2);
                Prefetch.Object(_receiveBuffer.Buffer?.Array, 2);
                Prefetch.Object(_session.Actor);
                break;
            case 2:
                Prefetch.Object(_session.Actor?.User);
                break;
            default:
                break;
        }
    }

    /// <summary>
    /// The receive callback's entry, non-virtual so the network calls it directly (this class is not sealed, so a call
    /// through the interface would not be devirtualised on every delivery).
    /// </summary>
    internal void OnStreamData(ReadOnlySpan<byte> data)
    {
        if (_closed)
        {
            return;
        }

        _receiving = true;
        try
        {
            Receive(data);
        }
        finally
        {
            // A close during the callback left the receive buffer to it; the receive side ends here.
            _receiving = false;
            if (_closed)
            {
                EndReceive();
            }
        }
    }

    void IStreamReceiver.OnStreamClosed(SimConnection connection, string reason)
    {
        try
        {
            OnReceiveEnded(reason);
        }
        catch (Exception)
        {
            // The close callback is a network callback too: nothing escapes it (the session is over either way).
            _statistics.CallbackFaults++;
        }
    }

    /// <summary>
    /// Encodes one frame and sends it; the caller (<see cref="TrySend"/>) returns <paramref name="payload"/> afterwards,
    /// so a frame must be fully encoded before this returns. False when the send queue refused it.
    /// </summary>
    protected virtual bool SendFrame(string msgId, ushort msgSeq, long stageId, ushort errorCode, Payload payload)
    {
        var length = ServerFrameEncoder.GetEncodedLength(msgId, payload.Length);
        var headerBytes = _webSocket is null ? 0 : WebSocketFraming.GetHeaderLength(length, masked: false);
        var scratch = _connection.Network.SendScratch(headerBytes + length);
        if (headerBytes > 0)
        {
            WebSocketFraming.WriteHeader(scratch, length, maskKey: null);
        }

        ServerFrameEncoder.Encode(scratch.AsSpan(headerBytes), msgId, msgSeq, stageId, errorCode, payload.Span);
        return SendBytes(scratch.AsSpan(0, headerBytes + length));
    }

    /// <summary>
    /// Sends encoded bytes through the session's send queue; false when it refused them (closed, or at its cap). A send that
    /// broke the connection (a lost segment under reset-on-loss) is a failed send: <see cref="OnSendFailed"/> hears it.
    /// </summary>
    protected bool SendBytes(ReadOnlySpan<byte> frame)
    {
        if (!_sendQueue.TrySend(frame))
        {
            _statistics.SendsRefused++;
            return false;
        }

        _statistics.FramesSent++;
        _statistics.SendQueueHighWaterBytes = Math.Max(_statistics.SendQueueHighWaterBytes, _sendQueue.QueuedBytes);
        if (!_connection.IsOpen)
        {
            // A socket reports a broken send on its own completion, never inside the sender's call: what the server does
            // when it hears of it (the disconnect, and the hooks that observe it) runs as a network callback, so an
            // exception there is counted and closes nothing more, and it never unwinds the handler that sent.
            try
            {
                OnSendFailed("the connection broke during a send");
            }
            catch (Exception)
            {
                _statistics.CallbackFaults++;
            }
        }

        return true;
    }

    /// <summary>
    /// The receive callback: bytes arrived, in stream order. Malformed input closes the session with the decoder's
    /// reason; any other exception (from the server, while it handles a frame) is counted and closes this session
    /// only, as a socket completion must (B16c).
    /// </summary>
    protected virtual void Receive(ReadOnlySpan<byte> data)
    {
        try
        {
            if (_webSocket is not null)
            {
                ReceiveWebSocketMessages(data);
            }
            else
            {
                ReceiveFrames(data);
            }
        }
        catch (FrameDecodeException ex)
        {
            _statistics.BadFrames++;
            CloseFromReceive($"malformed frame: {ex.Error}");
        }
        catch (Exception ex)
        {
            _statistics.CallbackFaults++;
            CloseFromReceive($"the receive callback threw {ex.GetType().Name}: {ex.Message}");
        }
    }

    /// <summary>Copies bytes into the receive buffer, a buffer at a time, and hands every whole frame to the server.</summary>
    /// <exception cref="FrameDecodeException">The bytes are malformed.</exception>
    protected void ReceiveFrames(ReadOnlySpan<byte> data)
    {
        // The receive buffer is what a socket receive fills: the decoder reads it, never the network's own bytes. It
        // stays this callback's until the callback unwinds, even if a frame closes the session (EndReceive waits).
        var buffer = _receiveBuffer.WritableSpan;
        while (!data.IsEmpty && !_closed)
        {
            var received = Math.Min(data.Length, buffer.Length);
            data[..received].CopyTo(buffer);
            ReadOnlySpan<byte> chunk = buffer[..received];
            data = data[received..];
            while (_decoder.TryDecode(ref chunk, out var frame))
            {
                _statistics.FramesReceived++;
                _server.OnClientFrame(_session, frame.MsgId, frame.MsgSeq, frame.StageId, frame.Payload);
                if (_closed)
                {
                    // Bytes after the closing frame are never decoded, so no buffer is rented for them.
                    return;
                }
            }
        }
    }

    /// <summary>WebSocket messages: each binary one is exactly one client packet; a ping is answered, a close closes.</summary>
    /// <exception cref="FrameDecodeException">The bytes are malformed, or a message is not exactly one packet.</exception>
    private void ReceiveWebSocketMessages(ReadOnlySpan<byte> data)
    {
        while (_webSocket!.TryDecode(ref data, out var opcode, out var message))
        {
            switch (opcode)
            {
                case WebSocketOpcode.Binary:
                    if (!_decoder.TryDecode(ref message, out var frame))
                    {
                        throw new FrameDecodeException(FrameError.WebSocketMessageNotOnePacket, "WebSocketMessageNotOnePacket: a binary message held part of a packet.", 0);
                    }

                    if (!message.IsEmpty)
                    {
                        frame.Payload.Dispose();
                        throw new FrameDecodeException(FrameError.WebSocketMessageNotOnePacket, $"WebSocketMessageNotOnePacket: {message.Length} bytes followed the packet in its message.", 0);
                    }

                    _statistics.FramesReceived++;
                    _server.OnClientFrame(_session, frame.MsgId, frame.MsgSeq, frame.StageId, frame.Payload);
                    break;
                case WebSocketOpcode.Ping:
                    var pong = _connection.Network.SendScratch(WebSocketFraming.GetHeaderLength(message.Length, masked: false) + message.Length);
                    _connection.Send(pong.AsSpan(0, WebSocketFraming.Encode(pong, message, maskKey: null, WebSocketOpcode.Pong)));
                    break;
                case WebSocketOpcode.Close:
                    Close("client closed the WebSocket");
                    return;
                default:
                    break;
            }

            if (_closed)
            {
                return;
            }
        }
    }

    /// <summary>A send found the connection broken. The receive side hears the same break and ends by itself.</summary>
    protected virtual void OnSendFailed(string reason)
    {
        if (_closed)
        {
            return;
        }

        _closed = true;
        _statistics.SendFailures++;
        Finish();
    }

    /// <summary>The peer closed the connection or it was reset: the receive side is over.</summary>
    protected virtual void OnReceiveEnded(string reason)
    {
        if (_closed)
        {
            // Closed from another side already, which ended the receive side too.
            return;
        }

        _closed = true;
        Finish();
    }

    /// <summary>Marks the session closed without anything else (for variants that close it their own way).</summary>
    protected void MarkClosed() => _closed = true;

    /// <summary>Returns the decoder's unfinished frame, if any, to the pool (idempotent).</summary>
    protected void DisposeDecoder() => _decoder.Dispose();

    /// <summary>The receive side found the session unusable (a malformed frame, a callback fault): close it once.</summary>
    protected void CloseFromReceive(string reason)
    {
        if (_closed)
        {
            return;
        }

        _closed = true;
        _connection.Close(reason);
        Finish();
    }

    /// <summary>Tells the server once; the receive side ends now unless a receive callback is running (it ends it).</summary>
    private void Finish()
    {
        if (!_receiving)
        {
            EndReceive();
        }

        _server.Disconnect(SessionId);
    }

    /// <summary>Returns what the receive side owns, exactly once.</summary>
    private void EndReceive()
    {
        if (_receiveEnded)
        {
            return;
        }

        _receiveEnded = true;
        _decoder.Dispose();
        _receiveBuffer.Dispose();
        _receiveBuffer = default;
    }
}

/// <summary>Session counters of one play server in simulation.</summary>
public sealed class SimSessionStatistics
{
    public long FramesReceived { get; internal set; }

    public long FramesSent { get; internal set; }

    public long SendsRefused { get; internal set; }

    public long BadFrames { get; internal set; }

    public long ClosedByServer { get; internal set; }

    /// <summary>Sends that found the connection broken; each closed its session.</summary>
    public long SendFailures { get; internal set; }

    /// <summary>Exceptions caught in a network callback (a receive or a close); each closed its session.</summary>
    public long CallbackFaults { get; internal set; }

    public int SendQueueHighWaterBytes { get; internal set; }
}
