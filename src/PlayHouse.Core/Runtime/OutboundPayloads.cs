using PlayHouse.Core.Pooling;

namespace PlayHouse.Core.Runtime;

/// <summary>
/// How a link's send to a stage or an API server (one-way or request) puts the caller's payload into the outgoing
/// message. The standard part takes ownership (<see cref="Payload.Move"/>): the caller's handle goes stale, and the
/// runtime alone returns the buffer once the message is encoded or handled, however long it waits in a mailbox (B7b).
/// </summary>
internal interface IMeshSendPayloads
{
    /// <summary>The payload the outgoing message carries, made from what the caller passed.</summary>
    Payload Wrap(Payload callerPayload);
}

/// <summary>The standard part: the outgoing message owns the payload from here on.</summary>
internal sealed class OwningMeshSendPayloads : IMeshSendPayloads
{
    public static OwningMeshSendPayloads Instance { get; } = new();

    public Payload Wrap(Payload callerPayload) => callerPayload.Move("mesh");
}
