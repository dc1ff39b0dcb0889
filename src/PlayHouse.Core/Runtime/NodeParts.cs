namespace PlayHouse.Core.Runtime;

/// <summary>
/// The replaceable components of a server node, next to <see cref="NodeSeams"/>. A node builds each of them
/// through the factory here, so that a test bed can plug a variant in where the standard part lives (the bug zoo's
/// flawed twins reintroduce PlayHouse's flaws this way, inside the component that had them). Only a composition
/// root picks parts; production code keeps <see cref="Standard"/>.
/// </summary>
public sealed record NodeParts
{
    /// <summary>Every part the node ships with.</summary>
    public static NodeParts Standard { get; } = new();

    /// <summary>Makes the timer table of each stage (one per stage: timer ids are scoped to their stage, B13).</summary>
    internal Func<StageHost, IStageTimerTable> StageTimers { get; init; } = static _ => new StageTimerTable();

    /// <summary>What a join does when its account already has an actor in the stage (a reconnect, B11).</summary>
    internal IActorRejoin Rejoin { get; init; } = KeepLiveActorRejoin.Instance;

    /// <summary>Makes the stage registry of each play server (stages by id, from before their create until they are gone, B16).</summary>
    internal Func<PlayServer, IStageRegistry> StageRegistry { get; init; } = static _ => new PlayHouse.Core.Runtime.StageRegistry();

    /// <summary>Makes the table of a stage's disconnected actors, from which they expire (<see cref="ServerOptions.DisconnectedActorExpiry"/>).</summary>
    internal Func<StageHost, IDisconnectedActorTable> DisconnectedActors { get; init; } = static _ => new DisconnectedActorQueue();

    /// <summary>Makes the ledger of each play server's disconnected actors, which keeps them within <see cref="ServerOptions.DisconnectedActorsMax"/>.</summary>
    internal Func<ServerOptions, IDisconnectedActorLedger> DisconnectedActorLedger { get; init; } = static options => new CappedDisconnectedActorLedger(options);

    /// <summary>Makes the allocator of stage ids for creates that name none, one per play server (B16).</summary>
    internal Func<PlayServer, IStageIdAllocator> StageIds { get; init; } = static _ => new SequentialStageIds();

    /// <summary>Makes the node's sender-id cache, through which its mesh decoders resolve each frame's sender (B4).</summary>
    internal Func<ServerNode, Mesh.ISenderIdCache> SenderIds { get; init; } = static node => new Mesh.Utf8SenderIdCache(singleThreaded: node.Options.SingleThreaded);

    /// <summary>Makes the client session table of each play server (session ids unique across its transports, B14).</summary>
    internal Func<PlayServer, ISessionTable> Sessions { get; init; } = static _ => new SessionTable();

    /// <summary>Serialises a mesh frame's <c>RouteHeader</c> into the frame; the standard writes it in place, at its exact size.</summary>
    public Mesh.IRouteHeaderWriter MeshHeaderWriter { get; init; } = Mesh.RouteHeaderWriter.ExactSize;

    /// <summary>
    /// Makes the storage of free buffers of the node's message pool, where the composition root builds the pool
    /// (<see cref="Pooling.MessagePoolOptions.Store"/>); null (the standard) keeps the pool's own two tiers.
    /// </summary>
    public Func<Pooling.MessagePool, Pooling.MessagePoolStore>? PoolStore { get; init; }

    /// <summary>What a stage's dispatcher does when a handler suspends at an await and when its work completes.</summary>
    internal IHandlerCompletion HandlerCompletion { get; init; } = StandardHandlerCompletion.Instance;

    /// <summary>How a link's send to a stage or API server puts the caller's payload into the outgoing message.</summary>
    internal IMeshSendPayloads MeshSendPayloads { get; init; } = OwningMeshSendPayloads.Instance;

    /// <summary>How an actor's push reaches its client's session.</summary>
    internal IClientPushes ClientPushes { get; init; } = OwningClientPushes.Instance;

    /// <summary>The order in which a play server applies the session protocol's rules to a client's frame.</summary>
    internal IClientFrameGate ClientFrameGate { get; init; } = StandardClientFrameGate.Instance;

    /// <summary>True when every part is the standard one (hosts print the parts only when they differ).</summary>
    public bool IsStandard => Equals(Standard);

    /// <summary>Makes each stage's mailbox: the standard one refuses outside messages past <see cref="ServerOptions.MailboxCapacityMax"/>.</summary>
    internal Func<ServerOptions, IStageMailbox> StageMailbox { get; init; } = static options => new StageMailbox(options.MailboxCapacityMax);

    /// <summary>Makes the node's tick admission: the standard one coalesces ticks past <see cref="ServerOptions.TimerPendingTicksMax"/> per timer.</summary>
    internal Func<ServerOptions, ITickAdmission> TickAdmission { get; init; } = static options => new CoalescingTickAdmission(options.TimerPendingTicksMax);
    /// <summary>Builds the node's request table: request ids, completions, timeouts, and the reply path.</summary>
    /// <remarks>The standard table's ids are 64-bit and never reused; a reply that answers no request is dropped and counted.</remarks>
    internal Func<ServerNode, IRequestTable> RequestTable { get; init; } = static node => new RequestTable(node);

    /// <summary>Builds the part that addresses replies; null (standard): a reply goes where its packet's own <see cref="ReplyToken"/> says.</summary>
    internal Func<ServerNode, IReplyAddressing>? ReplyAddressing { get; init; }

    /// <summary>How reply callbacks reach their stage; null (standard): always through the stage's mailbox.</summary>
    internal IReplyCallbackDispatch? CallbackDispatch { get; init; }

    /// <summary>Which self and cyclic requests are refused; null (standard): every one of them, at once.</summary>
    internal IRequestCycleGuard? CycleGuard { get; init; }
}
