using PlayHouse.Core.Codec;
using PlayHouse.Core.Mesh;
using PlayHouse.Core.Mesh.Proto;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;
using PlayHouse.Simulation.Network;

namespace PlayHouse.Simulation.Cluster;

/// <summary>How mesh messages cross the simulated network.</summary>
public enum MeshSemantics
{
    /// <summary>One ordered stream per peer, as PlayHouse's mesh: in order, or the link breaks and reconnects.</summary>
    Stream,

    /// <summary>Each message is a datagram: it may be lost, duplicated or reordered (a fault mode for exploring).</summary>
    Datagram,
}

/// <summary>
/// Watches the messages of the simulated mesh as they leave and reach each node (checkers that judge traffic between
/// servers, which the runtime's own observer hooks do not see as messages).
/// </summary>
/// <remarks>Called on the simulation thread, from inside the transports.</remarks>
public interface IMeshTrafficObserver
{
    /// <summary>Node <paramref name="nodeId"/> hands <paramref name="message"/> to the mesh for <paramref name="targetNodeId"/>.</summary>
    void OnMeshSent(string nodeId, string targetNodeId, in MeshMessage message);

    /// <summary>A message reached node <paramref name="nodeId"/> over the mesh, decoded, just before the node handles it.</summary>
    void OnMeshDelivered(string nodeId, in MeshMessage message);
}

/// <summary>
/// The simulation's mesh transport for one node: every message is encoded as a real mesh frame
/// (<c>RouteHeader</c> protobuf plus payload) and crosses the <see cref="SimNetwork"/> as bytes, so framing and
/// header bugs can show. One outbound stream per peer keeps per-peer order; a broken link is reopened on the
/// next send (messages in flight on it are lost, and their requests time out). Each link's send queue is capped
/// (<see cref="IStreamSendQueue"/>, standard: <see cref="ConnectionSendQueue"/>): a message past the cap, towards a slow
/// or clogged peer, is refused (<see cref="MeshSendResult.QueueFull"/>), so its request fails at once.
/// </summary>
/// <remarks>Not thread-safe; runs on the simulation thread.</remarks>
public sealed class SimMeshTransport : IMeshTransport, IDisposable
{
    private readonly SimNetwork _network;
    private readonly ServerNode _node;
    private readonly Func<string, bool> _isKnownNode;
    private readonly MeshSemantics _semantics;
    private readonly Func<SimNetwork, SimConnection, IStreamSendQueue> _sendQueues;
    private readonly Dictionary<string, (SimConnection Connection, IStreamSendQueue Queue)> _outbound = new(StringComparer.Ordinal);
    private readonly List<(SimConnection Connection, MeshFrameDecoder Decoder)> _inbound = [];

    // The node the frame being delivered truly came from (the network knows it), to compare with what the header says.
    private string _trueSender = string.Empty;
    private readonly RouteHeader _sendHeader = new();
    private readonly RouteHeader _receiveHeader = new();
    private byte[] _scratch = new byte[4096];
    private bool _disposed;

    // The peer of the last send, its endpoint and its link: a node mostly sends to the peer it sent to last, so a
    // send neither builds the endpoint string again nor hashes it to find the link (both were per message).
    private string? _lastTargetNodeId;
    private string _lastTarget = string.Empty;
    private (SimConnection Connection, IStreamSendQueue Queue) _lastOutbound;

    /// <param name="network">The network the links cross.</param>
    /// <param name="node">The node this transport serves.</param>
    /// <param name="isKnownNode">Whether a node id names a server of the cluster.</param>
    /// <param name="semantics">Streams (ordered links) or datagrams.</param>
    /// <param name="sendQueues">Makes each outbound link's send queue; null: the connection's own, capped by its path.</param>
    public SimMeshTransport(SimNetwork network, ServerNode node, Func<string, bool> isKnownNode, MeshSemantics semantics = MeshSemantics.Stream, Func<SimNetwork, SimConnection, IStreamSendQueue>? sendQueues = null)
    {
        _network = network;
        _node = node;
        _isKnownNode = isKnownNode;
        _semantics = semantics;
        _sendQueues = sendQueues ?? (static (_, connection) => new ConnectionSendQueue(connection, int.MaxValue));
        Endpoint = EndpointOf(node.NodeId);
        if (semantics == MeshSemantics.Stream)
        {
            network.Listen(Endpoint, Accept);
        }
        else
        {
            network.Bind(Endpoint, OnDatagram);
        }
    }

    public string Endpoint { get; }

    /// <summary>Hears every message this transport sends and delivers, or null (set by the cluster).</summary>
    public IMeshTrafficObserver? Traffic { get; set; }

    /// <summary>Messages dropped because the link's send queue was full.</summary>
    public long SendsRefused { get; private set; }

