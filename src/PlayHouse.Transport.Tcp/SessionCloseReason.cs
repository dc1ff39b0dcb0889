namespace PlayHouse.Transport.Tcp;

/// <summary>Why a TCP connection (client session, client connector or mesh link) was closed. Each has a counter.</summary>
public enum SessionCloseReason
{
    /// <summary>Still open.</summary>
    None = 0,

    /// <summary>The peer closed its end cleanly (FIN) between frames.</summary>
    PeerClosed,

    /// <summary>The peer reset the connection (RST), possibly in the middle of a frame.</summary>
    ConnectionReset,

    /// <summary>Any other socket error on send or receive.</summary>
    SocketError,

    /// <summary>The peer sent bytes that do not decode (bad length, msg id, UTF-8, or a frame cut off by a close).</summary>
    MalformedFrame,

    /// <summary>The play server closed the session (first message not authentication, a newer login, ...).</summary>
    ClosedByServer,

    /// <summary>Nothing arrived within the idle timeout (heartbeats keep a session alive).</summary>
    IdleTimeout,

    /// <summary>A frame was started and not finished within the frame timeout (partial frame, then silence).</summary>
    FrameTimeout,

    /// <summary>The send queue stayed at its cap for longer than the slow-reader timeout.</summary>
    SlowReader,

    /// <summary>The server is shutting down.</summary>
    ServerStopping,

    /// <summary>A callback threw; the exception was caught at the socket boundary and counted.</summary>
    CallbackFault,

    /// <summary>The local side closed it (the client connector's Dispose, a mesh transport stopping).</summary>
    LocalClose,
}
