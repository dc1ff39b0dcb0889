using System.Buffers;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Seams;

namespace PlayHouse.Simulation.Network;

/// <summary>
/// Counts of everything the network did; each fault it injects is counted here and traced. A stream segment is
/// one <see cref="SimConnection.Send"/>, however many chunks it travels in, so once nothing is in flight
/// <c>StreamSegmentsSent == StreamSegmentsDelivered + StreamSegmentsDiscarded</c>, and the same for bytes.
/// </summary>
public sealed class NetworkCounters
{
    public long ConnectionsOpened { get; internal set; }

    public long ConnectionsRefused { get; internal set; }

    public long ConnectionsClosed { get; internal set; }

    public long ConnectionResets { get; internal set; }

    public long StreamSendsRefused { get; internal set; }

    public long StreamSegmentsSent { get; internal set; }

    /// <summary>Sends whose every chunk reached the peer.</summary>
    public long StreamSegmentsDelivered { get; internal set; }

    /// <summary>Sends that never reached the peer whole: lost to a reset, or sent towards an end that had closed.</summary>
    public long StreamSegmentsDiscarded { get; internal set; }

    /// <summary>Sends delivered as several chunks split at random offsets.</summary>
    public long StreamSegmentsSplit { get; internal set; }

    public long StreamBytesSent { get; internal set; }

    public long StreamBytesDelivered { get; internal set; }

    public long StreamBytesDiscarded { get; internal set; }

    public long StreamRetransmits { get; internal set; }

    /// <summary>Stream sends that a loss broke the connection for (<see cref="StreamLossMode.Reset"/>).</summary>
    public long StreamLossResets { get; internal set; }

    /// <summary>
    /// Stream sends that came to the loss decision (every send but one towards an end that had closed): the
    /// opportunities for <see cref="StreamRetransmits"/> and <see cref="StreamLossResets"/>, counted whatever the loss
    /// setting, so that a run can compare the losses it asked for with the ones it got.
    /// </summary>
    public long StreamLossOpportunities { get; internal set; }

    /// <summary>Stream sends of more than one byte that came to the split decision: the opportunities for <see cref="StreamSegmentsSplit"/>.</summary>
    public long StreamSplitOpportunities { get; internal set; }

    /// <summary>Queued stream units (chunks, handshakes, closes) whose delivery a clog or partition postponed.</summary>
    public long StreamSegmentsHeld { get; internal set; }

    public long DatagramsSent { get; internal set; }

    /// <summary>Datagram copies handed to a bound receiver.</summary>
    public long DatagramsDelivered { get; internal set; }

    /// <summary>Datagram copies lost: by loss, by a partition, or for want of a receiver.</summary>
    public long DatagramsDropped { get; internal set; }

    /// <summary>Datagrams dropped by the loss setting (a part of <see cref="DatagramsDropped"/>).</summary>
    public long DatagramsLost { get; internal set; }

    /// <summary>Datagrams sent on a path that was not partitioned: the opportunities for <see cref="DatagramsLost"/>.</summary>
    public long DatagramLossOpportunities { get; internal set; }

    /// <summary>Datagrams that passed partition and loss: the opportunities for <see cref="DatagramsDuplicated"/> and <see cref="DatagramsDelayed"/>.</summary>
    public long DatagramsAdmitted { get; internal set; }

    /// <summary>Datagrams given an extra delay by the reordering setting (whether or not a later one then overtook them).</summary>
    public long DatagramsDelayed { get; internal set; }

    public long DatagramsDuplicated { get; internal set; }

    /// <summary>Datagrams (first copies, not duplicates) that arrived after a datagram sent later on the same path.</summary>
    public long DatagramsReordered { get; internal set; }

    /// <summary>Directed paths cut by a partition (each cut of a healed path once).</summary>
    public long PathsPartitioned { get; internal set; }

    public IReadOnlyList<KeyValuePair<string, long>> Snapshot() =>
    [
        new(nameof(ConnectionResets), ConnectionResets),
        new(nameof(ConnectionsClosed), ConnectionsClosed),
        new(nameof(ConnectionsOpened), ConnectionsOpened),
        new(nameof(ConnectionsRefused), ConnectionsRefused),
        new(nameof(DatagramLossOpportunities), DatagramLossOpportunities),
        new(nameof(DatagramsAdmitted), DatagramsAdmitted),
        new(nameof(DatagramsDelayed), DatagramsDelayed),
        new(nameof(DatagramsDelivered), DatagramsDelivered),
        new(nameof(DatagramsDropped), DatagramsDropped),
        new(nameof(DatagramsDuplicated), DatagramsDuplicated),
        new(nameof(DatagramsLost), DatagramsLost),
        new(nameof(DatagramsReordered), DatagramsReordered),
        new(nameof(DatagramsSent), DatagramsSent),
        new(nameof(PathsPartitioned), PathsPartitioned),
        new(nameof(StreamBytesDelivered), StreamBytesDelivered),
        new(nameof(StreamBytesDiscarded), StreamBytesDiscarded),
        new(nameof(StreamBytesSent), StreamBytesSent),
        new(nameof(StreamLossOpportunities), StreamLossOpportunities),
        new(nameof(StreamLossResets), StreamLossResets),
        new(nameof(StreamRetransmits), StreamRetransmits),
        new(nameof(StreamSegmentsDelivered), StreamSegmentsDelivered),
        new(nameof(StreamSegmentsDiscarded), StreamSegmentsDiscarded),
        new(nameof(StreamSegmentsHeld), StreamSegmentsHeld),
        new(nameof(StreamSegmentsSent), StreamSegmentsSent),
        new(nameof(StreamSegmentsSplit), StreamSegmentsSplit),
        new(nameof(StreamSplitOpportunities), StreamSplitOpportunities),
        new(nameof(StreamSendsRefused), StreamSendsRefused),
    ];
}

