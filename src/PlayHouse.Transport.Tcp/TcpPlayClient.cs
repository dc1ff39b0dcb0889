using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using System.Net.WebSockets;
using PlayHouse.Core.Codec;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;

namespace PlayHouse.Transport.Tcp;

/// <summary>
/// Our own client connector for PlayHouse's TCP protocol, for tests and the benchmark client: connect, authenticate,
/// request/reply correlated by the 16-bit sequence (a sequence still pending is never reused, so a wrapped sequence
/// never pairs with an old request), one-way send, pushes, heartbeats and request timeouts. A reply arriving after
/// its timeout is counted, never mistaken for a push. The socket runs on completion callbacks like the server's
/// sessions; the callback form of <see cref="Request"/> allocates nothing per request.
/// </summary>
/// <remarks>
/// Invariant: every request's handler runs exactly once (reply, timeout, refused reply or disconnect), because each
/// outcome first takes the request out of the pending table (<see cref="ClientPendingRequests"/>), and only one can.
/// Thread-safe: requests may be issued from any thread. Reply handlers run on I/O threads (or the timer thread for
/// timeouts), one call per request; handlers of different requests may run concurrently. With
/// <see cref="TcpPlayClientOptions.PacketQueueMax"/> set, reply and push handlers run instead on the thread that
/// calls <see cref="ReadPackets"/> (timeouts and disconnects still complete where they happen).
/// </remarks>
public sealed class TcpPlayClient : IDisposable
{
    /// <summary>The error code a pending request completes with when the connection closes (client-side only, never on the wire).</summary>
    public const ushort DisconnectedErrorCode = 60100;

    /// <summary>The error code a request completes with when its reply met a full packet queue (client-side only, never on the wire).</summary>
    public const ushort PacketQueueFullErrorCode = 60101;

    private static readonly ClientReplyHandler CompleteTaskHandler = CompleteTask;

    private readonly TcpPlayClientOptions _options;
    private readonly IClientConnection _connection;
    private readonly ClientPendingRequests _pending;
    private readonly ClientPendingRequests.PendingRequest[] _expired;
    private readonly ITimer _timeoutTimer;
    private readonly ITimer? _heartbeatTimer;
    private readonly TaskCompletionSource<SessionCloseReason> _closed = new(TaskCreationOptions.RunContinuationsAsynchronously);

    // Packets waiting for the application (PacketQueueMax set), guarded by their own lock: I/O threads add, the
    // application's thread reads.
    private readonly Queue<ServerFrame>? _packets;
    private readonly Lock _packetsGate = new();
    private readonly FrameSink _sink;
    private readonly TcpTransportCounters _counters;

    private TcpPlayClient(Socket? socket, ByteChannel? channel, IPEndPoint? remoteEndPoint, IPEndPoint? localEndPoint, TcpPlayClientOptions options, TcpTransportCounters? counters = null)
    {
        _counters = counters ?? new TcpTransportCounters();
        _options = options;
        Time = options.Time ?? RealTime.System;
        Pool = options.Pool ?? new MessagePool();
        _pending = new ClientPendingRequests(options.InFlightMax);
        _expired = new ClientPendingRequests.PendingRequest[options.InFlightMax];
        RemoteEndPoint = remoteEndPoint;
        LocalEndPoint = localEndPoint;
        if (options.PacketQueueMax is not null)
        {
            _packets = new Queue<ServerFrame>();
        }

        _sink = new FrameSink(this);
        _connection = socket is not null ? new SocketClientConnection(this, socket) : new StreamClientConnection(this, channel!);
        _timeoutTimer = Time.CreateTimer(static s => ((TcpPlayClient)s!).ExpireDue(), this, Timeout.InfiniteTimeSpan, Timeout.InfiniteTimeSpan);
        if (options.HeartbeatInterval is { } interval)
        {
            _heartbeatTimer = Time.CreateTimer(static s => ((TcpPlayClient)s!).SendHeartbeat(), this, interval, interval);
        }
    }

    public TimeProvider Time { get; }

    /// <summary>The pool reply and push payloads come from.</summary>
    public MessagePool Pool { get; }

    public IPEndPoint? RemoteEndPoint { get; }

    public IPEndPoint? LocalEndPoint { get; }

    public TcpPlayClientStatistics Statistics { get; } = new();

