namespace PlayHouse.Core.Pooling;

/// <summary>
/// Where a <see cref="MessagePool"/> keeps its free buffers, as a replaceable part
/// (<see cref="MessagePoolOptions.Store"/>). The standard storage is not one of these: it is the pool's own two tiers
/// (a stack per thread and class, a capped global stack per class), which a pool uses when no store is given. A test
/// bed plugs another storage in here to show what the standard tiers save; the pool's ownership checks, ledger and
/// counters stay the same around it.
/// </summary>
/// <remarks>
/// Taking and adding buffers are internal (a buffer is the pool's own object), so only the core and the test fixtures
/// implement a store. A pool calls its store from whatever thread rents or returns.
/// </remarks>
public abstract class MessagePoolStore
{
    /// <summary>Free buffers the store holds in a size class now.</summary>
    public abstract long RetainedIn(int sizeClass);

    /// <summary>The most free buffers the store may hold in one size class (<see cref="long.MaxValue"/> when unbounded).</summary>
    public abstract long RetainedMaxPerClass { get; }

    /// <summary>A free buffer of the class, or null when the store has none (the pool then allocates one: a miss).</summary>
    internal abstract PooledBuffer? TryTake(int sizeClass);

    /// <summary>Keeps a returned buffer of a pooled class; false when the store drops it to the GC.</summary>
    internal abstract bool TryAdd(PooledBuffer buffer);
}
