using System.Net;
using System.Net.Sockets;
using PlayHouse.Core.Codec;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;

namespace PlayHouse.Transport.Tcp;

/// <summary>
/// The server side of one client session over TCP, TCP+TLS or WebSocket (<see cref="Transport"/>), speaking
/// PlayHouse's client protocol: bytes from the socket
/// go through the client codec into the play server (which applies the authenticate-first rule and echoes
/// heartbeats, before authentication too), and the server's frames are encoded into the session's capped send
/// queue. A malformed frame, a truncated frame at close, an idle or half-sent frame past its timeout, and a
/// reader too slow for its send queue each close the session with a logged reason and a counter; other sessions
/// are unaffected.
/// </summary>
/// <remarks>Thread-safe: <see cref="TrySend"/> and <see cref="Close(string)"/> are called from any executor thread.</remarks>
public sealed class TcpClientSession : IClientConnection
{
    private readonly ISessionConnection _connection;
    private readonly FrameSink _sink;
    private readonly TaskCompletionSource _finished = new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>A plain TCP session: the socket is driven by completion callbacks (the 0 B/msg path).</summary>
    internal TcpClientSession(Socket socket, TcpClientListener listener)
    {
        Listener = listener;
        Transport = ClientTransportKind.Tcp;
        RemoteEndPoint = socket.RemoteEndPoint as IPEndPoint;
        _sink = new FrameSink(this, listener);
        _connection = new SocketSessionConnection(this, socket, listener);
        SessionId = listener.Server.Connect(this);
    }

    /// <summary>A TLS or WebSocket session over <paramref name="channel"/>.</summary>
    internal TcpClientSession(ByteChannel channel, ClientTransportKind transport, IPEndPoint? remoteEndPoint, TcpClientListener listener)
    {
        Listener = listener;
        Transport = transport;
        RemoteEndPoint = remoteEndPoint;
        _sink = new FrameSink(this, listener);
        _connection = new StreamSessionConnection(this, channel, listener);
        SessionId = listener.Server.Connect(this);
    }

    /// <summary>How the client reached this session.</summary>
    public ClientTransportKind Transport { get; }

    /// <summary>Completes once the session is closed and every one of its buffers is back in the pool.</summary>
    public Task Finished => _finished.Task;

    /// <summary>The play server's id for this session, unique on that server whatever the transport (B14).</summary>
    public long SessionId { get; }

    public IPEndPoint? RemoteEndPoint { get; }

    internal TcpClientListener Listener { get; }

    public bool IsClosed => _connection.IsClosed;

    public SessionCloseReason CloseReason => _connection.CloseReason;

    public string? CloseDetail => _connection.CloseDetail;

    /// <summary>Encoded bytes queued or in flight to the client.</summary>
    public int QueuedBytes => _connection.QueuedBytes;

    public int QueuedBytesHighWater => _connection.QueuedBytesHighWater;

    public long SendRefusals => _connection.SendRefusals;

    /// <summary>True while part of a frame has arrived and the rest has not (read by the timeout sweep).</summary>
    internal long PartialFrameSinceTimestamp => _sink.PartialFrameSinceTimestamp;

    public bool TrySend(string msgId, ushort msgSeq, long stageId, ushort errorCode, Payload payload)
    {
        try
        {
            int frameBytes;
            try
            {
                frameBytes = ServerFrameEncoder.GetEncodedLength(msgId, payload.Length);
            }
            catch (ArgumentException)
            {
                Listener.Counters.AddEncodeFailure();
                return false;
            }

            if (errorCode != ErrorCodes.Success)
            {
                // Counted before the send, so a client that sees the error reply also sees the count.
                Listener.Counters.AddErrorReply(errorCode);
            }

            var threshold = Listener.Options.CompressAboveBytes;
            if (threshold > 0 && payload.Length >= threshold)
            {
                return TrySendCompressed(msgId, msgSeq, stageId, errorCode, payload, frameBytes);
            }

            if (!_connection.Enqueue(new ServerFrameWriter(msgId, msgSeq, stageId, errorCode, payload, frameBytes)))
            {
                return false;
            }

            Listener.Counters.AddFrameSent();
            return true;
        }
        finally
        {
            // The frame was copied into the send queue (or refused): either way the payload is ours to return.
            payload.DisposeIfOwner();
        }
    }