/// <summary>Receives datagrams at a bound endpoint. The span is valid only during the call.</summary>
public delegate void DatagramHandler(string fromEndpoint, ReadOnlySpan<byte> datagram);

/// <summary>
/// The simulated network: named endpoints, per directed path latency, loss, duplication, reordering,
/// bandwidth, clogging and partitions; stream connections that deliver bytes in order or break; datagrams
/// that may be lost, duplicated or reordered. Every decision draws from the network's own PRNG, every
/// fault is counted and traced. A datagram in flight sits in a pooled buffer of the network's checked pool; the
/// bytes in flight on a stream direction sit in that direction's own store, checked against its send queue.
/// </summary>
/// <remarks>
/// Each direction of a stream is a FIFO of segments with ready times; one pump event at a time delivers its
/// head, so order never depends on how the world breaks ties between events at one instant.
/// Not thread-safe; runs on the simulation thread. Not sealed only so that a deliberately flawed network (built
/// through <see cref="Cluster.SimClusterBuilder.WithNetwork(Func{SimWorld, Xoshiro256StarStar, PathOptions, SimNetwork})"/>)
/// can replace one of its rare steps; nothing on the path of a message is virtual.
/// </remarks>
public class SimNetwork
{
    private const int InFlightBuffersRetainedMax = 1 << 16;

    // The kinds every hop records, folded into the trace hash's word once instead of per record.
    private static readonly TraceKind SendKind = new("net.send");
    private static readonly TraceKind DeliverKind = new("net.deliver");
    private static readonly TraceKind RetransmitKind = new("net.retransmit");

    private readonly SimWorld _world;
    // The concrete generator, not the seam's interface: a send draws a latency and a loss and a split decision, and
    // each draw through the interface was a dispatch the JIT could not see through.
    private readonly Xoshiro256StarStar _random;
    private readonly Dictionary<string, Action<SimConnection>> _listeners = new(StringComparer.Ordinal);
    private readonly Dictionary<string, DatagramHandler> _datagramHandlers = new(StringComparer.Ordinal);
    private readonly Dictionary<(string From, string To), PathState> _paths = [];
    private readonly SortedDictionary<long, SimConnection> _open = [];
    private readonly Stack<NetEvent> _freeEvents = new();
    private long _nextConnectionId;

    /// <summary>
    /// Sees the bytes of every stream send the network accepts (not the refused ones), just before the send's trace
    /// record; null (the default) sees nothing. Reads only: nothing it does reaches the world, its random draws or the trace.
    /// </summary>
    public INetworkTap? Tap { get; set; }

    // One encode buffer for every stream sender (clients and sessions). The world runs on one thread and a send
    // copies its bytes into the pool before it returns, so a sender needs it only between encoding and Send; one
    // shared buffer stays in cache where a buffer per connection (10,000 clients: 20 MB) would not.
    private byte[] _sendScratch = new byte[1024];

    // The longest stream store a pool keeps: a slow reader's direction fills up to its send-queue cap (4 MB by default),
    // and its store is about twice what it holds. A longer store is allocated when needed and left to the GC as before.
    private const int StreamStoreLengthPooledMax = 8 * 1024 * 1024;

    // Stores kept per length: enough that a burst usually reuses what an earlier one (or an earlier run) gave back,
    // while a pool never holds more than 8 x (8 MB + 4 MB + ...), about 128 MB, and only as many of each length as
    // a world once had free at one time.
    private const int StreamStoresPerLengthMax = 8;

