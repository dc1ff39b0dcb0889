using System.Net.Sockets;
using System.Net.WebSockets;
using System.Security.Authentication;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;

namespace PlayHouse.Transport.Tcp;

/// <summary>
/// The byte pipe under a <see cref="StreamConnection"/>: a TLS stream or a WebSocket. One read and one write may be
/// outstanding at a time (the connection's receive and send loops), never two of either.
/// </summary>
internal abstract class ByteChannel
{
    /// <summary>Why the channel refused the stream (see <see cref="ReadAsync"/> returning -1); null while it is well formed.</summary>
    public string? Violation { get; protected set; }

    /// <summary>
    /// Reads at least one byte into <paramref name="buffer"/>; 0 means the peer ended the stream cleanly, -1 that it
    /// broke the channel's own protocol (<see cref="Violation"/> says how).
    /// </summary>
    public abstract ValueTask<int> ReadAsync(Memory<byte> buffer);

    /// <summary>Writes every byte of <paramref name="data"/>.</summary>
    public abstract ValueTask WriteAsync(ReadOnlyMemory<byte> data);

    /// <summary>
    /// Ends the channel: <paramref name="writeIdle"/> says no write is outstanding, so a channel may say goodbye on
    /// the wire (a WebSocket close message) before it lets go; otherwise it aborts at once. Either way the pending
    /// read completes soon with an end or an error.
    /// </summary>
    public abstract void Close(bool abortive, bool writeIdle);
}

/// <summary>
/// One client connection over a <see cref="ByteChannel"/> (TLS or WebSocket), with the same contract as
/// <see cref="SocketConnection"/>: a capped send queue refusing frames past <see cref="ConnectionLimits.SendQueueBytesMax"/>,
/// the slow-reader clock, the last-receive timestamp, pooled buffers with exactly one owner each, receive callbacks
/// one at a time in stream order, and no exception escaping a loop (each is counted in
/// <see cref="TcpTransportCounters.CallbackFaults"/> and closes the connection). The loops are async methods, since
/// <see cref="System.Net.Security.SslStream"/> and <see cref="WebSocket"/> offer no completion-callback API.
/// </summary>
/// <remarks>Thread-safe in the same way as <see cref="SocketConnection"/>.</remarks>
internal abstract class StreamConnection : IThreadPoolWorkItem
{
    private const string ReceiveOwner = "stream-receive";
    private const string SendOwner = "stream-send";

    private readonly ByteChannel _channel;
    private readonly ConnectionLimits _limits;
    private readonly Lock _gate = new();

    // Receive state: touched only by the receive loop.
    private Payload _receiveBuffer;
    private bool _receiveEnded;

    // Send and lifecycle state, under _gate.
    private readonly SendBuffers _send;
    private bool _sending;
    private bool _writing;
    private bool _receiveActive = true;
    // Written under _gate; IsClosed reads it without the lock, a snapshot that a close may overtake as it could the lock's.
    private bool _closed;
    private bool _finished;
    private long _lastReceiveTimestamp;
    private SessionCloseReason _closeReason;
    private string? _closeDetail;

    protected StreamConnection(ByteChannel channel, MessagePool pool, ConnectionLimits limits, TimeProvider time, TcpTransportCounters counters)
    {
        ArgumentNullException.ThrowIfNull(channel);
        ArgumentNullException.ThrowIfNull(pool);
        ArgumentNullException.ThrowIfNull(time);
        ArgumentNullException.ThrowIfNull(counters);
        _channel = channel;
        Pool = pool;
        _limits = limits;
        Time = time;
        Counters = counters;
        _lastReceiveTimestamp = time.GetTimestamp();
        _send = new SendBuffers(pool, limits, time, counters, SendOwner);
    }

    protected MessagePool Pool { get; }

    protected TimeProvider Time { get; }

    protected TcpTransportCounters Counters { get; }

    /// <summary>Whether the connection is closed; read without the lock (the receive path asks once per frame).</summary>
    public bool IsClosed => Volatile.Read(ref _closed);

    public SessionCloseReason CloseReason
    {
        get
        {
            lock (_gate)
            {
                return _closeReason;
            }
        }
    }

