namespace PlayHouse.Transport.Tcp;

/// <summary>Counters of one <see cref="TcpPlayClient"/>.</summary>
/// <remarks>Thread-safe.</remarks>
public sealed class TcpPlayClientStatistics
{
    private long _requestsSent;
    private long _replies;
    private long _timeouts;
    private long _lateOrUnknownReplies;
    private long _pushes;
    private long _sendsSent;
    private long _requestsRefused;
    private long _heartbeatsSent;
    private long _heartbeatsReceived;
    private long _failedByDisconnect;
    private long _pushesDropped;
    private long _repliesRefused;

    public long RequestsSent => Volatile.Read(ref _requestsSent);

    public long Replies => Volatile.Read(ref _replies);

    public long Timeouts => Volatile.Read(ref _timeouts);

    /// <summary>Replies whose request had timed out or was never sent: counted and dropped, never turned into a push (B12).</summary>
    public long LateOrUnknownReplies => Volatile.Read(ref _lateOrUnknownReplies);

    public long Pushes => Volatile.Read(ref _pushes);

    public long SendsSent => Volatile.Read(ref _sendsSent);

    /// <summary>Requests and sends refused: not connected, the in-flight cap reached, or the send queue full.</summary>
    public long RequestsRefused => Volatile.Read(ref _requestsRefused);

    public long HeartbeatsSent => Volatile.Read(ref _heartbeatsSent);

    public long HeartbeatsReceived => Volatile.Read(ref _heartbeatsReceived);

    /// <summary>Pending requests completed as disconnected when the connection closed.</summary>
    public long FailedByDisconnect => Volatile.Read(ref _failedByDisconnect);

    /// <summary>Pushes dropped because the packet queue was at its cap (<see cref="TcpPlayClientOptions.PacketQueueMax"/>).</summary>
    public long PushesDropped => Volatile.Read(ref _pushesDropped);

    /// <summary>Replies refused because the packet queue was at its cap; their requests completed with <see cref="TcpPlayClient.PacketQueueFullErrorCode"/>.</summary>
    public long RepliesRefused => Volatile.Read(ref _repliesRefused);

    internal void AddRequestSent() => Interlocked.Increment(ref _requestsSent);

    internal void AddReply() => Interlocked.Increment(ref _replies);

    internal void AddTimeout() => Interlocked.Increment(ref _timeouts);

    internal void AddLateOrUnknownReply() => Interlocked.Increment(ref _lateOrUnknownReplies);

    internal void AddPush() => Interlocked.Increment(ref _pushes);

    internal void AddSendSent() => Interlocked.Increment(ref _sendsSent);

    internal void AddRequestRefused() => Interlocked.Increment(ref _requestsRefused);

    internal void AddHeartbeatSent() => Interlocked.Increment(ref _heartbeatsSent);

    internal void AddHeartbeatReceived() => Interlocked.Increment(ref _heartbeatsReceived);

    internal void AddFailedByDisconnect() => Interlocked.Increment(ref _failedByDisconnect);

    internal void AddPushDropped() => Interlocked.Increment(ref _pushesDropped);

    internal void AddReplyRefused() => Interlocked.Increment(ref _repliesRefused);
}