    /// <summary>Socket-level counters of this client's one connection.</summary>
    public TcpTransportCounters Counters => _counters;

    public bool IsConnected => !_connection.IsClosed;

    public SessionCloseReason CloseReason => _connection.CloseReason;

    public string? CloseDetail => _connection.CloseDetail;

    /// <summary>Completes with the close reason once the connection is closed and every buffer is returned.</summary>
    public Task<SessionCloseReason> Closed => _closed.Task;

    /// <summary>Requests pending now.</summary>
    public int InFlight => _pending.Count;

    public int InFlightHighWater => _pending.HighWater;

    /// <summary>Packets waiting for <see cref="ReadPackets"/> (0 when handlers run as packets arrive).</summary>
    public int PacketsQueued
    {
        get
        {
            lock (_packetsGate)
            {
                return _packets?.Count ?? 0;
            }
        }
    }

    /// <summary>The most packets the packet queue held at once.</summary>
    public int PacketQueueHighWater { get; private set; }

    /// <summary>Free for the owner (a workload driver), so handlers can be static and allocate nothing.</summary>
    public object? Tag { get; set; }

    /// <summary>Called for each push. Set before pushes can arrive (before authenticating).</summary>
    public ClientPushHandler? PushReceived { get; set; }

    /// <summary>
    /// Called for each reply that matches no pending request (late after its timeout, a second copy, or a sequence never
    /// sent), after it is counted in <see cref="TcpPlayClientStatistics.LateOrUnknownReplies"/>; a checker tells them apart.
    /// </summary>
    public ClientPushHandler? UnmatchedReply { get; set; }

    /// <summary>Called once when the connection closes, after pending requests were completed as disconnected.</summary>
    public Action<TcpPlayClient, SessionCloseReason, string>? Disconnected { get; set; }

    /// <summary>Connects to a play server.</summary>
    public static async Task<TcpPlayClient> ConnectAsync(EndPoint server, TcpPlayClientOptions? options = null, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(server);
        options ??= new TcpPlayClientOptions();
        options.Validate();
        var socket = new Socket(server.AddressFamily, SocketType.Stream, ProtocolType.Tcp) { NoDelay = options.NoDelay };
        try
        {
            await socket.ConnectAsync(server, cancellationToken).ConfigureAwait(false);
        }
        catch
        {
            socket.Dispose();
            throw;
        }

        if (options.Tls is { } tls)
        {
            var stream = new SslStream(new NetworkStream(socket, ownsSocket: true), leaveInnerStreamOpen: false);
            try
            {
                await stream.AuthenticateAsClientAsync(tls, cancellationToken).ConfigureAwait(false);
            }
            catch
            {
                await stream.DisposeAsync().ConfigureAwait(false);
                throw;
            }

            var secure = new TcpPlayClient(null, new TlsChannel(stream, socket), socket.RemoteEndPoint as IPEndPoint, socket.LocalEndPoint as IPEndPoint, options);
            secure._connection.Start();
            return secure;
        }

        var client = new TcpPlayClient(socket, null, socket.RemoteEndPoint as IPEndPoint, socket.LocalEndPoint as IPEndPoint, options);
        client._connection.Start();
        return client;
    }

    /// <summary>
    /// Connects to a play server's WebSocket endpoint (<c>ws://</c> or <c>wss://</c>, e.g. <c>ws://127.0.0.1:8080/ws</c>):
    /// the same frames travel in binary messages. For <c>wss://</c>, <see cref="TcpPlayClientOptions.Tls"/> supplies
    /// the certificate validation.
    /// </summary>
    public static async Task<TcpPlayClient> ConnectWebSocketAsync(Uri server, TcpPlayClientOptions? options = null, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(server);
        options ??= new TcpPlayClientOptions();
        options.Validate();
        var socket = new ClientWebSocket();
        if (options.Tls?.RemoteCertificateValidationCallback is { } validate)
        {
            socket.Options.RemoteCertificateValidationCallback = validate;
        }

        try
        {
            await socket.ConnectAsync(server, cancellationToken).ConfigureAwait(false);
        }
        catch
        {
            socket.Dispose();
            throw;
        }

        var time = options.Time ?? RealTime.System;
        var counters = new TcpTransportCounters();
        var channel = new WebSocketChannel(socket, options.WebSocketMessageBytesMax, TimeSpan.FromSeconds(1), time, counters);
        var client = new TcpPlayClient(null, channel, null, null, options, counters);
        client._connection.Start();
        return client;
    }