    public string? CloseDetail
    {
        get
        {
            lock (_gate)
            {
                return _closeDetail;
            }
        }
    }

    public int QueuedBytes
    {
        get
        {
            lock (_gate)
            {
                return _send.QueuedBytes;
            }
        }
    }

    public int QueuedBytesHighWater => _send.QueuedBytesHighWater;

    public long SendRefusals => _send.Refusals;

    public long LastReceiveTimestamp => Volatile.Read(ref _lastReceiveTimestamp);

    public long QueueFullSinceTimestamp
    {
        get
        {
            lock (_gate)
            {
                return _send.QueueFullSinceTimestamp;
            }
        }
    }

    /// <summary>Starts the receive loop. Call once, after the connection is registered with its owner.</summary>
    public void Start() => _ = ReceiveLoopAsync();

    public bool Close(SessionCloseReason reason, string detail) => Close(reason, detail, abortive: false);

    /// <summary>Closes the connection once; queued frames not in flight are dropped and counted.</summary>
    public bool Close(SessionCloseReason reason, string detail, bool abortive)
    {
        int dropped;
        bool writeIdle;
        lock (_gate)
        {
            if (_closed)
            {
                return false;
            }

            Volatile.Write(ref _closed, true);
            _closeReason = reason;
            _closeDetail = detail;
            dropped = _send.QueuedBytes;
            writeIdle = !_writing;
            if (!_sending)
            {
                _send.Release();
            }
        }

        Counters.AddClosed(reason);
        if (dropped > 0)
        {
            Counters.AddSendBytesDroppedAtClose(dropped);
        }

        try
        {
            _channel.Close(abortive, writeIdle);
        }
        catch (Exception e) when (e is IOException or ObjectDisposedException or SocketException or WebSocketException)
        {
            // The peer may be gone already; the channel is released either way.
        }

        try
        {
            OnClosed(reason, detail);
        }
        catch (Exception e)
        {
            CountFault(e, nameof(OnClosed));
        }

        TryFinish();
        return true;
    }

    /// <summary>Copies one frame into the send queue and starts the send loop if it is idle (see <see cref="SocketConnection"/>).</summary>
    protected bool TryEnqueue<TWriter>(scoped in TWriter writer)
        where TWriter : IFrameWriter, allows ref struct
    {
        bool start;
        int queued;
        lock (_gate)
        {
            if (_closed)
            {
                Counters.AddSendRefusedClosed();
                return false;
            }

            if (!_send.TryAppend(writer))
            {
                return false;
            }

            queued = _send.QueuedBytes;

            start = !_sending;
            _sending = true;
        }

        Counters.NoteSendQueueBytes(queued);
        if (start)
        {
            if (_limits.FlushExecutor is { } executor)
            {
                TurnEnd.DeferOrSchedule(this, executor);
            }
            else
            {
                _ = SendLoopAsync();
            }
        }

        return true;
    }

    void IThreadPoolWorkItem.Execute() => _ = SendLoopAsync();

    protected abstract void OnReceived(ReadOnlySpan<byte> data);

    protected virtual void OnEndOfStream()
    {
    }

    protected virtual void OnReceiveEnded()
    {
    }

    protected virtual void OnClosed(SessionCloseReason reason, string detail)
    {
    }

    protected virtual void OnFinished()
    {
    }

    protected void CountFault(Exception exception, string where)
    {
        Counters.AddCallbackFault();
        Close(SessionCloseReason.CallbackFault, $"{where} threw {exception.GetType().Name}: {exception.Message}");
    }

    /// <summary>How a failed read or write closes the connection: resets are the peer's doing, anything else an error.</summary>
    private static SessionCloseReason ReasonOf(Exception e) => e switch
    {
        WebSocketException { WebSocketErrorCode: WebSocketError.ConnectionClosedPrematurely } => SessionCloseReason.ConnectionReset,
        IOException { InnerException: SocketException { SocketErrorCode: SocketError.ConnectionReset or SocketError.ConnectionAborted or SocketError.Shutdown } } => SessionCloseReason.ConnectionReset,
        SocketException { SocketErrorCode: SocketError.ConnectionReset or SocketError.ConnectionAborted or SocketError.Shutdown } => SessionCloseReason.ConnectionReset,
        ObjectDisposedException or OperationCanceledException => SessionCloseReason.LocalClose,
        _ => SessionCloseReason.SocketError,
    };