    private bool TrySendCompressed(string msgId, ushort msgSeq, long stageId, ushort errorCode, Payload payload, int rawFrameBytes)
    {
        var compressed = Listener.Server.Pool.Rent(Lz4Payloads.MaxCompressedLength(payload.Length), "lz4-scratch");
        try
        {
            var written = Lz4Payloads.Compress(payload.Span, compressed.WritableMemory);
            var useCompressed = written < payload.Length;
            compressed.SetLength(useCompressed ? written : 0);
            var writer = useCompressed
                ? new ServerFrameWriter(msgId, msgSeq, stageId, errorCode, compressed, ServerFrameEncoder.GetEncodedLength(msgId, written), payload.Length)
                : new ServerFrameWriter(msgId, msgSeq, stageId, errorCode, payload, rawFrameBytes);
            if (!_connection.Enqueue(writer))
            {
                return false;
            }

            Listener.Counters.AddFrameSent();
            if (useCompressed)
            {
                Listener.Counters.AddFrameCompressed();
            }

            return true;
        }
        finally
        {
            compressed.Dispose();
        }
    }

    /// <summary>The play server closes the session (first message not authentication, a newer login, ...).</summary>
    public void Close(string reason) => _connection.Close(SessionCloseReason.ClosedByServer, reason);

    /// <summary>Closes the session with a transport reason.</summary>
    public bool Close(SessionCloseReason reason, string detail) => _connection.Close(reason, detail);

    /// <summary>Ends the session as a crashed process would: a TCP session is reset (RST), nothing queued is sent.</summary>
    internal bool Abort(string detail) => _connection is SocketConnection socket
        ? socket.Close(SessionCloseReason.LocalClose, detail, abortive: true)
        : _connection.Close(SessionCloseReason.LocalClose, detail);

    internal void Start() => _connection.Start();

    /// <summary>Applies the idle, frame and slow-reader timeouts; called by the listener's one sweep timer.</summary>
    internal void CheckTimeouts(long nowTimestamp, TimeProvider time, TcpTransportOptions options)
    {
        if (_connection.IsClosed)
        {
            return;
        }

        var partialSince = _sink.PartialFrameSinceTimestamp;
        if (partialSince != 0 && time.GetElapsedTime(partialSince, nowTimestamp) > options.FrameTimeout)
        {
            _connection.Close(SessionCloseReason.FrameTimeout, $"a frame started {time.GetElapsedTime(partialSince, nowTimestamp).TotalMilliseconds:F0} ms ago is still incomplete (frame timeout {options.FrameTimeout.TotalMilliseconds:F0} ms)");
            return;
        }

        var lastReceive = _connection.LastReceiveTimestamp;
        if (time.GetElapsedTime(lastReceive, nowTimestamp) > options.IdleTimeout)
        {
            _connection.Close(SessionCloseReason.IdleTimeout, $"nothing received for {time.GetElapsedTime(lastReceive, nowTimestamp).TotalMilliseconds:F0} ms (idle timeout {options.IdleTimeout.TotalMilliseconds:F0} ms)");
            return;
        }

        var fullSince = _connection.QueueFullSinceTimestamp;
        if (fullSince != 0 && time.GetElapsedTime(fullSince, nowTimestamp) > options.SlowReaderTimeout)
        {
            _connection.Close(SessionCloseReason.SlowReader, $"the send queue has been at its cap of {options.SendQueueBytesMax} B for {time.GetElapsedTime(fullSince, nowTimestamp).TotalMilliseconds:F0} ms (slow-reader timeout {options.SlowReaderTimeout.TotalMilliseconds:F0} ms)");
        }
    }

