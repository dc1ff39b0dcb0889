namespace PlayHouse.Core.Runtime;

/// <summary>
/// One disconnect of an actor, as the play server's ledger of waiting actors holds it: the stage, the actor, which of
/// its disconnects this is, and (as a <see cref="CapEntry"/>) whether it still waits.
/// </summary>
/// <remarks><see cref="Actor"/> is read and cleared only in the actor's stage's turns.</remarks>
internal sealed class WaitingActor(StageHost stage, ActorHost actor, long generation) : CapEntry
{
    public StageHost Stage { get; } = stage;

    /// <summary>The actor, until its stage ends the wait: an ended entry may stay queued until its old deadline, and must not keep the actor alive.</summary>
    public ActorHost? Actor { get; set; } = actor;

    public long Generation { get; } = generation;

    /// <summary>True while the actor waits; read without the ledger's lock, a false is final.</summary>
    public bool IsWaiting => IsListed;
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
/// The standard ledger: waits in disconnect order (<see cref="OldestFirstCap{TEntry}"/>); past the cap the oldest
/// waiting entries are evicted and posted to their stages, which destroy the actor unless it reconnected meanwhile.
/// </summary>
internal sealed class CappedDisconnectedActorLedger(ServerOptions options) : IDisconnectedActorLedger
{
    private readonly OldestFirstCap<WaitingActor> _waits = new(options, options.DisconnectedActorsMax);

    public int Count => _waits.Count;

    public int HighWater => _waits.HighWater;

    public WaitingActor Begin(StageHost stage, ActorHost actor, long generation)
    {
        var entry = new WaitingActor(stage, actor, generation);

        // Posted outside the list's lock: a stage's post takes its own lock, and the evicting stage may be the caller.
        if (_waits.Add(entry) is { } evicted)
        {
            foreach (var oldest in evicted)
            {
                oldest.Stage.PostEviction(oldest);
            }
        }

        return entry;
    }

    public void End(WaitingActor entry) => _waits.End(entry);
}

/// <summary>A stage's stay in the play server's list of empty stages, from becoming empty until it is joined or closes.</summary>
internal sealed class EmptyStage(StageHost stage) : CapEntry
{
    public StageHost Stage { get; } = stage;
}
