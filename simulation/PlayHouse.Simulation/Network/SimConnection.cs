namespace PlayHouse.Simulation.Network;

/// <summary>Receives bytes from a stream connection. The span is valid only during the call.</summary>
public delegate void StreamDataHandler(ReadOnlySpan<byte> data);

/// <summary>
/// The owner of a connection end called directly, without a delegate and closure in between: with 10,000 clients
/// every delivery would otherwise touch two more cold objects.
/// </summary>
internal interface IStreamReceiver : IPrefetchParts
{
    void OnStreamData(SimConnection connection, ReadOnlySpan<byte> data);

    void OnStreamClosed(SimConnection connection, string reason);
}

/// <summary>
/// One end of a simulated stream connection. Bytes arrive at the other end in order, possibly split into
/// chunks at any offset, or the connection breaks and both ends hear <see cref="Closed"/> exactly once.
/// </summary>
/// <remarks>Not thread-safe; used on the simulation thread.</remarks>
public sealed class SimConnection
{
    private readonly SimNetwork _network;
    private bool _closeScheduled;
    private StreamDataHandler? _received;
    private Action<string>? _closed;
    private IStreamReceiver? _receiver;
    private SimConnection? _peer;
    private bool _closedNotified;

    internal SimConnection(SimNetwork network, long connectionId, string localEndpoint, string remoteEndpoint, PathState outboundPath)
    {
        _network = network;
        ConnectionId = connectionId;
        LocalEndpoint = localEndpoint;
        RemoteEndpoint = remoteEndpoint;
        Outbound = new StreamDirection(this, outboundPath);
    }

    public long ConnectionId { get; }

    public string LocalEndpoint { get; }

    public string RemoteEndpoint { get; }

    /// <summary>True until this end closed, was reset, or heard that the peer closed.</summary>
    public bool IsOpen { get; private set; } = true;

    /// <summary>Bytes sent from this end and not yet delivered (the send queue the path's cap applies to).</summary>
    public int QueuedBytes
    {
        get => Outbound.QueuedBytes;
        internal set => Outbound.QueuedBytes = value;
    }

    /// <summary>The reason this end closed, once it has.</summary>
    public string? CloseReason { get; private set; }

    /// <summary>Called with each chunk of bytes that arrives at this end. Setting it replaces a receiver set with <see cref="SetReceiver"/>.</summary>
    public StreamDataHandler? Received
    {
        get => _received;
        set
        {
            _received = value;
            _receiver = null;
        }
    }

    /// <summary>Called once when the connection closes or breaks (not for a local <see cref="Close"/>). Setting it replaces a receiver set with <see cref="SetReceiver"/>.</summary>
    public Action<string>? Closed
    {
        get => _closed;
        set
        {
            _closed = value;
            _receiver = null;
        }
    }

    internal SimConnection? Peer
    {
        get => _peer;
        set
        {
            _peer = value;
            Outbound.Target = value;
            Outbound.TargetClosedNotified = value is { IsClosedNotified: true };
        }
    }

    /// <summary>The network this end belongs to.</summary>
    internal SimNetwork Network => _network;

    /// <summary>What this end has sent and its peer has not yet received.</summary>
    internal StreamDirection Outbound { get; }

    internal bool IsAccepted { get; set; }

    /// <summary>True once this end closed locally or heard the close or reset it will ever hear.</summary>
    internal bool IsClosedNotified
    {
        get => _closedNotified;
        private set
        {
            _closedNotified = value;

            // The peer's direction towards this end keeps a copy, so a send need not touch this (cold) end.
            if (_peer is not null)
            {
                _peer.Outbound.TargetClosedNotified = value;
            }
        }
    }

    /// <summary>True once nothing more can happen to this end: it closed, heard the close, or has a reset on its way.</summary>
    internal bool IsFinished => IsClosedNotified || _closeScheduled;

    /// <summary>Queues bytes for the peer; false when closed or when the send queue would pass its cap.</summary>
    public bool Send(ReadOnlySpan<byte> bytes)
    {
        if (!IsOpen || Peer is null)
        {
            return false;
        }

        return bytes.IsEmpty || _network.StreamSend(this, bytes);
    }

    /// <summary>Closes gracefully: bytes already sent still arrive, then the peer hears the close.</summary>
    public void Close(string reason)
    {
        if (!IsOpen)
        {
            return;
        }

        CloseReason = reason;
        MarkClosed();
        IsClosedNotified = true;
        if (Peer is not null)
        {
            _network.StreamClose(this, reason);
        }
    }

    /// <summary>
    /// Breaks the connection at once: bytes in flight either way are lost and both ends hear the reset (an end
    /// that closed itself hears nothing). Resetting a connection that is already broken or closed does nothing.
    /// </summary>
    public void Reset(string reason) => _network.StreamReset(this, reason);

    public override string ToString() => $"Conn#{ConnectionId}({LocalEndpoint}->{RemoteEndpoint}{(IsOpen ? string.Empty : ", closed")})";

    internal void MarkClosed() => IsOpen = false;

    internal bool TryScheduleClose()
    {
        if (_closeScheduled || IsClosedNotified)
        {
            return false;
        }

        _closeScheduled = true;
        return true;
    }

    internal void NotifyClosed(string reason)
    {
        if (IsClosedNotified)
        {
            return;
        }

        IsClosedNotified = true;
        CloseReason ??= reason;
        MarkClosed();
        if (_receiver is not null)
        {
            _receiver.OnStreamClosed(this, reason);
            return;
        }

        _closed?.Invoke(reason);
    }

    /// <summary>The owner called directly on each delivery (null when delegates receive instead).</summary>
    internal IStreamReceiver? Receiver => _receiver;

    /// <summary>Hands this end's data and close to <paramref name="receiver"/> instead of the delegates (which it clears).</summary>
    internal void SetReceiver(IStreamReceiver receiver)
    {
        _received = null;
        _closed = null;
        _receiver = receiver;
    }

    internal void Deliver(ReadOnlySpan<byte> data)
    {
        var receiver = _receiver;
        if (receiver is not null)
        {
            // Every round trip delivers to both a client and a server session: a call site with two receiver classes
            // in turn defeats both the JIT's guess and the dispatch cache, so each sealed class gets a direct call.
            if (receiver is Clients.SimClient client)
            {
                ((IStreamReceiver)client).OnStreamData(this, data);
            }
            else if (receiver is Cluster.SimSessionConnection session)
            {
                session.OnStreamData(data);
            }
            else
            {
                receiver.OnStreamData(this, data);
            }

            return;
        }

        _received?.Invoke(data);
    }
}
