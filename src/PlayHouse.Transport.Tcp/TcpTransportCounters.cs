using PlayHouse.Core.Codec;
using PlayHouse.Core.Runtime;

namespace PlayHouse.Transport.Tcp;

/// <summary>
/// Counters of a TCP listener or mesh transport: every way a connection can end, every refused frame, and traffic.
/// Each hostile-input outcome has one, driven by a test.
/// </summary>
/// <remarks>Thread-safe: increments are interlocked.</remarks>
public sealed class TcpTransportCounters
{
    private const int RuntimeErrorBase = 60000;
    private const int RuntimeErrorSlots = 64;

    private readonly long[] _closes = new long[Enum.GetValues<SessionCloseReason>().Length];
    private readonly long[] _malformed = new long[Enum.GetValues<FrameError>().Length];
    private readonly long[] _errorReplies = new long[RuntimeErrorSlots];
    private long _accepted;
    private long _refusedAtLimit;
    private long _acceptErrors;
    private long _framesReceived;
    private long _framesSent;
    private long _bytesReceived;
    private long _bytesSent;
    private long _receiveCalls;
    private long _sendCalls;
    private long _sendQueueRefusals;
    private long _sendsRefusedClosed;
    private long _encodeFailures;
    private long _callbackFaults;
    private long _refusedWhileStopping;
    private long _sendBytesDroppedAtClose;
    private long _sendQueueHighWaterBytes;
    private long _framesCompressed;
    private long _tlsHandshakeFailures;
    private long _webSocketTextMessages;

    /// <summary>Connections accepted and turned into sessions.</summary>
    public long ConnectionsAccepted => Volatile.Read(ref _accepted);

    /// <summary>Connections accepted and closed at once because <see cref="TcpTransportOptions.MaxConnections"/> were open.</summary>
    public long ConnectionsRefusedAtLimit => Volatile.Read(ref _refusedAtLimit);

    /// <summary>Accept operations that failed with a socket error (the listener keeps accepting).</summary>
    public long AcceptErrors => Volatile.Read(ref _acceptErrors);

    /// <summary>Sessions closed, for any reason.</summary>
    public long ConnectionsClosed
    {
        get
        {
            long total = 0;
            for (var i = 1; i < _closes.Length; i++)
            {
                total += Volatile.Read(ref _closes[i]);
            }

            return total;
        }
    }

    public long FramesReceived => Volatile.Read(ref _framesReceived);

    public long FramesSent => Volatile.Read(ref _framesSent);

    public long BytesReceived => Volatile.Read(ref _bytesReceived);

    public long BytesSent => Volatile.Read(ref _bytesSent);

    /// <summary>
    /// Socket receives and sends that completed with bytes: one system call each. Frames per call shows how well the
    /// transport batches (a raw echo answers every frame of one receive with one send).
    /// </summary>
    public long ReceiveCalls => Volatile.Read(ref _receiveCalls);

    /// <inheritdoc cref="ReceiveCalls"/>
    public long SendCalls => Volatile.Read(ref _sendCalls);

    /// <summary>Frames refused because the session's send queue was at its cap (the defined outcome at the cap).</summary>
    public long SendQueueRefusals => Volatile.Read(ref _sendQueueRefusals);

    /// <summary>Frames sent LZ4-compressed (OriginalSize above 0).</summary>
    public long FramesCompressed => Volatile.Read(ref _framesCompressed);

    /// <summary>TLS connections closed before they became sessions: the handshake failed or did not finish within its timeout.</summary>
    public long TlsHandshakeFailures => Volatile.Read(ref _tlsHandshakeFailures);

    /// <summary>WebSocket sessions closed as malformed because the client sent a text message (PlayHouse frames travel in binary messages).</summary>
    public long WebSocketTextMessages => Volatile.Read(ref _webSocketTextMessages);

    /// <summary>Frames refused because the connection had already closed.</summary>
    public long SendsRefusedClosed => Volatile.Read(ref _sendsRefusedClosed);

    /// <summary>Frames that could not be encoded (msg id over 255 UTF-8 bytes, body over the limit); refused.</summary>
    public long EncodeFailures => Volatile.Read(ref _encodeFailures);

    /// <summary>Exceptions caught at a socket callback boundary. Every one is a bug; tests assert zero.</summary>
    public long CallbackFaults => Volatile.Read(ref _callbackFaults);

    /// <summary>Client requests answered with <see cref="ErrorCodes.ServerStopping"/> (and sends dropped) while draining.</summary>
    public long RefusedWhileStopping => Volatile.Read(ref _refusedWhileStopping);

    /// <summary>Encoded bytes still queued for sending when their connection closed.</summary>
    public long SendBytesDroppedAtClose => Volatile.Read(ref _sendBytesDroppedAtClose);

    /// <summary>The most bytes any one connection held for sending at once.</summary>
    public long SendQueueHighWaterBytes => Volatile.Read(ref _sendQueueHighWaterBytes);

    /// <summary>Connections closed for <paramref name="reason"/>.</summary>
    public long Closed(SessionCloseReason reason) => Volatile.Read(ref _closes[(int)reason]);

    /// <summary>Connections closed because a frame failed to decode with <paramref name="error"/>.</summary>
    public long Malformed(FrameError error) => Volatile.Read(ref _malformed[(int)error]);

