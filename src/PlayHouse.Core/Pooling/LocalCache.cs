namespace PlayHouse.Core.Pooling;

/// <summary>One thread's cache and counters for one pool: a small stack per size class, flattened into one array.</summary>
/// <remarks>
/// Owned by one thread at a time (the thread whose <see cref="ThreadSlots"/> index it sits under); only that thread
/// writes it. Statistics readers on other threads read the counters without a lock: each read of a 64-bit counter is
/// atomic on 64-bit runtimes, so a running total may be slightly behind but is exact once the writers are quiescent
/// and the reader has synchronised with them (a join, a lock, a queue).
/// </remarks>
internal sealed class LocalCache
{
    public LocalCache(int classCount, int capacityPerClass)
    {
        Items = new PooledBuffer?[checked(classCount * capacityPerClass)];
        Counts = new int[classCount];

        // One extra row for oversize rents, which have no class of their own.
        Counters = new ClassCounters[classCount + 1];
    }

    /// <summary>Class c owns slots [c * capacity, (c + 1) * capacity); slot c * capacity is the oldest entry.</summary>
    public readonly PooledBuffer?[] Items;

    /// <summary>Entries in use per class.</summary>
    public readonly int[] Counts;

    public readonly ClassCounters[] Counters;
}

/// <summary>Per-thread, per-class event counts; summed over threads on read.</summary>
internal struct ClassCounters
{
    public long Rents;
    public long Returns;
    public long Hits;
    public long Misses;
    public long Dropped;
}

/// <summary>The shared tier of one size class: a bounded stack under its own lock.</summary>
/// <remarks>Thread-safe only under <see cref="Gate"/>; one lock per class so that classes never contend.</remarks>
internal sealed class GlobalClass
{
    public readonly Lock Gate = new();

    /// <summary>Grows by doubling up to the global capacity, so an unused class costs no array.</summary>
    public PooledBuffer?[] Items = [];

    public int Count;

    /// <summary>Buffers put here at construction; fixed after the constructor.</summary>
    public long PreWarmed;

    public void EnsureCapacity(int countMin, int capacityMax)
    {
        if (countMin <= Items.Length)
        {
            return;
        }

        var length = Math.Min(capacityMax, Math.Max(countMin, Math.Max(4, Items.Length * 2)));
        System.Array.Resize(ref Items, length);
    }
}
