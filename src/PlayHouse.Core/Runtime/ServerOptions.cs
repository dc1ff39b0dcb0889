namespace PlayHouse.Core.Runtime;

/// <summary>Limits and defaults of a server node. Every queue has a cap here.</summary>
public sealed record ServerOptions
{
    /// <summary>Messages from outside (clients, other stages) a stage's mailbox holds before refusing.</summary>
    public int MailboxCapacityMax { get; init; } = 10_000;

    /// <summary>Messages a stage runs in one turn before yielding the executor to other stages.</summary>
    public int TurnMessageBudget { get; init; } = 64;

    /// <summary>
    /// Lets a transport's receiving thread run an idle stage's turn itself for the client messages it just queued there,
    /// when the executor allows it (<see cref="Seams.IExecutor.CanRunInline"/>: the thread pool's own threads do; the
    /// manual and simulated executors never do, so tests and the simulation keep their order). The messages are then
    /// answered on the thread that received them instead of one work item later; the turn is the same turn, one at a
    /// time per stage, bounded by <see cref="TurnMessageBudget"/>, after which the rest is scheduled as before. Off, every
    /// turn is a work item on the executor; a stage whose handlers block for long may want that, since a turn run on a
    /// receiving thread holds that connection's next receive until it ends.
    /// </summary>
    public bool RunClientTurnsOnReceiveThread { get; init; } = true;

    /// <summary>Outstanding outgoing requests of the node before new ones fail fast.</summary>
    public int PendingRequestsMax { get; init; } = 100_000;

    /// <summary>
    /// Inbound requests a node holds in its exactly-once reply ledger (handled or queued, not yet answered, requester's
    /// deadline not passed) before it refuses new ones with <see cref="ErrorCodes.TooManyUnansweredRequests"/>.
    /// </summary>
    public int UnansweredRequestsMax { get; init; } = 100_000;

    /// <summary>
    /// Default timeout of outgoing requests; also how long an inbound request's ledger entry lives when its sender did
    /// not say (client requests, and mesh requests sent without an explicit timeout).
    /// </summary>
    public TimeSpan RequestTimeout { get; init; } = TimeSpan.FromSeconds(30);

    /// <summary>
    /// How long a client message may wait in its stage's mailbox. One that comes up for dispatch after waiting this long
    /// or longer is not dispatched to a handler: a request is answered with <see cref="ErrorCodes.RequestExpired"/>
    /// (counted in <see cref="ServerCounters.RequestsExpiredInMailbox"/>), a one-way message is dropped (counted in
    /// <see cref="ServerCounters.SendsExpiredInMailbox"/>). Null, the default, dispatches every message however long it
    /// waited, as PlayHouse does.
    /// </summary>
    /// <remarks>
    /// PlayHouse's client protocol carries no deadline, so the server cannot know how long a client waits; a limit
    /// shorter than that sheds requests the client would still have taken, and no limit lets an overloaded stage
    /// spend itself on requests whose clients gave up (a metastable stall: every answer comes too late, the clients
    /// send new requests, and the queue never shrinks). Set it when the clients' timeout is known, to that timeout
    /// less the time a request spends outside the mailbox (the network both ways and the handler's own work).
    /// </remarks>
    public TimeSpan? ClientMessageQueueTimeMax { get; init; }

    /// <summary>
    /// A mesh request that carries its sender's timeout and comes up for dispatch after that timeout has passed since it
    /// arrived is answered with <see cref="ErrorCodes.RequestExpired"/> instead of being dispatched (counted in
    /// <see cref="ServerCounters.RequestsExpiredInMailbox"/>): its sender has already timed out, so the handler's reply
    /// could only arrive late. On by default, because the deadline is the sender's own (the clock starts at arrival,
    /// later than the sender's, so it never sheds a request its sender still waits for). A request sent without an
    /// explicit timeout carries none and is always dispatched.
    /// </summary>
    public bool ShedMeshRequestsPastDeadline { get; init; } = true;

    /// <summary>Ticks of one timer waiting in a mailbox before further ticks are coalesced (dropped and counted).</summary>
    public int TimerPendingTicksMax { get; init; } = 1;

    /// <summary>
    /// Off-stage work items per stage whose continuations have not run yet (running, or their results waiting in the
    /// mailbox) before new ones are refused with <see cref="OffStageQueueFullException"/>. It also bounds the off-stage
    /// results a mailbox holds beyond <see cref="MailboxCapacityMax"/>.
    /// </summary>
    public int OffStageInFlightMax { get; init; } = 1_000;

    /// <summary>
    /// Stages a play server holds at once (creating, running or closing). A create past it (a client authenticating into
    /// a new stage id, or a create request) is refused with <see cref="ErrorCodes.TooManyStages"/> and counted in
    /// <see cref="ServerCounters.StagesRefusedAtCap"/>; existing stages are unaffected.
    /// </summary>
    public int StagesMax { get; init; } = 100_000;

    /// <summary>
    /// Actors one stage holds, connected or not. A join by a new account past it is refused with
    /// <see cref="ErrorCodes.StageFull"/> and counted in <see cref="ServerCounters.JoinsRefusedAtCap"/>; a reconnect of an
    /// account that already has its actor in the stage is never refused.
    /// </summary>
    public int ActorsPerStageMax { get; init; } = 20_000;

