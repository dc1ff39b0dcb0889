namespace PlayHouse.Core.Pooling;

/// <summary>
/// The pool's statistics: the per-thread counters of every size class summed on read, and the free buffers each tier
/// holds.
/// </summary>
/// <remarks>
/// Invariant: rents = hits + misses and outstanding = rents - returns, per class and in total, once every thread using
/// the pool is quiescent.
/// Threading: any thread; the counters are read without their writers' cooperation, so a total may be slightly behind
/// while they run (see <see cref="LocalClass"/>), and exact once they are quiescent and the reader has synchronised
/// with them.
/// </remarks>
public sealed partial class MessagePool
{
    /// <summary>Totals over all classes and threads; allocates nothing, so a checker may call it after every step.</summary>
    public MessagePoolStatistics GetStatistics()
    {
        long returns = 0, hits = 0, misses = 0, dropped = 0, oversizeRents = 0;
        foreach (var classes in SnapshotLocals())
        {
            if (classes is null)
            {
                continue;
            }

            for (var c = 0; c < classes.Length; c++)
            {
                hits += Volatile.Read(ref classes[c].Hits);
                misses += Volatile.Read(ref classes[c].Misses);
                returns += Volatile.Read(ref classes[c].Returns);
                dropped += Volatile.Read(ref classes[c].Dropped);
            }

            oversizeRents += Volatile.Read(ref classes[_classCount].Misses);
        }

        var rents = hits + misses;
        return new MessagePoolStatistics(rents, returns, hits, misses, dropped, oversizeRents, rents - returns);
    }

    /// <summary>
    /// One row per size class, in class order (row i is class i), then one last row for oversize rents
    /// (<see cref="MessagePoolClassStatistics.SizeClass"/> == -1).
    /// </summary>
    public IReadOnlyList<MessagePoolClassStatistics> GetClassStatistics()
    {
        var rows = new MessagePoolClassStatistics[_classCount + 1];
        var sums = new LocalClass[_classCount + 1];
        foreach (var classes in SnapshotLocals())
        {
            if (classes is null)
            {
                continue;
            }

            for (var c = 0; c <= _classCount; c++)
            {
                ref var from = ref classes[c];
                sums[c].Hits += Volatile.Read(ref from.Hits);
                sums[c].Misses += Volatile.Read(ref from.Misses);
                sums[c].Returns += Volatile.Read(ref from.Returns);
                sums[c].Dropped += Volatile.Read(ref from.Dropped);
                sums[c].Count += Volatile.Read(ref from.Count);
            }
        }

        for (var c = 0; c <= _classCount; c++)
        {
            var isOversize = c == _classCount;
            long preWarmed = 0, globalCached = 0;
            if (!isOversize)
            {
                var global = _global[c];
                lock (global.Gate)
                {
                    preWarmed = global.PreWarmed;
                    globalCached = global.Count;
                }

                if (_store is not null)
                {
                    // A replaced store is the pool's only cache; its buffers count as the shared tier's.
                    globalCached += _store.RetainedIn(c);
                }
            }

            rows[c] = new MessagePoolClassStatistics(
                SizeClass: isOversize ? -1 : c,
                CapacityBytes: isOversize ? 0 : _classBytes[c],
                Rents: sums[c].Hits + sums[c].Misses,
                sums[c].Returns,
                sums[c].Hits,
                sums[c].Misses,
                sums[c].Dropped,
                preWarmed,
                LocalCached: sums[c].Count,
                globalCached);
        }

        return rows;
    }

    /// <summary>Free buffers the pool holds now, over every size class, thread cache and tier (or its replaced store).</summary>
    public long RetainedBuffers
    {
        get
        {
            long retained = 0;
            foreach (var row in GetClassStatistics())
            {
                retained += row.LocalCached + row.GlobalCached;
            }

            return retained;
        }
    }

    /// <summary>
    /// The most free buffers one size class may hold for one thread: the thread's local stack and the shared tier, or
    /// the replaced store's bound per class (<see cref="long.MaxValue"/> when the store is unbounded).
    /// </summary>
    public long RetainedMaxPerClassPerThread => _store?.RetainedMaxPerClass ?? (long)_localCapacity + _globalCapacity;
}
