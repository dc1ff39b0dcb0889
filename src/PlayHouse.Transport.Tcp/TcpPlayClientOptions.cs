using System.Net.Security;
using PlayHouse.Core.Codec;
using PlayHouse.Core.Pooling;

namespace PlayHouse.Transport.Tcp;

/// <summary>Options of a <see cref="TcpPlayClient"/>. The defaults are PlayHouse's client defaults where it has them.</summary>
public sealed record TcpPlayClientOptions
{
    /// <summary>The pool reply and push payloads are decoded into; null gives the client a private unchecked pool.</summary>
    public MessagePool? Pool { get; init; }

    /// <summary>The clock of request timeouts and heartbeats; null uses the system clock.</summary>
    public TimeProvider? Time { get; init; }

    /// <summary>Every request of this client has this timeout, so deadlines expire in send order.</summary>
    public TimeSpan RequestTimeout { get; init; } = TimeSpan.FromSeconds(30);

    /// <summary>Sends a heartbeat this often while connected; null sends none (PlayHouse clients use 10 s).</summary>
    public TimeSpan? HeartbeatInterval { get; init; }

    /// <summary>Requests pending at once; further requests are refused (Request returns 0).</summary>
    public int InFlightMax { get; init; } = 1024;

    /// <summary>Encoded bytes queued for sending before sends are refused.</summary>
    public int SendQueueBytesMax { get; init; } = 4 * 1024 * 1024;

    public int ReceiveBufferBytes { get; init; } = 16 * 1024;

    /// <summary>Inflates compressed (OriginalSize &gt; 0) server frames; null treats them as malformed.</summary>
    public IPayloadDecompressor? Decompressor { get; init; }

    public bool NoDelay { get; init; } = true;

    /// <summary>
    /// Null (the default): plain TCP. Set: <see cref="TcpPlayClient.ConnectAsync"/> authenticates the connection as a
    /// TLS client with these options (target host, certificate validation) before any frame is sent, and
    /// <see cref="TcpPlayClient.ConnectWebSocketAsync"/> uses its certificate validation for <c>wss://</c>.
    /// </summary>
    public SslClientAuthenticationOptions? Tls { get; init; }

    /// <summary>The most bytes one WebSocket message to the server carries (longer runs of queued frames leave as several messages).</summary>
    public int WebSocketMessageBytesMax { get; init; } = 16 * 1024;

    /// <summary>
    /// Null (the default): reply and push handlers run on I/O threads as packets arrive. A number: replies and pushes
    /// wait in a packet queue of at most this many until the application reads them with
    /// <see cref="TcpPlayClient.ReadPackets"/> (a game's main loop draining its connector once a frame, as PlayHouse's
    /// connector does). Past the cap the client refuses: a push is dropped and counted, and a reply completes its
    /// request at once with <see cref="TcpPlayClient.PacketQueueFullErrorCode"/>, so memory stays bounded however
    /// fast the server pushes.
    /// </summary>
    public int? PacketQueueMax { get; init; }

    public void Validate()
    {
        if (RequestTimeout <= TimeSpan.Zero || InFlightMax < 1 || InFlightMax >= ushort.MaxValue || SendQueueBytesMax < 1024 || ReceiveBufferBytes < 256
            || (HeartbeatInterval is { } heartbeat && heartbeat <= TimeSpan.Zero) || PacketQueueMax <= 0 || WebSocketMessageBytesMax < 256)
        {
            throw new ArgumentException("TcpPlayClientOptions has a value out of range.");
        }
    }
}
