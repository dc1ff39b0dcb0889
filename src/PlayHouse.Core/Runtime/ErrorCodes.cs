namespace PlayHouse.Core.Runtime;

/// <summary>Error codes carried by replies. 0 is success; the runtime's own codes live above 60000.</summary>
public static class ErrorCodes
{
    public const ushort Success = 0;

    /// <summary>No stage with the requested id exists on the target server (or it closed).</summary>
    public const ushort StageNotFound = 60001;

    /// <summary>The request did not receive a reply within its timeout.</summary>
    public const ushort RequestTimeout = 60002;

    /// <summary>The target stage's mailbox was at its cap; the message was refused, not queued.</summary>
    public const ushort MailboxFull = 60003;

    /// <summary>A stage requested itself; it would wait for its own reply until the timeout.</summary>
    public const ushort SelfRequest = 60004;

    /// <summary>The target stage is awaiting the requesting stage: answering would deadlock both until the timeout.</summary>
    public const ushort RequestCycle = 60005;

    /// <summary>The handler threw before replying.</summary>
    public const ushort HandlerFailed = 60006;

    /// <summary>The pending-request table is at its cap.</summary>
    public const ushort TooManyPendingRequests = 60007;

    /// <summary>The stage's OnCreate refused or threw; the stage was removed.</summary>
    public const ushort CreateStageFailed = 60008;

    /// <summary>A create request named a stage id that already exists.</summary>
    public const ushort StageAlreadyExists = 60009;

    /// <summary>The stage type is not registered on the target server.</summary>
    public const ushort UnknownStageType = 60010;

    /// <summary>OnAuthenticate refused the client.</summary>
    public const ushort AuthenticationFailed = 60011;

    /// <summary>OnJoinStage refused the actor.</summary>
    public const ushort JoinStageRejected = 60012;

    /// <summary>A client message arrived before authentication completed.</summary>
    public const ushort NotAuthenticated = 60013;

    /// <summary>No API handler is registered for the message id.</summary>
    public const ushort HandlerNotFound = 60014;

    /// <summary>The target server is not known to the mesh.</summary>
    public const ushort ServerNotFound = 60015;

    /// <summary>Off-stage work was refused because too much is already in flight (<see cref="OffStageQueueFullException"/>).</summary>
    public const ushort OffStageQueueFull = 60016;

    /// <summary>The server is shutting down.</summary>
    public const ushort ServerStopping = 60017;

    /// <summary>The client is already authenticated (or authenticating) on this session.</summary>
    public const ushort AlreadyAuthenticated = 60018;

    /// <summary>A client message named a stage the session's actor is not in.</summary>
    public const ushort NotInStage = 60019;

    /// <summary>The server's ledger of requests awaiting a reply is at its cap (<see cref="ServerOptions.UnansweredRequestsMax"/>).</summary>
    public const ushort TooManyUnansweredRequests = 60020;

    /// <summary>The mesh send queue towards the target server is at its cap (a slow or clogged peer); the request was refused, not queued.</summary>
    public const ushort MeshSendQueueFull = 60021;

    /// <summary>The play server holds <see cref="ServerOptions.StagesMax"/> stages; a new stage was refused, not created.</summary>
    public const ushort TooManyStages = 60022;

    /// <summary>The stage holds <see cref="ServerOptions.ActorsPerStageMax"/> actors; a new account's join was refused.</summary>
    public const ushort StageFull = 60023;

    /// <summary>
    /// The request waited in its stage's mailbox past its deadline and was answered with this instead of being dispatched
    /// to a handler: its requester's own deadline passed (a mesh request that carried its timeout), or it waited
    /// <see cref="ServerOptions.ClientMessageQueueTimeMax"/> (a client request). The handler never saw it.
    /// </summary>
    public const ushort RequestExpired = 60024;

    /// <summary>Returns a short name for a runtime error code, or the number for user codes.</summary>
    public static string Describe(ushort code) => code switch
    {
        Success => "Success",
        StageNotFound => nameof(StageNotFound),
        RequestTimeout => nameof(RequestTimeout),
        MailboxFull => nameof(MailboxFull),
        SelfRequest => nameof(SelfRequest),
        RequestCycle => nameof(RequestCycle),
        HandlerFailed => nameof(HandlerFailed),
        TooManyPendingRequests => nameof(TooManyPendingRequests),
        CreateStageFailed => nameof(CreateStageFailed),
        StageAlreadyExists => nameof(StageAlreadyExists),
        UnknownStageType => nameof(UnknownStageType),
        AuthenticationFailed => nameof(AuthenticationFailed),
        JoinStageRejected => nameof(JoinStageRejected),
        NotAuthenticated => nameof(NotAuthenticated),
        HandlerNotFound => nameof(HandlerNotFound),
        ServerNotFound => nameof(ServerNotFound),
        OffStageQueueFull => nameof(OffStageQueueFull),
        ServerStopping => nameof(ServerStopping),
        AlreadyAuthenticated => nameof(AlreadyAuthenticated),
        NotInStage => nameof(NotInStage),
        TooManyUnansweredRequests => nameof(TooManyUnansweredRequests),
        MeshSendQueueFull => nameof(MeshSendQueueFull),
        TooManyStages => nameof(TooManyStages),
        StageFull => nameof(StageFull),
        RequestExpired => nameof(RequestExpired),
        _ => code.ToString(System.Globalization.CultureInfo.InvariantCulture),
    };
}
