using System.Collections.Concurrent;
using System.Net;
using System.Net.Sockets;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using PlayHouse.Core.Codec;
using PlayHouse.Core.Mesh;
using PlayHouse.Core.Mesh.Proto;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;

namespace PlayHouse.Transport.Tcp;

/// <summary>Limits of a <see cref="TcpMeshTransport"/>.</summary>
public sealed record TcpMeshOptions
{
    /// <summary>Encoded bytes queued per peer (on the link, or held while it connects) before messages are dropped.</summary>
    public int SendQueueBytesMax { get; init; } = 8 * 1024 * 1024;

    public int ReceiveBufferBytes { get; init; } = 64 * 1024;

    /// <summary>The first wait after a failed connect; it doubles per failure up to <see cref="ReconnectBackoffMax"/>.</summary>
    public TimeSpan ReconnectBackoffMin { get; init; } = TimeSpan.FromMilliseconds(50);

    public TimeSpan ReconnectBackoffMax { get; init; } = TimeSpan.FromSeconds(2);

    public void Validate()
    {
        if (SendQueueBytesMax < 1024 || ReceiveBufferBytes < 256 || ReconnectBackoffMin <= TimeSpan.Zero || ReconnectBackoffMax < ReconnectBackoffMin)
        {
            throw new ArgumentException("TcpMeshOptions has a value out of range.");
        }
    }
}

/// <summary>
/// The server-to-server mesh over TCP for one node: identity-addressed (peers are registered by node id, or learned
/// from the first frame of a link a peer opened), one link per peer so messages to a peer stay in send order, each
/// message a mesh frame (<c>RouteHeader</c> protobuf plus payload). A lost link is reopened on the next send after a backoff; messages in flight on a broken
/// link are lost and their requests time out, as on PlayHouse's mesh. Messages sent while a link connects are held
/// (capped) and flushed in order once it is up; when the connect fails they are dropped and counted.
/// </summary>
/// <remarks>Thread-safe: <see cref="Send"/> may be called from any executor thread.</remarks>
public sealed class TcpMeshTransport : IMeshTransport, IDisposable
{
    private readonly ServerNode _node;
    private readonly ConcurrentDictionary<string, Peer> _peers = new(StringComparer.Ordinal);
    private readonly ConcurrentDictionary<MeshLink, byte> _inbound = new();
    private readonly UnfinishedSet<SocketConnection> _unfinished = new();
    private readonly ILogger _logger;
    private readonly Lock _gate = new();
    private Socket? _listenSocket;
    private SocketAsyncEventArgs? _acceptArgs;
    private volatile bool _disposed;
    private long _messagesSent;
    private long _messagesReceived;
    private long _messagesDropped;
    private long _connects;
    private long _connectFailures;

    public TcpMeshTransport(ServerNode node, TcpMeshOptions? options = null, ILogger? logger = null, TimeProvider? time = null)
    {
        ArgumentNullException.ThrowIfNull(node);
        _node = node;
        Options = options ?? new TcpMeshOptions();
        Options.Validate();
        Time = time ?? RealTime.System;
        _logger = logger ?? NullLogger.Instance;
    }

    public TcpMeshOptions Options { get; }

    public TimeProvider Time { get; }

    public string NodeId => _node.NodeId;

    /// <summary>Socket-level counters of every mesh link of this node, inbound and outbound.</summary>
    public TcpTransportCounters Counters { get; } = new();

    public IPEndPoint? LocalEndPoint { get; private set; }

    public long MessagesSent => Interlocked.Read(ref _messagesSent);

    public long MessagesReceived => Interlocked.Read(ref _messagesReceived);

    /// <summary>Messages dropped: the peer unreachable (connect failed or backing off), or its queue full (those are also refused, see <see cref="TrySend"/>).</summary>
    public long MessagesDropped => Interlocked.Read(ref _messagesDropped);

    /// <summary>Outbound links opened (the first connect and every reconnect).</summary>
    public long Connects => Interlocked.Read(ref _connects);

    public long ConnectFailures => Interlocked.Read(ref _connectFailures);

    /// <summary>Starts accepting inbound mesh links; port 0 lets the OS pick.</summary>
    public IPEndPoint Start(IPEndPoint bindTo)
    {
        ArgumentNullException.ThrowIfNull(bindTo);
        lock (_gate)
        {
            ObjectDisposedException.ThrowIf(_disposed, this);
            var socket = new Socket(bindTo.AddressFamily, SocketType.Stream, ProtocolType.Tcp);
            try
            {
                socket.Bind(bindTo);
                socket.Listen(128);
            }
            catch
            {
                socket.Dispose();
                throw;
            }

            _listenSocket = socket;
            LocalEndPoint = (IPEndPoint)socket.LocalEndPoint!;
            _acceptArgs = new SocketAsyncEventArgs(unsafeSuppressExecutionContextFlow: true);
            _acceptArgs.Completed += (_, args) =>
            {
                ProcessAccept(args);
                AcceptNext();
            };
        }

        AcceptNext();
        return LocalEndPoint!;
    }

