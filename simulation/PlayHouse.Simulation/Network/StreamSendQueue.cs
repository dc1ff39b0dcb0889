namespace PlayHouse.Simulation.Network;

/// <summary>
/// The send queue of one end of a stream connection as its owner (a client session, a mesh link) uses it: the bytes
/// the owner handed over for its peer that the peer has not received yet. Its cap is what bounds the owner's memory
/// when the peer reads slowly or its path is clogged.
/// </summary>
/// <remarks>Not thread-safe; used on the simulation thread.</remarks>
public interface IStreamSendQueue
{
    /// <summary>Bytes handed over and not yet delivered.</summary>
    int QueuedBytes { get; }

    /// <summary>Queues bytes for the peer; false when they are refused (the queue is at its cap, or the connection closed).</summary>
    bool TrySend(ReadOnlySpan<byte> bytes);
}

/// <summary>
/// Makes the send queue of a connection end with the cap configured for it (<see cref="int.MaxValue"/>: none beyond
/// the path's own <see cref="PathOptions.QueueCapacityBytes"/>). <see cref="Cluster.SimClusterBuilder"/> takes one for
/// client sessions and one for mesh links.
/// </summary>
public delegate IStreamSendQueue StreamSendQueueFactory(SimNetwork network, SimConnection connection, int capacityBytes);

/// <summary>
/// The standard send queue: the connection's own, holding at most the configured cap and the path's
/// <see cref="PathOptions.QueueCapacityBytes"/>, whichever is smaller. Bytes past either are refused, never buffered.
/// </summary>
/// <remarks>Not thread-safe; used on the simulation thread.</remarks>
public sealed class ConnectionSendQueue : IStreamSendQueue
{
    private readonly SimConnection _connection;
    private readonly int _capacityBytes;

    public ConnectionSendQueue(SimConnection connection, int capacityBytes)
    {
        ArgumentNullException.ThrowIfNull(connection);
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(capacityBytes);
        _connection = connection;
        _capacityBytes = capacityBytes;
    }

    /// <summary>Makes the standard queue of each connection end.</summary>
    public static StreamSendQueueFactory Factory { get; } = static (_, connection, capacityBytes) => new ConnectionSendQueue(connection, capacityBytes);

    public int QueuedBytes => _connection.QueuedBytes;

    public bool TrySend(ReadOnlySpan<byte> bytes)
    {
        // The configured cap first; the network refuses (and counts) what passes the path's own cap.
        if (bytes.Length > _capacityBytes - _connection.QueuedBytes)
        {
            return false;
        }

        return _connection.Send(bytes);
    }
}
