using PlayHouse.Core.Codec;
using PlayHouse.Core.Collections;

namespace PlayHouse.Simulation.Clients;

/// <summary>
/// The packets a client received and its application has not read yet. PlayHouse's connector decodes on its socket
/// thread and queues each packet for the game's main loop, which drains the queue once a frame; a queue holds the
/// frames with their pooled payloads until they are read.
/// </summary>
/// <remarks>Not thread-safe; used on the simulation thread.</remarks>
public interface IClientPacketQueue
{
    /// <summary>Packets waiting to be read.</summary>
    int Count { get; }

    /// <summary>Queues a packet and takes ownership of its payload; false when the queue refuses it (the caller keeps it).</summary>
    bool TryEnqueue(in ServerFrame frame);

    /// <summary>Moves the oldest packet (and its payload) to the caller; false when the queue is empty.</summary>
    bool TryDequeue(out ServerFrame frame);
}

/// <summary>
/// The standard packet queue: at most <see cref="CapacityMax"/> packets wait; the client refuses the rest
/// (a push is dropped and counted, a reply completes its request with <see cref="SimClient.PacketQueueFullErrorCode"/>),
/// so an application that reads slower than the server pushes does not grow its memory without a bound.
/// </summary>
/// <remarks>Not thread-safe; used on the simulation thread.</remarks>
public sealed class ClientPacketQueue : IClientPacketQueue
{
    // Inline in the queue (not readonly: a mutable struct).
    private RingQueue<ServerFrame> _frames = new(4);

    public ClientPacketQueue(int capacityMax)
    {
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(capacityMax);
        CapacityMax = capacityMax;
    }

    public int CapacityMax { get; }

    public int Count => _frames.Count;

    public bool TryEnqueue(in ServerFrame frame)
    {
        if (_frames.Count >= CapacityMax)
        {
            return false;
        }

        _frames.Enqueue(frame);
        return true;
    }

    public bool TryDequeue(out ServerFrame frame)
    {
        if (_frames.Count == 0)
        {
            frame = default;
            return false;
        }

        _frames.Dequeue(out frame);
        return true;
    }
}

/// <summary>
/// How a simulated client's application reads what arrives. With <see cref="ReadInterval"/> zero (the default) each
/// packet is handled the moment it arrives and nothing queues; otherwise packets wait in the client's packet queue
/// and the application reads up to <see cref="PacketsPerRead"/> of them every <see cref="ReadInterval"/> (a game's
/// main loop draining its connector once a frame).
/// </summary>
public sealed record ClientReadOptions
{
    public TimeSpan ReadInterval { get; init; } = TimeSpan.Zero;

    public int PacketsPerRead { get; init; } = int.MaxValue;

    /// <summary>Packets the queue holds before the client refuses further ones (the standard queue's cap).</summary>
    public int PacketQueueMax { get; init; } = 256;

    /// <summary>True when packets wait in a queue for the application to read them.</summary>
    public bool IsQueued => ReadInterval > TimeSpan.Zero;

    public void Validate()
    {
        if (ReadInterval < TimeSpan.Zero || PacketsPerRead <= 0 || PacketQueueMax <= 0)
        {
            throw new ArgumentException($"Client read options out of range: {this}.");
        }
    }
}
