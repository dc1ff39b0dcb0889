namespace PlayHouse.Simulation.Clients;

/// <summary>How a simulated client reaches its play server. Both carry PlayHouse's packets through the real codec.</summary>
public enum SimClientTransport
{
    /// <summary>Packets on a byte stream, as PlayHouse's TCP transport (the play server's client endpoint).</summary>
    Tcp,

    /// <summary>
    /// Each packet in one masked WebSocket binary frame (RFC 6455), as PlayHouse's WebSocket transport: the play
    /// server's second endpoint, a second transport in the same server.
    /// </summary>
    WebSocket,
}
