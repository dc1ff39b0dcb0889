namespace PlayHouse.Core.Runtime;

/// <summary>Where an entry of an <see cref="OldestFirstCap{TEntry}"/> stands; it never returns to listed once it left.</summary>
internal enum CapEntryState : byte
{
    /// <summary>Counted against the cap.</summary>
    Listed,

    /// <summary>Its owner took it out (what it stood for ended).</summary>
    Ended,

    /// <summary>The cap chose it to make room; its owner acts on that when the eviction comes up.</summary>
    Evicted,
}

/// <summary>An entry of an <see cref="OldestFirstCap{TEntry}"/>.</summary>
/// <remarks><see cref="State"/> is written only under its list's lock and read anywhere: a state other than listed is final.</remarks>
internal abstract class CapEntry
{
    private volatile CapEntryState _state;

    public CapEntryState State
    {
        get => _state;
        set => _state = value;
    }

    public bool IsListed => _state == CapEntryState.Listed;
}

/// <summary>
/// A server-wide list with a cap, in the order its entries were added: adding past the cap evicts the oldest entries
/// still listed, which the caller then acts on (outside any lock). Entries that ended stay queued until they reach
/// the head or the queue is compacted, which happens when it holds more than twice the listed ones, so the queue stays
/// within a constant factor of the cap. Used for the disconnected actors waiting for their accounts and for the empty
/// stages waiting for their idle close.
/// </summary>
/// <remarks>Thread-safe unless the node is single-threaded (one lock: entries come and go far less often than messages).</remarks>
internal sealed class OldestFirstCap<TEntry>(ServerOptions options, int max)
    where TEntry : CapEntry
{
    private readonly Lock? _gate = NodeLock.Create(options);
    private Queue<TEntry> _order = new();
    private int _listed;
    private int _highWater;

    /// <summary>Entries listed now.</summary>
    public int Count
    {
        get
        {
            using (NodeLock.Enter(_gate))
            {
                return _listed;
            }
        }
    }

    /// <summary>The most entries listed at once, counted after an addition made room (so never above the cap).</summary>
    public int HighWater
    {
        get
        {
            using (NodeLock.Enter(_gate))
            {
                return _highWater;
            }
        }
    }

    /// <summary>Lists <paramref name="entry"/>; returns the entries evicted to make room, oldest first, or null when none was.</summary>
    public List<TEntry>? Add(TEntry entry)
    {
        ArgumentNullException.ThrowIfNull(entry);
        List<TEntry>? evicted = null;
        using (NodeLock.Enter(_gate))
        {
            _order.Enqueue(entry);
            _listed++;
            while (_listed > max && _order.TryDequeue(out var oldest))
            {
                if (oldest.State != CapEntryState.Listed)
                {
                    continue;
                }

                oldest.State = CapEntryState.Evicted;
                _listed--;
                (evicted ??= []).Add(oldest);
            }

            _highWater = Math.Max(_highWater, _listed);
            DropEndedHead();
            if (_order.Count > (2 * _listed) + 64)
            {
                _order = new Queue<TEntry>(_order.Where(static e => e.State == CapEntryState.Listed));
            }
        }

        return evicted;
    }

    /// <summary>Takes <paramref name="entry"/> out; nothing happens when it already left (ended or evicted).</summary>
    public void End(TEntry entry)
    {
        ArgumentNullException.ThrowIfNull(entry);
        using (NodeLock.Enter(_gate))
        {
            if (entry.State == CapEntryState.Listed)
            {
                entry.State = CapEntryState.Ended;
                _listed--;
                DropEndedHead();
            }
        }
    }

    private void DropEndedHead()
    {
        while (_order.TryPeek(out var head) && head.State != CapEntryState.Listed)
        {
            _order.Dequeue();
        }
    }
}
