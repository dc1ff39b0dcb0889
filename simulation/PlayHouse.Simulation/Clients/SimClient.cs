using PlayHouse.Core.Codec;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;
using PlayHouse.Core.Seams;
using PlayHouse.Simulation.Network;

namespace PlayHouse.Simulation.Clients;

/// <summary>How a client request ended.</summary>
public readonly record struct ClientReply(ushort MsgSeq, string MsgId, ushort ErrorCode, ReadOnlyMemory<byte> Payload, bool TimedOut)
{
    public bool IsSuccess => !TimedOut && ErrorCode == ErrorCodes.Success;
}

/// <summary>
/// What a simulated client does with a reply frame whose sequence is not pending (its request timed out, was never
/// sent, or was answered already). The standard client needs none: it counts the reply and drops it.
/// </summary>
public interface IUnmatchedReplyPolicy
{
    void OnUnmatchedReply(SimClient client, in ServerFrame frame);
}

/// <summary>Counters of one simulated client.</summary>
public sealed class SimClientStatistics
{
    public long RequestsSent { get; internal set; }

    public long Replies { get; internal set; }

    public long Timeouts { get; internal set; }

    /// <summary>Replies whose request had already timed out or was never sent: dropped, never turned into a push (B12).</summary>
    public long LateOrUnknownReplies { get; internal set; }

    public long Pushes { get; internal set; }

    public long SendsSent { get; internal set; }

    public long RequestsRefused { get; internal set; }

    public long HeartbeatsSent { get; internal set; }

    public long Disconnects { get; internal set; }

    public long BadFrames { get; internal set; }

    /// <summary>Pushes refused because the packet queue was at its cap: dropped, never read.</summary>
    public long PushesDropped { get; internal set; }

    /// <summary>Replies refused because the packet queue was at its cap: their requests completed with <see cref="SimClient.PacketQueueFullErrorCode"/>.</summary>
    public long RepliesRefused { get; internal set; }
}

/// <summary>
/// A simulated client speaking PlayHouse's protocol through the real codec: connect, authenticate, heartbeat,
/// request with a timeout, one-way send, and pushes. Requests are correlated by their 16-bit sequence; a sequence
/// still pending is never reused, and a reply that arrives after its timeout is counted, not mistaken for a push.
/// </summary>
/// <remarks>
/// Not thread-safe; runs on the simulation thread. Pending requests are capped by <see cref="InFlightMax"/>, and the
/// packets waiting for a slow application (<see cref="ClientReadOptions"/>) by its packet queue's cap.
/// </remarks>
public sealed class SimClient : IDisposable, IStreamReceiver
{
    /// <summary>
    /// The error a request completes with when its reply arrived while the packet queue was at its cap (client-side
    /// only, never on the wire): the client refuses the overload instead of buffering it, and the request still ends
    /// exactly once.
    /// </summary>
    public const ushort PacketQueueFullErrorCode = 60101;

    private readonly SimNetwork _network;
    private readonly SimWorld _world;
    private readonly MessagePool _pool;
    private readonly Utf8StringCache _msgIds;
    private readonly SeqSlotTable _slotBySeq;
    private readonly PendingSlot[] _slots;
    private readonly Stack<int> _freeSlots = new();
    private readonly TimeoutTimer _timeoutTimer;
    private ServerFrameDecoder? _decoder;
    private WebSocketFrameDecoder? _webSocket;
    private readonly Xoshiro256StarStar? _maskKeys;
    private SimConnection? _connection;
    private ushort _lastSeq;
    private int _head = -1;
    private int _tail = -1;
    private ITimer? _timer;
    private long _armedDeadlineTicks = long.MaxValue;
    private ITimer? _heartbeat;
    private readonly ClientReadOptions _reading;
    private readonly IClientPacketQueue? _packets;
    private ITimer? _readTimer;
    private bool _readArmed;

