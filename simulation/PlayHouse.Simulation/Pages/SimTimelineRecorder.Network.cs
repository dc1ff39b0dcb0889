namespace PlayHouse.Simulation.Pages;

/// <summary>
/// The network's part of <see cref="SimTimelineRecorder"/>: stream sends matched to their deliveries byte for byte
/// (each direction is FIFO), losses, resets, partitions and clogs as fault windows, datagrams by sequence number.
/// </summary>
public sealed partial class SimTimelineRecorder
{
    private void OnNetwork(in TraceRecord record)
    {
        var t = record.TimeTicks;
        switch (record.Kind)
        {
            case "net.connect":
                {
                    var (from, to) = Route(record.Text);
                    var client = Connect(record.A, from, to);
                    var server = Connect(record.B, to, from);
                    client.PeerId = record.B;
                    server.PeerId = record.A;
                    _builder.Instant(client.PathLane, t, "connect", $"connect {from} -> {to}", Fields(record, "clientConnection", "serverConnection", "-", "route"));
                    break;
                }

            case "net.refused":
                {
                    var (from, to) = Route(record.Text);
                    var client = Connect(record.A, from, to);
                    _builder.Instant(client.PathLane, t, "reset", $"refused {from} -> {to}", Fields(record, "connection", "-", "-", "route"));
                    break;
                }

            case "net.send":
                if (_connections.TryGetValue(record.A, out var sender))
                {
                    var message = Send(sender, t, (int)record.B);
                    sender.Outbound.Enqueue(new InFlight(message, record.B));
                }

                break;
            case "net.deliver":
                if (_connections.TryGetValue(record.A, out var target) && _connections.TryGetValue(target.PeerId, out var source))
                {
                    Consume(source, record.B, t, lostReason: null);
                }

                break;
            case "net.discard":
                if (_connections.TryGetValue(record.A, out var discarder))
                {
                    if (discarder.SkipNextDiscard)
                    {
                        // The send that a loss reset took, already drawn as lost.
                        discarder.SkipNextDiscard = false;
                    }
                    else if (discarder.Outbound.Count == 0)
                    {
                        // Sent after the peer had closed: the bytes left and nobody will read them (no send record came first).
                        _builder.Lose(Send(discarder, t, (int)record.B), t, "discarded: the peer had closed");
                    }
                    else
                    {
                        Consume(discarder, record.B, t, "discarded: the connection closed or broke");
                    }
                }

                break;
            case "net.loss-reset":
                if (_connections.TryGetValue(record.A, out var lossy))
                {
                    _builder.Lose(Send(lossy, t, (int)record.B), t, "lost: the loss reset the connection");
                    lossy.SkipNextDiscard = true;
                    _builder.Fault("reset", t, t, [lossy.PathLane, lossy.LocalLane], "segment lost: connection reset");
                }

                break;
            case "net.reset":
                if (_connections.TryGetValue(record.A, out var reset))
                {
                    _builder.Fault("reset", t, t, [reset.PathLane, reset.LocalLane, reset.RemoteLane], "reset: " + record.Text);
                    _builder.Instant(reset.PathLane, t, "reset", "reset " + record.Text, Fields(record, "connection", "-", "-", "reason"));
                }

                break;
            case "net.partition":
            case "net.heal":
            case "net.clog":
            case "net.unclog":
                OnPathFault(record);
                break;
            case "net.dgram-send":
                {
                    var (from, to) = Route(record.Text);
                    var message = _builder.Send(EndpointLane(from), EndpointLane(to), t, "datagram", (int)record.B);
                    _datagrams[record.A] = message;
                    _builder.Instant(PathLane(from, to), t, "datagram", $"datagram #{record.A} sent", Fields(record, "seq", "bytes", "-", "route"));
                    break;
                }

            case "net.dgram-deliver":
            case "net.dgram-drop":
                if (_datagrams.TryGetValue(record.A, out var datagram))
                {
                    if (datagram.DeliveredTicks is not null || datagram.LostReason is not null)
                    {
                        // A duplicate: one more arrow for the copy.
                        datagram = _builder.Send(datagram.From, datagram.To, datagram.SentTicks, "datagram copy", datagram.Bytes);
                    }

                    if (record.Kind == "net.dgram-deliver")
                    {
                        _builder.Deliver(datagram, t);
                    }
                    else
                    {
                        _builder.Lose(datagram, t, "datagram dropped (" + record.Text + ")");
                    }
                }

                break;
            default:
                OnNetworkEvent(record);
                break;
        }
    }