    /// <param name="world">The world whose events carry every send and delivery.</param>
    /// <param name="random">The network's own random source (latency, loss, splits).</param>
    /// <param name="defaults">Options of every path without its own.</param>
    /// <param name="streamStores">Where the stream directions take the arrays for their queued bytes from and give them
    /// back to; null gives this network a pool of its own (<see cref="CreateStreamStorePool"/>). Runs one after another on
    /// one thread may share one pool (<see cref="Runs.RunScratch"/>), never worlds that step at the same time.</param>
    public SimNetwork(SimWorld world, Xoshiro256StarStar random, PathOptions? defaults = null, ArrayPool<byte>? streamStores = null)
    {
        ArgumentNullException.ThrowIfNull(world);
        ArgumentNullException.ThrowIfNull(random);
        _world = world;
        _random = random;
        StreamStores = streamStores ?? CreateStreamStorePool();
        Defaults = defaults ?? new PathOptions();
        Defaults.Validate();
        // Only datagrams pass through this pool (stream bytes sit in their directions). A datagram-heavy run with many
        // clients may still have tens of thousands in flight; a pool that kept only the default 256 per class would drop
        // the rest to the GC and allocate them again, so it keeps up to InFlightBuffersRetainedMax per class.
        Buffers = new MessagePool(new MessagePoolOptions { CheckedMode = true, SingleThreaded = true, LocalCacheCapacityPerClass = 64, GlobalCapacityPerClass = InFlightBuffersRetainedMax });
    }

    public SimWorld World => _world;

    /// <summary>The pool the stream directions' byte stores come from; each array in it or in exactly one direction.</summary>
    internal ArrayPool<byte> StreamStores { get; }

    /// <summary>
    /// A pool for stream stores: power-of-two arrays up to <see cref="StreamStoreLengthPooledMax"/> bytes, at most
    /// <see cref="StreamStoresPerLengthMax"/> of each length kept. Larger stores are allocated and dropped as before.
    /// </summary>
    public static ArrayPool<byte> CreateStreamStorePool() => ArrayPool<byte>.Create(StreamStoreLengthPooledMax, StreamStoresPerLengthMax);

    /// <summary>Options of every path without its own.</summary>
    public PathOptions Defaults { get; private set; }

    public NetworkCounters Counters { get; } = new();

    /// <summary>The pool holding datagrams in flight; empty when none is in flight. Stream bytes in flight are not pooled.</summary>
    public MessagePool Buffers { get; }

    /// <summary>
    /// Bytes sitting in the stream directions' stores: sent, and not yet delivered or discarded. Counted by the stores
    /// themselves, so a byte a store kept by mistake shows here; 0 once nothing is in flight.
    /// </summary>
    public long StreamBytesInFlight { get; private set; }

    /// <summary>How long stream data may stay stuck on a partitioned path before both ends see a reset.</summary>
    public TimeSpan StreamPartitionResetAfter { get; set; } = TimeSpan.FromSeconds(5);

    /// <summary>Connection ends currently open, in id order.</summary>
    public IReadOnlyCollection<SimConnection> OpenConnections => _open.Values;

    /// <summary>Stream segments and datagrams that came due on a clogged or partitioned path and wait there.</summary>
    public int HeldCount
    {
        get
        {
            var count = 0;
            foreach (var path in _paths.Values)
            {
                count += path.HeldDatagrams.Count;
                foreach (var direction in path.Blocked)
                {
                    count += direction.CountDue(_world.NowTicks);
                }
            }

            return count;
        }
    }

    // ---- Configuration and faults ----

    public void SetDefaults(PathOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        options.Validate();
        Defaults = options;
        ApplyDefaultsToPaths(options);
        Trace("net.defaults", 0, 0, options.Latency.ToString());
    }

    /// <summary>New defaults reach every path that has no options of its own, the ones already in use included.</summary>
    internal virtual void ApplyDefaultsToPaths(PathOptions options)
    {
        foreach (var path in _paths.Values)
        {
            if (!path.HasOwnOptions)
            {
                path.Options = options;
            }
        }
    }

    /// <summary>Sets the options of one directed path.</summary>
    public void SetPath(string from, string to, PathOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        options.Validate();
        var path = Path(from, to);
        path.Options = options;
        path.HasOwnOptions = true;
        Trace("net.path", 0, 0, $"{from}->{to} {options.Latency} loss={options.LossProbability}");
    }

    public PathOptions GetPath(string from, string to) => Path(from, to).Options;

    /// <summary>Cuts the path from <paramref name="from"/> to <paramref name="to"/> (and back unless one-way).</summary>
    public void Partition(string from, string to, bool twoWay = true)
    {
        SetPartitioned(from, to, true);
        if (twoWay)
        {
            SetPartitioned(to, from, true);
        }
    }

    public void Heal(string from, string to, bool twoWay = true)
    {
        SetPartitioned(from, to, false);
        if (twoWay)
        {
            SetPartitioned(to, from, false);
        }
    }

    /// <summary>Heals every partition and unclogs every path.</summary>
    public void HealAll()
    {
        foreach (var key in _paths.Keys.OrderBy(k => k.From, StringComparer.Ordinal).ThenBy(k => k.To, StringComparer.Ordinal).ToList())
        {
            SetPartitioned(key.From, key.To, false);
            SetClogged(key.From, key.To, false);
        }
    }

    /// <summary>Holds everything on the directed path until <see cref="Unclog"/>; nothing is lost.</summary>
    public void Clog(string from, string to) => SetClogged(from, to, true);

