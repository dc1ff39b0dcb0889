namespace PlayHouse.Core.Pooling;

/// <summary>A snapshot of pool counters. Hits + Misses == Rents; Returns == Cached + Dropped returns.</summary>
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

/// <summary>One buffer still rented, as the checked-mode ledger records it.</summary>
public readonly record struct OutstandingBuffer(long BufferId, int CapacityBytes, int LengthBytes, string? Owner);