    /// <summary>Messages handed to a link that had just broken: lost as in flight.</summary>
    public long SendsLost { get; private set; }

    /// <summary>The most bytes any link's send queue held (after a send), for the queue-cap checker.</summary>
    public int SendQueueHighWaterBytes { get; private set; }

    /// <summary>Frames that failed to decode (the link was reset).</summary>
    public long FramesRejected { get; private set; }

    /// <summary>
    /// Called when a frame's sender id, as the node's decoder resolved it, is not the node that sent it (with this
    /// node's id, the true sender and the recorded one): replies to it would go to the wrong server (B4).
    /// </summary>
    public Action<string, string, string>? WrongSender { get; set; }

    /// <summary>Frames whose recorded sender was not their true sender.</summary>
    public long WrongSenders { get; private set; }

    /// <summary>
    /// Frames encoded, and the bytes the encoding itself allocated on the simulation thread (read from
    /// <see cref="GC.GetAllocatedBytesForCurrentThread"/> around each encode: no clock, nothing that reaches the trace),
    /// and how many encodes allocated at all. The standard header writer allocates nothing, so both stay 0.
    /// </summary>
    public long FramesEncoded { get; private set; }

    /// <inheritdoc cref="FramesEncoded"/>
    public long EncodeAllocatedBytes { get; private set; }

    /// <inheritdoc cref="FramesEncoded"/>
    public long EncodesThatAllocated { get; private set; }

    /// <summary>Messages sent and received.</summary>
    public long MessagesSent { get; private set; }

    public long MessagesReceived { get; private set; }

    public static string EndpointOf(string nodeId) => "mesh:" + nodeId;

    /// <summary>The node id of a mesh endpoint (<see cref="EndpointOf"/> backwards).</summary>
    public static string NodeIdOf(string endpoint) =>
        endpoint.StartsWith("mesh:", StringComparison.Ordinal) ? endpoint["mesh:".Length..] : endpoint;

    public bool Send(string targetNodeId, in MeshMessage message) => TrySend(targetNodeId, message) != MeshSendResult.UnknownServer;

    public MeshSendResult TrySend(string targetNodeId, in MeshMessage message)
    {
        if (_disposed)
        {
            // A stopped node's sends vanish, as a crashed process's would.
            message.Payload.DisposeIfOwner();
            return MeshSendResult.Sent;
        }

        if (!_isKnownNode(targetNodeId))
        {
            message.Payload.DisposeIfOwner();
            return MeshSendResult.UnknownServer;
        }

        try
        {
            Traffic?.OnMeshSent(_node.NodeId, targetNodeId, message);
            var length = Encode(message);
            var target = TargetEndpoint(targetNodeId);
            if (_semantics == MeshSemantics.Datagram)
            {
                MessagesSent++;
                _network.SendDatagram(Endpoint, target, _scratch.AsSpan(0, length));
                return MeshSendResult.Sent;
            }

            var (connection, queue) = Outbound(target);
            var queued = queue.TrySend(_scratch.AsSpan(0, length));
            SendQueueHighWaterBytes = Math.Max(SendQueueHighWaterBytes, queue.QueuedBytes);
            if (queued)
            {
                MessagesSent++;
                return MeshSendResult.Sent;
            }

            if (!connection.IsOpen)
            {
                // The link just broke: the message is lost as on a real socket, and its request times out.
                SendsLost++;
                return MeshSendResult.Sent;
            }

            // The link's send queue is at its cap (a slow or clogged peer): refused, so the node fails its request now.
            SendsRefused++;
            return MeshSendResult.QueueFull;
        }
        finally
        {
            message.Payload.DisposeIfOwner();
        }
    }

    /// <summary>Stops sending and receiving at once, without closing links: a crash, whose links the network resets.</summary>
    public void Kill()
    {
        _disposed = true;
        foreach (var (_, decoder) in _inbound)
        {
            decoder.Dispose();
        }

        _inbound.Clear();
        _outbound.Clear();
        _lastOutbound = default;
    }

    /// <summary>Closes every link (a crash resets them through the network instead).</summary>
    public void Dispose()
    {
        if (_disposed)
        {
            return;
        }

        _disposed = true;
        if (_semantics == MeshSemantics.Stream)
        {
            _network.StopListening(Endpoint);
        }
        else
        {
            _network.Unbind(Endpoint);
        }

        foreach (var (connection, _) in _outbound.Values.OrderBy(c => c.Connection.ConnectionId).ToList())
        {
            connection.Close("node stopped");
        }

        foreach (var (connection, decoder) in _inbound.ToList())
        {
            connection.Close("node stopped");
            decoder.Dispose();
        }

        _inbound.Clear();
        _outbound.Clear();
        _lastOutbound = default;
    }

