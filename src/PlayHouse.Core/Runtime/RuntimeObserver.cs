namespace PlayHouse.Core.Runtime;

/// <summary>Lifecycle callbacks as the runtime invokes them; checkers assert their order.</summary>
public enum LifecycleEvent
{
    StageCreate,
    StagePostCreate,
    StageDestroy,
    ActorCreate,
    ActorAuthenticate,
    ActorPostAuthenticate,
    ActorJoinStage,
    ActorPostJoinStage,
    ActorConnected,
    ActorDisconnected,
    ActorDestroy,
}

/// <summary>How a request issued by this node completed.</summary>
public enum RequestOutcome
{
    Replied,
    TimedOut,
    FailedFast,
}

/// <summary>What a stage turn is running.</summary>
public enum StageWorkKind
{
    Create,
    Join,
    ClientMessage,
    ServerMessage,
    ConnectionChanged,
    Timer,
    GameLoop,
    ReplyCallback,
    OffStageResult,
    Leave,
    Destroy,

    /// <summary>Expires disconnected actors whose time is up and closes the stage when it stayed idle too long.</summary>
    Housekeeping,

    /// <summary>Destroys a disconnected actor early, to keep the server within its cap of waiting actors.</summary>
    EvictDisconnected,
}

/// <summary>
/// Hooks through which checkers and tracers watch the runtime. Every method has an empty default, so an
/// observer overrides only what it checks. Calls come from the executor running the event.
/// </summary>
public abstract class RuntimeObserver
{
    /// <summary>An observer that watches nothing.</summary>
    public static RuntimeObserver None { get; } = new NoneObserver();

    /// <summary>A stage handler (the synchronous part of a turn, or a resumed continuation) starts.</summary>
    public virtual void OnHandlerEntered(string nodeId, long stageId, StageWorkKind kind, string? msgId)
    {
    }

    /// <summary>The handler entered last returned control (completed or suspended at an await).</summary>
    public virtual void OnHandlerExited(string nodeId, long stageId)
    {
    }

    /// <summary>A message's handler, including its awaits, finished; its payload is released after this.</summary>
    public virtual void OnMessageCompleted(string nodeId, long stageId, StageWorkKind kind, string? msgId)
    {
    }

    /// <summary>A lifecycle callback is about to run; <paramref name="actorInstance"/> is 0 for stage events.</summary>
    public virtual void OnLifecycle(string nodeId, long stageId, long actorInstance, long accountId, LifecycleEvent lifecycleEvent)
    {
    }

    /// <summary>A request was registered and is about to be sent (requests that fail fast are never issued).</summary>
    public virtual void OnRequestIssued(string nodeId, ulong msgSeq, string targetNodeId, long targetStageId, string msgId)
    {
    }

    /// <summary>A request issued by this node completed (exactly once per request).</summary>
    public virtual void OnRequestCompleted(string nodeId, ulong msgSeq, string targetNodeId, RequestOutcome outcome, ushort errorCode)
    {
    }

    /// <summary>
    /// A mailbox was posted to; <paramref name="mailboxLength"/> counts messages after the post, and
    /// <paramref name="externalLength"/> those of them from outside the stage (the ones <see cref="ServerOptions.MailboxCapacityMax"/> caps).
    /// </summary>
    public virtual void OnMailboxPosted(string nodeId, long stageId, int mailboxLength, int externalLength)
    {
    }

    /// <summary>
    /// A timer or game-loop tick was admitted into a stage's mailbox; <paramref name="pendingTicks"/> counts that timer's
    /// (or loop's) ticks now waiting there, the queue <see cref="ServerOptions.TimerPendingTicksMax"/> caps.
    /// </summary>
    public virtual void OnTickPosted(string nodeId, long stageId, int pendingTicks)
    {
    }

    /// <summary>A stage handler threw; the failure was counted and a pending request answered with HandlerFailed.</summary>
    public virtual void OnHandlerFailed(string nodeId, long stageId, StageWorkKind kind, string? msgId, Exception error)
    {
    }

    /// <summary>A reply or message was dropped with a counted reason.</summary>
    public virtual void OnDropped(string nodeId, string reason, string? msgId)
    {
    }

    private sealed class NoneObserver : RuntimeObserver
    {
    }
}