    public void Unclog(string from, string to) => SetClogged(from, to, false);

    public bool IsPartitioned(string from, string to) => _paths.TryGetValue((from, to), out var p) && p.Partitioned;

    /// <summary>Resets every connection with an end at <paramref name="endpoint"/> (a crash or a cable pull).</summary>
    public void ResetEndpoint(string endpoint, string reason)
    {
        foreach (var connection in _open.Values.Where(c => c.LocalEndpoint == endpoint || c.RemoteEndpoint == endpoint).ToList())
        {
            // Both ends of one connection may be listed; the second reset of a broken connection does nothing.
            connection.Reset(reason);
        }
    }

    // ---- Streams ----

    /// <summary>Accepts connections at an endpoint; <paramref name="onAccept"/> gets the server end and sets its handlers.</summary>
    public void Listen(string endpoint, Action<SimConnection> onAccept)
    {
        ArgumentNullException.ThrowIfNull(onAccept);
        _listeners[endpoint] = onAccept;
    }

    public void StopListening(string endpoint) => _listeners.Remove(endpoint);

    /// <summary>
    /// Opens a connection; the returned client end may send at once (bytes queue behind the handshake). With no
    /// listener, or a partition either way (a handshake needs both directions), the client end is closed with
    /// "connection refused" after the latency.
    /// </summary>
    public SimConnection Connect(string fromEndpoint, string toEndpoint)
    {
        var path = Path(fromEndpoint, toEndpoint);
        var client = new SimConnection(this, ++_nextConnectionId, fromEndpoint, toEndpoint, path);
        var arrival = ArrivalTicks(path, 0);
        if (!_listeners.ContainsKey(toEndpoint) || path.Partitioned || IsPartitioned(toEndpoint, fromEndpoint))
        {
            Counters.ConnectionsRefused++;
            client.MarkClosed();
            client.TryScheduleClose();
            Trace("net.refused", client.ConnectionId, 0, $"{fromEndpoint}->{toEndpoint}");
            ScheduleClosed(arrival, client, "connection refused");
            return client;
        }

        var server = new SimConnection(this, ++_nextConnectionId, toEndpoint, fromEndpoint, Path(toEndpoint, fromEndpoint));
        client.Peer = server;
        server.Peer = client;
        _open.Add(client.ConnectionId, client);
        _open.Add(server.ConnectionId, server);
        Counters.ConnectionsOpened++;
        Trace("net.connect", client.ConnectionId, server.ConnectionId, $"{fromEndpoint}->{toEndpoint}");
        Enqueue(client.Outbound, new StreamSegment(SegmentKind.Open, 0, arrival, EndsSend: false));
        return client;
    }

    internal bool StreamSend(SimConnection from, ReadOnlySpan<byte> bytes)
    {
        var direction = from.Outbound;
        var path = direction.Path;

        // Read once: nothing in a send changes a path's options, and each read through the path is a load the JIT
        // cannot hoist past the calls in between.
        var options = path.Options;
        if (direction.QueuedBytes + bytes.Length > options.QueueCapacityBytes)
        {
            Counters.StreamSendsRefused++;
            Trace("net.refuse", from.ConnectionId, bytes.Length, null);
            return false;
        }

        Counters.StreamSegmentsSent++;
        Counters.StreamBytesSent += bytes.Length;

        // The tap sees every send the stream takes, before its trace record: whatever becomes of the bytes (delivered,
        // retransmitted, discarded, lost with a reset), the record that follows belongs to them.
        Tap?.OnStreamSend(from.ConnectionId, bytes);
        if (direction.TargetClosedNotified)
        {
            // The peer closed and this end has not heard yet: the bytes leave, and nobody will ever read them.
            CountDiscarded(from, bytes.Length, endsSend: true);
            return true;
        }

        var arrival = ArrivalTicks(path, options, bytes.Length);
        Counters.StreamLossOpportunities++;
        if (options.LossProbability > 0 && _random.NextBool(options.LossProbability))
        {
            if (options.StreamLoss == StreamLossMode.Reset)
            {
                Counters.StreamLossResets++;
                Trace("net.loss-reset", from.ConnectionId, bytes.Length, null);
                CountDiscarded(from, bytes.Length, endsSend: true);
                from.Reset("segment lost");
                return true;
            }

            // Retransmission: this segment and, through the ordering rule, everything behind it arrive later.
            Counters.StreamRetransmits++;
            arrival += options.RetransmitDelay.Ticks;
            Trace(RetransmitKind, from.ConnectionId, bytes.Length);
        }

        direction.QueuedBytes += bytes.Length;
        Trace(SendKind, from.ConnectionId, bytes.Length);

        if (bytes.Length > 1)
        {
            Counters.StreamSplitOpportunities++;
        }

        var chunks = bytes.Length > 1 && options.SplitProbability > 0 && _random.NextBool(options.SplitProbability) ? 2 + _random.NextInt(2) : 1;
        if (chunks > 1)
        {
            Counters.StreamSegmentsSplit++;
        }

        var offset = 0;
        for (var i = 0; i < chunks; i++)
        {
            var remaining = bytes.Length - offset;
            var length = i == chunks - 1 ? remaining : 1 + _random.NextInt(Math.Max(1, remaining - (chunks - 1 - i)));
            direction.AppendBytes(bytes.Slice(offset, length));
            StreamBytesInFlight += length;
            Enqueue(direction, new StreamSegment(SegmentKind.Data, length, arrival, EndsSend: i == chunks - 1));
            offset += length;
        }

        return true;
    }