    private static bool IsChannelFailure(Exception e) =>
        e is IOException or SocketException or WebSocketException or ObjectDisposedException or OperationCanceledException or AuthenticationException;

    // ---- Receive loop ----

    private async Task ReceiveLoopAsync()
    {
        try
        {
            while (!IsClosed)
            {
                if (_receiveBuffer.IsEmpty)
                {
                    _receiveBuffer = Pool.Rent(_limits.ReceiveBufferBytes, ReceiveOwner);
                }

                int received;
                try
                {
                    received = await _channel.ReadAsync(_receiveBuffer.WritableMemory).ConfigureAwait(false);
                }
                catch (Exception e) when (IsChannelFailure(e))
                {
                    Close(ReasonOf(e), $"receive failed: {e.GetType().Name}: {e.Message}");
                    break;
                }

                // The channel may have closed the connection itself (a WebSocket text message).
                if (IsClosed)
                {
                    break;
                }

                if (received < 0)
                {
                    Close(SessionCloseReason.MalformedFrame, _channel.Violation ?? "the channel refused the stream");
                    break;
                }

                if (received == 0)
                {
                    try
                    {
                        OnEndOfStream();
                    }
                    catch (Exception e)
                    {
                        CountFault(e, nameof(OnEndOfStream));
                    }

                    Close(SessionCloseReason.PeerClosed, "the peer closed the connection");
                    break;
                }

                Volatile.Write(ref _lastReceiveTimestamp, Time.GetTimestamp());
                Counters.AddBytesReceived(received);
                try
                {
                    OnReceived(_receiveBuffer.Span[..received]);
                }
                catch (Exception e)
                {
                    CountFault(e, nameof(OnReceived));
                }
            }
        }
        catch (Exception e)
        {
            CountFault(e, "receive loop");
        }

        EndReceive();
    }

    private void EndReceive()
    {
        if (_receiveEnded)
        {
            return;
        }

        _receiveEnded = true;

        // No read is outstanding when the loop ends, so the buffer has no other owner.
        _receiveBuffer.Dispose();
        _receiveBuffer = default;
        try
        {
            OnReceiveEnded();
        }
        catch (Exception e)
        {
            Counters.AddCallbackFault();
            Close(SessionCloseReason.CallbackFault, $"{nameof(OnReceiveEnded)} threw {e.GetType().Name}: {e.Message}");
        }

        lock (_gate)
        {
            _receiveActive = false;
        }

        TryFinish();
    }

    // ---- Send loop ----

    private async Task SendLoopAsync()
    {
        while (true)
        {
            ReadOnlyMemory<byte> chunk;
            lock (_gate)
            {
                if (_closed)
                {
                    // No write is outstanding: both send buffers are ours to return.
                    _send.Release();
                    _sending = false;
                    break;
                }

                chunk = _send.NextChunk();
                if (chunk.IsEmpty)
                {
                    _sending = false;
                    return;
                }

                _writing = true;
            }

            try
            {
                await _channel.WriteAsync(chunk).ConfigureAwait(false);
            }
            catch (Exception e) when (IsChannelFailure(e))
            {
                lock (_gate)
                {
                    _writing = false;
                }

                Close(ReasonOf(e), $"send failed: {e.GetType().Name}: {e.Message}");
                continue;
            }
            catch (Exception e)
            {
                // The chunk is given up, as the write's outcome is unknown: its bytes leave the queue unsent.
                lock (_gate)
                {
                    _writing = false;
                    _send.Sent(chunk.Length);
                }

                CountFault(e, "send");
                continue;
            }

            lock (_gate)
            {
                _writing = false;
                _send.Sent(chunk.Length);
            }

            Counters.AddBytesSent(chunk.Length);
        }

        TryFinish();
    }

    private void TryFinish()
    {
        lock (_gate)
        {
            if (!_closed || _receiveActive || _sending || _finished)
            {
                return;
            }

            _finished = true;
        }

        try
        {
            OnFinished();
        }
        catch (Exception)
        {
            Counters.AddCallbackFault();
        }
    }
}