    /// <summary>Registers (or moves) a peer; messages to <paramref name="nodeId"/> go to <paramref name="endPoint"/>.</summary>
    public void AddPeer(string nodeId, IPEndPoint endPoint)
    {
        ArgumentException.ThrowIfNullOrEmpty(nodeId);
        ArgumentNullException.ThrowIfNull(endPoint);
        var peer = _peers.GetOrAdd(nodeId, id => new Peer(this, id));
        peer.EndPoint = endPoint;
    }

    private void Learn(string nodeId, MeshLink link)
    {
        if (!string.Equals(nodeId, NodeId, StringComparison.Ordinal))
        {
            _peers.GetOrAdd(nodeId, id => new Peer(this, id)).Learn(link);
        }
    }

    /// <summary>True when a link to the peer is open now.</summary>
    public bool IsConnectedTo(string nodeId) => _peers.TryGetValue(nodeId, out var peer) && peer.IsConnected;

    /// <summary>Resets the outbound link to a peer (a fault for tests); the next send reconnects.</summary>
    public bool BreakLink(string nodeId) => _peers.TryGetValue(nodeId, out var peer) && peer.Break();

    public bool Send(string targetNodeId, in MeshMessage message) => TrySend(targetNodeId, message) != MeshSendResult.UnknownServer;

    /// <summary>
    /// Sends to a peer: <see cref="MeshSendResult.QueueFull"/> when its send queue (on the link, or held while it
    /// connects) is at <see cref="TcpMeshOptions.SendQueueBytesMax"/>, so the node fails the request at once. A message
    /// for a peer that cannot be reached now (backing off after a failed connect, its link just closed) is lost as in
    /// flight: counted, and its request times out.
    /// </summary>
    public MeshSendResult TrySend(string targetNodeId, in MeshMessage message)
    {
        if (_disposed)
        {
            // A stopped node's sends vanish, as a stopped process's would.
            message.Payload.DisposeIfOwner();
            return MeshSendResult.Sent;
        }

        if (!_peers.TryGetValue(targetNodeId, out var peer))
        {
            message.Payload.DisposeIfOwner();
            return MeshSendResult.UnknownServer;
        }

        try
        {
            return peer.Send(message);
        }
        finally
        {
            // The frame was copied (or dropped): the payload is ours to return either way.
            message.Payload.DisposeIfOwner();
        }
    }

    public void Dispose()
    {
        Socket? listen;
        lock (_gate)
        {
            if (_disposed)
            {
                return;
            }

            _disposed = true;
            listen = _listenSocket;
        }

        listen?.Dispose();
        foreach (var peer in _peers.Values)
        {
            peer.Stop();
        }

        foreach (var inbound in _inbound.Keys)
        {
            inbound.Close(SessionCloseReason.LocalClose, "mesh transport stopped");
        }
    }

    private void AcceptNext()
    {
        while (!_disposed)
        {
            var args = _acceptArgs!;
            args.AcceptSocket = null;
            bool pending;
            try
            {
                pending = _listenSocket!.AcceptAsync(args);
            }
            catch (ObjectDisposedException)
            {
                return;
            }

            if (pending)
            {
                return;
            }

            ProcessAccept(args);
        }
    }

    private void ProcessAccept(SocketAsyncEventArgs args)
    {
        try
        {
            if (args.SocketError != SocketError.Success)
            {
                if (!_disposed)
                {
                    Counters.AddAcceptError();
                }

                return;
            }

            var socket = args.AcceptSocket!;
            args.AcceptSocket = null;
            if (_disposed)
            {
                socket.Dispose();
                return;
            }

            socket.NoDelay = true;
            var inbound = new MeshLink(this, socket, accepted: true);
            _inbound.TryAdd(inbound, 0);
            _unfinished.Add(inbound);
            Counters.AddAccepted();
            inbound.Start();
        }
        catch (Exception e)
        {
            Counters.AddCallbackFault();
            _logger.LogError(e, "Accepting a mesh link on {NodeId} threw", NodeId);
        }
    }

    /// <summary>Completes once the transport is disposed and every link has returned its buffers.</summary>
    public Task WhenAllLinksFinished() => _unfinished.WhenAllFinished();

    private void OnLinkFinished(SocketConnection link) => _unfinished.Finished(link);

    private void Deliver(RouteHeader h, Payload payload)
    {
        Interlocked.Increment(ref _messagesReceived);
        if (_disposed)
        {
            payload.Dispose();
            return;
        }

        _node.OnMeshMessage(h.ToMessage(payload.Move("mesh-received")));
    }

