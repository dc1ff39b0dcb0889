using PlayHouse.Core.Pooling;

namespace PlayHouse.Core.Runtime;

/// <summary>
/// How an actor's push reaches its client's session. The standard part takes ownership of the caller's payload
/// (<see cref="Payload.Move"/>) and hands it to the session's connection at once, which encodes it into its send queue
/// and returns the buffer; the caller's handle is stale from here on (B7c).
/// </summary>
internal interface IClientPushes
{
    /// <summary>Pushes <paramref name="callerPayload"/> (message sequence 0) to <paramref name="session"/> of <paramref name="server"/>.</summary>
    void Push(PlayServer server, ClientSession session, string msgId, long stageId, Payload callerPayload);
}

/// <summary>The standard part: the push owns the payload, and the session's connection gets it now.</summary>
internal sealed class OwningClientPushes : IClientPushes
{
    public static OwningClientPushes Instance { get; } = new();

    public void Push(PlayServer server, ClientSession session, string msgId, long stageId, Payload callerPayload) =>
        session.Send(msgId, 0, stageId, ErrorCodes.Success, callerPayload.Move("client-push"));
}