    private string TargetEndpoint(string targetNodeId)
    {
        if (!string.Equals(targetNodeId, _lastTargetNodeId, StringComparison.Ordinal))
        {
            // Another peer: the cached link belongs to the old one.
            _lastTargetNodeId = targetNodeId;
            _lastTarget = EndpointOf(targetNodeId);
            _lastOutbound = default;
        }

        return _lastTarget;
    }

    private (SimConnection Connection, IStreamSendQueue Queue) Outbound(string target)
    {
        // The cached link is the one the table holds while it is open: a new link replaces an entry only once the
        // old one has closed, and is cached below.
        if (ReferenceEquals(target, _lastTarget) && _lastOutbound.Connection is { IsOpen: true })
        {
            return _lastOutbound;
        }

        if (_outbound.TryGetValue(target, out var existing) && existing.Connection.IsOpen)
        {
            if (ReferenceEquals(target, _lastTarget))
            {
                _lastOutbound = existing;
            }

            return existing;
        }

        return Connect(target);
    }

    // Apart from Outbound: the close handler's closure captures the target, and a closure over a parameter is
    // allocated when its method is entered, so in Outbound it was allocated by every send.
    private (SimConnection Connection, IStreamSendQueue Queue) Connect(string target)
    {
        var connection = _network.Connect(Endpoint, target);
        connection.Received = _ => { };
        connection.Closed = _ =>
        {
            if (_outbound.TryGetValue(target, out var current) && ReferenceEquals(current.Connection, connection))
            {
                _outbound.Remove(target);
            }
        };
        var link = (connection, _sendQueues(_network, connection));
        _outbound[target] = link;
        if (ReferenceEquals(target, _lastTarget))
        {
            _lastOutbound = link;
        }

        return link;
    }

    private void Accept(SimConnection connection)
    {
        var decoder = new MeshFrameDecoder(_node.Pool, senderIds: _node.SenderIds);
        var entry = (connection, decoder);
        _inbound.Add(entry);
        var sender = NodeIdOf(connection.RemoteEndpoint);
        connection.Received = data => OnStreamData(connection, decoder, sender, data);
        connection.Closed = _ =>
        {
            _inbound.Remove(entry);
            decoder.Dispose();
        };
    }

    private void OnStreamData(SimConnection connection, MeshFrameDecoder decoder, string sender, ReadOnlySpan<byte> data)
    {
        _trueSender = sender;
        try
        {
            while (decoder.TryDecode(ref data, _receiveHeader, out var payload))
            {
                Deliver(payload);
            }
        }
        catch (FrameDecodeException ex)
        {
            FramesRejected++;
            connection.Reset($"mesh frame rejected: {ex.Error}");
        }
    }

    private void OnDatagram(string from, ReadOnlySpan<byte> datagram)
    {
        try
        {
            _trueSender = NodeIdOf(from);
            if (MeshFrameCodec.TryDecode(datagram, _receiveHeader, _node.Pool, out var payload, out _, senderIds: _node.SenderIds))
            {
                Deliver(payload);
            }
            else
            {
                FramesRejected++;
            }
        }
        catch (FrameDecodeException)
        {
            FramesRejected++;
        }
    }

    private void Deliver(Payload payload)
    {
        if (_disposed)
        {
            payload.Dispose();
            return;
        }

        MessagesReceived++;
        var recorded = _receiveHeader.From;
        if (!string.Equals(recorded, _trueSender, StringComparison.Ordinal))
        {
            WrongSenders++;
            WrongSender?.Invoke(_node.NodeId, _trueSender, recorded);
        }

        var message = _receiveHeader.ToMessage(payload.Move("mesh-received"));
        Traffic?.OnMeshDelivered(_node.NodeId, message);
        _node.OnMeshMessage(message);
    }

    private int Encode(in MeshMessage message)
    {
        var h = _sendHeader;
        h.Fill(message);
        var length = MeshFrameCodec.GetEncodedLength(h, message.Payload.Length);
        if (_scratch.Length < length)
        {
            _scratch = new byte[Math.Max(length, _scratch.Length * 2)];
        }

        // Only the codec's work is measured: the scratch growth above is this transport's, once per larger frame.
        var before = GC.GetAllocatedBytesForCurrentThread();
        var written = MeshFrameCodec.Encode(_scratch, h, message.Payload.Span, _node.Parts.MeshHeaderWriter);
        var allocated = GC.GetAllocatedBytesForCurrentThread() - before;
        FramesEncoded++;
        if (allocated > 0)
        {
            EncodeAllocatedBytes += allocated;
            EncodesThatAllocated++;
        }

        return written;
    }
}