    /// <param name="network">The network the client's connections cross.</param>
    /// <param name="endpoint">The client's own endpoint name.</param>
    /// <param name="pool">Where received payloads are rented.</param>
    /// <param name="msgIds">Shared msg-id strings.</param>
    /// <param name="inFlightMax">The most requests kept pending.</param>
    /// <param name="reading">How the application reads what arrives; null handles each packet as it arrives.</param>
    /// <param name="packetQueue">Makes the packet queue from <see cref="ClientReadOptions.PacketQueueMax"/> when packets queue; null: <see cref="ClientPacketQueue"/>.</param>
    /// <param name="transport">How the client reaches its server; a WebSocket client connects to the server's WebSocket endpoint.</param>
    /// <param name="seed">The client's own randomness (a WebSocket client draws its frames' mask keys from it).</param>
    public SimClient(SimNetwork network, string endpoint, MessagePool pool, Utf8StringCache msgIds, int inFlightMax = 1024, ClientReadOptions? reading = null, Func<int, IClientPacketQueue>? packetQueue = null, SimClientTransport transport = SimClientTransport.Tcp, ulong seed = 0)
    {
        Transport = transport;
        _maskKeys = transport == SimClientTransport.WebSocket ? new Xoshiro256StarStar(seed) : null;
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(inFlightMax);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(inFlightMax, ushort.MaxValue - 1);
        _reading = reading ?? new ClientReadOptions();
        _reading.Validate();
        if (_reading.IsQueued)
        {
            _packets = packetQueue?.Invoke(_reading.PacketQueueMax) ?? new ClientPacketQueue(_reading.PacketQueueMax);
        }

        _network = network;
        _world = network.World;
        _pool = pool;
        _msgIds = msgIds;
        Endpoint = endpoint;
        InFlightMax = inFlightMax;
        _slots = new PendingSlot[inFlightMax];
        _slotBySeq = new SeqSlotTable(inFlightMax);
        for (var i = inFlightMax - 1; i >= 0; i--)
        {
            _freeSlots.Push(i);
        }

        _timeoutTimer = new TimeoutTimer(this);
    }

    public string Endpoint { get; }

    /// <summary>How this client reaches its server.</summary>
    public SimClientTransport Transport { get; }

    /// <summary>Free for the owner (a workload driver), so reply callbacks can be static and allocate nothing.</summary>
    public object? Tag { get; set; }

    /// <summary>The most requests this client keeps pending; further requests are refused.</summary>
    public int InFlightMax { get; }

    public int InFlight => _slotBySeq.Count;

    public int InFlightHighWater { get; private set; }

    public bool IsConnected => _connection is { IsOpen: true };

    public SimClientStatistics Statistics { get; } = new();

    /// <summary>How the application reads what arrives.</summary>
    public ClientReadOptions Reading => _reading;

    /// <summary>Packets waiting in the packet queue for the application (0 when packets are handled as they arrive).</summary>
    public int PacketsQueued => _packets?.Count ?? 0;

    /// <summary>The most packets the packet queue held at once.</summary>
    public int PacketQueueHighWater { get; private set; }

    /// <summary>Called for each push (a frame with sequence 0). The payload span is valid during the call.</summary>
    public Action<SimClient, string, long, ReadOnlyMemory<byte>>? PushReceived { get; set; }

    /// <summary>Called when the connection closes or breaks.</summary>
    public Action<SimClient, string>? Disconnected { get; set; }

    /// <summary>Handles replies whose request is not pending; null (standard) counts them and drops them.</summary>
    public IUnmatchedReplyPolicy? UnmatchedReplies { get; init; }

    /// <summary>Opens a connection to a play server's client endpoint.</summary>
    public void Connect(string serverEndpoint)
    {
        if (IsConnected)
        {
            throw new InvalidOperationException($"Client {Endpoint} is already connected.");
        }

        _decoder?.Dispose();
        _decoder = new ServerFrameDecoder(_pool, _msgIds, new FrameDecoderOptions { PayloadOwner = "client-receive" });
        _webSocket = Transport == SimClientTransport.WebSocket ? new WebSocketFrameDecoder(expectMasked: false, WireProtocol.MaxFrameBytes) : null;
        var connection = _network.Connect(Endpoint, serverEndpoint);
        _connection = connection;
        connection.SetReceiver(this);
    }

    /// <summary>Sends a heartbeat every <paramref name="interval"/> while connected.</summary>
    public void StartHeartbeat(TimeSpan interval)
    {
        _heartbeat?.Dispose();
        _heartbeat = _world.Time.CreateTimer(static s => ((SimClient)s!).SendHeartbeat(), this, interval, interval);
    }