    /// <summary>A mesh frame for the send queue, from a header filled under the peer's lock.</summary>
    private readonly struct MeshFrameWriter(RouteHeader header, Payload payload, int frameBytes) : IFrameWriter
    {
        public int FrameBytes { get; } = frameBytes;

        public void Write(Span<byte> destination) => MeshFrameCodec.Encode(destination, header, payload.Span);
    }

    /// <summary>One peer: its address, its outbound link, and messages held while the link connects.</summary>
    private sealed class Peer(TcpMeshTransport transport, string nodeId)
    {
        private readonly Lock _gate = new();
        private readonly RouteHeader _header = new();
        private MeshLink? _connection;
        private MeshLink? _learned;
        private bool _connecting;
        private bool _stopped;
        private Payload _held;
        private int _heldBytes;
        private int _heldMessages;
        private long _retryAfterTimestamp;
        private TimeSpan _backoff;

        public IPEndPoint? EndPoint { get; set; }

        public bool IsConnected
        {
            get
            {
                lock (_gate)
                {
                    return _connection is { IsClosed: false };
                }
            }
        }

        public MeshSendResult Send(in MeshMessage message)
        {
            // One lock per peer orders every send to it: frames are queued in the order Send was called.
            lock (_gate)
            {
                if (_stopped)
                {
                    return MeshSendResult.Sent;
                }

                _header.Fill(message);
                var frameBytes = MeshFrameCodec.GetEncodedLength(_header, message.Payload.Length);
                var writer = new MeshFrameWriter(_header, message.Payload, frameBytes);
                if (_connection is { IsClosed: false } open)
                {
                    return Enqueue(open, writer);
                }

                _connection = null;
                if (EndPoint is null)
                {
                    // A peer known only from a link it opened: answer over that link while it lasts.
                    if (_learned is { IsClosed: false } learned)
                    {
                        return Enqueue(learned, writer);
                    }

                    Interlocked.Increment(ref transport._messagesDropped);
                    return MeshSendResult.Sent;
                }

                if (!_connecting && transport.Time.GetTimestamp() < _retryAfterTimestamp)
                {
                    // Backing off after a failed connect: the peer is unreachable for now.
                    Interlocked.Increment(ref transport._messagesDropped);
                    return MeshSendResult.Sent;
                }

                if (!Hold(writer))
                {
                    // The frames held while the link connects are at the send queue's cap.
                    Interlocked.Increment(ref transport._messagesDropped);
                    return MeshSendResult.QueueFull;
                }

                Interlocked.Increment(ref transport._messagesSent);
                if (!_connecting)
                {
                    _connecting = true;
                    _ = ConnectAsync();
                }

                return MeshSendResult.Sent;
            }
        }

        private MeshSendResult Enqueue(MeshLink link, in MeshFrameWriter writer)
        {
            if (link.Enqueue(writer))
            {
                Interlocked.Increment(ref transport._messagesSent);
                return MeshSendResult.Sent;
            }

            // Refused: the link's send queue is at its cap, or the link closed meanwhile (then the message is lost
            // as in flight, and its request times out).
            Interlocked.Increment(ref transport._messagesDropped);
            return link.IsClosed ? MeshSendResult.Sent : MeshSendResult.QueueFull;
        }

        public void Learn(MeshLink link)
        {
            lock (_gate)
            {
                _learned = link;
            }
        }

        public bool Break()
        {
            MeshLink? connection;
            lock (_gate)
            {
                connection = _connection;
            }

            return connection?.Reset() ?? false;
        }

        public void Stop()
        {
            MeshLink? connection;
            lock (_gate)
            {
                _stopped = true;
                connection = _connection;
                _connection = null;
                ReleaseHeld();
            }

            connection?.Close(SessionCloseReason.LocalClose, "mesh transport stopped");
        }

        private bool Hold(in MeshFrameWriter writer)
        {
            var frameBytes = writer.FrameBytes;
            if (_heldBytes + (long)frameBytes > transport.Options.SendQueueBytesMax)
            {
                return false;
            }

            if (_held.IsEmpty || _held.Length - _heldBytes < frameBytes)
            {
                var grown = transport._node.Pool.Rent(Math.Max(_heldBytes + frameBytes, Math.Max(4096, _held.Length * 2)), "mesh-held");
                _held.Span[.._heldBytes].CopyTo(grown.WritableSpan);
                _held.Dispose();
                _held = grown;
            }

            writer.Write(_held.WritableSpan.Slice(_heldBytes, frameBytes));
            _heldBytes += frameBytes;
            _heldMessages++;
            return true;
        }

