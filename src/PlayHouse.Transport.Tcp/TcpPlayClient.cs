using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using System.Net.WebSockets;
using PlayHouse.Core.Codec;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;

namespace PlayHouse.Transport.Tcp;

/// <summary>Options of a <see cref="TcpPlayClient"/>. The defaults are PlayHouse's client defaults where it has them.</summary>
public sealed record TcpPlayClientOptions
{
    /// <summary>The pool reply and push payloads are decoded into; null gives the client a private unchecked pool.</summary>
    public MessagePool? Pool { get; init; }

    /// <summary>The clock of request timeouts and heartbeats; null uses the system clock.</summary>
    public TimeProvider? Time { get; init; }

    /// <summary>Every request of this client has this timeout, so deadlines expire in send order.</summary>
    public TimeSpan RequestTimeout { get; init; } = TimeSpan.FromSeconds(30);

    /// <summary>Sends a heartbeat this often while connected; null sends none (PlayHouse clients use 10 s).</summary>
    public TimeSpan? HeartbeatInterval { get; init; }

    /// <summary>Requests pending at once; further requests are refused (Request returns 0).</summary>
    public int InFlightMax { get; init; } = 1024;

    /// <summary>Encoded bytes queued for sending before sends are refused.</summary>
    public int SendQueueBytesMax { get; init; } = 4 * 1024 * 1024;

    public int ReceiveBufferBytes { get; init; } = 16 * 1024;

    /// <summary>Inflates compressed (OriginalSize &gt; 0) server frames; null treats them as malformed.</summary>
    public IPayloadDecompressor? Decompressor { get; init; }

    public bool NoDelay { get; init; } = true;

    /// <summary>
    /// Null (the default): plain TCP. Set: <see cref="TcpPlayClient.ConnectAsync"/> authenticates the connection as a
    /// TLS client with these options (target host, certificate validation) before any frame is sent, and
    /// <see cref="TcpPlayClient.ConnectWebSocketAsync"/> uses its certificate validation for <c>wss://</c>.
    /// </summary>
    public SslClientAuthenticationOptions? Tls { get; init; }

    /// <summary>The most bytes one WebSocket message to the server carries (longer runs of queued frames leave as several messages).</summary>
    public int WebSocketMessageBytesMax { get; init; } = 16 * 1024;

    /// <summary>
    /// Null (the default): reply and push handlers run on I/O threads as packets arrive. A number: replies and pushes
    /// wait in a packet queue of at most this many until the application reads them with
    /// <see cref="TcpPlayClient.ReadPackets"/> (a game's main loop draining its connector once a frame, as PlayHouse's
    /// connector does). Past the cap the client refuses: a push is dropped and counted, and a reply completes its
    /// request at once with <see cref="TcpPlayClient.PacketQueueFullErrorCode"/>, so memory stays bounded however
    /// fast the server pushes.
    /// </summary>
    public int? PacketQueueMax { get; init; }

    public void Validate()
    {
        if (RequestTimeout <= TimeSpan.Zero || InFlightMax < 1 || InFlightMax >= ushort.MaxValue || SendQueueBytesMax < 1024 || ReceiveBufferBytes < 256
            || (HeartbeatInterval is { } heartbeat && heartbeat <= TimeSpan.Zero) || PacketQueueMax <= 0 || WebSocketMessageBytesMax < 256)
        {
            throw new ArgumentException("TcpPlayClientOptions has a value out of range.");
        }
    }
}

/// <summary>
/// How a request ended, as a reply handler sees it. <see cref="Payload"/> is valid only during the handler call
/// (the buffer goes back to the pool after it).
/// </summary>
public readonly struct ClientReply(ushort msgSeq, string msgId, ushort errorCode, ReadOnlyMemory<byte> payload, bool timedOut, bool disconnected, object? state)
{
    public ushort MsgSeq { get; } = msgSeq;

    public string MsgId { get; } = msgId;

    public ushort ErrorCode { get; } = errorCode;

    public ReadOnlyMemory<byte> Payload { get; } = payload;

    /// <summary>No reply arrived within the request timeout.</summary>
    public bool TimedOut { get; } = timedOut;

    /// <summary>The connection closed before a reply arrived.</summary>
    public bool Disconnected { get; } = disconnected;

    /// <summary>The state passed to <see cref="TcpPlayClient.Request"/>.</summary>
    public object? State { get; } = state;

    public bool IsSuccess => !TimedOut && !Disconnected && ErrorCode == ErrorCodes.Success;
}

/// <summary>A request's outcome with its payload copied out, for <see cref="TcpPlayClient.RequestAsync"/>.</summary>
public sealed record TcpReply(ushort MsgSeq, string MsgId, ushort ErrorCode, byte[] Payload, bool TimedOut, bool Disconnected)
{
    public bool IsSuccess => !TimedOut && !Disconnected && ErrorCode == ErrorCodes.Success;
}

/// <summary>Receives each reply (or timeout, or disconnect) of a request exactly once.</summary>
public delegate void ClientReplyHandler(TcpPlayClient client, in ClientReply reply);

