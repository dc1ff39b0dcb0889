using System.Buffers;
using PlayHouse.Simulation.Metrics;
using PlayHouse.Simulation.Network;

namespace PlayHouse.Simulation.Runs;

/// <summary>
/// Memory that consecutive runs on one thread reuse instead of allocating it for every run: the round-trip histogram
/// and the arrays the network's stream directions keep their queued bytes in. Both reach large-object-heap sizes
/// (the histogram is about 170 KB, a busy connection's store 128 KB and more), and the GC frees large objects only in
/// a full collection, which stops every thread of the process. A swarm that allocated them afresh for every seed ran
/// a full collection every few seeds, so its workers spent their time waiting on each other's garbage.
/// </summary>
/// <remarks>
/// Not thread-safe: one per thread (each swarm worker keeps its own for all the runs it does). A run resets the
/// histogram before it records into it, and a store's bytes are only ever read after the run that holds the store has
/// written them, so nothing of one run reaches another: the same seed gives the same trace with or without scratch.
/// Nothing in a <see cref="SimReport"/> refers to the scratch.
/// </remarks>
public sealed class RunScratch
{
    private readonly LatencyHistogram _rtt = new();

    /// <summary>Where the network of each run takes its stream stores from and gives them back to.</summary>
    public ArrayPool<byte> StreamStores { get; } = SimNetwork.CreateStreamStorePool();

    /// <summary>The round-trip histogram for the next run, emptied.</summary>
    internal LatencyHistogram TakeRtt()
    {
        _rtt.Reset();
        return _rtt;
    }
}