    internal void StreamClose(SimConnection from, string reason)
    {
        var to = from.Peer!;
        Counters.ConnectionsClosed++;
        Trace("net.close", from.ConnectionId, 0, reason);
        _open.Remove(from.ConnectionId);

        // Bytes still travelling towards the closing end can never be read now.
        DiscardAll(to.Outbound);
        if (!to.IsClosedNotified)
        {
            // The close travels behind this end's data, so everything sent before it arrives first. Its reason waits in
            // the direction: a direction carries at most one close, its last segment.
            from.Outbound.CloseReason = reason;
            Enqueue(from.Outbound, new StreamSegment(SegmentKind.Close, 0, ArrivalTicks(from.Outbound.Path, 0), EndsSend: false));
        }
    }

    internal void StreamReset(SimConnection end, string reason)
    {
        var peer = end.Peer;
        if (end.IsFinished && (peer is null || peer.IsFinished))
        {
            return;
        }

        Counters.ConnectionResets++;
        Trace("net.reset", end.ConnectionId, 0, reason);
        ResetSide(end, reason);
        if (peer is not null)
        {
            ResetSide(peer, reason);
        }
    }

    /// <summary>
    /// The shared buffer to encode a stream send into, at least <paramref name="lengthBytes"/> long. Valid until the
    /// next call; pass it to <see cref="SimConnection.Send"/> before encoding anything else.
    /// </summary>
    internal byte[] SendScratch(int lengthBytes)
    {
        if (_sendScratch.Length < lengthBytes)
        {
            _sendScratch = new byte[Math.Max(lengthBytes, _sendScratch.Length * 2)];
        }

        return _sendScratch;
    }

    // ---- Datagrams ----

    public void Bind(string endpoint, DatagramHandler handler)
    {
        ArgumentNullException.ThrowIfNull(handler);
        _datagramHandlers[endpoint] = handler;
    }

    public void Unbind(string endpoint) => _datagramHandlers.Remove(endpoint);

    /// <summary>
    /// Sends a datagram: it may be lost, duplicated, reordered, held by a clog or dropped by a partition; one
    /// that reaches an endpoint nobody is bound to is dropped too.
    /// </summary>
    public void SendDatagram(string fromEndpoint, string toEndpoint, ReadOnlySpan<byte> datagram)
    {
        var path = Path(fromEndpoint, toEndpoint);
        var seq = ++path.DatagramSeq;
        Counters.DatagramsSent++;
        if (!path.Partitioned)
        {
            Counters.DatagramLossOpportunities++;
        }

        if (path.Partitioned || (path.Options.LossProbability > 0 && _random.NextBool(path.Options.LossProbability)))
        {
            Counters.DatagramsDropped++;
            if (!path.Partitioned)
            {
                Counters.DatagramsLost++;
            }

            Trace("net.dgram-drop", seq, datagram.Length, $"{fromEndpoint}->{toEndpoint}");
            return;
        }

        Counters.DatagramsAdmitted++;
        var arrival = ArrivalTicks(path, datagram.Length);
        if (path.Options.ReorderProbability > 0 && _random.NextBool(path.Options.ReorderProbability))
        {
            Counters.DatagramsDelayed++;
            arrival += 1 + _random.NextLong(0, Math.Max(1, path.Options.ReorderDelayMax.Ticks));
            Trace("net.dgram-delay", seq, datagram.Length, $"{fromEndpoint}->{toEndpoint}");
        }

        Trace("net.dgram-send", seq, datagram.Length, $"{fromEndpoint}->{toEndpoint}");
        ScheduleDatagram(arrival, path, seq, Buffers.Copy(datagram, "net-inflight"), isCopy: false);
        if (path.Options.DuplicateProbability > 0 && _random.NextBool(path.Options.DuplicateProbability))
        {
            Counters.DatagramsDuplicated++;
            var copyArrival = arrival + 1 + _random.NextLong(0, Math.Max(1, path.Options.ReorderDelayMax.Ticks));
            Trace("net.dgram-dup", seq, datagram.Length, $"{fromEndpoint}->{toEndpoint}");
            ScheduleDatagram(copyArrival, path, seq, Buffers.Copy(datagram, "net-inflight"), isCopy: true);
        }
    }

    // ---- Internals: timing ----

