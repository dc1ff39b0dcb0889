namespace PlayHouse.Core.Pooling;

/// <summary>One thread's cache and counters for one size class of one pool; a thread holds an array of these per pool.</summary>
/// <remarks>
/// Owned by one thread at a time (the thread whose <see cref="ThreadSlots"/> index the array sits under); only that
/// thread writes it. Statistics readers on other threads read the counters without a lock: each read of a 64-bit
/// counter is atomic on 64-bit runtimes, so a running total may be slightly behind but is exact once the writers are
/// quiescent and the reader has synchronised with them (a join, a lock, a queue). Keeping the stack, its count and
/// the counters in one struct puts everything a rent or return touches on one or two cache lines.
/// </remarks>
internal struct LocalClass
{
    /// <summary>The stack, of the local capacity; entry 0 is the oldest. Length 0 for the oversize row.</summary>
    public PooledBuffer?[] Items;

    /// <summary>Entries in use.</summary>
    public int Count;

    /// <summary>Rents served from a cache. Rents are Hits + Misses, so the hot path counts one event per rent.</summary>
    public long Hits;

    /// <summary>Rents that allocated.</summary>
    public long Misses;

    public long Returns;

    /// <summary>Returns released to the GC.</summary>
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

    /// <summary>
    /// Refills an empty local stack: takes up to <paramref name="refillCount"/> buffers, returns the most recently pushed
    /// one (for the renter) and copies the rest into the bottom of <paramref name="localItems"/>; null when this tier is
    /// empty.
    /// </summary>
    public PooledBuffer? TakeRefill(PooledBuffer?[] localItems, int refillCount, out int movedToLocal)
    {
        movedToLocal = 0;
        lock (Gate)
        {
            var take = Math.Min(Count, refillCount);
            if (take == 0)
            {
                return null;
            }

            var moved = take - 1;

            // The renter gets the most recently pushed buffer; the rest half-fill the (empty) local stack.
            var top = Count - 1;
            var buffer = Items[top];
            Items[top] = null;
            var from = Count - take;
            System.Array.Copy(Items, from, localItems, 0, moved);
            System.Array.Clear(Items, from, moved);
            Count -= take;
            movedToLocal = moved;
            return buffer;
        }
    }

    /// <summary>Takes one returned buffer if there is room (a pool with no local stacks); returns how many it took.</summary>
    public int TakeOne(PooledBuffer buffer, int capacityMax)
    {
        lock (Gate)
        {
            if (Count >= capacityMax)
            {
                return 0;
            }

            EnsureCapacity(Count + 1, capacityMax);
            Items[Count++] = buffer;
            return 1;
        }
    }

    /// <summary>
    /// Takes the older (bottom) entries of a full local stack, at most <paramref name="spillCount"/> and as many as there
    /// is room for, so the local stack keeps the cache-warm buffers it used last; returns how many it took (the caller
    /// shifts its stack down by that many).
    /// </summary>
    public int TakeSpill(PooledBuffer?[] localItems, int spillCount, int capacityMax)
    {
        lock (Gate)
        {
            var moved = Math.Min(capacityMax - Count, spillCount);
            if (moved > 0)
            {
                EnsureCapacity(Count + moved, capacityMax);
                System.Array.Copy(localItems, 0, Items, Count, moved);
                Count += moved;
            }

            return Math.Max(moved, 0);
        }
    }
}
