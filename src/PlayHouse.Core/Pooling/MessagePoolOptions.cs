namespace PlayHouse.Core.Pooling;

/// <summary>Sizing and checking options of a <see cref="MessagePool"/>.</summary>
public sealed record MessagePoolOptions
{
    /// <summary>
    /// Keep a ledger of outstanding buffers with owners and poison returned buffers with <see cref="PoisonByte"/>;
    /// on in tests and simulation. Rent, move and return then take one lock.
    /// </summary>
    public bool CheckedMode { get; init; }

    /// <summary>
    /// Every rent, move and return comes from one thread (the simulation's world), so checked mode keeps its
    /// ledger without the lock, and every caller shares the first thread's local caches (no thread-static lookup).
    /// Never set it for a pool that executors on several threads share.
    /// </summary>
    public bool SingleThreaded { get; init; }

    /// <summary>Ascending buffer sizes, one per class. Defaults to <see cref="SizeClasses.Default"/>.</summary>
    public IReadOnlyList<int> SizeClassBytes { get; init; } = SizeClasses.Default;

    /// <summary>Buffers kept per size class in each executor's (thread's) cache; 0 sends every return to the global tier.</summary>
    public int LocalCacheCapacityPerClass { get; init; } = 16;

    /// <summary>Buffers kept per size class in the shared tier; returns beyond it are dropped to the GC.</summary>
    public int GlobalCapacityPerClass { get; init; } = 256;

    /// <summary>Buffers allocated per size class at construction, up to the global capacity.</summary>
    public int PreWarmCountPerClass { get; init; }

    /// <summary>Size classes at or below this many bytes are pre-warmed; larger ones start empty.</summary>
    public int PreWarmMaxBytes { get; init; } = 64 * 1024;

    /// <summary>The largest single rent accepted, pooled or not.</summary>
    public int MaxRentBytes { get; init; } = 16 * 1024 * 1024;

    /// <summary>
    /// Zero a buffer's whole capacity when it is returned, so message bytes never linger in the pool. Off by default
    /// for speed. In checked mode returned buffers are poisoned instead, and zeroed when they are rented again.
    /// </summary>
    public bool ClearOnReturn { get; init; }

    /// <summary>
    /// Makes the storage of free buffers for a new pool; null (the standard) keeps them in the pool's own two tiers,
    /// a stack per thread and size class and a capped global stack per class. Pre-warming fills the standard tiers
    /// only, so it is refused together with a store.
    /// </summary>
    public Func<MessagePool, MessagePoolStore>? Store { get; init; }

    /// <summary>A label for error messages, e.g. the simulated node that owns the pool.</summary>
    public string? Name { get; init; }

    /// <summary>
    /// Hears every ownership fault the pool or one of its handles detects (a stale handle used, a buffer returned twice
    /// or to the wrong pool, a ledger that disagrees), just before the <see cref="PoolOwnershipException"/> is thrown.
    /// Code that meets the exception may catch it (a stage counts a handler that threw and carries on), so a test bed
    /// records the fault here, where it is detected, instead of relying on the exception to reach it.
    /// </summary>
    /// <remarks>Called on the thread that detected the fault, possibly under the ledger's lock: keep it short.</remarks>
    public Action<PoolOwnershipException>? OnOwnershipFault { get; init; }

    /// <summary>The byte that checked mode writes over a returned buffer, so use-after-return shows in dumps.</summary>
    public const byte PoisonByte = 0xDD;

    /// <summary>Checks the options with the size classes they give (positive, ascending); the errors name <c>options</c>.</summary>
    internal void Validate(int[] classBytes)
    {
        if (classBytes.Length == 0)
        {
            throw new ArgumentException("At least one size class is required.", "options");
        }

        if (classBytes[0] <= 0)
        {
            throw new ArgumentException($"Size classes must be positive: class 0 is {classBytes[0]} B.", "options");
        }

        for (var i = 1; i < classBytes.Length; i++)
        {
            if (classBytes[i] <= classBytes[i - 1])
            {
                throw new ArgumentException($"Size classes must ascend: class {i} ({classBytes[i]} B) <= class {i - 1} ({classBytes[i - 1]} B).", "options");
            }
        }

        ArgumentOutOfRangeException.ThrowIfNegative(LocalCacheCapacityPerClass, nameof(LocalCacheCapacityPerClass));
        ArgumentOutOfRangeException.ThrowIfNegative(GlobalCapacityPerClass, nameof(GlobalCapacityPerClass));
        ArgumentOutOfRangeException.ThrowIfNegative(PreWarmCountPerClass, nameof(PreWarmCountPerClass));
        ArgumentOutOfRangeException.ThrowIfNegative(MaxRentBytes, nameof(MaxRentBytes));

        // Each thread allocates classes x capacity stack slots up front; refuse a product that overflows.
        _ = checked(classBytes.Length * LocalCacheCapacityPerClass);
    }
}
