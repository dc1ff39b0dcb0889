namespace PlayHouse.Core.Runtime;

/// <summary>
/// Counters of every defined outcome that is not the happy path. Each has a test that drives it.
/// </summary>
/// <remarks>Thread-safe: increments are interlocked.</remarks>
public sealed class ServerCounters
{
    private long _mailboxRefused;
    private long _unknownStageRequests;
    private long _unknownStageSends;
    private long _lateReplies;
    private long _duplicateReplies;
    private long _unknownReplies;
    private long _misaddressedReplies;
    private long _requestTimeouts;
    private long _selfRequestsRefused;
    private long _cycleRequestsRefused;
    private long _pendingRequestsRefused;
    private long _timerTicksCoalesced;
    private long _gameLoopStepsDropped;
    private long _handlerFailures;
    private long _clientSendsRefused;
    private long _clientPushesToDisconnected;
    private long _repliesToClosedSessions;
    private long _sessionsClosedBeforeAuthentication;
    private long _clientMessagesBeforeAuthentication;
    private long _secondReplyAttempts;
    private long _offStageRefused;
    private long _unknownApiMessages;
    private long _meshSendsToUnknownServers;
    private long _meshSendsRefused;
    private long _offStageResultsDiscarded;
    private long _unansweredRequestsRefused;
    private long _unansweredRequestsExpired;
    private long _repliesAfterExpiry;
    private long _stagesRefusedAtCap;
    private long _joinsRefusedAtCap;
    private long _disconnectedActorsExpired;
    private long _disconnectedActorsEvictedAtCap;
    private long _emptyStagesClosedAtCap;
    private long _idleStagesClosed;
    private long _requestsExpiredInMailbox;
    private long _sendsExpiredInMailbox;

    public long MailboxRefused => Volatile.Read(ref _mailboxRefused);

    public long UnknownStageRequests => Volatile.Read(ref _unknownStageRequests);

    public long UnknownStageSends => Volatile.Read(ref _unknownStageSends);

    /// <summary>Replies that arrived after their request timed out.</summary>
    public long LateReplies => Volatile.Read(ref _lateReplies);

    /// <summary>Replies that arrived after their request was already answered.</summary>
    public long DuplicateReplies => Volatile.Read(ref _duplicateReplies);

    /// <summary>Replies for request ids this node never issued or no longer remembers.</summary>
    public long UnknownReplies => Volatile.Read(ref _unknownReplies);

    /// <summary>Replies whose sender is not the server the request went to.</summary>
    public long MisaddressedReplies => Volatile.Read(ref _misaddressedReplies);

    public long RequestTimeouts => Volatile.Read(ref _requestTimeouts);

    public long SelfRequestsRefused => Volatile.Read(ref _selfRequestsRefused);

    public long CycleRequestsRefused => Volatile.Read(ref _cycleRequestsRefused);

    public long PendingRequestsRefused => Volatile.Read(ref _pendingRequestsRefused);

    public long TimerTicksCoalesced => Volatile.Read(ref _timerTicksCoalesced);

    public long GameLoopStepsDropped => Volatile.Read(ref _gameLoopStepsDropped);

    public long HandlerFailures => Volatile.Read(ref _handlerFailures);

    public long ClientSendsRefused => Volatile.Read(ref _clientSendsRefused);

    public long ClientPushesToDisconnected => Volatile.Read(ref _clientPushesToDisconnected);

    public long RepliesToClosedSessions => Volatile.Read(ref _repliesToClosedSessions);

    public long SessionsClosedBeforeAuthentication => Volatile.Read(ref _sessionsClosedBeforeAuthentication);

    public long ClientMessagesBeforeAuthentication => Volatile.Read(ref _clientMessagesBeforeAuthentication);

    /// <summary>Handlers that replied twice to one request; the second reply was refused.</summary>
    public long SecondReplyAttempts => Volatile.Read(ref _secondReplyAttempts);

    public long OffStageRefused => Volatile.Read(ref _offStageRefused);

    public long UnknownApiMessages => Volatile.Read(ref _unknownApiMessages);

    public long MeshSendsToUnknownServers => Volatile.Read(ref _meshSendsToUnknownServers);

    /// <summary>Mesh messages refused because the send queue towards their server was at its cap (requests fail with <see cref="ErrorCodes.MeshSendQueueFull"/>).</summary>
    public long MeshSendsRefused => Volatile.Read(ref _meshSendsRefused);

    /// <summary>Off-stage results that came back after their stage closed; what they owned was released.</summary>
    public long OffStageResultsDiscarded => Volatile.Read(ref _offStageResultsDiscarded);

    /// <summary>Inbound requests refused with <see cref="ErrorCodes.TooManyUnansweredRequests"/> because the reply ledger was full.</summary>
    public long UnansweredRequestsRefused => Volatile.Read(ref _unansweredRequestsRefused);