    public override string ToString() => $"TcpClientSession({SessionId}, {Transport}, {RemoteEndPoint})";

    /// <summary>What the session needs of its connection, whichever transport carries it.</summary>
    private interface ISessionConnection
    {
        bool IsClosed { get; }

        SessionCloseReason CloseReason { get; }

        string? CloseDetail { get; }

        int QueuedBytes { get; }

        int QueuedBytesHighWater { get; }

        long SendRefusals { get; }

        long LastReceiveTimestamp { get; }

        long QueueFullSinceTimestamp { get; }

        bool Enqueue(in ServerFrameWriter writer);

        bool Close(SessionCloseReason reason, string detail);

        void Start();
    }

    /// <summary>
    /// The receiving half of the protocol, shared by every transport: bytes go through the client codec into the
    /// play server; a malformed or truncated frame closes the session with its counter.
    /// </summary>
    /// <remarks>Called by one receive loop, one callback at a time.</remarks>
    private sealed class FrameSink
    {
        private readonly TcpClientSession _session;
        private readonly TcpClientListener _listener;
        private readonly PlayServer _server;
        private readonly ClientFrameDecoder _decoder;

        // The requests of one receive are dated once for the server's ledger, not one clock read per request: by the
        // connection's last-receive timestamp when the listener shares the server's clock, else by a reading of it.
        private readonly bool _sharesServerClock;

        // The plain messages of one receive, entered in the ledger and the stage's mailbox together (one lock each per
        // receive instead of per frame); flushed before OnReceived returns.
        private readonly ClientFrameBatch _batch = new();
        private long _partialFrameSinceTimestamp;

        public FrameSink(TcpClientSession session, TcpClientListener listener)
        {
            _session = session;
            _listener = listener;
            _server = listener.Server;
            _decoder = new ClientFrameDecoder(_server.Pool, listener.MsgIds, new FrameDecoderOptions { MaxBodyBytes = listener.Options.MaxBodyBytes, PayloadOwner = "session-receive" });
            _sharesServerClock = ReferenceEquals(listener.Time, _server.Time);
        }

        public long PartialFrameSinceTimestamp => Volatile.Read(ref _partialFrameSinceTimestamp);

        private TcpTransportCounters Counters => _listener.Counters;

        public void OnReceived(ReadOnlySpan<byte> data)
        {
            var connection = _session._connection;
            var receivedTimestamp = _sharesServerClock ? connection.LastReceiveTimestamp : _server.Time.GetTimestamp();
            long frames = 0;
            try
            {
                while (_decoder.TryDecode(ref data, out var frame))
                {
                    frames++;
                    if (_listener.IsDraining)
                    {
                        try
                        {
                            _server.FlushClientFrames(_batch);
                        }
                        catch
                        {
                            frame.Payload.DisposeIfOwner();
                            throw;
                        }

                        RefuseWhileDraining(frame);
                    }
                    else
                    {
                        // Ownership of the payload passes to the server; it may close this session synchronously.
                        _server.OnClientFrame(_session.SessionId, frame.MsgId, frame.MsgSeq, frame.StageId, frame.Payload, receivedTimestamp, _batch);
                    }

                    if (connection.IsClosed)
                    {
                        // Bytes after the closing frame are never decoded, so no buffer is rented for them.
                        return;
                    }
                }
            }
            catch (FrameDecodeException e)
            {
                try
                {
                    // The good frames before the bad one reach their stage before the close tells it the actor left.
                    _server.FlushClientFrames(_batch);
                }
                finally
                {
                    Counters.AddMalformed(e.Error);
                    connection.Close(SessionCloseReason.MalformedFrame, e.Message);
                }

                return;
            }
            finally
            {
                try
                {
                    _server.FlushClientFrames(_batch);
                }
                finally
                {
                    Counters.AddFramesReceived(frames);
                }
            }

            if (_decoder.HasPartialFrame)
            {
                if (Volatile.Read(ref _partialFrameSinceTimestamp) == 0)
                {
                    Volatile.Write(ref _partialFrameSinceTimestamp, Math.Max(1, _listener.Time.GetTimestamp()));
                }
            }
            else
            {
                Volatile.Write(ref _partialFrameSinceTimestamp, 0);
            }
        }

