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
/// The simulation's mesh transport for one node: every message is encoded as a real mesh frame
/// (<c>RouteHeader</c> protobuf plus payload) and crosses the <see cref="SimNetwork"/> as bytes, so framing and
/// header bugs can show. One outbound stream per peer keeps per-peer order; a broken link is reopened on the
/// next send (messages in flight on it are lost, and their requests time out).
/// </summary>
/// <remarks>Not thread-safe; runs on the simulation thread.</remarks>
public sealed class SimMeshTransport : IMeshTransport, IDisposable
{
    private readonly SimNetwork _network;
    private readonly ServerNode _node;
    private readonly Func<string, bool> _isKnownNode;
    private readonly MeshSemantics _semantics;
    private readonly Dictionary<string, SimConnection> _outbound = new(StringComparer.Ordinal);
    private readonly List<(SimConnection Connection, MeshFrameDecoder Decoder)> _inbound = [];
    private readonly RouteHeader _sendHeader = new();
    private readonly RouteHeader _receiveHeader = new();
    private byte[] _scratch = new byte[4096];
    private bool _disposed;

    public SimMeshTransport(SimNetwork network, ServerNode node, Func<string, bool> isKnownNode, MeshSemantics semantics = MeshSemantics.Stream)
    {
        _network = network;
        _node = node;
        _isKnownNode = isKnownNode;
        _semantics = semantics;
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

    /// <summary>Messages dropped because the link's send queue was full.</summary>
    public long SendsRefused { get; private set; }

    /// <summary>Frames that failed to decode (the link was reset).</summary>
    public long FramesRejected { get; private set; }

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

    public bool Send(string targetNodeId, in MeshMessage message)
    {
        if (_disposed)
        {
            // A stopped node's sends vanish, as a crashed process's would.
            message.Payload.DisposeIfOwner();
            return true;
        }

        if (!_isKnownNode(targetNodeId))
        {
            message.Payload.DisposeIfOwner();
            return false;
        }

        try
        {
            var length = Encode(message);
            MessagesSent++;
            var target = EndpointOf(targetNodeId);
            if (_semantics == MeshSemantics.Datagram)
            {
                _network.SendDatagram(Endpoint, target, _scratch.AsSpan(0, length));
                return true;
            }

            var connection = Outbound(target);
            if (!connection.Send(_scratch.AsSpan(0, length)))
            {
                // The link's queue is full or it just broke: the message is lost, as on a real socket.
                SendsRefused++;
            }

            return true;
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

        foreach (var connection in _outbound.Values.OrderBy(c => c.ConnectionId).ToList())
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
    }

    private SimConnection Outbound(string target)
    {
        if (_outbound.TryGetValue(target, out var existing) && existing.IsOpen)
        {
            return existing;
        }

        var connection = _network.Connect(Endpoint, target);
        connection.Received = _ => { };
        connection.Closed = _ =>
        {
            if (_outbound.TryGetValue(target, out var current) && ReferenceEquals(current, connection))
            {
                _outbound.Remove(target);
            }
        };
        _outbound[target] = connection;
        return connection;
    }

    private void Accept(SimConnection connection)
    {
        var decoder = new MeshFrameDecoder(_node.Pool);
        var entry = (connection, decoder);
        _inbound.Add(entry);
        connection.Received = data => OnStreamData(connection, decoder, data);
        connection.Closed = _ =>
        {
            _inbound.Remove(entry);
            decoder.Dispose();
        };
    }

    private void OnStreamData(SimConnection connection, MeshFrameDecoder decoder, ReadOnlySpan<byte> data)
    {
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
            if (MeshFrameCodec.TryDecode(datagram, _receiveHeader, _node.Pool, out var payload, out _))
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
        _node.OnMeshMessage(_receiveHeader.ToMessage(payload.Move("mesh-received")));
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
