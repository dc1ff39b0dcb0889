using PlayHouse.Core.Pooling;
using PlayHouse.Core.Seams;

namespace PlayHouse.Simulation.Network;

/// <summary>Counts of everything the network did; each fault it injects is counted here and traced.</summary>
public sealed class NetworkCounters
{
    public long ConnectionsOpened { get; internal set; }

    public long ConnectionsRefused { get; internal set; }

    public long ConnectionsClosed { get; internal set; }

    public long ConnectionResets { get; internal set; }

    public long StreamSendsRefused { get; internal set; }

    public long StreamSegmentsSent { get; internal set; }

    public long StreamSegmentsDelivered { get; internal set; }

    public long StreamBytesSent { get; internal set; }

    public long StreamBytesDelivered { get; internal set; }

    public long StreamRetransmits { get; internal set; }

    public long StreamSegmentsHeld { get; internal set; }

    public long DatagramsSent { get; internal set; }

    public long DatagramsDelivered { get; internal set; }

    public long DatagramsDropped { get; internal set; }

    public long DatagramsDuplicated { get; internal set; }

    public long DatagramsReordered { get; internal set; }

    public IReadOnlyList<KeyValuePair<string, long>> Snapshot() =>
    [
        new(nameof(ConnectionResets), ConnectionResets),
        new(nameof(ConnectionsClosed), ConnectionsClosed),
        new(nameof(ConnectionsOpened), ConnectionsOpened),
        new(nameof(ConnectionsRefused), ConnectionsRefused),
        new(nameof(DatagramsDelivered), DatagramsDelivered),
        new(nameof(DatagramsDropped), DatagramsDropped),
        new(nameof(DatagramsDuplicated), DatagramsDuplicated),
        new(nameof(DatagramsReordered), DatagramsReordered),
        new(nameof(DatagramsSent), DatagramsSent),
        new(nameof(StreamBytesDelivered), StreamBytesDelivered),
        new(nameof(StreamBytesSent), StreamBytesSent),
        new(nameof(StreamRetransmits), StreamRetransmits),
        new(nameof(StreamSegmentsDelivered), StreamSegmentsDelivered),
        new(nameof(StreamSegmentsHeld), StreamSegmentsHeld),
        new(nameof(StreamSegmentsSent), StreamSegmentsSent),
        new(nameof(StreamSendsRefused), StreamSendsRefused),
    ];
}

/// <summary>Receives datagrams at a bound endpoint. The span is valid only during the call.</summary>
public delegate void DatagramHandler(string fromEndpoint, ReadOnlySpan<byte> datagram);

/// <summary>
/// The simulated network: named endpoints, per directed path latency, loss, duplication, reordering,
/// bandwidth, clogging and partitions; stream connections that deliver bytes in order or break; datagrams
/// that may be lost, duplicated or reordered. Every decision draws from the network's own PRNG, every
/// fault is counted and traced, and every byte in flight sits in a pooled buffer of its checked pool.
/// </summary>
/// <remarks>Not thread-safe; runs on the simulation thread.</remarks>
public sealed class SimNetwork
{
    private readonly SimWorld _world;
    private readonly IRandomSource _random;
    private readonly Dictionary<string, Action<SimConnection>> _listeners = new(StringComparer.Ordinal);
    private readonly Dictionary<string, DatagramHandler> _datagramHandlers = new(StringComparer.Ordinal);
    private readonly Dictionary<(string From, string To), PathState> _paths = [];
    private readonly SortedDictionary<long, SimConnection> _open = [];
    private readonly Stack<NetEvent> _freeEvents = new();
    private long _nextConnectionId;

    public SimNetwork(SimWorld world, IRandomSource random, PathOptions? defaults = null)
    {
        ArgumentNullException.ThrowIfNull(world);
        ArgumentNullException.ThrowIfNull(random);
        _world = world;
        _random = random;
        Defaults = defaults ?? new PathOptions();
        Defaults.Validate();
        Buffers = new MessagePool(new MessagePoolOptions { CheckedMode = true });
    }

    public SimWorld World => _world;

    /// <summary>Options of every path without its own.</summary>
    public PathOptions Defaults { get; private set; }

    public NetworkCounters Counters { get; } = new();

    /// <summary>The pool holding bytes in flight; empty when nothing is in flight.</summary>
    public MessagePool Buffers { get; }

