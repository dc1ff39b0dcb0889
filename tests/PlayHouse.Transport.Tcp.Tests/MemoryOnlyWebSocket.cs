using System.Net.WebSockets;

namespace PlayHouse.Transport.Tcp.Tests;

/// <summary>
/// The part every scripted WebSocket of these tests shares: the session only receives into and sends from memory, so
/// the array-segment overloads forward to (or refuse in favour of) the memory ones, a close is a close of the output,
/// and there is nothing to dispose, no sub-protocol and no close description.
/// </summary>
/// <remarks>Not thread-safe, as its subclasses are not.</remarks>
internal abstract class MemoryOnlyWebSocket : WebSocket
{
    public override string? CloseStatusDescription => null;

    public override string? SubProtocol => null;

    public override Task CloseAsync(WebSocketCloseStatus closeStatus, string? statusDescription, CancellationToken cancellationToken) =>
        CloseOutputAsync(closeStatus, statusDescription, cancellationToken);

    public override Task<WebSocketReceiveResult> ReceiveAsync(ArraySegment<byte> buffer, CancellationToken cancellationToken) =>
        throw new NotSupportedException("The session receives into memory, not array segments.");

    public override Task SendAsync(ArraySegment<byte> buffer, WebSocketMessageType messageType, bool endOfMessage, CancellationToken cancellationToken) =>
        SendAsync(buffer.AsMemory(), messageType, endOfMessage, cancellationToken).AsTask();

    public override void Dispose()
    {
    }
}