    /// <summary>
    /// Sends a request; returns its sequence, or 0 (refused, counted) when disconnected, at the in-flight cap, or
    /// with the send queue full. <paramref name="onReply"/> runs exactly once: reply, timeout or disconnect.
    /// </summary>
    public ushort Request(string msgId, long stageId, ReadOnlySpan<byte> payload, ClientReplyHandler onReply, object? state = null)
    {
        ArgumentNullException.ThrowIfNull(onReply);
        var frameBytes = ClientFrameEncoder.GetEncodedLength(msgId, payload.Length);
        var deadline = Time.GetTimestamp() + TimestampTicks(_options.RequestTimeout);
        if (!_pending.TryAdd(deadline, onReply, state, out var seq, out var arm))
        {
            Statistics.AddRequestRefused();
            return 0;
        }

        // Registered before it is sent, so a reply can never arrive for an unknown sequence.
        if (!_connection.Enqueue(new ClientFrameWriter(msgId, seq, stageId, payload, frameBytes)))
        {
            if (!_pending.TryCancel(seq))
            {
                // The connection closed meanwhile and already completed this request as disconnected: exactly once holds.
                return seq;
            }

            Statistics.AddRequestRefused();
            return 0;
        }

        Statistics.AddRequestSent();
        if (arm)
        {
            ArmTimer();
        }

        return seq;
    }

    /// <summary>Sends a request and awaits its outcome, with the payload copied out.</summary>
    public Task<TcpReply> RequestAsync(string msgId, long stageId, ReadOnlySpan<byte> payload)
    {
        var completion = new TaskCompletionSource<TcpReply>(TaskCreationOptions.RunContinuationsAsynchronously);
        if (Request(msgId, stageId, payload, CompleteTaskHandler, completion) == 0)
        {
            completion.TrySetResult(new TcpReply(0, msgId, DisconnectedErrorCode, [], TimedOut: false, Disconnected: !IsConnected));
        }

        return completion.Task;
    }

    /// <summary>Authenticates into a stage: PlayHouse's first message.</summary>
    public Task<TcpReply> AuthenticateAsync(long stageId, ReadOnlySpan<byte> payload, string msgId = "AuthenticateRequest") =>
        RequestAsync(msgId, stageId, payload);

    /// <summary>Sends a one-way message (sequence 0); false when disconnected or the send queue is full.</summary>
    public bool Send(string msgId, long stageId, ReadOnlySpan<byte> payload)
    {
        var frameBytes = ClientFrameEncoder.GetEncodedLength(msgId, payload.Length);
        if (!_connection.Enqueue(new ClientFrameWriter(msgId, 0, stageId, payload, frameBytes)))
        {
            Statistics.AddRequestRefused();
            return false;
        }

        Statistics.AddSendSent();
        return true;
    }

    /// <summary>Sends one heartbeat now.</summary>
    public bool SendHeartbeat()
    {
        var frameBytes = ClientFrameEncoder.GetEncodedLength(WireProtocol.HeartbeatMsgId, 0);
        if (!_connection.Enqueue(new ClientFrameWriter(WireProtocol.HeartbeatMsgId, 0, 0, [], frameBytes)))
        {
            return false;
        }

        Statistics.AddHeartbeatSent();
        return true;
    }

    /// <summary>Closes the connection; pending requests complete as disconnected.</summary>
    public void Disconnect(string reason = "client disconnect") => _connection.Close(SessionCloseReason.LocalClose, reason);

    /// <summary>Resets the connection (RST, not FIN): the abrupt break a crashed client causes.</summary>
    public void Abort(string reason = "client abort") => _connection.Close(SessionCloseReason.LocalClose, reason, abortive: true);

    /// <summary>
    /// Runs the handlers of up to <paramref name="max"/> queued packets, oldest first, on the calling thread (the
    /// application's loop) when <see cref="TcpPlayClientOptions.PacketQueueMax"/> is set; returns how many it read.
    /// </summary>
    public int ReadPackets(int max = int.MaxValue)
    {
        var read = 0;
        while (read < max)
        {
            ServerFrame frame;
            lock (_packetsGate)
            {
                if (_packets is null || !_packets.TryDequeue(out frame))
                {
                    break;
                }
            }

            using (frame)
            {
                OnFrame(frame);
            }

            read++;
        }

        return read;
    }

