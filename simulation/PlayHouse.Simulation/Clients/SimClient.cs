using PlayHouse.Core.Codec;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;
using PlayHouse.Simulation.Network;

namespace PlayHouse.Simulation.Clients;

/// <summary>How a client request ended.</summary>
public readonly record struct ClientReply(ushort MsgSeq, string MsgId, ushort ErrorCode, ReadOnlyMemory<byte> Payload, bool TimedOut)
{
    public bool IsSuccess => !TimedOut && ErrorCode == ErrorCodes.Success;
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
}

/// <summary>
/// A simulated client speaking PlayHouse's protocol through the real codec: connect, authenticate, heartbeat,
/// request with a timeout, one-way send, and pushes. Requests are correlated by their 16-bit sequence; a sequence
/// still pending is never reused, and a reply that arrives after its timeout is counted, not mistaken for a push.
/// </summary>
/// <remarks>Not thread-safe; runs on the simulation thread. Pending requests are capped by <see cref="InFlightMax"/>.</remarks>
public sealed class SimClient : IDisposable, IStreamReceiver
{
    private readonly SimNetwork _network;
    private readonly SimWorld _world;
    private readonly MessagePool _pool;
    private readonly Utf8StringCache _msgIds;
    private readonly SeqSlotTable _slotBySeq;
    private readonly PendingSlot[] _slots;
    private readonly Stack<int> _freeSlots = new();
    private readonly TimeoutTimer _timeoutTimer;
    private ServerFrameDecoder? _decoder;
    private SimConnection? _connection;
    private ushort _lastSeq;
    private int _head = -1;
    private int _tail = -1;
    private ITimer? _timer;
    private long _armedDeadlineTicks = long.MaxValue;
    private ITimer? _heartbeat;

    public SimClient(SimNetwork network, string endpoint, MessagePool pool, Utf8StringCache msgIds, int inFlightMax = 1024)
    {
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(inFlightMax);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(inFlightMax, ushort.MaxValue - 1);
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

    /// <summary>Free for the owner (a workload driver), so reply callbacks can be static and allocate nothing.</summary>
    public object? Tag { get; set; }

    /// <summary>The most requests this client keeps pending; further requests are refused.</summary>
    public int InFlightMax { get; }

    public int InFlight => _slotBySeq.Count;

    public int InFlightHighWater { get; private set; }

    public bool IsConnected => _connection is { IsOpen: true };

    public SimClientStatistics Statistics { get; } = new();

    /// <summary>Called for each push (a frame with sequence 0). The payload span is valid during the call.</summary>
    public Action<SimClient, string, long, ReadOnlyMemory<byte>>? PushReceived { get; set; }

    /// <summary>Called when the connection closes or breaks.</summary>
    public Action<SimClient, string>? Disconnected { get; set; }

    /// <summary>Opens a connection to a play server's client endpoint.</summary>
    public void Connect(string serverEndpoint)
    {
        if (IsConnected)
        {
            throw new InvalidOperationException($"Client {Endpoint} is already connected.");
        }

        _decoder?.Dispose();
        _decoder = new ServerFrameDecoder(_pool, _msgIds, new FrameDecoderOptions { PayloadOwner = "client-receive" });
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
        Disconnect("disposed");
        _decoder?.Dispose();
        _decoder = null;
    }

    void IStreamReceiver.OnStreamData(SimConnection connection, ReadOnlySpan<byte> data) => OnData(connection, data);

    void IStreamReceiver.OnStreamClosed(SimConnection connection, string reason) => OnClosed(connection, reason);

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
        var scratch = _network.SendScratch(length);
        ClientFrameEncoder.Encode(scratch, msgId, seq, stageId, payload);
        return _connection!.Send(scratch.AsSpan(0, length));
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
            while (_decoder.TryDecode(ref data, out var frame))
            {
                using (frame)
                {
                    OnFrame(frame);
                }
            }
        }
        catch (FrameDecodeException ex)
        {
            Statistics.BadFrames++;
            connection.Reset($"client got a malformed frame: {ex.Error}");
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