    /// <summary>
    /// How long an actor whose client disconnected waits in its stage for the account to reconnect. Then the stage
    /// destroys it (OnDestroy, as if it had left; counted in <see cref="ServerCounters.DisconnectedActorsExpired"/>). Timed
    /// from when the stage handles the disconnect, on the node's <see cref="TimeProvider"/>, so virtual time decides it in
    /// simulation. Null keeps disconnected actors until they leave or the stage closes.
    /// </summary>
    public TimeSpan? DisconnectedActorExpiry { get; init; } = TimeSpan.FromMinutes(1);

    /// <summary>
    /// Disconnected actors the whole server holds waiting for their accounts, across its stages. A disconnect past it
    /// makes room by destroying the actor that has waited longest (OnDestroy, as on expiry; counted in
    /// <see cref="ServerCounters.DisconnectedActorsEvictedAtCap"/>), so clients that come and go bound the server's
    /// memory by this cap rather than by their rate times the expiry. Applies with or without an expiry; 0 destroys an
    /// actor as soon as its stage handles the disconnect.
    /// </summary>
    public int DisconnectedActorsMax { get; init; } = 10_000;

    /// <summary>
    /// How long a stage may stay idle (no actors, no timers, no game loop, no off-stage work, nothing queued) before the
    /// server closes it (OnDestroy; counted in <see cref="ServerCounters.IdleStagesClosed"/>). Timed from when its last
    /// actor went (or from its create), on the node's <see cref="TimeProvider"/>. Null never closes a stage by itself.
    /// </summary>
    public TimeSpan? IdleStageCloseAfter { get; init; } = TimeSpan.FromMinutes(1);

    /// <summary>
    /// Empty stages the server keeps open waiting for their idle close. A stage that becomes empty past it makes room by
    /// closing the one empty longest, as its idle close would (counted in
    /// <see cref="ServerCounters.EmptyStagesClosedAtCap"/>), unless it is not idle (a timer, a game loop or work in flight
    /// keeps it open) or an actor joined it meanwhile; so clients naming new stage ids bound the server's memory by this cap
    /// rather than by their rate times the idle time. Applies with or without an idle close; 0 closes a stage as soon as
    /// it is empty and idle.
    /// </summary>
    public int EmptyStagesMax { get; init; } = 10_000;

    /// <summary>The msg id a client must send first.</summary>
    public string AuthenticateMsgId { get; init; } = "AuthenticateRequest";

    /// <summary>The stage type created when a client authenticates into an unknown stage id; null refuses.</summary>
    public string? DefaultStageType { get; init; }

    /// <summary>Recent completed request ids remembered to tell late replies from unknown ones; also the expired inbound
    /// ids remembered to tell a reply after expiry from a second reply.</summary>
    public int RecentCompletionsMax { get; init; } = 4096;

    /// <summary>
    /// Every call into the node, its stages and its sessions comes from one thread, so the node skips its internal
    /// locks. Only a host that guarantees this may set it: the deterministic simulation, which runs everything on its
    /// one thread. Real servers (ThreadPool executor, socket transports) must leave it off.
    /// </summary>
    public bool SingleThreaded { get; init; }

    public void Validate()
    {
        Require(MailboxCapacityMax > 0, nameof(MailboxCapacityMax));
        Require(TurnMessageBudget > 0, nameof(TurnMessageBudget));
        Require(PendingRequestsMax > 0, nameof(PendingRequestsMax));
        Require(UnansweredRequestsMax > 0, nameof(UnansweredRequestsMax));
        Require(RequestTimeout > TimeSpan.Zero, nameof(RequestTimeout));
        Require(TimerPendingTicksMax > 0, nameof(TimerPendingTicksMax));
        Require(OffStageInFlightMax > 0, nameof(OffStageInFlightMax));
        Require(!string.IsNullOrEmpty(AuthenticateMsgId), nameof(AuthenticateMsgId));
        Require(RecentCompletionsMax >= 0, nameof(RecentCompletionsMax));
        Require(StagesMax > 0, nameof(StagesMax));
        Require(ActorsPerStageMax > 0, nameof(ActorsPerStageMax));
        Require(DisconnectedActorsMax >= 0, nameof(DisconnectedActorsMax));
        Require(EmptyStagesMax >= 0, nameof(EmptyStagesMax));
        Require(DisconnectedActorExpiry is null || DisconnectedActorExpiry > TimeSpan.Zero, nameof(DisconnectedActorExpiry));
        Require(IdleStageCloseAfter is null || IdleStageCloseAfter > TimeSpan.Zero, nameof(IdleStageCloseAfter));
        Require(ClientMessageQueueTimeMax is null || ClientMessageQueueTimeMax > TimeSpan.Zero, nameof(ClientMessageQueueTimeMax));
    }

    private static void Require(bool ok, string name)
    {
        if (!ok)
        {
            throw new ArgumentException($"ServerOptions.{name} is out of range.", name);
        }
    }
}
