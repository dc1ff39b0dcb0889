namespace PlayHouse.Core.Runtime;

/// <summary>
/// An actor waiting in its stage for its account to reconnect: its wait in the server's ledger (the actor and which of
/// its disconnects this is) and the timestamp at which it expires.
/// </summary>
internal readonly record struct DisconnectedActor(WaitingActor Wait, long DeadlineTimestamp)
{
    /// <summary>The waiting actor, or null once its stage ended the wait.</summary>
    public ActorHost? Actor => Wait.Actor;

    public long Generation => Wait.Generation;
}

/// <summary>
/// A stage's disconnected actors in the order they expire: the part <see cref="NodeParts.DisconnectedActors"/> builds,
/// one per stage that has seen a disconnect. The stage adds an entry when it handles a disconnect and takes the due ones
/// when its housekeeping runs; an entry whose actor reconnected, left or disconnected again meanwhile is still handed
/// out, and the stage skips it (its generation or session says so).
/// </summary>
/// <remarks>Not thread-safe; called only from its stage's turns.</remarks>
internal interface IDisconnectedActorTable
{
    /// <summary>Entries held, stale ones included.</summary>
    int Count { get; }

    /// <summary>The earliest deadline held, or <see cref="long.MaxValue"/> when none: the stage arms its housekeeping timer for it.</summary>
    long NextDeadlineTimestamp { get; }

    void Add(in DisconnectedActor entry);

    /// <summary>Takes the earliest entry whose deadline is at or before <paramref name="nowTimestamp"/>.</summary>
    bool TryTakeDue(long nowTimestamp, out DisconnectedActor entry);
}

/// <summary>
/// The standard table: a FIFO queue. Every entry gets the same expiry added to a clock that never goes back, so entries
/// arrive in deadline order and the head is always the earliest. An entry whose wait ended early (the account
/// reconnected, or the server's cap evicted the actor) would hold its actor until its deadline, so a client churning
/// through fresh accounts would keep every actor of one expiry span alive; the queue drops such entries whenever it
/// has doubled since it last did, so it holds about as many entries as actors still wait.
/// </summary>
internal sealed class DisconnectedActorQueue : IDisconnectedActorTable
{
    private const int CompactAtLeast = 64;
    private Queue<DisconnectedActor> _entries = new();
    private long _tailDeadline;
    private int _compactAt = CompactAtLeast;

    public int Count => _entries.Count;

    public long NextDeadlineTimestamp => _entries.TryPeek(out var head) ? head.DeadlineTimestamp : long.MaxValue;

    public void Add(in DisconnectedActor entry)
    {
        if (_entries.Count > 0 && entry.DeadlineTimestamp < _tailDeadline)
        {
            // A deadline earlier than the tail's would wait behind it: the clock went back, which no TimeProvider does.
            throw new InvalidOperationException($"Disconnect deadlines must not decrease: {entry.DeadlineTimestamp} after {_tailDeadline}.");
        }

        _entries.Enqueue(entry);
        _tailDeadline = entry.DeadlineTimestamp;
        if (_entries.Count > _compactAt)
        {
            // Filtering keeps the deadline order. A wait read as still waiting while another thread ends it stays for now.
            _entries = new Queue<DisconnectedActor>(_entries.Where(static e => e.Wait.IsWaiting));
            _compactAt = Math.Max(CompactAtLeast, 2 * _entries.Count);
        }
    }

    public bool TryTakeDue(long nowTimestamp, out DisconnectedActor entry)
    {
        if (_entries.TryPeek(out entry) && entry.DeadlineTimestamp <= nowTimestamp)
        {
            _entries.Dequeue();
            return true;
        }

        entry = default;
        return false;
    }
}