    /// <summary>Sends a request; returns its sequence, or 0 when not connected or the in-flight cap is reached.</summary>
    public ushort Request(string msgId, long stageId, ReadOnlySpan<byte> payload, TimeSpan timeout, Action<SimClient, ClientReply> onReply)
    {
        ArgumentNullException.ThrowIfNull(onReply);
        if (!IsConnected || _freeSlots.Count == 0)
        {
            Statistics.RequestsRefused++;
            return 0;
        }

        var seq = NextSeq();
        var slot = _freeSlots.Pop();
        _slots[slot] = new PendingSlot { Seq = seq, DeadlineTicks = _world.NowTicks + timeout.Ticks, OnReply = onReply, Prev = _tail, Next = -1 };
        Link(slot);
        _slotBySeq.Add(seq, slot);
        InFlightHighWater = Math.Max(InFlightHighWater, _slotBySeq.Count);
        Statistics.RequestsSent++;
        Write(msgId, seq, stageId, payload);
        ArmTimeout();
        return seq;
    }

    /// <summary>Sends a one-way message (sequence 0).</summary>
    public bool Send(string msgId, long stageId, ReadOnlySpan<byte> payload)
    {
        if (!IsConnected)
        {
            return false;
        }

        Statistics.SendsSent++;
        return Write(msgId, 0, stageId, payload);
    }

    /// <summary>Closes the connection; pending requests complete as timed out when their deadline passes.</summary>
    public void Disconnect(string reason = "client disconnect")
    {
        var connection = _connection;
        if (connection is null || !connection.IsOpen)
        {
            return;
        }

        connection.Close(reason);
        OnClosed(connection, reason);
    }

    public void Dispose()
    {
        _heartbeat?.Dispose();
        _timer?.Dispose();
        _readTimer?.Dispose();
        Disconnect("disposed");
        _decoder?.Dispose();
        _decoder = null;

        // Packets nobody will read give their payloads back.
        while (_packets is not null && _packets.TryDequeue(out var unread))
        {
            unread.Dispose();
        }
    }

    void IStreamReceiver.OnStreamData(SimConnection connection, ReadOnlySpan<byte> data) => OnData(connection, data);

    void IStreamReceiver.OnStreamClosed(SimConnection connection, string reason) => OnClosed(connection, reason);

    void IPrefetchParts.PrefetchParts(int depth)
    {
        // What a reply's delivery reads after the client: the decoder, the pending requests and their index, the
        // counters, and the application's object (a workload driver is several lines long) with its own parts.
        if (depth == 0)
        {
            Prefetch.Object(_decoder);
            Prefetch.Object(_slots, 2);
            Prefetch.Object(_slotBySeq);
            Prefetch.Object(Statistics);
            Prefetch.Object(Tag, 4);
        }
        else if (Tag is IPrefetchParts parts)
        {
            parts.PrefetchParts(depth - 1);
        }
    }

    private ushort NextSeq()
    {
        // Skip 0 (one-way) and any sequence still pending: a wrapped sequence must never pair with an old request.
        do
        {
            _lastSeq = (ushort)(_lastSeq == ushort.MaxValue ? 1 : _lastSeq + 1);
        }
        while (_slotBySeq.Contains(_lastSeq));

        return _lastSeq;
    }

    private bool Write(string msgId, ushort seq, long stageId, ReadOnlySpan<byte> payload)
    {
        var length = ClientFrameEncoder.GetEncodedLength(msgId, payload.Length);
        if (_maskKeys is not null)
        {
            return WriteWebSocket(msgId, seq, stageId, payload, length);
        }

        var scratch = _network.SendScratch(length);
        ClientFrameEncoder.Encode(scratch, msgId, seq, stageId, payload);
        return _connection!.Send(scratch.AsSpan(0, length));
    }

    /// <summary>The packet in one binary frame, masked with a fresh key as RFC 6455 asks of a client.</summary>
    private bool WriteWebSocket(string msgId, ushort seq, long stageId, ReadOnlySpan<byte> payload, int packetBytes)
    {
        var key = (uint)_maskKeys!.NextUInt64();
        var headerBytes = WebSocketFraming.GetHeaderLength(packetBytes, masked: true);
        var scratch = _network.SendScratch(headerBytes + packetBytes);
        WebSocketFraming.WriteHeader(scratch, packetBytes, key);
        var packet = scratch.AsSpan(headerBytes, packetBytes);
        ClientFrameEncoder.Encode(packet, msgId, seq, stageId, payload);
        WebSocketFraming.Mask(packet, key, 0);
        return _connection!.Send(scratch.AsSpan(0, headerBytes + packetBytes));
    }