/// <summary>Receives each push (a frame with sequence 0). The frame's payload is valid only during the call.</summary>
public delegate void ClientPushHandler(TcpPlayClient client, in ServerFrame push);

/// <summary>Counters of one <see cref="TcpPlayClient"/>.</summary>
/// <remarks>Thread-safe.</remarks>
public sealed class TcpPlayClientStatistics
{
    private long _requestsSent;
    private long _replies;
    private long _timeouts;
    private long _lateOrUnknownReplies;
    private long _pushes;
    private long _sendsSent;
    private long _requestsRefused;
    private long _heartbeatsSent;
    private long _heartbeatsReceived;
    private long _failedByDisconnect;
    private long _pushesDropped;
    private long _repliesRefused;

    public long RequestsSent => Volatile.Read(ref _requestsSent);

    public long Replies => Volatile.Read(ref _replies);

    public long Timeouts => Volatile.Read(ref _timeouts);

    /// <summary>Replies whose request had timed out or was never sent: counted and dropped, never turned into a push (B12).</summary>
    public long LateOrUnknownReplies => Volatile.Read(ref _lateOrUnknownReplies);

    public long Pushes => Volatile.Read(ref _pushes);

    public long SendsSent => Volatile.Read(ref _sendsSent);

    /// <summary>Requests and sends refused: not connected, the in-flight cap reached, or the send queue full.</summary>
    public long RequestsRefused => Volatile.Read(ref _requestsRefused);

    public long HeartbeatsSent => Volatile.Read(ref _heartbeatsSent);

    public long HeartbeatsReceived => Volatile.Read(ref _heartbeatsReceived);

    /// <summary>Pending requests completed as disconnected when the connection closed.</summary>
    public long FailedByDisconnect => Volatile.Read(ref _failedByDisconnect);

    /// <summary>Pushes dropped because the packet queue was at its cap (<see cref="TcpPlayClientOptions.PacketQueueMax"/>).</summary>
    public long PushesDropped => Volatile.Read(ref _pushesDropped);

    /// <summary>Replies refused because the packet queue was at its cap; their requests completed with <see cref="TcpPlayClient.PacketQueueFullErrorCode"/>.</summary>
    public long RepliesRefused => Volatile.Read(ref _repliesRefused);

    internal void AddRequestSent() => Interlocked.Increment(ref _requestsSent);

    internal void AddReply() => Interlocked.Increment(ref _replies);

    internal void AddTimeout() => Interlocked.Increment(ref _timeouts);

    internal void AddLateOrUnknownReply() => Interlocked.Increment(ref _lateOrUnknownReplies);

    internal void AddPush() => Interlocked.Increment(ref _pushes);

    internal void AddSendSent() => Interlocked.Increment(ref _sendsSent);

    internal void AddRequestRefused() => Interlocked.Increment(ref _requestsRefused);

    internal void AddHeartbeatSent() => Interlocked.Increment(ref _heartbeatsSent);

    internal void AddHeartbeatReceived() => Interlocked.Increment(ref _heartbeatsReceived);

    internal void AddFailedByDisconnect() => Interlocked.Increment(ref _failedByDisconnect);

    internal void AddPushDropped() => Interlocked.Increment(ref _pushesDropped);

    internal void AddReplyRefused() => Interlocked.Increment(ref _repliesRefused);
}