    public void Dispose()
    {
        Disconnect("disposed");
        _timeoutTimer.Dispose();
        _heartbeatTimer?.Dispose();

        // Packets nobody will read give their buffers back.
        lock (_packetsGate)
        {
            while (_packets is not null && _packets.TryDequeue(out var unread))
            {
                unread.Dispose();
            }
        }
    }

    private static void CompleteTask(TcpPlayClient client, in ClientReply reply) =>
        ((TaskCompletionSource<TcpReply>)reply.State!).TrySetResult(new TcpReply(reply.MsgSeq, reply.MsgId, reply.ErrorCode, reply.Payload.ToArray(), reply.TimedOut, reply.Disconnected));

    private long TimestampTicks(TimeSpan span) => (long)(span.Ticks * (double)Time.TimestampFrequency / TimeSpan.TicksPerSecond);

    private void ArmTimer()
    {
        var deadline = _pending.ArmedDeadlineTimestamp;
        if (deadline == long.MaxValue)
        {
            return;
        }

        var due = Time.GetElapsedTime(Time.GetTimestamp(), deadline);
        try
        {
            _timeoutTimer.Change(due < TimeSpan.Zero ? TimeSpan.Zero : due, Timeout.InfiniteTimeSpan);
        }
        catch (ObjectDisposedException)
        {
            // Disposed with the client; nothing is pending any more.
        }
    }

    private void ExpireDue()
    {
        try
        {
            var count = _pending.TakeExpired(Time.GetTimestamp(), _expired);

            for (var i = 0; i < count; i++)
            {
                var pending = _expired[i];
                _expired[i] = default;
                Statistics.AddTimeout();
                pending.Handler!(this, new ClientReply(pending.Seq, string.Empty, ErrorCodes.RequestTimeout, ReadOnlyMemory<byte>.Empty, timedOut: true, disconnected: false, pending.State));
            }

            ArmTimer();
        }
        catch (ObjectDisposedException)
        {
            // The timer was disposed with the client.
        }
    }

    private void OnFrame(in ServerFrame frame)
    {
        if (frame.IsHeartbeat)
        {
            Statistics.AddHeartbeatReceived();
            return;
        }

        if (frame.MsgSeq == 0)
        {
            Statistics.AddPush();
            PushReceived?.Invoke(this, frame);
            return;
        }

        if (!TakePending(frame, out var pending))
        {
            return;
        }

        Statistics.AddReply();
        pending.Handler!(this, new ClientReply(frame.MsgSeq, frame.MsgId, frame.ErrorCode, frame.Payload.Memory, timedOut: false, disconnected: false, pending.State));
    }

    /// <summary>
    /// Queues a received packet for <see cref="ReadPackets"/>, or refuses it when the queue is at its cap: a push is
    /// dropped and counted, a reply completes its request now with <see cref="PacketQueueFullErrorCode"/>.
    /// </summary>
    private void Queue(in ServerFrame frame)
    {
        if (frame.IsHeartbeat)
        {
            Statistics.AddHeartbeatReceived();
            frame.Dispose();
            return;
        }

        lock (_packetsGate)
        {
            if (_packets!.Count < _options.PacketQueueMax)
            {
                _packets.Enqueue(frame);
                if (_packets.Count > PacketQueueHighWater)
                {
                    PacketQueueHighWater = _packets.Count;
                }

                return;
            }
        }

        using (frame)
        {
            if (frame.MsgSeq == 0)
            {
                Statistics.AddPushDropped();
                return;
            }

            if (!TakePending(frame, out var pending))
            {
                return;
            }

            Statistics.AddReplyRefused();
            pending.Handler!(this, new ClientReply(frame.MsgSeq, frame.MsgId, PacketQueueFullErrorCode, ReadOnlyMemory<byte>.Empty, timedOut: false, disconnected: false, pending.State));
        }
    }

    /// <summary>Takes the request a reply answers; false (counted, and told to <see cref="UnmatchedReply"/>) when none is pending.</summary>
    private bool TakePending(in ServerFrame frame, out ClientPendingRequests.PendingRequest pending)
    {
        if (_pending.TryComplete(frame.MsgSeq, out pending))
        {
            return true;
        }

        // The pending table's lock is released by now: the handler may be a checker that takes locks of its own.
        Statistics.AddLateOrUnknownReply();
        UnmatchedReply?.Invoke(this, frame);
        return false;
    }

