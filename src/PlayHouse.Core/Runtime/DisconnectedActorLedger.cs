namespace PlayHouse.Core.Runtime;

/// <summary>
/// One disconnect of an actor, as the play server's ledger of waiting actors holds it: the stage, the actor, which of
/// its disconnects this is, and whether it still waits.
/// </summary>
/// <remarks>
/// <see cref="State"/> is written only under the ledger's lock; it never returns to waiting once it left it.
/// <see cref="Actor"/> is read and cleared only in the actor's stage's turns.
/// </remarks>
internal sealed class WaitingActor(StageHost stage, ActorHost actor, long generation)
{
    private volatile WaitingActorState _state;

    public StageHost Stage { get; } = stage;

    /// <summary>The actor, until its stage ends the wait: an ended entry may stay queued until its old deadline, and must not keep the actor alive.</summary>
    public ActorHost? Actor { get; set; } = actor;

    public long Generation { get; } = generation;

    public WaitingActorState State
    {
        get => _state;
        set => _state = value;
    }

    /// <summary>True while the actor waits; read without the ledger's lock, a false is final.</summary>
    public bool IsWaiting => _state == WaitingActorState.Waiting;
}

internal enum WaitingActorState : byte
{
    /// <summary>The actor waits in its stage for its account to reconnect.</summary>
    Waiting,

    /// <summary>It stopped waiting: its account reconnected, it left, it expired or its stage closed.</summary>
    Ended,

    /// <summary>The ledger chose it to make room under the cap; its stage destroys it when the eviction comes up.</summary>
    Evicted,
}

/// <summary>
/// The play server's ledger of disconnected actors waiting for their accounts, across all its stages: the part
/// <see cref="NodeParts.DisconnectedActorLedger"/> builds. Its cap (<see cref="ServerOptions.DisconnectedActorsMax"/>)
/// bounds what clients that leave can make the server hold, however fast they come and go and whatever the expiry.
/// </summary>
/// <remarks>Thread-safe unless the node is single-threaded: stages on any thread begin and end waits.</remarks>
internal interface IDisconnectedActorLedger
{
    /// <summary>Actors waiting now (an evicted one no longer counts, though its stage may not have destroyed it yet).</summary>
    int Count { get; }

    /// <summary>The most actors that waited at once, counted after a disconnect made room (so never above the cap).</summary>
    int HighWater { get; }

    /// <summary>
    /// A stage handled the disconnect of <paramref name="actor"/> (called from its turn): the returned entry is what
    /// the stage ends when the actor stops waiting. Past the cap the longest waiting actors of the server are evicted,
    /// each through a message to its own stage.
    /// </summary>
    WaitingActor Begin(StageHost stage, ActorHost actor, long generation);

    /// <summary>The actor of <paramref name="entry"/> stopped waiting (reconnected, left, expired, or its stage closed).</summary>
    void End(WaitingActor entry);
}

/// <summary>
/// The standard ledger: waits in disconnect order under one lock (a disconnect is rare next to messages). Past the cap
/// the oldest waiting entries are marked evicted and posted to their stages, which destroy the actor unless it
/// reconnected meanwhile. Entries that ended stay queued until they reach the head or the queue is compacted, which
/// happens when it holds more than twice the waiting ones, so the queue stays within a constant factor of the cap.
/// </summary>
internal sealed class CappedDisconnectedActorLedger(ServerOptions options) : IDisconnectedActorLedger
{
    private readonly Lock? _gate = NodeLock.Create(options);
    private readonly int _max = options.DisconnectedActorsMax;
    private Queue<WaitingActor> _order = new();
    private int _waiting;
    private int _highWater;

    public int Count
    {
        get
        {
            using (NodeLock.Enter(_gate))
            {
                return _waiting;
            }
        }
    }

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

    public WaitingActor Begin(StageHost stage, ActorHost actor, long generation)
    {
        var entry = new WaitingActor(stage, actor, generation);
        List<WaitingActor>? evicted = null;
        using (NodeLock.Enter(_gate))
        {
            _order.Enqueue(entry);
            _waiting++;
            while (_waiting > _max && _order.TryDequeue(out var oldest))
            {
                if (oldest.State != WaitingActorState.Waiting)
                {
                    continue;
                }

                oldest.State = WaitingActorState.Evicted;
                _waiting--;
                (evicted ??= []).Add(oldest);
            }

            _highWater = Math.Max(_highWater, _waiting);

            DropEndedHead();
            if (_order.Count > (2 * _waiting) + 64)
            {
                _order = new Queue<WaitingActor>(_order.Where(static e => e.State == WaitingActorState.Waiting));
            }
        }

        // Posted outside the lock: a stage's post takes its own lock, and the evicting stage may be the caller.
        if (evicted is not null)
        {
            foreach (var oldest in evicted)
            {
                oldest.Stage.PostEviction(oldest);
            }
        }

        return entry;
    }

    public void End(WaitingActor entry)
    {
        ArgumentNullException.ThrowIfNull(entry);
        using (NodeLock.Enter(_gate))
        {
            if (entry.State == WaitingActorState.Waiting)
            {
                entry.State = WaitingActorState.Ended;
                _waiting--;
                DropEndedHead();
            }
        }
    }

    private void DropEndedHead()
    {
        while (_order.TryPeek(out var head) && head.State != WaitingActorState.Waiting)
        {
            _order.Dequeue();
        }
    }
}
