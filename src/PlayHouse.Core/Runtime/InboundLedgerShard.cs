namespace PlayHouse.Core.Runtime;

/// <summary>
/// One shard of the <see cref="InboundLedger"/>: its entries keyed by the shard's own consecutive sequence, so every
/// sequence below the oldest open one is known closed (answered or expired), and the expired ones still remembered.
/// The entries live in a ring indexed by the sequence, whose window runs from the oldest entry it holds to the newest:
/// an open or close is an index, where a hash table's insert and remove cost a request several times as much. An entry
/// still open when the window would outgrow the ring's largest size moves to an overflow table, oldest first.
/// </summary>
/// <remarks>
/// Invariant: every sequence from 1 to the newest is open in exactly one place (the ring's window or the overflow
/// table) or closed, and <see cref="Count"/> is the number open; the overflow only holds sequences older than the
/// ring's window, so a sweep from the oldest meets them first.
/// Threading: not thread-safe; every member but <see cref="CountUnlocked"/> runs under <see cref="Gate"/>.
/// </remarks>
internal sealed class InboundLedgerShard(Lock? gate, int recentExpiredMax)
{
    // The deadline a slot holds once its entry closed; no entry's deadline is this value.
    private const long ClosedSlot = long.MinValue;
    private const int RingLengthMin = 16;

    // 4,096 entries (32 KB) per shard: a request stays in the ring while fewer than that many open after it.
    private const int RingLengthMax = 4096;

    private readonly RecentIds _expired = new(recentExpiredMax);

    // _ring[s & (length - 1)] is the deadline of sequence s, for s from _ringBase to _nextSeq; other slots are free.
    private long[] _ring = new long[RingLengthMin];
    private long _ringBase = 1;
    private long _nextSeq;
    private int _count;

    // Open entries older than _ringBase, and their sequences in ascending order (closed ones stay until a sweep passes).
    private Dictionary<long, long>? _overflow;
    private Queue<long>? _overflowOrder;

    // No open entry expires before this instant (it may be stale-early after replies; a scan makes it exact).
    private long _earliestDeadline = long.MaxValue;

    public Lock? Gate { get; } = gate;

    public int Count => _count;

    /// <summary>The count as last written, read by other shards without this shard's lock.</summary>
    public int CountUnlocked => Volatile.Read(ref _count);

    /// <summary>Opens an entry expiring at <paramref name="deadline"/>; returns its sequence.</summary>
    public long Add(long deadline)
    {
        var seq = _nextSeq + 1;
        if (seq - _ringBase >= _ring.Length)
        {
            MakeRoom(seq);
        }

        _ring[seq & (_ring.Length - 1)] = deadline;
        _nextSeq = seq;
        Volatile.Write(ref _count, _count + 1);
        if (deadline < _earliestDeadline)
        {
            _earliestDeadline = deadline;
        }

        return seq;
    }

    public InboundClose Close(long seq, long now, ServerCounters counters)
    {
        if (TryRemove(seq, out var deadline))
        {
            Volatile.Write(ref _count, _count - 1);
            if (deadline > now)
            {
                return InboundClose.Closed;
            }

            // Past its deadline but not yet swept: expired all the same, so the outcome never depends on a sweep.
            counters.AddUnansweredRequestsExpired(1);
            return InboundClose.Expired;
        }

        // Taking the id out of the expired set lets exactly one reply through after expiry; another one is refused.
        return _expired.Remove(seq) ? InboundClose.Expired : InboundClose.AlreadyAnswered;
    }

    /// <summary>
    /// Drops the expired entries from the oldest up to the first open one that has not expired (every one when
    /// <paramref name="scanAll"/> and some may have); returns the count open.
    /// </summary>
    public int Expire(long now, bool scanAll, ServerCounters counters)
    {
        long expired = 0;
        if (!SweepOverflow(now, ref expired))
        {
            var mask = _ring.Length - 1;
            while (_ringBase <= _nextSeq)
            {
                ref var deadline = ref _ring[_ringBase & mask];
                if (deadline != ClosedSlot)
                {
                    if (deadline > now)
                    {
                        break;
                    }

                    deadline = ClosedSlot;
                    _expired.Add(_ringBase);
                    expired++;
                }

                _ringBase++;
            }
        }

        if (scanAll && now >= _earliestDeadline)
        {
            _earliestDeadline = ExpireAll(now, ref expired);
        }

        if (expired > 0)
        {
            Volatile.Write(ref _count, _count - (int)expired);
            counters.AddUnansweredRequestsExpired(expired);
        }

        if (_count == 0)
        {
            _earliestDeadline = long.MaxValue;
        }

        return _count;
    }

