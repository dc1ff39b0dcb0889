using PlayHouse.Core.Pooling;

namespace PlayHouse.Core.Runtime;

/// <summary>
/// The client-session seam: one connected client as the play server sees it. The TCP transport and the
/// simulated network implement it; the play server assigns session ids so they are unique across transports.
/// </summary>
/// <remarks>Implementations must accept calls from any executor thread.</remarks>
public interface IClientConnection
{
    /// <summary>Queues a frame for the client. Ownership of <paramref name="payload"/> passes to the connection
    /// even when it returns false (its send queue is at its cap, or it is closed).</summary>
    bool TrySend(string msgId, ushort msgSeq, long stageId, ushort errorCode, Payload payload);

    /// <summary>Closes the connection with a reason that is logged and counted.</summary>
    void Close(string reason);
}
