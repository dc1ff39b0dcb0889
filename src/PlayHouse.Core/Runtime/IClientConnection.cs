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

    /// <summary>
    /// The transport the client came in over (<see cref="ClientTransports"/>). A server may run several; its session
    /// ids stay unique across all of them (PlayHouse numbered sessions per transport into one table, B14).
    /// </summary>
    string TransportKind => ClientTransports.Tcp;
}

/// <summary>Names of client transports (<see cref="IClientConnection.TransportKind"/>).</summary>
public static class ClientTransports
{
    /// <summary>PlayHouse's packets on a byte stream.</summary>
    public const string Tcp = "tcp";

    /// <summary>PlayHouse's packets, one per WebSocket binary message.</summary>
    public const string WebSocket = "websocket";
}
