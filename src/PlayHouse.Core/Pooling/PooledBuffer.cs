namespace PlayHouse.Core.Pooling;

/// <summary>One pooled array and its ownership state. The pool keeps these; users hold <see cref="Payload"/> handles.</summary>
/// <remarks>
/// Not synchronised. A buffer has one owner at a time, and a buffer (or a <see cref="Payload"/> naming it) passes
/// between threads only through something that gives happens-before (a queue, a lock, a thread start or join), so
/// plain fields are enough for <see cref="Generation"/>, <see cref="IsRented"/> and the owner labels. The pool's
/// own hand-offs (local cache, global tier under its lock, the checked-mode ledger under its lock) keep that rule.
/// </remarks>
internal sealed class PooledBuffer(MessagePool pool, byte[] array, int sizeClass, int counterRow, long id)
{
    /// <summary>The pool that allocated this buffer; the only pool it may be returned to.</summary>
    public readonly MessagePool Pool = pool;

    public readonly byte[] Array = array;

    /// <summary>Index of the size class, or -1 for an oversize buffer that is never cached.</summary>
    public readonly int SizeClass = sizeClass;

    /// <summary>The row of the per-thread counters this buffer's rents and returns count in: the class, or the oversize row.</summary>
    public readonly int CounterRow = counterRow;

    /// <summary>Pool-wide id in allocation order, for diagnostics.</summary>
    public readonly long Id = id;

    /// <summary>The visible length of the current rent.</summary>
    public int Length;

    /// <summary>
    /// Bumped on every rent (to odd), move (by two, staying odd) and return (to even), so that older handles become
    /// stale and an odd value means "rented". It is 64-bit so that it cannot wrap back to the value an old handle
    /// holds; the handle stays 16 bytes either way because of padding.
    /// </summary>
    public long Generation;

    /// <summary>The generation at the start of the current (or last) rent; tells "moved" from "re-rented" in errors.</summary>
    public long RentGeneration;

    /// <summary>
    /// The owner label while rented; after a return it still names the last owner (clearing it would cost a store per
    /// return for nothing: a returned buffer's owner is never shown as current).
    /// </summary>
    public string? Owner;

    /// <summary>The owner before the current rent; recorded in checked mode only, to name it in re-rent errors.</summary>
    public string? PreviousOwner;

    /// <summary>The buffer's slot in its pool's checked-mode ledger while it is listed there, else -1 (under the ledger's lock).</summary>
    public int LedgerSlot = -1;

    public bool IsRented => (Generation & 1) != 0;

    /// <summary>Hands the rented buffer to <paramref name="newOwner"/>; returns the new generation.</summary>
    public long MoveTo(string newOwner)
    {
        // By two, so the generation stays odd ("rented") while every older handle becomes stale.
        var generation = Generation + 2;
        Generation = generation;
        Owner = newOwner;
        return generation;
    }
}
