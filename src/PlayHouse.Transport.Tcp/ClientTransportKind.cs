namespace PlayHouse.Transport.Tcp;

/// <summary>How a client reached its session. Every kind speaks the same PlayHouse frames and shares one session table.</summary>
public enum ClientTransportKind
{
    /// <summary>Plain TCP.</summary>
    Tcp,

    /// <summary>TCP under TLS (<see cref="System.Net.Security.SslStream"/>).</summary>
    Tls,

    /// <summary>Binary WebSocket messages, handed to the listener by an HTTP server.</summary>
    WebSocket,
}