    /// <summary>When bytes handed to the path now arrive: after the link has sent them (bandwidth) and one latency draw.</summary>
    private long ArrivalTicks(PathState path, int lengthBytes) => ArrivalTicks(path, path.Options, lengthBytes);

    private long ArrivalTicks(PathState path, PathOptions options, int lengthBytes)
    {
        var start = _world.NowTicks;
        if (options.BandwidthBytesPerSecond > 0)
        {
            // Round the transmit time up: N bytes at B bytes/s never finish before N/B.
            var rate = options.BandwidthBytesPerSecond;
            start = Math.Max(start, path.BusyUntilTicks) + (((lengthBytes * TimeSpan.TicksPerSecond) + rate - 1) / rate);
            path.BusyUntilTicks = start;
        }

        return start + options.Latency.SampleTicks(_random);
    }

    // ---- Internals: stream directions ----

    private void Enqueue(StreamDirection direction, StreamSegment segment)
    {
        var ready = Math.Max(segment.ReadyTicks, direction.LastReadyTicks);
        direction.LastReadyTicks = ready;
        direction.Enqueue(segment with { ReadyTicks = ready });
        if (direction.Count == 1)
        {
            EnsurePump(direction);
        }
    }

    /// <summary>Arms the direction's one pump event for the instant its head is due, unless it is blocked or empty.</summary>
    private void EnsurePump(StreamDirection direction)
    {
        if (direction.IsBlocked || !direction.TryPeek(out var head))
        {
            direction.PumpArmed = false;

            return;
        }

        var due = direction.DueTicks(head);
        if (direction.PumpArmed && direction.PumpAtTicks == due)
        {
            return;
        }

        direction.PumpArmed = true;
        direction.PumpAtTicks = due;

        // The direction is its own pump event, told from stale armings by its sequence: no event object per hop to go
        // cold in the queue (with 10,000 clients each one was a cache miss when it came due).
        direction.PumpSequence = _world.ScheduleAtWithSequence(due, direction);
    }

    /// <summary>Delivers the head of a direction, or blocks the direction when its path is clogged or partitioned.</summary>
    private void Pump(StreamDirection direction)
    {
        direction.PumpArmed = false;
        if (!direction.TryPeek(out var head))
        {
            return;
        }

        if (direction.DueTicks(head) > _world.NowTicks)
        {
            EnsurePump(direction);
            return;
        }

        var path = direction.Path;
        if (path.IsBlocked)
        {
            Block(direction);
            return;
        }

        direction.DropHead();
        var target = direction.Target!;
        Assert(!target.IsClosedNotified, "a segment was due towards an end that had closed; closing should have discarded it");
        switch (head.Kind)
        {
            case SegmentKind.Open:
                Accept(target);
                break;
            case SegmentKind.Data:
                DeliverData(direction, target, head);
                break;
            case SegmentKind.Close:
                var reason = direction.CloseReason;
                direction.CloseReason = null;
                Trace("net.closed", target.ConnectionId, 0, reason);
                _open.Remove(target.ConnectionId);

                // The end that hears the close cannot reach its peer any more.
                DiscardAll(target.Outbound);
                target.NotifyClosed(reason ?? "closed");
                break;
            default:
                throw new InvalidOperationException($"Unknown segment kind {head.Kind}.");
        }

        // A handler may have sent, closed or reset in the meantime; the pump follows whatever the queue now holds.
        EnsurePump(direction);
    }

    private void Accept(SimConnection server)
    {
        Trace("net.accept", server.ConnectionId, 0, null);
        if (_listeners.TryGetValue(server.LocalEndpoint, out var accept))
        {
            server.IsAccepted = true;
            accept(server);
        }
        else
        {
            server.Reset("listener went away");
        }
    }

    private void DeliverData(StreamDirection direction, SimConnection target, StreamSegment segment)
    {
        var length = segment.Length;
        direction.QueuedBytes -= length;
        Assert(direction.QueuedBytes >= 0, "a send queue went negative");
        Counters.StreamBytesDelivered += length;
        if (segment.EndsSend)
        {
            Counters.StreamSegmentsDelivered++;
        }

        Trace(DeliverKind, target.ConnectionId, length);
        try
        {
            target.Deliver(direction.BeginDelivery(length));
        }
        finally
        {
            StreamBytesInFlight -= direction.EndDelivery();
        }
    }

    private void Block(StreamDirection direction)
    {
        var path = direction.Path;
        if (!direction.IsBlocked)
        {
            direction.IsBlocked = true;
            path.Blocked.Add(direction);
        }

        if (path.Partitioned)
        {
            ArmPartitionReset(direction);
        }
    }

    /// <summary>Lets a blocked direction go: what it held leaves in order after a fresh latency, as retransmissions would.</summary>
    private void Release(StreamDirection direction)
    {
        CountHeld(direction);
        direction.IsBlocked = false;
        direction.ReleaseFloorTicks = Math.Max(direction.ReleaseFloorTicks, _world.NowTicks + direction.Path.Options.Latency.SampleTicks(_random));
        direction.LastReadyTicks = Math.Max(direction.LastReadyTicks, direction.ReleaseFloorTicks);
        EnsurePump(direction);
    }