    /// <summary>How long a stream may stay partitioned before both ends see a reset.</summary>
    public TimeSpan StreamPartitionResetAfter { get; set; } = TimeSpan.FromSeconds(5);

    /// <summary>Connections currently open (either end), in id order.</summary>
    public IReadOnlyCollection<SimConnection> OpenConnections => _open.Values;

    /// <summary>Segments and datagrams waiting on a clogged or partitioned path.</summary>
    public int HeldCount => _paths.Values.Sum(p => p.Held.Count);

    // ---- Configuration and faults ----

    public void SetDefaults(PathOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        options.Validate();
        Defaults = options;
        foreach (var path in _paths.Values)
        {
            if (!path.HasOwnOptions)
            {
                path.Options = options;
            }
        }

        Trace("net.defaults", 0, 0, options.Latency.ToString());
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
    /// listener, or a partitioned path, the client end is closed with "connection refused" after the latency.
    /// </summary>
    public SimConnection Connect(string fromEndpoint, string toEndpoint)
    {
        var client = new SimConnection(this, ++_nextConnectionId, fromEndpoint, toEndpoint);
        var path = Path(fromEndpoint, toEndpoint);
        var arrival = ArrivalTicks(path, client, 0);
        if (!_listeners.ContainsKey(toEndpoint) || path.Partitioned)
        {
            Counters.ConnectionsRefused++;
            client.MarkClosed();
            Trace("net.refused", client.ConnectionId, 0, $"{fromEndpoint}->{toEndpoint}");
            Schedule(arrival, NetEventKind.Closed, client, default, "connection refused");
            return client;
        }

        var server = new SimConnection(this, ++_nextConnectionId, toEndpoint, fromEndpoint);
        client.Peer = server;
        server.Peer = client;
        _open.Add(client.ConnectionId, client);
        _open.Add(server.ConnectionId, server);
        Counters.ConnectionsOpened++;
        Trace("net.connect", client.ConnectionId, server.ConnectionId, $"{fromEndpoint}->{toEndpoint}");
        Schedule(arrival, NetEventKind.Accept, server, default, null);
        return client;
    }

    internal bool StreamSend(SimConnection from, ReadOnlySpan<byte> bytes)
    {
        var to = from.Peer!;
        var path = Path(from.LocalEndpoint, from.RemoteEndpoint);
        if (from.QueuedBytes + bytes.Length > path.Options.QueueCapacityBytes)
        {
            Counters.StreamSendsRefused++;
            Trace("net.refuse", from.ConnectionId, bytes.Length, null);
            return false;
        }

        Counters.StreamSegmentsSent++;
        Counters.StreamBytesSent += bytes.Length;
        var arrival = ArrivalTicks(path, from, bytes.Length);
        if (path.Options.LossProbability > 0 && _random.NextBool(path.Options.LossProbability))
        {
            if (path.Options.StreamLoss == StreamLossMode.Reset)
            {
                Trace("net.loss-reset", from.ConnectionId, bytes.Length, null);
                from.Reset("segment lost");
                return true;
            }

            // Retransmission: this segment and, through the ordering rule, everything behind it arrive later.
            Counters.StreamRetransmits++;
            arrival += path.Options.RetransmitDelay.Ticks;
            Trace("net.retransmit", from.ConnectionId, bytes.Length, null);
        }

        arrival = Math.Max(arrival, from.LastArrivalTicks);
        from.LastArrivalTicks = arrival;
        from.QueuedBytes += bytes.Length;
        Trace("net.send", from.ConnectionId, bytes.Length, null);

        var chunks = bytes.Length > 1 && path.Options.SplitProbability > 0 && _random.NextBool(path.Options.SplitProbability) ? 2 + _random.NextInt(2) : 1;
        var offset = 0;
        for (var i = 0; i < chunks; i++)
        {
            var remaining = bytes.Length - offset;
            var length = i == chunks - 1 ? remaining : 1 + _random.NextInt(Math.Max(1, remaining - (chunks - 1 - i)));
            Schedule(arrival, NetEventKind.Data, to, Buffers.Copy(bytes.Slice(offset, length), "net-inflight"), null, from);
            offset += length;
        }

        return true;
    }

    internal void StreamClose(SimConnection from, string reason)
    {
        var to = from.Peer!;
        var path = Path(from.LocalEndpoint, from.RemoteEndpoint);
        var arrival = Math.Max(ArrivalTicks(path, from, 0), from.LastArrivalTicks);
        from.LastArrivalTicks = arrival;
        Counters.ConnectionsClosed++;
        Trace("net.close", from.ConnectionId, 0, reason);
        _open.Remove(from.ConnectionId);
        Schedule(arrival, NetEventKind.Closed, to, default, reason);
    }

    internal void StreamReset(SimConnection end, string reason)
    {
        Counters.ConnectionResets++;
        Trace("net.reset", end.ConnectionId, 0, reason);
        foreach (var side in new[] { end, end.Peer })
        {
            if (side is null)
            {
                continue;
            }

            _open.Remove(side.ConnectionId);
            if (side.TryScheduleClose())
            {
                side.MarkClosed();
                Schedule(_world.NowTicks, NetEventKind.Closed, side, default, reason);
            }
        }
    }

    // ---- Datagrams ----

    public void Bind(string endpoint, DatagramHandler handler)
    {
        ArgumentNullException.ThrowIfNull(handler);
        _datagramHandlers[endpoint] = handler;
    }

    public void Unbind(string endpoint) => _datagramHandlers.Remove(endpoint);

    /// <summary>Sends a datagram: it may be lost, duplicated, reordered, held by a clog or dropped by a partition.</summary>
    public void SendDatagram(string fromEndpoint, string toEndpoint, ReadOnlySpan<byte> datagram)
    {
        var path = Path(fromEndpoint, toEndpoint);
        var seq = ++path.DatagramSeq;
        Counters.DatagramsSent++;
        if (path.Partitioned || (path.Options.LossProbability > 0 && _random.NextBool(path.Options.LossProbability)))
        {
            Counters.DatagramsDropped++;
            Trace("net.dgram-drop", seq, datagram.Length, $"{fromEndpoint}->{toEndpoint}");
            return;
        }

        var arrival = ArrivalTicks(path, null, datagram.Length);
        if (path.Options.ReorderProbability > 0 && _random.NextBool(path.Options.ReorderProbability))
        {
            arrival += 1 + _random.NextLong(0, Math.Max(1, path.Options.ReorderDelayMax.Ticks));
            Trace("net.dgram-delay", seq, datagram.Length, $"{fromEndpoint}->{toEndpoint}");
        }

        Trace("net.dgram-send", seq, datagram.Length, $"{fromEndpoint}->{toEndpoint}");
        ScheduleDatagram(arrival, path, seq, Buffers.Copy(datagram, "net-inflight"));
        if (path.Options.DuplicateProbability > 0 && _random.NextBool(path.Options.DuplicateProbability))
        {
            Counters.DatagramsDuplicated++;
            var copyArrival = arrival + 1 + _random.NextLong(0, Math.Max(1, path.Options.ReorderDelayMax.Ticks));
            Trace("net.dgram-dup", seq, datagram.Length, $"{fromEndpoint}->{toEndpoint}");
            ScheduleDatagram(copyArrival, path, seq, Buffers.Copy(datagram, "net-inflight"));
        }
    }

    // ---- Internals ----

    private long ArrivalTicks(PathState path, SimConnection? from, int lengthBytes)
    {
        var now = _world.NowTicks;
        var start = now;
        if (path.Options.BandwidthBytesPerSecond > 0)
        {
            start = Math.Max(now, path.BusyUntilTicks);
            path.BusyUntilTicks = start + (lengthBytes * TimeSpan.TicksPerSecond / path.Options.BandwidthBytesPerSecond);
            start = path.BusyUntilTicks;
        }

        var arrival = start + path.Options.Latency.SampleTicks(_random);
        return from is null ? arrival : Math.Max(arrival, from.LastArrivalTicks);
    }

    private void Schedule(long atTicks, NetEventKind kind, SimConnection target, Payload data, string? reason, SimConnection? sender = null)
    {
        var e = _freeEvents.Count > 0 ? _freeEvents.Pop() : new NetEvent(this);
        e.Kind = kind;
        e.Target = target;
        e.Sender = sender;
        e.Data = data;
        e.Reason = reason;
        e.Epoch = target.Epoch;
        if (kind == NetEventKind.Accept && target.Peer is not null)
        {
            target.Peer.LastArrivalTicks = Math.Max(target.Peer.LastArrivalTicks, atTicks);
        }

        _world.ScheduleAt(atTicks, e);
    }

    private void ScheduleDatagram(long atTicks, PathState path, long seq, Payload data)
    {
        var e = _freeEvents.Count > 0 ? _freeEvents.Pop() : new NetEvent(this);
        e.Kind = NetEventKind.Datagram;
        e.Path = path;
        e.Seq = seq;
        e.Data = data;
        _world.ScheduleAt(atTicks, e);
    }

    private void Run(NetEvent e)
    {
        var target = e.Target;
        switch (e.Kind)
        {
            case NetEventKind.Datagram:
                DeliverDatagram(e);
                break;
            case NetEventKind.Accept:
                if (target!.Epoch == e.Epoch && !target.IsClosedNotified)
                {
                    Trace("net.accept", target.ConnectionId, 0, null);
                    if (_listeners.TryGetValue(target.LocalEndpoint, out var accept))
                    {
                        target.IsAccepted = true;
                        accept(target);
                    }
                    else
                    {
                        target.Reset("listener went away");
                    }
                }

                break;
            case NetEventKind.Data:
                DeliverStreamData(e);
                break;
            case NetEventKind.Closed:
                target!.NotifyClosed(e.Reason ?? "closed");
                break;
            default:
                throw new InvalidOperationException($"Unknown network event {e.Kind}.");
        }

        Recycle(e);
    }

    private void DeliverStreamData(NetEvent e)
    {
        var target = e.Target!;
        var sender = e.Sender!;
        var path = Path(sender.LocalEndpoint, sender.RemoteEndpoint);
        if (target.Epoch != e.Epoch || target.IsClosedNotified)
        {
            // The connection broke while the bytes were in flight: they are gone, as on a reset socket.
            sender.QueuedBytes -= e.Data.Length;
            e.Data.Dispose();
            e.Data = default;
            return;
        }

        if (path.Clogged || path.Partitioned)
        {
            Counters.StreamSegmentsHeld++;
            Trace("net.hold", sender.ConnectionId, e.Data.Length, null);
            path.Held.Add(Hold(e));
            if (path.Partitioned)
            {
                ArmPartitionReset(path, sender);
            }

            e.Data = default;
            return;
        }

        var length = e.Data.Length;
        sender.QueuedBytes -= length;
        Counters.StreamSegmentsDelivered++;
        Counters.StreamBytesDelivered += length;
        Trace("net.deliver", target.ConnectionId, length, null);
        try
        {
            target.Deliver(e.Data.Span);
        }
        finally
        {
            e.Data.Dispose();
            e.Data = default;
        }
    }

    private void DeliverDatagram(NetEvent e)
    {
        var path = e.Path!;
        if (path.Clogged)
        {
            path.Held.Add(Hold(e));
            e.Data = default;
            return;
        }

        if (path.Partitioned)
        {
            Counters.DatagramsDropped++;
            Trace("net.dgram-drop", e.Seq, e.Data.Length, $"{path.From}->{path.To}");
            e.Data.Dispose();
            e.Data = default;
            return;
        }

        if (e.Seq < path.MaxDeliveredDatagramSeq)
        {
            Counters.DatagramsReordered++;
            Trace("net.dgram-reordered", e.Seq, path.MaxDeliveredDatagramSeq, $"{path.From}->{path.To}");
        }

        path.MaxDeliveredDatagramSeq = Math.Max(path.MaxDeliveredDatagramSeq, e.Seq);
        Counters.DatagramsDelivered++;
        Trace("net.dgram-deliver", e.Seq, e.Data.Length, $"{path.From}->{path.To}");
        try
        {
            if (_datagramHandlers.TryGetValue(path.To, out var handler))
            {
                handler(path.From, e.Data.Span);
            }
        }
        finally
        {
            e.Data.Dispose();
            e.Data = default;
        }
    }

    private static HeldEvent Hold(NetEvent e) => new(e.Kind, e.Target, e.Sender, e.Data.Move("net-held"), e.Epoch, e.Path, e.Seq);

    private void ArmPartitionReset(PathState path, SimConnection sender)
    {
        if (path.ResetArmedFor.Contains(sender.ConnectionId))
        {
            return;
        }

        path.ResetArmedFor.Add(sender.ConnectionId);
        _world.ScheduleAfter(StreamPartitionResetAfter, new PartitionResetCheck(this, path, sender, sender.Epoch));
    }

    private void SetPartitioned(string from, string to, bool partitioned)
    {
        var path = Path(from, to);
        if (path.Partitioned == partitioned)
        {
            return;
        }

        path.Partitioned = partitioned;
        Trace(partitioned ? "net.partition" : "net.heal", 0, 0, $"{from}->{to}");
        if (!partitioned)
        {
            path.ResetArmedFor.Clear();
            ReleaseHeld(path);
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
            ReleaseHeld(path);
        }
    }

    private void ReleaseHeld(PathState path)
    {
        if (path.Clogged || path.Partitioned || path.Held.Count == 0)
        {
            return;
        }

        // Held bytes leave in their original order after a fresh latency, as retransmissions would.
        var held = path.Held.ToList();
        path.Held.Clear();
        foreach (var h in held)
        {
            var arrival = _world.NowTicks + path.Options.Latency.SampleTicks(_random);
            if (h.Kind == NetEventKind.Data)
            {
                arrival = Math.Max(arrival, h.Sender!.LastArrivalTicks);
                h.Sender.LastArrivalTicks = arrival;
                var e = _freeEvents.Count > 0 ? _freeEvents.Pop() : new NetEvent(this);
                e.Kind = NetEventKind.Data;
                e.Target = h.Target;
                e.Sender = h.Sender;
                e.Data = h.Data;
                e.Epoch = h.Epoch;
                _world.ScheduleAt(arrival, e);
            }
            else
            {
                ScheduleDatagram(arrival, h.Path!, h.Seq, h.Data);
            }
        }
    }

    private void DropHeldOf(PathState path, SimConnection sender)
    {
        for (var i = path.Held.Count - 1; i >= 0; i--)
        {
            var h = path.Held[i];
            if (ReferenceEquals(h.Sender, sender))
            {
                sender.QueuedBytes -= h.Data.Length;
                h.Data.Dispose();
                path.Held.RemoveAt(i);
            }
        }
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

    private void Recycle(NetEvent e)
    {
        e.Target = null;
        e.Sender = null;
        e.Path = null;
        e.Reason = null;
        e.Data = default;
        _freeEvents.Push(e);
    }

    private void Trace(string kind, long a, long b, string? text) => _world.Trace.Record(_world.NowTicks, kind, a, b, 0, text);

    private enum NetEventKind
    {
        Accept,
        Data,
        Closed,
        Datagram,
    }

    private sealed class PathState(string from, string to, PathOptions options)
    {
        public string From { get; } = from;

        public string To { get; } = to;

        public PathOptions Options { get; set; } = options;

        public bool HasOwnOptions { get; set; }

        public bool Partitioned { get; set; }

        public bool Clogged { get; set; }

        public long BusyUntilTicks { get; set; }

        public long DatagramSeq { get; set; }

        public long MaxDeliveredDatagramSeq { get; set; }

        public List<HeldEvent> Held { get; } = [];

        public HashSet<long> ResetArmedFor { get; } = [];
    }

    private sealed record HeldEvent(NetEventKind Kind, SimConnection? Target, SimConnection? Sender, Payload Data, int Epoch, PathState? Path, long Seq);

    private sealed class NetEvent(SimNetwork network) : IThreadPoolWorkItem
    {
        public NetEventKind Kind { get; set; }

        public SimConnection? Target { get; set; }

        public SimConnection? Sender { get; set; }

        public Payload Data { get; set; }

        public string? Reason { get; set; }

        public int Epoch { get; set; }

        public PathState? Path { get; set; }

        public long Seq { get; set; }

        public void Execute() => network.Run(this);
    }

    private sealed class PartitionResetCheck(SimNetwork network, PathState path, SimConnection sender, int epoch) : IThreadPoolWorkItem
    {
        public void Execute()
        {
            path.ResetArmedFor.Remove(sender.ConnectionId);
            if (path.Partitioned && sender.Epoch == epoch && !sender.IsClosedNotified)
            {
                network.DropHeldOf(path, sender);
                sender.Reset($"partitioned for {network.StreamPartitionResetAfter.TotalSeconds}s");
            }
        }
    }
}