        public void OnEndOfStream()
        {
            try
            {
                _decoder.Complete();
            }
            catch (FrameDecodeException e)
            {
                Counters.AddMalformed(e.Error);
                _session._connection.Close(SessionCloseReason.MalformedFrame, e.Message);
            }
        }

        public void OnReceiveEnded() => _decoder.Dispose();

        public void OnClosed(SessionCloseReason reason, string detail)
        {
            // The server may have removed the session already (it asked for the close); Disconnect is then a no-op.
            _server.Disconnect(_session.SessionId);
            _listener.OnSessionClosed(_session, reason, detail);
        }

        public void OnFinished()
        {
            _listener.OnSessionFinished(_session);
            _session._finished.TrySetResult();
        }

        private void RefuseWhileDraining(in ClientFrame frame)
        {
            frame.Payload.DisposeIfOwner();
            if (frame.IsHeartbeat)
            {
                _session.TrySend(WireProtocol.HeartbeatMsgId, frame.MsgSeq, frame.StageId, ErrorCodes.Success, Payload.Empty);
                return;
            }

            Counters.AddRefusedWhileStopping();
            if (frame.IsRequest)
            {
                _session.TrySend(frame.MsgId, frame.MsgSeq, frame.StageId, ErrorCodes.ServerStopping, Payload.Empty);
            }
        }
    }

    /// <summary>The plain TCP side of the session: a socket driven by completion callbacks.</summary>
    private sealed class SocketSessionConnection(TcpClientSession session, Socket socket, TcpClientListener listener)
        : SocketConnection(socket, listener.Server.Pool, LimitsOf(listener), listener.Time, listener.Counters), ISessionConnection
    {
        public bool Enqueue(in ServerFrameWriter writer) => TryEnqueue(writer);

        protected override void OnReceived(ReadOnlySpan<byte> data) => session._sink.OnReceived(data);

        protected override void OnEndOfStream() => session._sink.OnEndOfStream();

        protected override void OnReceiveEnded() => session._sink.OnReceiveEnded();

        protected override void OnClosed(SessionCloseReason reason, string detail) => session._sink.OnClosed(reason, detail);

        protected override void OnFinished() => session._sink.OnFinished();
    }

    /// <summary>The TLS or WebSocket side of the session: a <see cref="ByteChannel"/> driven by async loops.</summary>
    private sealed class StreamSessionConnection(TcpClientSession session, ByteChannel channel, TcpClientListener listener)
        : StreamConnection(channel, listener.Server.Pool, LimitsOf(listener), listener.Time, listener.Counters), ISessionConnection
    {
        public bool Enqueue(in ServerFrameWriter writer) => TryEnqueue(writer);

        protected override void OnReceived(ReadOnlySpan<byte> data) => session._sink.OnReceived(data);

        protected override void OnEndOfStream() => session._sink.OnEndOfStream();

        protected override void OnReceiveEnded() => session._sink.OnReceiveEnded();

        protected override void OnClosed(SessionCloseReason reason, string detail) => session._sink.OnClosed(reason, detail);

        protected override void OnFinished() => session._sink.OnFinished();
    }

    private static ConnectionLimits LimitsOf(TcpClientListener listener) =>
        new(listener.Options.ReceiveBufferBytes, listener.Options.SendQueueBytesMax, FlushExecutor: listener.Options.BatchSends ? listener.Server.Executor : null);
}
