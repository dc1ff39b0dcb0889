using PlayHouse.Core.Codec;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;
using PlayHouse.Simulation.Clients;
using PlayHouse.Simulation.Network;

namespace PlayHouse.Simulation.Cluster;

/// <summary>
/// The server side of one client session in simulation: bytes from the <see cref="SimConnection"/> go through
/// the real client codec into the play server, and the server's frames are encoded and sent back as bytes.
/// A malformed frame closes the session with the decoder's reason. The session's send queue is capped
/// (<see cref="StreamSendQueueFactory"/>, standard: the path's queue cap): a frame past the cap, for a client that reads
/// slowly, is refused (the server counts it as a refused client send), never buffered without a bound.
/// A WebSocket session (the server's second transport) carries each packet in one WebSocket binary frame: client frames
/// arrive masked and each must hold exactly one packet; the server's frames go unmasked.
/// </summary>
/// <remarks>Not thread-safe; runs on the simulation thread.</remarks>
public sealed class SimSessionConnection : IClientConnection, IStreamReceiver
{
    private readonly SimConnection _connection;
    private readonly IStreamSendQueue _sendQueue;
    private readonly PlayServer _server;
    private readonly ClientFrameDecoder _decoder;
    private readonly SimSessionStatistics _statistics;
    private readonly WebSocketFrameDecoder? _webSocket;
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
        _connection = connection;
        _sendQueue = sendQueue ?? new ConnectionSendQueue(connection, int.MaxValue);
        _server = server;
        _statistics = statistics;
        _decoder = new ClientFrameDecoder(server.Pool, msgIds, new FrameDecoderOptions { PayloadOwner = "session-receive" });
        _webSocket = transport == SimClientTransport.WebSocket ? new WebSocketFrameDecoder(expectMasked: true, WireProtocol.MaxFrameBytes) : null;
        TransportKind = transport == SimClientTransport.WebSocket ? ClientTransports.WebSocket : ClientTransports.Tcp;
        SessionId = server.Connect(this);
        connection.SetReceiver(this);
    }

    public long SessionId { get; }

    public string TransportKind { get; }

    public bool TrySend(string msgId, ushort msgSeq, long stageId, ushort errorCode, Payload payload)
    {
        try
        {
            if (_closed || !_connection.IsOpen)
            {
                return false;
            }

            var length = ServerFrameEncoder.GetEncodedLength(msgId, payload.Length);
            var headerBytes = _webSocket is null ? 0 : WebSocketFraming.GetHeaderLength(length, masked: false);
            var scratch = _connection.Network.SendScratch(headerBytes + length);
            if (headerBytes > 0)
            {
                WebSocketFraming.WriteHeader(scratch, length, maskKey: null);
            }

            ServerFrameEncoder.Encode(scratch.AsSpan(headerBytes), msgId, msgSeq, stageId, errorCode, payload.Span);
            if (_sendQueue.TrySend(scratch.AsSpan(0, headerBytes + length)))
            {
                _statistics.FramesSent++;
                _statistics.SendQueueHighWaterBytes = Math.Max(_statistics.SendQueueHighWaterBytes, _sendQueue.QueuedBytes);
                return true;
            }

            _statistics.SendsRefused++;
            return false;
        }
        finally
        {
            payload.DisposeIfOwner();
        }
    }

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

    void IStreamReceiver.OnStreamData(SimConnection connection, ReadOnlySpan<byte> data) => OnData(data);

    void IStreamReceiver.OnStreamClosed(SimConnection connection, string reason) => OnClosed(reason);

    private void OnData(ReadOnlySpan<byte> data)
    {
        if (_closed)
        {
            return;
        }

        try
        {
            if (_webSocket is not null)
            {
                OnWebSocketData(data);
                return;
            }

            while (_decoder.TryDecode(ref data, out var frame))
            {
                _statistics.FramesReceived++;
                _server.OnClientFrame(SessionId, frame.MsgId, frame.MsgSeq, frame.StageId, frame.Payload);
                if (_closed)
                {
                    return;
                }
            }
        }
        catch (FrameDecodeException ex)
        {
            _statistics.BadFrames++;
            _closed = true;
            _connection.Close($"malformed frame: {ex.Error}");
            Finish();
        }
    }

    /// <summary>WebSocket messages: each binary one is exactly one client packet; a ping is answered, a close closes.</summary>
    private void OnWebSocketData(ReadOnlySpan<byte> data)
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
                    _server.OnClientFrame(SessionId, frame.MsgId, frame.MsgSeq, frame.StageId, frame.Payload);
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

    private void OnClosed(string reason)
    {
        if (_closed)
        {
            return;
        }

        _closed = true;
        Finish();
    }

    private void Finish()
    {
        _decoder.Dispose();
        _server.Disconnect(SessionId);
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

    public int SendQueueHighWaterBytes { get; internal set; }
}