    /// <summary>Counts and traces, once per hold, each segment that came due while the direction was blocked.</summary>
    private void CountHeld(StreamDirection direction)
    {
        if (!direction.IsBlocked)
        {
            return;
        }

        var now = _world.NowTicks;
        for (var i = 0; i < direction.Count; i++)
        {
            ref readonly var segment = ref direction.At(i);
            if (direction.DueTicks(segment) > now)
            {
                break;
            }

            Counters.StreamSegmentsHeld++;
            Trace("net.hold", direction.Sender.ConnectionId, segment.Length, null);
        }
    }

    /// <summary>Throws away everything a direction still carries (the connection broke or its receiver closed).</summary>
    private void DiscardAll(StreamDirection direction)
    {
        Assert(direction.BytesHeld == direction.QueuedBytes, "a direction's byte store and its send queue disagree");
        CountHeld(direction);
        if (direction.IsBlocked)
        {
            direction.IsBlocked = false;
            direction.Path.Blocked.Remove(direction);
        }

        var bytes = 0L;
        while (direction.TryDequeue(out var segment))
        {
            if (segment.Kind == SegmentKind.Data)
            {
                bytes += segment.Length;
                direction.Sender.QueuedBytes -= segment.Length;
                Counters.StreamBytesDiscarded += segment.Length;
                if (segment.EndsSend)
                {
                    Counters.StreamSegmentsDiscarded++;
                }
            }
        }

        StreamBytesInFlight -= direction.DiscardBytes();
        direction.CloseReason = null;

        if (bytes > 0)
        {
            Trace("net.discard", direction.Sender.ConnectionId, bytes, null);
        }

        Assert(direction.Sender.QueuedBytes == 0, "an emptied direction still counts queued bytes");
        Assert(direction.BytesHeld == 0, "an emptied direction still holds bytes");
        EnsurePump(direction);
    }

    private void CountDiscarded(SimConnection from, int lengthBytes, bool endsSend)
    {
        Counters.StreamBytesDiscarded += lengthBytes;
        if (endsSend)
        {
            Counters.StreamSegmentsDiscarded++;
        }

        Trace("net.discard", from.ConnectionId, lengthBytes, null);
    }

    private void ResetSide(SimConnection side, string reason)
    {
        _open.Remove(side.ConnectionId);
        DiscardAll(side.Outbound);
        if (side.TryScheduleClose())
        {
            side.MarkClosed();
            ScheduleClosed(_world.NowTicks, side, reason);
        }
    }

    private void ArmPartitionReset(StreamDirection direction)
    {
        var path = direction.Path;
        if (direction.ResetCheckEpoch == path.PartitionEpoch)
        {
            return;
        }

        direction.ResetCheckEpoch = path.PartitionEpoch;
        _world.ScheduleAfter(StreamPartitionResetAfter, new PartitionResetCheck(this, direction, path.PartitionEpoch));
    }

    // ---- Internals: paths ----

    private void SetPartitioned(string from, string to, bool partitioned)
    {
        var path = Path(from, to);
        if (path.Partitioned == partitioned)
        {
            return;
        }

        path.Partitioned = partitioned;
        Trace(partitioned ? "net.partition" : "net.heal", 0, 0, $"{from}->{to}");
        if (partitioned)
        {
            path.PartitionEpoch++;
            Counters.PathsPartitioned++;

            // Directions already held by a clog are now stuck behind a partition too.
            foreach (var direction in path.Blocked)
            {
                ArmPartitionReset(direction);
            }
        }
        else if (!path.Clogged)
        {
            ReleaseStreams(path);
        }
    }

    private void SetClogged(string from, string to, bool clogged)
    {
        var path = Path(from, to);
        if (path.Clogged == clogged)
        {
            return;
        }

        path.Clogged = clogged;
        Trace(clogged ? "net.clog" : "net.unclog", 0, 0, $"{from}->{to}");
        if (!clogged)
        {
            // Held datagrams go on even into a partition, which drops them on arrival; streams wait for the heal.
            ReleaseDatagrams(path);
            if (!path.Partitioned)
            {
                ReleaseStreams(path);
            }
        }
    }

    private void ReleaseStreams(PathState path)
    {
        if (path.Blocked.Count == 0)
        {
            return;
        }

        var blocked = path.Blocked.ToList();
        path.Blocked.Clear();
        foreach (var direction in blocked)
        {
            Release(direction);
        }
    }

    private void ReleaseDatagrams(PathState path)
    {
        // Held datagrams leave in the order they were held after a fresh latency each, never overtaking each other.
        var previous = 0L;
        foreach (var item in path.HeldDatagrams)
        {
            var arrival = Math.Max(previous, _world.NowTicks + path.Options.Latency.SampleTicks(_random));
            previous = arrival;
            _world.ScheduleAt(arrival, item);
        }

        path.HeldDatagrams.Clear();
    }

