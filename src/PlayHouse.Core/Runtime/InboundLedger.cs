using System.Numerics;
using PlayHouse.Core.Pooling;

namespace PlayHouse.Core.Runtime;

/// <summary>
/// The exactly-once ledger of a node's inbound requests: the open ones with the timestamp at which each expires, so a
/// reply closes its request once, a second reply is refused, and one reply after expiry still goes out. Capped at
/// <see cref="ServerOptions.UnansweredRequestsMax"/> open entries.
/// </summary>
/// <remarks>
/// <para>Thread-safe. The ledger is split into shards, each with its own lock, entries and ids, and a request opens in
/// the shard of the thread that opens it. A node whose turns run on several threads used to take one node-wide lock
/// and touch one dictionary per request and per reply; with both cores of a 2-core machine running turns, those cache
/// lines moved between the cores at every message, which cost the TCP echo 8% of its throughput on a host where moving
/// a line between cores is dear (docs/performance.md). A request's id names its shard (the low bits), so its reply finds the shard from any
/// thread. A single-threaded node has one shard, whose ids are 1, 2, 3 and so on.</para>
/// <para>The cap is node-wide. Each shard has a share of it (the cap over the shards) and opens within its share without
/// looking at the others; beyond its share, or once the ledger as a whole is near the cap, an open adds up every
/// shard's count first. "Near" means that the opens within shares could fill what is left: after each sum the ledger
/// notes whether more than the cap minus all the shares is open, and while it is, every open sums. So below that
/// mark no open reads another shard, and on one thread the cap is exact. The sum is read without the other shards'
/// locks: under concurrency the ledger may exceed the cap by what other threads open at the same instant (at most a
/// receive's batch each).</para>
/// </remarks>
internal sealed class InboundLedger
{
    private readonly InboundLedgerShard[] _shards;
    private readonly int _shardBits;
    private readonly long _shardMask;
    private readonly int _openMax;
    private readonly int _shardShare;
    private readonly int _sharesTotal;
    private readonly ServerCounters _counters;

    // Set when the last sum found more open than the cap minus all the shares; written only when it changes, so the
    // shards read it without moving its cache line.
    private volatile bool _nearCap;

    public InboundLedger(ServerOptions options, ServerCounters counters)
    {
        ArgumentNullException.ThrowIfNull(options);
        ArgumentNullException.ThrowIfNull(counters);

        var shardCount = options.SingleThreaded ? 1 : ThreadSlots.StripesPerMachine;
        _shardBits = BitOperations.Log2((uint)shardCount);
        _shardMask = shardCount - 1;
        _openMax = options.UnansweredRequestsMax;

        // The shares never add up to more than the cap (a cap below the shard count leaves every share at 0, so every
        // open sums).
        _shardShare = _openMax / shardCount;
        _sharesTotal = _shardShare * shardCount;
        _counters = counters;

        // The remembered expiries are split like the entries, so the ledger's memory does not grow with the shards.
        var recentPerShard = options.RecentCompletionsMax == 0 ? 0 : Math.Max(1, (options.RecentCompletionsMax + shardCount - 1) / shardCount);
        _shards = new InboundLedgerShard[shardCount];
        for (var i = 0; i < shardCount; i++)
        {
            _shards[i] = new InboundLedgerShard(options.SingleThreaded ? null : new Lock(), recentPerShard);
        }
    }

    /// <summary>Shards of this ledger: 1 when single-threaded, else a power of two. For tests.</summary>
    internal int ShardCount => _shards.Length;

    /// <summary>The shard an id was opened in. For tests.</summary>
    internal int ShardOf(long id) => (int)(id & _shardMask);

    /// <summary>The open entries, after dropping every expired one (counted as expired).</summary>
    public int Count(long now)
    {
        var count = 0;
        foreach (var shard in _shards)
        {
            using (NodeLock.Enter(shard.Gate))
            {
                count += shard.Expire(now, scanAll: true, _counters);
            }
        }

        return count;
    }

    /// <summary>Opens one entry that expires at <paramref name="deadline"/>; false when the ledger is at its cap.</summary>
    public bool TryOpen(long now, long deadline, out long id) => TryOpen(now, deadline, CurrentShardIndex(), out id);

