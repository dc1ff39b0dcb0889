using PlayHouse.Core.Pooling;

namespace PlayHouse.Core.Runtime;

/// <summary>One mailbox entry. A struct, so a steady stream of messages allocates nothing in the queue.</summary>
internal struct StageMessage
{
    public StageWorkKind Kind;

    /// <summary>True for messages from outside the stage (clients, other stages); only these count against the cap.</summary>
    public bool External;
    public string? MsgId;
    public Payload Payload;
    public ReplyToken Reply;
    public ActorHost? Actor;
    public ClientSession? Session;
    public object? State;
    public ushort ErrorCode;
    public bool Connected;

    /// <summary>For a stage-to-stage request whose sender awaits it: the sending stage's id (its node and request id
    /// are in <see cref="Reply"/>); 0 when no stage waits on this message's handler.</summary>
    public long WaiterStageId;

    /// <summary>The stages upstream of the waiter that also wait on this handler (the request's await chain).</summary>
    public AwaitingStage[]? AwaitChain;

    /// <summary>
    /// The timestamp (the node's <see cref="TimeProvider"/>) from which the message is stale: coming up for dispatch at or
    /// after it, it is answered with <see cref="ErrorCodes.RequestExpired"/> (or dropped, one-way) instead of dispatched.
    /// 0: never stale. Set when the message is posted (<see cref="ServerOptions.ClientMessageQueueTimeMax"/>,
    /// <see cref="ServerOptions.ShedMeshRequestsPastDeadline"/>).
    /// </summary>
    public long StaleAtTimestamp;
}

/// <summary>A completion that runs on the stage when its mailbox entry comes up.</summary>
internal interface IStageCompletion
{
    void Complete(StageHost stage);

    /// <summary>The stage closed before the completion could be queued: release what it owns instead.</summary>
    void Discard();
}