    /// <summary>Sends one heartbeat now (no payload, sequence 0); false when not connected or refused.</summary>
    public bool SendHeartbeat()
    {
        if (!IsConnected)
        {
            return false;
        }

        Statistics.HeartbeatsSent++;
        return Write(WireProtocol.HeartbeatMsgId, 0, 0, []);
    }

    private void OnData(SimConnection connection, ReadOnlySpan<byte> data)
    {
        if (!ReferenceEquals(connection, _connection) || _decoder is null)
        {
            return;
        }

        try
        {
            if (_webSocket is not null)
            {
                OnWebSocketData(connection, data);
                return;
            }

            // The bytes belong to this connection's decoder. A callback may disconnect and connect again, which
            // gives the client a new decoder for the new connection: the old connection's remaining bytes must not
            // reach it (they would leave it holding the part of a frame that never ends).
            var decoder = _decoder;
            while (decoder.TryDecode(ref data, out var frame))
            {
                if (_packets is not null)
                {
                    Queue(frame);
                    continue;
                }

                using (frame)
                {
                    OnFrame(frame);
                }

                if (!ReferenceEquals(connection, _connection))
                {
                    return;
                }
            }
        }
        catch (FrameDecodeException ex)
        {
            Statistics.BadFrames++;
            connection.Reset($"client got a malformed frame: {ex.Error}");
        }
    }

    /// <summary>
    /// Queues a packet for the application, or refuses it when the queue is at its cap: a push is dropped and counted,
    /// a reply completes its request at once with <see cref="PacketQueueFullErrorCode"/>. Heartbeat echoes never queue.
    /// </summary>
    private void Queue(in ServerFrame frame)
    {
        if (frame.IsHeartbeat)
        {
            frame.Dispose();
            return;
        }

        if (_packets!.TryEnqueue(frame))
        {
            PacketQueueHighWater = Math.Max(PacketQueueHighWater, _packets.Count);
            if (!_readArmed)
            {
                _readArmed = true;
                _readTimer ??= _world.Time.CreateTimer(static s => ((SimClient)s!).ReadPackets(), this, Timeout.InfiniteTimeSpan, Timeout.InfiniteTimeSpan);
                _readTimer.Change(_reading.ReadInterval, _reading.ReadInterval);
            }

            return;
        }

        using (frame)
        {
            if (frame.MsgSeq == 0)
            {
                Statistics.PushesDropped++;
                return;
            }

            if (!_slotBySeq.Remove(frame.MsgSeq, out var slot))
            {
                Statistics.LateOrUnknownReplies++;
                return;
            }

            var pending = _slots[slot];
            Release(slot);
            Statistics.RepliesRefused++;
            pending.OnReply!(this, new ClientReply(frame.MsgSeq, frame.MsgId, PacketQueueFullErrorCode, ReadOnlyMemory<byte>.Empty, TimedOut: false));
        }
    }

    /// <summary>The application's read: up to <see cref="ClientReadOptions.PacketsPerRead"/> packets, oldest first.</summary>
    private void ReadPackets()
    {
        for (var read = 0; read < _reading.PacketsPerRead && _packets!.TryDequeue(out var frame); read++)
        {
            using (frame)
            {
                OnFrame(frame);
            }
        }

        if (_packets!.Count == 0 && _readArmed)
        {
            // Nothing left to read: the application stops polling until a packet arrives, so a quiet client lets the world go quiet.
            _readArmed = false;
            _readTimer!.Change(Timeout.InfiniteTimeSpan, Timeout.InfiniteTimeSpan);
        }
    }

