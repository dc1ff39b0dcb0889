using System.Net.Security;
using PlayHouse.Core.Codec;

namespace PlayHouse.Transport.Tcp;

/// <summary>Limits and timeouts of the client sessions a <see cref="TcpClientListener"/> serves. Every queue has a cap here.</summary>
public sealed record TcpTransportOptions
{
    /// <summary>Bytes of the pooled buffer each session receives into (held for the session's life).</summary>
    public int ReceiveBufferBytes { get; init; } = 8 * 1024;

    /// <summary>
    /// Encoded bytes a session may hold for sending (queued plus in flight). A frame that would go past the cap is
    /// refused and counted, not buffered; a single frame larger than the cap is still accepted into an empty queue.
    /// </summary>
    public int SendQueueBytesMax { get; init; } = 1024 * 1024;

    /// <summary>The largest client frame body accepted; at most <see cref="WireProtocol.MaxBodyBytes"/>.</summary>
    public int MaxBodyBytes { get; init; } = WireProtocol.MaxBodyBytes;

    /// <summary>A session from which nothing arrives for this long is closed (PlayHouse clients heartbeat every 10 s).</summary>
    public TimeSpan IdleTimeout { get; init; } = TimeSpan.FromSeconds(30);

    /// <summary>A frame whose first byte arrived this long ago and is still incomplete closes its session.</summary>
    public TimeSpan FrameTimeout { get; init; } = TimeSpan.FromSeconds(10);

    /// <summary>A session whose send queue refused a frame and has not drained to half its cap for this long is closed.</summary>
    public TimeSpan SlowReaderTimeout { get; init; } = TimeSpan.FromSeconds(5);

    /// <summary>How often one timer per listener checks every session's timeouts (no timer per session).</summary>
    public TimeSpan SweepInterval { get; init; } = TimeSpan.FromMilliseconds(500);

    /// <summary>Open sessions of one listener (and, with TLS, handshakes under way) before new connections are closed at once (counted).</summary>
    public int MaxConnections { get; init; } = 10_000;

    /// <summary>Disables Nagle's algorithm on every session socket, as game traffic wants.</summary>
    public bool NoDelay { get; init; } = true;

    /// <summary>The kernel send buffer of each session socket; 0 keeps the OS default. Small values make a slow reader show sooner.</summary>
    public int SocketSendBufferBytes { get; init; }

    /// <summary>
    /// Starts a session's send when the stage turn that queued its first frame ends, on the turn's thread, so the frames
    /// a turn queues for the session leave in one system call instead of one each; a frame queued outside a turn starts
    /// the send as a work item on the server's executor (one thread-pool hop of latency). False sends each frame at
    /// once from the thread that queued it.
    /// </summary>
    public bool BatchSends { get; init; } = true;

    /// <summary>
    /// Payloads of at least this many bytes are sent LZ4-compressed in K4os's LZ4Pickler format (OriginalSize &gt; 0),
    /// which PlayHouse's C# connector reads, when that makes them smaller; 0, the default, never compresses
    /// (OriginalSize is always 0), which every PlayHouse client accepts.
    /// </summary>
    public int CompressAboveBytes { get; init; }

    /// <summary>
    /// TLS on the accepting socket: null (the default) serves plain TCP through socket completion callbacks; set, every
    /// accepted connection is authenticated with <see cref="SslStream"/> first and then carries the same frames, under
    /// the same caps, timeouts and counters.
    /// </summary>
    public TlsServerOptions? Tls { get; init; }

    /// <summary>
    /// The most bytes one WebSocket message sent to a client carries; queued frames leave as several messages when
    /// they are longer. PlayHouse's C# connector gathers each message into a fixed 64 KiB buffer before parsing, so a
    /// message plus the unfinished frame before it must stay within 64 KiB.
    /// </summary>
    public int WebSocketMessageBytesMax { get; init; } = 16 * 1024;

    /// <summary>How long a WebSocket session closed by the server waits for the client's close message before it is aborted.</summary>
    public TimeSpan WebSocketCloseGrace { get; init; } = TimeSpan.FromSeconds(1);

    /// <summary>Listen backlog of the accepting socket.</summary>
    public int ListenBacklog { get; init; } = 512;

    public void Validate()
    {
        Require(ReceiveBufferBytes >= 256, nameof(ReceiveBufferBytes));
        Require(SendQueueBytesMax >= 1024, nameof(SendQueueBytesMax));
        Require(MaxBodyBytes >= WireProtocol.MinClientBodyBytes && MaxBodyBytes <= WireProtocol.MaxBodyBytes, nameof(MaxBodyBytes));
        Require(IdleTimeout > TimeSpan.Zero, nameof(IdleTimeout));
        Require(FrameTimeout > TimeSpan.Zero, nameof(FrameTimeout));
        Require(SlowReaderTimeout > TimeSpan.Zero, nameof(SlowReaderTimeout));
        Require(SweepInterval > TimeSpan.Zero, nameof(SweepInterval));
        Require(MaxConnections > 0, nameof(MaxConnections));
        Require(ListenBacklog > 0, nameof(ListenBacklog));
        Require(SocketSendBufferBytes >= 0, nameof(SocketSendBufferBytes));
        Require(CompressAboveBytes >= 0, nameof(CompressAboveBytes));
        Require(WebSocketMessageBytesMax >= 256, nameof(WebSocketMessageBytesMax));
        Require(WebSocketCloseGrace > TimeSpan.Zero, nameof(WebSocketCloseGrace));
        Tls?.Validate();
    }

    private static void Require(bool ok, string name)
    {
        if (!ok)
        {
            throw new ArgumentException($"TcpTransportOptions.{name} is out of range.", name);
        }
    }
}