    /// <summary>Frames carrying the runtime error code <paramref name="errorCode"/> (e.g. StageNotFound) handed to sessions for sending.</summary>
    public long ErrorReplies(ushort errorCode)
    {
        var slot = errorCode - RuntimeErrorBase;
        return slot is >= 0 and < RuntimeErrorSlots ? Volatile.Read(ref _errorReplies[slot]) : 0;
    }

    /// <summary>Every non-zero counter by name, in name order, for reports and logs.</summary>
    public IReadOnlyList<KeyValuePair<string, long>> Snapshot()
    {
        var all = new List<KeyValuePair<string, long>>
        {
            new(nameof(AcceptErrors), AcceptErrors),
            new(nameof(BytesReceived), BytesReceived),
            new(nameof(BytesSent), BytesSent),
            new(nameof(CallbackFaults), CallbackFaults),
            new(nameof(ConnectionsAccepted), ConnectionsAccepted),
            new(nameof(ConnectionsClosed), ConnectionsClosed),
            new(nameof(ConnectionsRefusedAtLimit), ConnectionsRefusedAtLimit),
            new(nameof(EncodeFailures), EncodeFailures),
            new(nameof(FramesReceived), FramesReceived),
            new(nameof(FramesCompressed), FramesCompressed),
            new(nameof(FramesSent), FramesSent),
            new(nameof(ReceiveCalls), ReceiveCalls),
            new(nameof(RefusedWhileStopping), RefusedWhileStopping),
            new(nameof(SendBytesDroppedAtClose), SendBytesDroppedAtClose),
            new(nameof(SendCalls), SendCalls),
            new(nameof(SendQueueHighWaterBytes), SendQueueHighWaterBytes),
            new(nameof(SendQueueRefusals), SendQueueRefusals),
            new(nameof(SendsRefusedClosed), SendsRefusedClosed),
            new(nameof(TlsHandshakeFailures), TlsHandshakeFailures),
            new(nameof(WebSocketTextMessages), WebSocketTextMessages),
        };
        foreach (var reason in Enum.GetValues<SessionCloseReason>())
        {
            if (reason != SessionCloseReason.None)
            {
                all.Add(new("Closed." + reason, Closed(reason)));
            }
        }

        foreach (var error in Enum.GetValues<FrameError>())
        {
            if (error != FrameError.None)
            {
                all.Add(new("Malformed." + error, Malformed(error)));
            }
        }

        for (var i = 0; i < RuntimeErrorSlots; i++)
        {
            var count = Volatile.Read(ref _errorReplies[i]);
            if (count > 0)
            {
                all.Add(new("ErrorReplies." + ErrorCodes.Describe((ushort)(RuntimeErrorBase + i)), count));
            }
        }

        return [.. all.Where(p => p.Value != 0).OrderBy(p => p.Key, StringComparer.Ordinal)];
    }

    internal void AddAccepted() => Interlocked.Increment(ref _accepted);

    internal void AddRefusedAtLimit() => Interlocked.Increment(ref _refusedAtLimit);

    internal void AddAcceptError() => Interlocked.Increment(ref _acceptErrors);

    internal void AddClosed(SessionCloseReason reason) => Interlocked.Increment(ref _closes[(int)reason]);

    internal void AddMalformed(FrameError error) => Interlocked.Increment(ref _malformed[(int)error]);

    internal void AddFramesReceived(long frames) => Interlocked.Add(ref _framesReceived, frames);

    internal void AddFrameSent() => Interlocked.Increment(ref _framesSent);

    internal void AddFrameCompressed() => Interlocked.Increment(ref _framesCompressed);

    internal void AddBytesReceived(long bytes)
    {
        Interlocked.Add(ref _bytesReceived, bytes);
        Interlocked.Increment(ref _receiveCalls);
    }

    internal void AddBytesSent(long bytes)
    {
        Interlocked.Add(ref _bytesSent, bytes);
        Interlocked.Increment(ref _sendCalls);
    }

    internal void AddSendQueueRefusal() => Interlocked.Increment(ref _sendQueueRefusals);

    internal void AddSendRefusedClosed() => Interlocked.Increment(ref _sendsRefusedClosed);

    internal void AddEncodeFailure() => Interlocked.Increment(ref _encodeFailures);

    internal void AddCallbackFault() => Interlocked.Increment(ref _callbackFaults);

    internal void AddRefusedWhileStopping() => Interlocked.Increment(ref _refusedWhileStopping);

    internal void AddSendBytesDroppedAtClose(long bytes) => Interlocked.Add(ref _sendBytesDroppedAtClose, bytes);

    internal void AddTlsHandshakeFailure() => Interlocked.Increment(ref _tlsHandshakeFailures);

    internal void AddWebSocketTextMessage() => Interlocked.Increment(ref _webSocketTextMessages);

    internal void AddErrorReply(ushort errorCode)
    {
        var slot = errorCode - RuntimeErrorBase;
        if (slot is >= 0 and < RuntimeErrorSlots)
        {
            Interlocked.Increment(ref _errorReplies[slot]);
        }
    }

    internal void NoteSendQueueBytes(long bytes)
    {
        var current = Volatile.Read(ref _sendQueueHighWaterBytes);
        while (bytes > current)
        {
            var seen = Interlocked.CompareExchange(ref _sendQueueHighWaterBytes, bytes, current);
            if (seen == current)
            {
                return;
            }

            current = seen;
        }
    }
}
