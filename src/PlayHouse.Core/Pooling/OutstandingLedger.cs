namespace PlayHouse.Core.Pooling;

/// <summary>
/// A pool's ledger of outstanding buffers in checked mode: every rented buffer with its owner, so a leak can be named,
/// and a return of a buffer the ledger does not list (a double or foreign return the handle could not see) is caught.
/// </summary>
/// <remarks>
/// Invariant: the ledger lists a buffer exactly while it is rented; its entries are dense (slots 0 to count - 1), and
/// each listed buffer knows its slot (<see cref="PooledBuffer.LedgerSlot"/>, -1 when not listed), checked on every add
/// and remove.
/// Threading: thread-safe through one lock, unless the pool is single-threaded (then no lock is taken on rent, move or
/// return; reads still take it).
/// </remarks>
internal sealed class OutstandingLedger(MessagePool pool, bool singleThreaded)
{
    private readonly Lock _gate = new();
    private PooledBuffer?[] _entries = new PooledBuffer?[64];
    private int _count;

    /// <summary>Lists a rented buffer under its new owner.</summary>
    public void Add(PooledBuffer buffer, string owner)
    {
        if (singleThreaded)
        {
            AddLocked(buffer, owner);
            return;
        }

        lock (_gate)
        {
            AddLocked(buffer, owner);
        }
    }

    /// <summary>Takes a returned buffer off the ledger; throws (through the pool's fault hook) when it is not listed.</summary>
    public void Remove(PooledBuffer buffer)
    {
        if (singleThreaded)
        {
            RemoveLocked(buffer);
            return;
        }

        lock (_gate)
        {
            RemoveLocked(buffer);
        }
    }

    /// <summary>Records a move of <paramref name="buffer"/> to <paramref name="newOwner"/>; returns the new generation.</summary>
    public long NoteMove(PooledBuffer buffer, string newOwner)
    {
        if (singleThreaded)
        {
            return buffer.MoveTo(newOwner);
        }

        // Under the ledger lock so that GetOutstanding on another thread never sees a half-made move.
        lock (_gate)
        {
            return buffer.MoveTo(newOwner);
        }
    }

    /// <summary>Buffers rented and not yet returned, in rent order.</summary>
    public IReadOnlyList<OutstandingBuffer> GetOutstanding()
    {
        lock (_gate)
        {
            return [.. _entries.Take(_count).Select(b => b!).OrderBy(b => b.Id).Select(b => new OutstandingBuffer(b.Id, b.Array.Length, b.Length, b.Owner))];
        }
    }

    private void AddLocked(PooledBuffer buffer, string owner)
    {
        buffer.PreviousOwner = buffer.Owner;
        buffer.Owner = owner;
        if (buffer.LedgerSlot >= 0)
        {
            throw pool.Fault(new PoolOwnershipException($"Pool {pool.DisplayName} handed out buffer #{buffer.Id} ({buffer.Array.Length} B) to '{buffer.Owner}' while its ledger still lists it as outstanding.") { BufferId = buffer.Id });
        }

        if (_count == _entries.Length)
        {
            Array.Resize(ref _entries, _entries.Length * 2);
        }

        _entries[_count] = buffer;
        buffer.LedgerSlot = _count++;
    }

    private void RemoveLocked(PooledBuffer buffer)
    {
        var slot = buffer.LedgerSlot;
        if (slot < 0 || !ReferenceEquals(_entries[slot], buffer))
        {
            throw pool.Fault(PoolOwnershipException.NotInLedger(buffer, pool.DisplayName));
        }

        // The last entry fills the hole, so the ledger stays dense.
        var last = _entries[--_count]!;
        _entries[slot] = last;
        last.LedgerSlot = slot;
        _entries[_count] = null;
        buffer.LedgerSlot = -1;
    }
}