/// <summary>
/// Our own client connector for PlayHouse's TCP protocol, for tests and the benchmark client: connect, authenticate,
/// request/reply correlated by the 16-bit sequence (a sequence still pending is never reused, so a wrapped sequence
/// never pairs with an old request), one-way send, pushes, heartbeats and request timeouts. A reply arriving after
/// its timeout is counted, never mistaken for a push. The socket runs on completion callbacks like the server's
/// sessions; the callback form of <see cref="Request"/> allocates nothing per request.
/// </summary>
/// <remarks>
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

    private const int NoSlot = -1;

    private static readonly ClientReplyHandler CompleteTaskHandler = CompleteTask;

    private readonly TcpPlayClientOptions _options;
    private readonly IClientConnection _connection;
    private readonly Lock _gate = new();
    private readonly Dictionary<ushort, int> _slotBySeq;
    private readonly PendingSlot[] _slots;
    private readonly int[] _freeSlots;
    private readonly PendingSlot[] _expired;
    private readonly ITimer _timeoutTimer;
    private readonly ITimer? _heartbeatTimer;
    private readonly TaskCompletionSource<SessionCloseReason> _closed = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private int _freeCount;
    private ushort _lastSeq;
    private int _head = NoSlot;
    private int _tail = NoSlot;
    private long _armedDeadlineTimestamp = long.MaxValue;
    private bool _connectionClosed;

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
        var inFlightMax = options.InFlightMax;
        _slots = new PendingSlot[inFlightMax];
        _expired = new PendingSlot[inFlightMax];
        _freeSlots = new int[inFlightMax];
        for (var i = 0; i < inFlightMax; i++)
        {
            _freeSlots[i] = inFlightMax - 1 - i;
        }

        _freeCount = inFlightMax;
        _slotBySeq = new Dictionary<ushort, int>(inFlightMax);
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
    public int InFlight
    {
        get
        {
            lock (_gate)
            {
                return _slotBySeq.Count;
            }
        }
    }

    public int InFlightHighWater { get; private set; }

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
        ushort seq;
        int slot;
        bool arm;
        lock (_gate)
        {
            if (_connectionClosed || _freeCount == 0)
            {
                Statistics.AddRequestRefused();
                return 0;
            }

            seq = NextSeqLocked();
            slot = _freeSlots[--_freeCount];
            var deadline = Time.GetTimestamp() + TimestampTicks(_options.RequestTimeout);
            _slots[slot] = new PendingSlot { Seq = seq, DeadlineTimestamp = deadline, Handler = onReply, State = state, Prev = _tail, Next = NoSlot };
            LinkLocked(slot);
            _slotBySeq.Add(seq, slot);
            if (_slotBySeq.Count > InFlightHighWater)
            {
                InFlightHighWater = _slotBySeq.Count;
            }

            arm = deadline < _armedDeadlineTimestamp;
            if (arm)
            {
                _armedDeadlineTimestamp = deadline;
            }
        }

        // Registered before it is sent, so a reply can never arrive for an unknown sequence.
        if (!_connection.Enqueue(new ClientFrameWriter(msgId, seq, stageId, payload, frameBytes)))
        {
            bool removed;
            lock (_gate)
            {
                removed = _slotBySeq.Remove(seq);
                if (removed)
                {
                    ReleaseLocked(slot);
                }
            }

            if (!removed)
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

    private ushort NextSeqLocked()
    {
        // Skip 0 (one-way) and any sequence still pending.
        do
        {
            _lastSeq = (ushort)(_lastSeq == ushort.MaxValue ? 1 : _lastSeq + 1);
        }
        while (_slotBySeq.ContainsKey(_lastSeq));

        return _lastSeq;
    }

    private void ArmTimer()
    {
        long deadline;
        lock (_gate)
        {
            deadline = _armedDeadlineTimestamp;
        }

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
            int count = 0;
            lock (_gate)
            {
                var now = Time.GetTimestamp();

                // One timeout per client, so send order is deadline order: expire from the head.
                while (_head != NoSlot && _slots[_head].DeadlineTimestamp <= now)
                {
                    var slot = _head;
                    _expired[count++] = _slots[slot];
                    _slotBySeq.Remove(_slots[slot].Seq);
                    ReleaseLocked(slot);
                }

                _armedDeadlineTimestamp = _head == NoSlot ? long.MaxValue : _slots[_head].DeadlineTimestamp;
            }

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
    private bool TakePending(in ServerFrame frame, out PendingSlot pending)
    {
        bool matched;
        lock (_gate)
        {
            matched = _slotBySeq.Remove(frame.MsgSeq, out var slot);
            pending = matched ? _slots[slot] : default;
            if (matched)
            {
                ReleaseLocked(slot);
            }
        }

        if (!matched)
        {
            // Outside the lock: the handler may be a checker that takes locks of its own.
            Statistics.AddLateOrUnknownReply();
            UnmatchedReply?.Invoke(this, frame);
        }

        return matched;
    }

    private void OnConnectionClosed(SessionCloseReason reason, string detail)
    {
        List<PendingSlot> failed;
        lock (_gate)
        {
            _connectionClosed = true;
            failed = new List<PendingSlot>(_slotBySeq.Count);
            while (_head != NoSlot)
            {
                var slot = _head;
                failed.Add(_slots[slot]);
                _slotBySeq.Remove(_slots[slot].Seq);
                ReleaseLocked(slot);
            }

            _armedDeadlineTimestamp = long.MaxValue;
        }

        _heartbeatTimer?.Dispose();
        foreach (var pending in failed)
        {
            Statistics.AddFailedByDisconnect();
            pending.Handler!(this, new ClientReply(pending.Seq, string.Empty, DisconnectedErrorCode, ReadOnlyMemory<byte>.Empty, timedOut: false, disconnected: true, pending.State));
        }

        Disconnected?.Invoke(this, reason, detail);
    }

    private void LinkLocked(int slot)
    {
        if (_tail != NoSlot)
        {
            _slots[_tail].Next = slot;
        }
        else
        {
            _head = slot;
        }

        _tail = slot;
    }

    private void ReleaseLocked(int slot)
    {
        var s = _slots[slot];
        if (s.Prev != NoSlot)
        {
            _slots[s.Prev].Next = s.Next;
        }
        else
        {
            _head = s.Next;
        }

        if (s.Next != NoSlot)
        {
            _slots[s.Next].Prev = s.Prev;
        }
        else
        {
            _tail = s.Prev;
        }

        _slots[slot] = default;
        _freeSlots[_freeCount++] = slot;
    }

    private struct PendingSlot
    {
        public ushort Seq;
        public long DeadlineTimestamp;
        public ClientReplyHandler? Handler;
        public object? State;
        public int Prev;
        public int Next;
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