        private void ReleaseHeld()
        {
            Interlocked.Add(ref transport._messagesDropped, _heldMessages);
            Interlocked.Add(ref transport._messagesSent, -_heldMessages);
            _held.Dispose();
            _held = default;
            _heldBytes = 0;
            _heldMessages = 0;
        }

        private async Task ConnectAsync()
        {
            var endPoint = EndPoint!;
            var socket = new Socket(endPoint.AddressFamily, SocketType.Stream, ProtocolType.Tcp) { NoDelay = true };
            Exception? failure = null;
            try
            {
                await socket.ConnectAsync(endPoint).ConfigureAwait(false);
            }
            catch (Exception e)
            {
                failure = e;
            }

            MeshLink? stale = null;
            lock (_gate)
            {
                _connecting = false;
                if (failure is not null || _stopped)
                {
                    socket.Dispose();
                    if (failure is not null)
                    {
                        Interlocked.Increment(ref transport._connectFailures);
                        _backoff = _backoff == TimeSpan.Zero ? transport.Options.ReconnectBackoffMin : TimeSpan.FromTicks(Math.Min(_backoff.Ticks * 2, transport.Options.ReconnectBackoffMax.Ticks));
                        _retryAfterTimestamp = transport.Time.GetTimestamp() + (long)(_backoff.Ticks * (double)transport.Time.TimestampFrequency / TimeSpan.TicksPerSecond);
                        transport._logger.LogWarning("Mesh link {From} -> {To} ({EndPoint}) failed to connect: {Error}", transport.NodeId, nodeId, endPoint, failure.Message);
                    }

                    ReleaseHeld();
                    return;
                }

                _backoff = TimeSpan.Zero;
                Interlocked.Increment(ref transport._connects);
                var connection = new MeshLink(transport, socket, accepted: false);
                transport._unfinished.Add(connection);
                stale = _connection;
                _connection = connection;
                connection.Start();

                // Everything held while connecting goes first, in the order it was sent.
                if (_heldBytes > 0 && !connection.Enqueue(new RawBytesWriter(_held.Memory[.._heldBytes])))
                {
                    ReleaseHeld();
                }

                _held.Dispose();
                _held = default;
                _heldBytes = 0;
                _heldMessages = 0;
            }

            stale?.Close(SessionCloseReason.LocalClose, "replaced by a new link");
        }
    }

    /// <summary>
    /// A mesh link in either direction: it sends frames queued for its peer and decodes frames arriving from it. An
    /// accepted link learns its peer's identity from the first frame, so a server that was never told a peer's
    /// address can still answer it over the link the peer opened (as a ZeroMQ ROUTER socket does).
    /// </summary>
    private sealed class MeshLink : SocketConnection
    {
        private readonly TcpMeshTransport _transport;
        private readonly MeshFrameDecoder _decoder;
        private readonly RouteHeader _header = new();
        private readonly bool _accepted;
        private bool _learned;

        public MeshLink(TcpMeshTransport transport, Socket socket, bool accepted)
            : base(socket, transport._node.Pool, new ConnectionLimits(transport.Options.ReceiveBufferBytes, transport.Options.SendQueueBytesMax, 16 * 1024, transport._node.Executor), transport.Time, transport.Counters)
        {
            _transport = transport;
            _accepted = accepted;
            _decoder = new MeshFrameDecoder(transport._node.Pool, new MeshFrameOptions { PayloadOwner = "mesh-receive" }, transport._node.SenderIds);
        }

        public bool Enqueue<TWriter>(in TWriter writer)
            where TWriter : struct, IFrameWriter => TryEnqueue(writer);

        public bool Reset() => Close(SessionCloseReason.ConnectionReset, "link reset", abortive: true);

        protected override void OnReceived(ReadOnlySpan<byte> data)
        {
            try
            {
                while (_decoder.TryDecode(ref data, _header, out var payload))
                {
                    Counters.AddFramesReceived(1);
                    if (_accepted && !_learned && _header.From.Length > 0)
                    {
                        _learned = true;
                        _transport.Learn(_header.From, this);
                    }

                    _transport.Deliver(_header, payload);
                }
            }
            catch (FrameDecodeException e)
            {
                Counters.AddMalformed(e.Error);
                Close(SessionCloseReason.MalformedFrame, e.Message);
            }
        }

        protected override void OnEndOfStream()
        {
            try
            {
                _decoder.Complete();
            }
            catch (FrameDecodeException e)
            {
                Counters.AddMalformed(e.Error);
            }
        }

        protected override void OnReceiveEnded() => _decoder.Dispose();

        protected override void OnFinished()
        {
            if (_accepted)
            {
                _transport._inbound.TryRemove(this, out _);
            }

            _transport.OnLinkFinished(this);
        }
    }
}