    private void OnConnectionClosed(SessionCloseReason reason, string detail)
    {
        var failed = _pending.Close();

        _heartbeatTimer?.Dispose();
        foreach (var pending in failed)
        {
            Statistics.AddFailedByDisconnect();
            pending.Handler!(this, new ClientReply(pending.Seq, string.Empty, DisconnectedErrorCode, ReadOnlyMemory<byte>.Empty, timedOut: false, disconnected: true, pending.State));
        }

        Disconnected?.Invoke(this, reason, detail);
    }

    /// <summary>What the client needs of its connection, whichever transport carries it.</summary>
    private interface IClientConnection
    {
        bool IsClosed { get; }

        SessionCloseReason CloseReason { get; }

        string? CloseDetail { get; }

        bool Enqueue(scoped in ClientFrameWriter writer);

        bool Close(SessionCloseReason reason, string detail);

        bool Close(SessionCloseReason reason, string detail, bool abortive);

        void Start();
    }

    /// <summary>The receiving half, shared by every transport: server frames into replies and pushes.</summary>
    /// <remarks>Called by one receive loop, one callback at a time.</remarks>
    private sealed class FrameSink(TcpPlayClient client)
    {
        private readonly ServerFrameDecoder _decoder = new(client.Pool, options: new FrameDecoderOptions { PayloadOwner = "client-receive", Decompressor = client._options.Decompressor });

        public void OnReceived(ReadOnlySpan<byte> data)
        {
            try
            {
                while (_decoder.TryDecode(ref data, out var frame))
                {
                    if (client._packets is not null)
                    {
                        client.Queue(frame);
                        continue;
                    }

                    using (frame)
                    {
                        client.OnFrame(frame);
                    }
                }
            }
            catch (FrameDecodeException e)
            {
                client._counters.AddMalformed(e.Error);
                client._connection.Close(SessionCloseReason.MalformedFrame, e.Message);
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
                client._counters.AddMalformed(e.Error);
                client._connection.Close(SessionCloseReason.MalformedFrame, e.Message);
            }
        }

        public void OnReceiveEnded() => _decoder.Dispose();

        public void OnClosed(SessionCloseReason reason, string detail) => client.OnConnectionClosed(reason, detail);

        public void OnFinished() => client._closed.TrySetResult(client._connection.CloseReason);
    }

    /// <summary>The plain TCP side of the client.</summary>
    private sealed class SocketClientConnection(TcpPlayClient client, Socket socket)
        : SocketConnection(socket, client.Pool, new ConnectionLimits(client._options.ReceiveBufferBytes, client._options.SendQueueBytesMax), client.Time, client._counters), IClientConnection
    {
        public bool Enqueue(scoped in ClientFrameWriter writer) => TryEnqueue(writer);

        protected override void OnReceived(ReadOnlySpan<byte> data) => client._sink.OnReceived(data);

        protected override void OnEndOfStream() => client._sink.OnEndOfStream();

        protected override void OnReceiveEnded() => client._sink.OnReceiveEnded();

        protected override void OnClosed(SessionCloseReason reason, string detail) => client._sink.OnClosed(reason, detail);

        protected override void OnFinished() => client._sink.OnFinished();
    }

    /// <summary>The TLS or WebSocket side of the client.</summary>
    private sealed class StreamClientConnection(TcpPlayClient client, ByteChannel channel)
        : StreamConnection(channel, client.Pool, new ConnectionLimits(client._options.ReceiveBufferBytes, client._options.SendQueueBytesMax), client.Time, client._counters), IClientConnection
    {
        public bool Enqueue(scoped in ClientFrameWriter writer) => TryEnqueue(writer);

        protected override void OnReceived(ReadOnlySpan<byte> data) => client._sink.OnReceived(data);

        protected override void OnEndOfStream() => client._sink.OnEndOfStream();

        protected override void OnReceiveEnded() => client._sink.OnReceiveEnded();

        protected override void OnClosed(SessionCloseReason reason, string detail) => client._sink.OnClosed(reason, detail);

        protected override void OnFinished() => client._sink.OnFinished();
    }
}