    /// <summary>Network records drawn as events on their path: accept, close, hold, retransmit, refuse, and the network's options.</summary>
    private void OnNetworkEvent(in TraceRecord record)
    {
        var t = record.TimeTicks;
        var name = record.Kind["net.".Length..];
        if (record.Kind is "net.defaults" or "net.path")
        {
            _builder.Instant(RunLane(), t, "config", record.Kind + " " + record.Text, Fields(record, "-", "-", "-", "options"));
            return;
        }

        if (record.Kind.StartsWith("net.dgram-", StringComparison.Ordinal) && record.Text is { } route && route.Contains("->", StringComparison.Ordinal))
        {
            var (from, to) = Route(route);
            _builder.Instant(PathLane(from, to), t, "datagram", $"{name} #{record.A}", Fields(record, "seq", "bytes", "-", "route"));
            return;
        }

        var lane = _connections.TryGetValue(record.A, out var connection) ? connection.PathLane : RunLane();
        var kind = record.Kind is "net.retransmit" or "net.hold" or "net.refuse" ? "stall" : "network";
        _builder.Instant(lane, t, kind, record.Text is null ? name : $"{name} {record.Text}", Fields(record, "connection", "bytes", "-", "reason"));
    }

    private void OnPathFault(in TraceRecord record)
    {
        var t = record.TimeTicks;
        var (from, to) = Route(record.Text);
        var path = PathLane(from, to);
        var partition = record.Kind is "net.partition" or "net.heal";
        var windows = partition ? _partitions : _stalls;
        if (record.Kind is "net.partition" or "net.clog")
        {
            windows.TryAdd(path, new OpenWindow(partition ? "partition" : "stall", t, [path, EndpointLane(from), EndpointLane(to)], $"{(partition ? "partition" : "clog")} {from} -> {to}"));
        }
        else if (windows.Remove(path, out var window))
        {
            _builder.Fault(window.Kind, window.StartTicks, t, window.Lanes, window.Label);
        }
    }

    private TimelineMessage Send(Connection sender, long t, int bytes)
    {
        var frame = sender.PendingFrame;
        sender.PendingFrame = null;
        if (frame is not null)
        {
            DecodedMessages++;
        }

        var message = _builder.Send(sender.LocalLane, sender.RemoteLane, t, sender.Protocol == FrameProtocol.Mesh ? "mesh" : "stream", bytes, frame);
        if (frame is { StageId: > 0 } && sender.Protocol is FrameProtocol.ClientToServer or FrameProtocol.ServerToClient)
        {
            _stageTargets.Add((message, frame.StageId, sender.Protocol == FrameProtocol.ClientToServer));
        }

        return message;
    }

    /// <summary>Takes <paramref name="bytes"/> off the front of a direction; each send whose last byte goes arrives (or is lost) now.</summary>
    private void Consume(Connection sender, long bytes, long t, string? lostReason)
    {
        var queue = sender.Outbound;
        while (bytes > 0 && queue.Count > 0)
        {
            var head = queue.Peek();
            var taken = Math.Min(bytes, head.RemainingBytes);
            bytes -= taken;
            head.RemainingBytes -= taken;
            if (head.RemainingBytes > 0)
            {
                break;
            }

            queue.Dequeue();
            if (lostReason is null)
            {
                _builder.Deliver(head.Message, t);
            }
            else
            {
                _builder.Lose(head.Message, t, lostReason);
            }
        }
    }

    private Connection Connect(long id, string local, string remote)
    {
        if (_connections.TryGetValue(id, out var known))
        {
            return known;
        }

        var protocol = ProtocolOf(local, remote);
        var connection = new Connection(EndpointLane(local), EndpointLane(remote), PathLane(local, remote), protocol)
        {
            Tap = protocol == FrameProtocol.None ? null : new FrameTap(protocol, _pool, _msgIds),
        };
        _connections.Add(id, connection);
        return connection;
    }

    private static FrameProtocol ProtocolOf(string local, string remote) =>
        local.StartsWith("mesh:", StringComparison.Ordinal) && remote.StartsWith("mesh:", StringComparison.Ordinal) ? FrameProtocol.Mesh
        : remote.StartsWith("play:", StringComparison.Ordinal) ? FrameProtocol.ClientToServer
        : local.StartsWith("play:", StringComparison.Ordinal) ? FrameProtocol.ServerToClient
        : FrameProtocol.None;

    /// <summary>One end of a stream connection: its lanes, its sends in flight (FIFO), and its frame decoder.</summary>
    private sealed class Connection(int localLane, int remoteLane, int pathLane, FrameProtocol protocol)
    {
        public int LocalLane { get; } = localLane;

        public int RemoteLane { get; } = remoteLane;

        public int PathLane { get; } = pathLane;

        public FrameProtocol Protocol { get; } = protocol;

        public long PeerId { get; set; } = -1;

        public Queue<InFlight> Outbound { get; } = new();

        public FrameTap? Tap { get; init; }

        /// <summary>The frames of the send the network is taking now; its trace record comes next.</summary>
        public MessageFrame? PendingFrame { get; set; }

        /// <summary>A loss reset drew its send as lost; the discard record that follows is that same send.</summary>
        public bool SkipNextDiscard { get; set; }
    }

    private sealed class InFlight(TimelineMessage message, long bytes)
    {
        public TimelineMessage Message { get; } = message;

        public long RemainingBytes { get; set; } = bytes;
    }
}
