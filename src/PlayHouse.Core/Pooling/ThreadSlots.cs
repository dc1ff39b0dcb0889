namespace PlayHouse.Core.Pooling;

/// <summary>
/// Gives every thread that touches a pool a small dense index, reused after the thread dies, so that each
/// <see cref="MessagePool"/> can keep its per-thread caches in a plain array indexed by it.
/// </summary>
/// <remarks>
/// Thread-safe. The index is read from a <c>[ThreadStatic]</c> field (no lock, no allocation after the first call on
/// a thread). A finalizable lease, referenced only from the thread's own static storage, becomes unreachable when the
/// thread exits; its finalizer puts the index back under the lock, so a later thread that takes the index (under the
/// same lock) happens-after everything the dead thread did and may adopt the caches it left behind. Until then a dead
/// thread's caches stay in each pool's array: their buffers are held (at most the local capacity per class) and their
/// counters still count, so statistics stay exact across thread churn.
/// </remarks>
internal static class ThreadSlots
{
    private static readonly Lock Gate = new();

    // Smallest index first, so that the per-pool arrays stay as short as the number of live threads.
    private static readonly PriorityQueue<int, int> FreeIndexes = new();

    private static int _nextIndex;

    [ThreadStatic]
    private static int _currentIndexPlusOne;

    [ThreadStatic]
    private static Lease? _lease;

    /// <summary>
    /// How many per-thread stripes a structure striped by these indexes keeps on this machine: twice the processors, so
    /// the usual few thread-pool threads per processor seldom share one; a power of two, so an index masks to a stripe;
    /// at most 64.
    /// </summary>
    public static int StripesPerMachine { get; } = (int)System.Numerics.BitOperations.RoundUpToPowerOf2((uint)Math.Clamp(2 * Environment.ProcessorCount, 2, 64));

    /// <summary>The calling thread's index, or -1 when it has none yet (see <see cref="AssignCurrent"/>).</summary>
    public static int CurrentOrMinusOne => _currentIndexPlusOne - 1;

    /// <summary>Returns the calling thread's index, assigning one on the first call.</summary>
    public static int AssignCurrent()
    {
        var current = _currentIndexPlusOne - 1;
        if (current >= 0)
        {
            return current;
        }

        int index;
        lock (Gate)
        {
            index = FreeIndexes.TryDequeue(out var reused, out _) ? reused : _nextIndex++;
        }

        _lease = new Lease(index);
        _currentIndexPlusOne = index + 1;
        return index;
    }

    /// <summary>How many distinct indexes exist (in use or free); per-pool cache arrays are never longer. For tests.</summary>
    internal static int HighWaterMark
    {
        get
        {
            lock (Gate)
            {
                return _nextIndex;
            }
        }
    }

    private static void Release(int index)
    {
        lock (Gate)
        {
            FreeIndexes.Enqueue(index, index);
        }
    }

    private sealed class Lease(int index)
    {
        // Runs only after the owning thread has exited: nothing else references the lease.
        ~Lease() => Release(index);
    }
}
