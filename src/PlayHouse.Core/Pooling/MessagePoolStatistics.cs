namespace PlayHouse.Core.Pooling;

/// <summary>
/// A snapshot of pool counters. Hits + Misses == Rents; Outstanding == Rents - Returns. Oversize rents count as
/// Rents and Misses, and their returns as Returns and Dropped (the arrays go back to the GC, never to a cache).
/// </summary>
public readonly record struct MessagePoolStatistics(
    long Rents,
    long Returns,
    long Hits,
    long Misses,
    long Dropped,
    long OversizeRents,
    long Outstanding)
{
    public double HitRate => Rents == 0 ? 1.0 : (double)Hits / Rents;
}

/// <summary>
/// The counters of one size class (or of the oversize row, <see cref="SizeClass"/> == -1). Identities at quiescence:
/// Hits + Misses == Rents; Outstanding == Rents - Returns; and, since every buffer is pre-warmed or allocated by a
/// miss and then is outstanding, cached or dropped, PreWarmed + Misses == Outstanding + LocalCached + GlobalCached + Dropped.
/// </summary>
/// <param name="SizeClass">Index into <see cref="MessagePool.SizeClassBytes"/>, or -1 for oversize rents.</param>
/// <param name="CapacityBytes">The buffer size of the class; 0 for the oversize row (each array is exact).</param>
/// <param name="Rents">Rents served from this class.</param>
/// <param name="Returns">Returns into this class.</param>
/// <param name="Hits">Rents served from a cache (local or global).</param>
/// <param name="Misses">Rents that allocated a new array.</param>
/// <param name="Dropped">Returns released to the GC because both tiers were full (always, for oversize).</param>
/// <param name="PreWarmed">Buffers allocated into the global tier by the constructor.</param>
/// <param name="LocalCached">Buffers sitting in per-thread caches, summed over threads.</param>
/// <param name="GlobalCached">Buffers sitting in the global tier.</param>
public readonly record struct MessagePoolClassStatistics(
    int SizeClass,
    int CapacityBytes,
    long Rents,
    long Returns,
    long Hits,
    long Misses,
    long Dropped,
    long PreWarmed,
    long LocalCached,
    long GlobalCached)
{
    public bool IsOversize => SizeClass < 0;

    public long Outstanding => Rents - Returns;
}

/// <summary>One buffer still rented, as the checked-mode ledger records it.</summary>
public readonly record struct OutstandingBuffer(long BufferId, int CapacityBytes, int LengthBytes, string? Owner);