    private PathState Path(string from, string to)
    {
        if (!_paths.TryGetValue((from, to), out var path))
        {
            path = new PathState(from, to, Defaults);
            _paths.Add((from, to), path);
        }

        return path;
    }

    // ---- Internals: events ----

    private void ScheduleClosed(long atTicks, SimConnection target, string reason)
    {
        var e = RentEvent(NetEventKind.Closed);
        e.Target = target;
        e.Reason = reason;
        _world.ScheduleAt(atTicks, e);
    }

    private void ScheduleDatagram(long atTicks, PathState path, long seq, Payload data, bool isCopy)
    {
        var e = RentEvent(NetEventKind.Datagram);
        e.Path = path;
        e.Seq = seq;
        e.Data = data;
        e.IsCopy = isCopy;
        _world.ScheduleAt(atTicks, e);
    }

    private NetEvent RentEvent(NetEventKind kind)
    {
        var e = _freeEvents.Count > 0 ? _freeEvents.Pop() : new NetEvent(this);
        e.Kind = kind;
        return e;
    }

    private void Run(NetEvent e)
    {
        switch (e.Kind)
        {
            case NetEventKind.Datagram:
                if (!DeliverDatagram(e))
                {
                    // Held by a clog: the event itself waits on the path and is rescheduled on unclog.
                    return;
                }

                break;
            case NetEventKind.Closed:
                e.Target!.NotifyClosed(e.Reason ?? "closed");
                break;
            default:
                throw new InvalidOperationException($"Unknown network event {e.Kind}.");
        }

        Recycle(e);
    }

    /// <summary>Runs a direction's pump event unless a later arming or a disarm made it stale.</summary>
    internal void RunPump(StreamDirection direction)
    {
        if (direction.PumpArmed && direction.PumpSequence == _world.CurrentEventSequence)
        {
            Pump(direction);
        }
    }

    /// <summary>Delivers or drops a datagram; false when a clog holds it (the event is then kept, not recycled).</summary>
    private bool DeliverDatagram(NetEvent e)
    {
        var path = e.Path!;
        if (path.Clogged)
        {
            path.HeldDatagrams.Add(e);
            return false;
        }

        var route = $"{path.From}->{path.To}";
        if (path.Partitioned || !_datagramHandlers.TryGetValue(path.To, out var handler))
        {
            Counters.DatagramsDropped++;
            Trace("net.dgram-drop", e.Seq, e.Data.Length, path.Partitioned ? route : $"{route} unbound");
            e.Data.Dispose();
            return true;
        }

        // A duplicate copy is late by construction; only an original arriving behind a later one is reordering.
        if (!e.IsCopy && e.Seq < path.MaxDeliveredDatagramSeq)
        {
            Counters.DatagramsReordered++;
            Trace("net.dgram-reordered", e.Seq, path.MaxDeliveredDatagramSeq, route);
        }

        path.MaxDeliveredDatagramSeq = Math.Max(path.MaxDeliveredDatagramSeq, e.Seq);
        Counters.DatagramsDelivered++;
        Trace("net.dgram-deliver", e.Seq, e.Data.Length, route);
        try
        {
            handler(path.From, e.Data.Span);
        }
        finally
        {
            e.Data.Dispose();
        }

        return true;
    }

    private void Recycle(NetEvent e)
    {
        e.Target = null;
        e.Path = null;
        e.Reason = null;
        e.Data = default;
        e.IsCopy = false;
        _freeEvents.Push(e);
    }

    private void Trace(string kind, long a, long b, string? text) => _world.Trace.Record(_world.NowTicks, kind, a, b, 0, text);

    private void Trace(TraceKind kind, long a, long b) => _world.Trace.Record(_world.NowTicks, kind, a, b, 0, null);

    private static void Assert(bool condition, string what)
    {
        if (!condition)
        {
            throw new SimulationException($"Network invariant broken: {what}.");
        }
    }

    private enum NetEventKind
    {
        Closed,
        Datagram,
    }

    private sealed class NetEvent(SimNetwork network) : IThreadPoolWorkItem
    {
        public NetEventKind Kind { get; set; }

        public SimConnection? Target { get; set; }

        public Payload Data { get; set; }

        public string? Reason { get; set; }

        public PathState? Path { get; set; }

        public long Seq { get; set; }

        public bool IsCopy { get; set; }

        public void Execute() => network.Run(this);
    }

    private sealed class PartitionResetCheck(SimNetwork network, StreamDirection direction, long partitionEpoch) : IThreadPoolWorkItem
    {
        public void Execute()
        {
            var path = direction.Path;
            if (path.Partitioned && path.PartitionEpoch == partitionEpoch && direction.IsBlocked)
            {
                direction.Sender.Reset($"partitioned for {network.StreamPartitionResetAfter.TotalSeconds}s");
            }
        }
    }
}