    /// <summary><see cref="TryOpen(long, long, out long)"/> in shard <paramref name="index"/> (the caller's thread's otherwise).</summary>
    internal bool TryOpen(long now, long deadline, int index, out long id)
    {
        var shard = _shards[index];
        using (NodeLock.Enter(shard.Gate))
        {
            shard.Expire(now, scanAll: false, _counters);
            if (shard.Count < _shardShare && !_nearCap)
            {
                id = ToId(shard.Add(deadline), index);
                return true;
            }
        }

        if (Room(now, 1) < 1)
        {
            id = 0;
            return false;
        }

        using (NodeLock.Enter(shard.Gate))
        {
            id = ToId(shard.Add(deadline), index);
            return true;
        }
    }

    /// <summary>
    /// Opens the entries of a batch's client requests (those with a sequence) under one lock, all expiring at
    /// <paramref name="deadline"/>; a request over the cap is marked <see cref="BatchedFrameState.RefusedByLedger"/>.
    /// </summary>
    public void OpenBatch(ClientFrameBatch batch, long now, long deadline) => OpenBatch(batch, now, deadline, CurrentShardIndex());

    /// <summary><see cref="OpenBatch(ClientFrameBatch, long, long)"/> in shard <paramref name="index"/>.</summary>
    internal void OpenBatch(ClientFrameBatch batch, long now, long deadline, int index)
    {
        var shard = _shards[index];
        var requests = 0;
        for (var i = 0; i < batch.Count; i++)
        {
            if (batch[i].MsgSeq != 0)
            {
                requests++;
            }
        }

        using (NodeLock.Enter(shard.Gate))
        {
            shard.Expire(now, scanAll: false, _counters);
            if (shard.Count + requests <= _shardShare && !_nearCap)
            {
                AddBatchLocked(batch, shard, index, deadline, requests);
                return;
            }
        }

        // At the shard's share: the node-wide room decides how many open, the rest are refused, in batch order.
        var room = Room(now, requests);
        using (NodeLock.Enter(shard.Gate))
        {
            AddBatchLocked(batch, shard, index, deadline, Math.Min(requests, room));
        }
    }

    /// <summary>Closes the entry of <paramref name="id"/> as a reply at <paramref name="now"/> would.</summary>
    public InboundClose Close(long id, long now)
    {
        var shard = _shards[id & _shardMask];
        var seq = id >> _shardBits;
        using (NodeLock.Enter(shard.Gate))
        {
            return shard.Close(seq, now, _counters);
        }
    }

    private void AddBatchLocked(ClientFrameBatch batch, InboundLedgerShard shard, int index, long deadline, int admitted)
    {
        for (var i = 0; i < batch.Count; i++)
        {
            ref var entry = ref batch[i];
            if (entry.MsgSeq == 0)
            {
                continue;
            }

            if (admitted > 0)
            {
                entry.InboundId = ToId(shard.Add(deadline), index);
                admitted--;
            }
            else
            {
                entry.State = BatchedFrameState.RefusedByLedger;
            }
        }
    }

    private long ToId(long seq, int index) => (seq << _shardBits) | (long)index;

    private int CurrentShardIndex() => _shards.Length == 1 ? 0 : ThreadSlots.AssignCurrent() & (int)_shardMask;

    /// <summary>
    /// Entries the node can still open: the cap minus every shard's count, read without their locks; when that is
    /// short of <paramref name="wanted"/>, each shard drops its expired entries (under its own lock, one at a time)
    /// and the count is read again.
    /// </summary>
    private int Room(long now, int wanted)
    {
        var room = _openMax - OpenCountUnlocked();
        if (room < wanted)
        {
            foreach (var shard in _shards)
            {
                using (NodeLock.Enter(shard.Gate))
                {
                    shard.Expire(now, scanAll: true, _counters);
                }
            }

            room = Math.Max(0, _openMax - OpenCountUnlocked());
        }

        // What will be open once the caller has opened what fits, against the mark past which opens within their
        // shares could overfill the cap.
        var openAfter = _openMax - room + Math.Min(wanted, room);
        var nearCap = _shards.Length > 1 && openAfter > _openMax - _sharesTotal;
        if (nearCap != _nearCap)
        {
            _nearCap = nearCap;
        }

        return room;
    }

    private int OpenCountUnlocked()
    {
        var count = 0;
        foreach (var shard in _shards)
        {
            count += shard.CountUnlocked;
        }

        return count;
    }
}