    /// <summary>WebSocket messages, each exactly one server packet.</summary>
    private void OnWebSocketData(SimConnection connection, ReadOnlySpan<byte> data)
    {
        while (_webSocket!.TryDecode(ref data, out var opcode, out var message))
        {
            if (opcode == WebSocketOpcode.Close)
            {
                Disconnect("server closed the WebSocket");
                return;
            }

            if (opcode != WebSocketOpcode.Binary)
            {
                continue;
            }

            if (!_decoder!.TryDecode(ref message, out var frame))
            {
                throw new FrameDecodeException(FrameError.WebSocketMessageNotOnePacket, "WebSocketMessageNotOnePacket: a message held part of a packet.", 0);
            }

            using (frame)
            {
                if (!message.IsEmpty)
                {
                    throw new FrameDecodeException(FrameError.WebSocketMessageNotOnePacket, $"WebSocketMessageNotOnePacket: {message.Length} bytes followed the packet in its message.", 0);
                }

                OnFrame(frame);
            }

            if (!ReferenceEquals(connection, _connection))
            {
                return;
            }
        }
    }

    private void OnFrame(in ServerFrame frame)
    {
        if (frame.IsHeartbeat)
        {
            return;
        }

        if (frame.MsgSeq == 0)
        {
            Statistics.Pushes++;
            PushReceived?.Invoke(this, frame.MsgId, frame.StageId, frame.Payload.Memory);
            return;
        }

        if (!_slotBySeq.Remove(frame.MsgSeq, out var slot))
        {
            Statistics.LateOrUnknownReplies++;
            UnmatchedReplies?.OnUnmatchedReply(this, frame);
            return;
        }

        var pending = _slots[slot];
        Release(slot);
        Statistics.Replies++;
        pending.OnReply!(this, new ClientReply(frame.MsgSeq, frame.MsgId, frame.ErrorCode, frame.Payload.Memory, TimedOut: false));
    }

    private void OnClosed(SimConnection connection, string reason)
    {
        if (!ReferenceEquals(connection, _connection))
        {
            return;
        }

        _connection = null;

        // A frame the connection was in the middle of will never end: its payload goes back now, not at the next
        // connect (a client that never reconnects would hold it for good).
        _decoder?.Dispose();
        _decoder = null;
        Statistics.Disconnects++;
        Disconnected?.Invoke(this, reason);
    }

    private void ArmTimeout()
    {
        if (_head < 0)
        {
            return;
        }

        var deadline = _slots[_head].DeadlineTicks;
        if (deadline >= _armedDeadlineTicks)
        {
            return;
        }

        _armedDeadlineTicks = deadline;
        _timer ??= _world.Time.CreateTimer(static s => ((TimeoutTimer)s!).Fire(), _timeoutTimer, Timeout.InfiniteTimeSpan, Timeout.InfiniteTimeSpan);
        _timer.Change(TimeSpan.FromTicks(Math.Max(0, deadline - _world.NowTicks)), Timeout.InfiniteTimeSpan);
    }

    private void ExpireDue()
    {
        _armedDeadlineTicks = long.MaxValue;
        var now = _world.NowTicks;

        // Requests share one timeout, so send order is deadline order: expire from the head of the list.
        while (_head >= 0 && _slots[_head].DeadlineTicks <= now)
        {
            var slot = _head;
            var pending = _slots[slot];
            _slotBySeq.Remove(pending.Seq, out _);
            Release(slot);
            Statistics.Timeouts++;
            pending.OnReply!(this, new ClientReply(pending.Seq, string.Empty, ErrorCodes.RequestTimeout, ReadOnlyMemory<byte>.Empty, TimedOut: true));
        }

        ArmTimeout();
    }

    private void Link(int slot)
    {
        if (_tail >= 0)
        {
            _slots[_tail].Next = slot;
        }
        else
        {
            _head = slot;
        }

        _tail = slot;
    }

    private void Release(int slot)
    {
        var s = _slots[slot];
        if (s.Prev >= 0)
        {
            _slots[s.Prev].Next = s.Next;
        }
        else
        {
            _head = s.Next;
        }

        if (s.Next >= 0)
        {
            _slots[s.Next].Prev = s.Prev;
        }
        else
        {
            _tail = s.Prev;
        }

        _slots[slot] = default;
        _freeSlots.Push(slot);
    }

    private struct PendingSlot
    {
        public ushort Seq;
        public long DeadlineTicks;
        public Action<SimClient, ClientReply>? OnReply;
        public int Prev;
        public int Next;
    }

    private sealed class TimeoutTimer(SimClient client)
    {
        public void Fire() => client.ExpireDue();
    }
}
