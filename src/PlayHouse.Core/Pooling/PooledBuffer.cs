namespace PlayHouse.Core.Pooling;

/// <summary>One pooled array and its ownership state. The pool keeps these; users hold <see cref="Payload"/> handles.</summary>
/// <remarks>
/// Not synchronised. A buffer has one owner at a time, and a buffer (or a <see cref="Payload"/> naming it) passes
/// between threads only through something that gives happens-before (a queue, a lock, a thread start or join), so
/// plain fields are enough for <see cref="Generation"/>, <see cref="IsRented"/> and the owner labels. The pool's
/// own hand-offs (local cache, global tier under its lock, the checked-mode ledger under its lock) keep that rule.
/// </remarks>
internal sealed class PooledBuffer(MessagePool pool, byte[] array, int sizeClass, long id)
{
    /// <summary>The pool that allocated this buffer; the only pool it may be returned to.</summary>
    public readonly MessagePool Pool = pool;

    public readonly byte[] Array = array;

    /// <summary>Index of the size class, or -1 for an oversize buffer that is never cached.</summary>
    public readonly int SizeClass = sizeClass;

    /// <summary>Pool-wide id in allocation order, for diagnostics.</summary>
    public readonly long Id = id;

    /// <summary>The visible length of the current rent.</summary>
    public int Length;

    /// <summary>
    /// Bumped on every rent, move and return, so that older handles become stale. It is 64-bit so that it cannot
    /// wrap back to the value an old handle holds; the handle stays 16 bytes either way because of padding.
    /// </summary>
    public long Generation;

    /// <summary>The generation at the start of the current (or last) rent; tells "moved" from "re-rented" in errors.</summary>
    public long RentGeneration;

    public bool IsRented;

    public string? Owner;

    /// <summary>The owner at the moment of the last return, kept to name it in use-after-return errors.</summary>
    public string? LastOwner;
}
