using PlayHouse.Core.Pooling;

namespace PlayHouse.Core.Runtime;

/// <summary>
/// A message as a handler sees it: its id, its payload, and (for requests) the reply token captured
/// when it arrived. The payload stays valid until the handler, including its awaits, completes; to keep
/// it longer, take it with <see cref="Payload.Move"/>.
/// </summary>
public readonly struct Packet
{
    public Packet(string msgId, Payload payload)
        : this(msgId, payload, default)
    {
    }

    internal Packet(string msgId, Payload payload, ReplyToken replyToken)
    {
        MsgId = msgId;
        Payload = payload;
        ReplyToken = replyToken;
    }

    public string MsgId { get; }

    public Payload Payload { get; }

    /// <summary>Where a reply to this packet goes; <see cref="ReplyToken.IsRequest"/> is false for one-way messages.</summary>
    public ReplyToken ReplyToken { get; }

    public bool IsRequest => ReplyToken.IsRequest;

    public override string ToString() => $"Packet({MsgId}, {Payload.Length} B{(IsRequest ? ", request" : string.Empty)})";
}

/// <summary>
/// The completion of a request: a reply (error code and packet) or a runtime error such as
/// <see cref="ErrorCodes.RequestTimeout"/>. The receiver owns the payload and must dispose it.
/// </summary>
public readonly struct Response : IDisposable
{
    public Response(ushort errorCode, string msgId, Payload payload)
    {
        ErrorCode = errorCode;
        MsgId = msgId;
        Payload = payload;
    }

    public ushort ErrorCode { get; }

    public string MsgId { get; }

    public Payload Payload { get; }

    /// <summary>
    /// The stage that answered: for a stage create, the created stage (the id the play server picked when the create
    /// named none). 0 for replies from no stage, for runtime errors, and for responses handed to a stage's reply
    /// callback (the mailbox does not carry it).
    /// </summary>
    public long StageId { get; init; }

    public bool IsSuccess => ErrorCode == ErrorCodes.Success;

    public static Response Error(ushort errorCode, string msgId) => new(errorCode, msgId, Payload.Empty);

    public void Dispose() => Payload.DisposeIfOwner();

    public override string ToString() => $"Response({MsgId}, {ErrorCodes.Describe(ErrorCode)}, {Payload.Length} B)";
}

/// <summary>The outcome of <see cref="IStage.OnCreate"/>.</summary>
public readonly record struct CreateResult(bool Ok, ushort ErrorCode, string ReplyMsgId, Payload ReplyPayload)
{
    public static CreateResult Success(string replyMsgId = "", Payload replyPayload = default) => new(true, ErrorCodes.Success, replyMsgId, replyPayload);

    public static CreateResult Refuse(ushort errorCode = ErrorCodes.CreateStageFailed) => new(false, errorCode, string.Empty, default);
}

/// <summary>The outcome of <see cref="IActor.OnAuthenticate"/>: the account id on success.</summary>
public readonly record struct AuthenticateResult(bool Ok, long AccountId, ushort ErrorCode, string ReplyMsgId, Payload ReplyPayload)
{
    public static AuthenticateResult Success(long accountId, string replyMsgId = "", Payload replyPayload = default) => new(true, accountId, ErrorCodes.Success, replyMsgId, replyPayload);

    public static AuthenticateResult Refuse(ushort errorCode = ErrorCodes.AuthenticationFailed) => new(false, 0, errorCode, string.Empty, default);
}

/// <summary>The outcome of off-stage work: a value or the exception it threw.</summary>
public readonly record struct OffStageResult<T>(T? Value, Exception? Error, ushort ErrorCode)
{
    public bool IsSuccess => Error is null && ErrorCode == ErrorCodes.Success;
}

/// <summary>One fixed step of a stage's game loop.</summary>
public readonly record struct GameLoopStep(TimeSpan FixedStep, TimeSpan TotalSimulated, long StepIndex);