    private bool TryRemove(long seq, out long deadline)
    {
        if (seq >= _ringBase && seq <= _nextSeq)
        {
            ref var slot = ref _ring[seq & (_ring.Length - 1)];
            deadline = slot;
            if (deadline == ClosedSlot)
            {
                return false;
            }

            slot = ClosedSlot;
            return true;
        }

        deadline = 0;
        return seq < _ringBase && _overflow is not null && _overflow.Remove(seq, out deadline);
    }

    /// <summary>Sweeps the overflow from its oldest entry; true when it stopped at an open entry that has not expired.</summary>
    private bool SweepOverflow(long now, ref long expired)
    {
        if (_overflowOrder is null)
        {
            return false;
        }

        while (_overflowOrder.TryPeek(out var seq))
        {
            if (_overflow!.TryGetValue(seq, out var deadline))
            {
                if (deadline > now)
                {
                    return true;
                }

                _overflow.Remove(seq);
                _expired.Add(seq);
                expired++;
            }

            _overflowOrder.Dequeue();
        }

        return false;
    }

    /// <summary>Drops every expired entry, wherever it is; returns the earliest deadline left.</summary>
    private long ExpireAll(long now, ref long expired)
    {
        var earliest = long.MaxValue;
        if (_overflow is not null)
        {
            foreach (var (seq, deadline) in _overflow)
            {
                if (deadline <= now)
                {
                    // Removing the current entry while enumerating a Dictionary is allowed and keeps the enumeration valid.
                    _overflow.Remove(seq);
                    _expired.Add(seq);
                    expired++;
                }
                else if (deadline < earliest)
                {
                    earliest = deadline;
                }
            }
        }

        var mask = _ring.Length - 1;
        for (var seq = _ringBase; seq <= _nextSeq; seq++)
        {
            ref var deadline = ref _ring[seq & mask];
            if (deadline == ClosedSlot)
            {
                continue;
            }

            if (deadline <= now)
            {
                deadline = ClosedSlot;
                _expired.Add(seq);
                expired++;
            }
            else if (deadline < earliest)
            {
                earliest = deadline;
            }
        }

        return earliest;
    }

    /// <summary>Makes the ring's window reach <paramref name="seq"/>: closed entries leave its base, then it grows, then the oldest open ones overflow.</summary>
    private void MakeRoom(long seq)
    {
        var mask = _ring.Length - 1;
        while (_ringBase < seq && (_ringBase > _nextSeq || _ring[_ringBase & mask] == ClosedSlot))
        {
            _ringBase++;
        }

        if (seq - _ringBase < _ring.Length)
        {
            return;
        }

        if (_ring.Length < RingLengthMax)
        {
            var grown = new long[_ring.Length * 2];
            var grownMask = grown.Length - 1;
            for (var s = _ringBase; s <= _nextSeq; s++)
            {
                grown[s & grownMask] = _ring[s & mask];
            }

            _ring = grown;
            return;
        }

        while (seq - _ringBase >= _ring.Length)
        {
            var deadline = _ring[_ringBase & mask];
            if (deadline != ClosedSlot)
            {
                (_overflow ??= []).Add(_ringBase, deadline);
                (_overflowOrder ??= new Queue<long>()).Enqueue(_ringBase);
            }

            _ringBase++;
        }

        if (_overflowOrder is not null && _overflowOrder.Count > (2 * _overflow!.Count) + 64)
        {
            // Entries answered while in the overflow wait in its order until a sweep passes them; keep that bounded.
            _overflowOrder = new Queue<long>(_overflowOrder.Where(_overflow.ContainsKey));
        }
    }
}