    /// <summary>Inbound requests that got no reply by their requester's deadline; their ledger entries were dropped.</summary>
    public long UnansweredRequestsExpired => Volatile.Read(ref _unansweredRequestsExpired);

    /// <summary>Replies to requests whose ledger entries had expired; still sent (the requester may count them late), never thrown.</summary>
    public long RepliesAfterExpiry => Volatile.Read(ref _repliesAfterExpiry);

    /// <summary>Stage creates refused with <see cref="ErrorCodes.TooManyStages"/> at <see cref="ServerOptions.StagesMax"/>.</summary>
    public long StagesRefusedAtCap => Volatile.Read(ref _stagesRefusedAtCap);

    /// <summary>Joins of new accounts refused with <see cref="ErrorCodes.StageFull"/> at <see cref="ServerOptions.ActorsPerStageMax"/>.</summary>
    public long JoinsRefusedAtCap => Volatile.Read(ref _joinsRefusedAtCap);

    /// <summary>Disconnected actors destroyed because their account did not reconnect within <see cref="ServerOptions.DisconnectedActorExpiry"/>.</summary>
    public long DisconnectedActorsExpired => Volatile.Read(ref _disconnectedActorsExpired);

    /// <summary>Disconnected actors destroyed before their expiry to keep the server within <see cref="ServerOptions.DisconnectedActorsMax"/>.</summary>
    public long DisconnectedActorsEvictedAtCap => Volatile.Read(ref _disconnectedActorsEvictedAtCap);

    /// <summary>Empty idle stages closed before their idle time to keep the server within <see cref="ServerOptions.EmptyStagesMax"/>.</summary>
    public long EmptyStagesClosedAtCap => Volatile.Read(ref _emptyStagesClosedAtCap);

    /// <summary>Stages closed because they stayed idle for <see cref="ServerOptions.IdleStageCloseAfter"/>.</summary>
    public long IdleStagesClosed => Volatile.Read(ref _idleStagesClosed);

    /// <summary>
    /// Requests answered with <see cref="ErrorCodes.RequestExpired"/> when they came out of a stage's mailbox past their
    /// deadline, instead of being dispatched to a handler.
    /// </summary>
    public long RequestsExpiredInMailbox => Volatile.Read(ref _requestsExpiredInMailbox);

    /// <summary>
    /// One-way client messages dropped when they came out of a stage's mailbox after waiting
    /// <see cref="ServerOptions.ClientMessageQueueTimeMax"/> or longer; nobody waits for an answer to them.
    /// </summary>
    public long SendsExpiredInMailbox => Volatile.Read(ref _sendsExpiredInMailbox);

    /// <summary>All counters by name, in name order, for reports.</summary>
    public IReadOnlyList<KeyValuePair<string, long>> Snapshot() =>
    [
        new(nameof(ClientMessagesBeforeAuthentication), ClientMessagesBeforeAuthentication),
        new(nameof(ClientPushesToDisconnected), ClientPushesToDisconnected),
        new(nameof(ClientSendsRefused), ClientSendsRefused),
        new(nameof(CycleRequestsRefused), CycleRequestsRefused),
        new(nameof(DisconnectedActorsEvictedAtCap), DisconnectedActorsEvictedAtCap),
        new(nameof(DisconnectedActorsExpired), DisconnectedActorsExpired),
        new(nameof(DuplicateReplies), DuplicateReplies),
        new(nameof(EmptyStagesClosedAtCap), EmptyStagesClosedAtCap),
        new(nameof(GameLoopStepsDropped), GameLoopStepsDropped),
        new(nameof(HandlerFailures), HandlerFailures),
        new(nameof(IdleStagesClosed), IdleStagesClosed),
        new(nameof(JoinsRefusedAtCap), JoinsRefusedAtCap),
        new(nameof(LateReplies), LateReplies),
        new(nameof(MailboxRefused), MailboxRefused),
        new(nameof(MeshSendsRefused), MeshSendsRefused),
        new(nameof(MeshSendsToUnknownServers), MeshSendsToUnknownServers),
        new(nameof(MisaddressedReplies), MisaddressedReplies),
        new(nameof(OffStageRefused), OffStageRefused),
        new(nameof(OffStageResultsDiscarded), OffStageResultsDiscarded),
        new(nameof(PendingRequestsRefused), PendingRequestsRefused),
        new(nameof(RepliesAfterExpiry), RepliesAfterExpiry),
        new(nameof(RepliesToClosedSessions), RepliesToClosedSessions),
        new(nameof(RequestTimeouts), RequestTimeouts),
        new(nameof(RequestsExpiredInMailbox), RequestsExpiredInMailbox),
        new(nameof(SecondReplyAttempts), SecondReplyAttempts),
        new(nameof(SelfRequestsRefused), SelfRequestsRefused),
        new(nameof(SendsExpiredInMailbox), SendsExpiredInMailbox),
        new(nameof(SessionsClosedBeforeAuthentication), SessionsClosedBeforeAuthentication),
        new(nameof(StagesRefusedAtCap), StagesRefusedAtCap),
        new(nameof(TimerTicksCoalesced), TimerTicksCoalesced),
        new(nameof(UnansweredRequestsExpired), UnansweredRequestsExpired),
        new(nameof(UnansweredRequestsRefused), UnansweredRequestsRefused),
        new(nameof(UnknownApiMessages), UnknownApiMessages),
        new(nameof(UnknownReplies), UnknownReplies),
        new(nameof(UnknownStageRequests), UnknownStageRequests),
        new(nameof(UnknownStageSends), UnknownStageSends),
    ];

    internal void AddMailboxRefused() => Interlocked.Increment(ref _mailboxRefused);

    internal void AddUnknownStageRequest() => Interlocked.Increment(ref _unknownStageRequests);

    internal void AddUnknownStageSend() => Interlocked.Increment(ref _unknownStageSends);

    internal void AddLateReply() => Interlocked.Increment(ref _lateReplies);

    internal void AddDuplicateReply() => Interlocked.Increment(ref _duplicateReplies);

    internal void AddUnknownReply() => Interlocked.Increment(ref _unknownReplies);

    internal void AddMisaddressedReply() => Interlocked.Increment(ref _misaddressedReplies);

    internal void AddRequestTimeout() => Interlocked.Increment(ref _requestTimeouts);

    internal void AddSelfRequestRefused() => Interlocked.Increment(ref _selfRequestsRefused);

    internal void AddCycleRequestRefused() => Interlocked.Increment(ref _cycleRequestsRefused);

    internal void AddPendingRequestRefused() => Interlocked.Increment(ref _pendingRequestsRefused);

    internal void AddTimerTickCoalesced() => Interlocked.Increment(ref _timerTicksCoalesced);

    internal void AddGameLoopStepsDropped(long steps) => Interlocked.Add(ref _gameLoopStepsDropped, steps);

    internal void AddHandlerFailure() => Interlocked.Increment(ref _handlerFailures);

    internal void AddClientSendRefused() => Interlocked.Increment(ref _clientSendsRefused);

    internal void AddClientPushToDisconnected() => Interlocked.Increment(ref _clientPushesToDisconnected);

    internal void AddReplyToClosedSession() => Interlocked.Increment(ref _repliesToClosedSessions);

    internal void AddSessionClosedBeforeAuthentication() => Interlocked.Increment(ref _sessionsClosedBeforeAuthentication);

    internal void AddClientMessageBeforeAuthentication() => Interlocked.Increment(ref _clientMessagesBeforeAuthentication);

    internal void AddSecondReplyAttempt() => Interlocked.Increment(ref _secondReplyAttempts);

    internal void AddOffStageRefused() => Interlocked.Increment(ref _offStageRefused);

    internal void AddUnknownApiMessage() => Interlocked.Increment(ref _unknownApiMessages);

    internal void AddMeshSendToUnknownServer() => Interlocked.Increment(ref _meshSendsToUnknownServers);

    internal void AddMeshSendRefused() => Interlocked.Increment(ref _meshSendsRefused);

    internal void AddOffStageResultDiscarded() => Interlocked.Increment(ref _offStageResultsDiscarded);

    internal void AddUnansweredRequestRefused() => Interlocked.Increment(ref _unansweredRequestsRefused);

    internal void AddUnansweredRequestsExpired(long count) => Interlocked.Add(ref _unansweredRequestsExpired, count);

    internal void AddReplyAfterExpiry() => Interlocked.Increment(ref _repliesAfterExpiry);

    internal void AddStageRefusedAtCap() => Interlocked.Increment(ref _stagesRefusedAtCap);

    internal void AddJoinRefusedAtCap() => Interlocked.Increment(ref _joinsRefusedAtCap);

    internal void AddDisconnectedActorExpired() => Interlocked.Increment(ref _disconnectedActorsExpired);

    internal void AddDisconnectedActorEvictedAtCap() => Interlocked.Increment(ref _disconnectedActorsEvictedAtCap);

    internal void AddEmptyStageClosedAtCap() => Interlocked.Increment(ref _emptyStagesClosedAtCap);

    internal void AddIdleStageClosed() => Interlocked.Increment(ref _idleStagesClosed);

    internal void AddRequestExpiredInMailbox() => Interlocked.Increment(ref _requestsExpiredInMailbox);

    internal void AddSendExpiredInMailbox() => Interlocked.Increment(ref _sendsExpiredInMailbox);
}
