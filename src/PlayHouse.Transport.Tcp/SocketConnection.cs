using System.Net.Sockets;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;
using PlayHouse.Core.Seams;

namespace PlayHouse.Transport.Tcp;

/// <summary>
/// Sizes of one connection's buffers and send queue, and where a send starts: with a <see cref="FlushExecutor"/>, the
/// first frame queued on an idle connection starts the send at the end of the stage turn that queued it (on that turn's
/// thread, <see cref="TurnEnd"/>), or, queued outside a turn, as a work item, so frames queued meanwhile (the other
/// replies of the turn) leave in the same system call; without one, the frame is sent at once.
/// </summary>
internal readonly record struct ConnectionLimits(int ReceiveBufferBytes, int SendQueueBytesMax, int SendBufferInitialBytes = 4096, IExecutor? FlushExecutor = null);

/// <summary>
/// One connected TCP socket driven by two <see cref="SocketAsyncEventArgs"/>: a receive loop and a send loop, both
/// completion callbacks, with no task or thread per connection. An idle connection is one receive registered with
/// the OS and nothing else (B5).
/// <para>Buffers come from the message pool and each has exactly one owner at a time (B7e): the receive buffer
/// belongs to the receive loop, the in-flight send buffer to the send loop, the fill buffer (frames queued while a
/// send is in flight) to whoever holds the lock. <see cref="Close(SessionCloseReason, string, bool)"/> only flags the connection and disposes the
/// socket; each loop returns its own buffer when its pending operation completes, so a socket that fails on send
/// and receive at once still returns every buffer exactly once. The connection is finished (event args disposed,
/// <see cref="OnFinished"/>) when it is closed and neither loop has an operation outstanding.</para>
/// <para>No exception escapes a socket callback: each is caught, counted in
/// <see cref="TcpTransportCounters.CallbackFaults"/> and closes the connection.</para>
/// </summary>
/// <remarks>
/// Thread-safe: <see cref="TryEnqueue{TWriter}"/> and <see cref="Close(SessionCloseReason, string, bool)"/> may be called from any thread. The receive
/// callbacks (<see cref="OnReceived"/>, <see cref="OnEndOfStream"/>, <see cref="OnReceiveEnded"/>) run one at a time
/// on I/O threads, in stream order.
/// </remarks>
internal abstract class SocketConnection : IThreadPoolWorkItem
{
    private const string ReceiveOwner = "tcp-receive";
    private const string SendOwner = "tcp-send";

    private readonly Socket _socket;
    private readonly SocketAsyncEventArgs _receiveArgs;
    private readonly SocketAsyncEventArgs _sendArgs;
    private readonly ConnectionLimits _limits;
    private readonly Lock _gate = new();

    // Receive state: touched only by the receive loop, which runs one callback at a time.
    private Payload _receiveBuffer;
    private bool _receiveEnded;

    // Send and lifecycle state, under _gate.
    private readonly SendBuffers _send;
    private bool _sending;
    private bool _receiveActive = true;
    // Written under _gate; IsClosed reads it without the lock, a snapshot that a close may overtake as it could the lock's.
    private bool _closed;
    private bool _finished;
    private long _lastReceiveTimestamp;
    private SessionCloseReason _closeReason;
    private string? _closeDetail;

    protected SocketConnection(Socket socket, MessagePool pool, ConnectionLimits limits, TimeProvider time, TcpTransportCounters counters)
    {
        ArgumentNullException.ThrowIfNull(socket);
        ArgumentNullException.ThrowIfNull(pool);
        ArgumentNullException.ThrowIfNull(time);
        ArgumentNullException.ThrowIfNull(counters);
        _socket = socket;
        Pool = pool;
        _limits = limits;
        Time = time;
        Counters = counters;
        _lastReceiveTimestamp = time.GetTimestamp();
        _send = new SendBuffers(pool, limits, time, counters, SendOwner);

        // The execution context is not flowed into completions: nothing in a callback depends on ambient state.
        _receiveArgs = new SocketAsyncEventArgs(unsafeSuppressExecutionContextFlow: true);
        _receiveArgs.Completed += OnReceiveCompleted;
        _sendArgs = new SocketAsyncEventArgs(unsafeSuppressExecutionContextFlow: true);
        _sendArgs.Completed += OnSendCompleted;
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

    /// <summary>Encoded bytes queued or in flight.</summary>
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

    /// <summary>The most bytes this connection held for sending at once.</summary>
    public int QueuedBytesHighWater => _send.QueuedBytesHighWater;

    /// <summary>Frames this connection refused because its send queue was at its cap.</summary>
    public long SendRefusals => _send.Refusals;

    /// <summary>The <see cref="TimeProvider"/> timestamp of the last bytes received (or of the connect).</summary>
    public long LastReceiveTimestamp => Volatile.Read(ref _lastReceiveTimestamp);

    /// <summary>When the send queue first refused a frame without draining to half its cap since; 0 when it is not full.</summary>
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
    public void Start() => ReceiveNext();

    /// <summary>
    /// Closes the connection once: later calls do nothing and return false. Queued frames that are not in flight
    /// are dropped and counted; the socket is disposed, which completes any pending operation with an error.
    /// </summary>
    public bool Close(SessionCloseReason reason, string detail) => Close(reason, detail, abortive: false);

    /// <summary>Closes the connection once; an abortive close resets it (RST) instead of shutting it down (FIN).</summary>
    public bool Close(SessionCloseReason reason, string detail, bool abortive)
    {
        int dropped;
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
            if (!_sending)
            {
                // No send is in flight, so the fill buffer has no other owner: return it now.
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
            if (abortive)
            {
                // Linger 0 makes the close a reset, the abrupt break of a crashed process.
                _socket.LingerState = new LingerOption(true, 0);
            }
            else
            {
                _socket.Shutdown(SocketShutdown.Both);
            }
        }
        catch (Exception e) when (e is SocketException or ObjectDisposedException)
        {
            // The peer may be gone already; the socket is disposed either way.
        }

        _socket.Dispose();
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

    /// <summary>
    /// Copies one frame into the send queue and starts a send if none is in flight. Returns false, queuing nothing,
    /// when the connection is closed or the frame would take the queue past its cap (a frame into an empty queue
    /// is always accepted, so a frame larger than the cap can still be sent).
    /// </summary>
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
                SendNext();
            }
        }

        return true;
    }

    /// <summary>The deferred flush: runs the send loop for everything queued since it was scheduled.</summary>
    void IThreadPoolWorkItem.Execute() => SendNext();

    /// <summary>Bytes arrived, in stream order. Close the connection from here to stop receiving.</summary>
    protected abstract void OnReceived(ReadOnlySpan<byte> data);

    /// <summary>The peer closed its end cleanly; a frame left unfinished is a truncation.</summary>
    protected virtual void OnEndOfStream()
    {
    }

    /// <summary>The receive loop ended; release what only it used (the decoder).</summary>
    protected virtual void OnReceiveEnded()
    {
    }

    /// <summary>The connection closed (called once, on the thread that closed it).</summary>
    protected virtual void OnClosed(SessionCloseReason reason, string detail)
    {
    }

    /// <summary>Both loops are done and every buffer is back in the pool (called once).</summary>
    protected virtual void OnFinished()
    {
    }

    /// <summary>Counts an exception caught at the socket boundary and closes the connection.</summary>
    protected void CountFault(Exception exception, string where)
    {
        Counters.AddCallbackFault();
        Close(SessionCloseReason.CallbackFault, $"{where} threw {exception.GetType().Name}: {exception.Message}");
    }

    private static SessionCloseReason ReasonOf(SocketError error) => error switch
    {
        // A send to a peer that reset fails with EPIPE, which .NET reports as Shutdown.
        SocketError.ConnectionReset or SocketError.ConnectionAborted or SocketError.Shutdown => SessionCloseReason.ConnectionReset,
        SocketError.OperationAborted => SessionCloseReason.LocalClose,
        _ => SessionCloseReason.SocketError,
    };

    // ---- Receive loop ----

    private void OnReceiveCompleted(object? sender, SocketAsyncEventArgs args)
    {
        try
        {
            if (ProcessReceive())
            {
                ReceiveNext();
            }
        }
        catch (Exception e)
        {
            CountFault(e, "receive completion");
            EndReceive();
        }
    }

    private void ReceiveNext()
    {
        try
        {
            while (true)
            {
                if (IsClosed)
                {
                    EndReceive();
                    return;
                }

                if (_receiveBuffer.IsEmpty)
                {
                    _receiveBuffer = Pool.Rent(_limits.ReceiveBufferBytes, ReceiveOwner);
                }

                _receiveArgs.SetBuffer(_receiveBuffer.WritableMemory);
                bool pending;
                try
                {
                    pending = _socket.ReceiveAsync(_receiveArgs);
                }
                catch (ObjectDisposedException)
                {
                    // Closed on another thread between the check and the call.
                    EndReceive();
                    return;
                }
                catch (SocketException e)
                {
                    Close(ReasonOf(e.SocketErrorCode), $"receive failed: {e.SocketErrorCode}");
                    EndReceive();
                    return;
                }

                if (pending || !ProcessReceive())
                {
                    return;
                }
            }
        }
        catch (Exception e)
        {
            CountFault(e, "receive loop");
            EndReceive();
        }
    }

    /// <summary>Handles a completed receive; returns true when the loop should receive again.</summary>
    private bool ProcessReceive()
    {
        var args = _receiveArgs;
        if (args.SocketError != SocketError.Success)
        {
            Close(ReasonOf(args.SocketError), $"receive failed: {args.SocketError}");
            EndReceive();
            return false;
        }

        var received = args.BytesTransferred;
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
            EndReceive();
            return false;
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

        if (IsClosed)
        {
            EndReceive();
            return false;
        }

        return true;
    }

    private void EndReceive()
    {
        if (_receiveEnded)
        {
            return;
        }

        _receiveEnded = true;

        // No receive is outstanding when the loop ends, so the buffer has no other owner.
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

    private void OnSendCompleted(object? sender, SocketAsyncEventArgs args)
    {
        try
        {
            ProcessSend();
            SendNext();
        }
        catch (Exception e)
        {
            // SendNext never throws out; this guards ProcessSend, and the loop is restarted to release buffers.
            CountFault(e, "send completion");
            SendNext();
        }
    }

    private void SendNext()
    {
        while (true)
        {
            Memory<byte> chunk;
            lock (_gate)
            {
                if (_closed)
                {
                    // The in-flight operation (if any) has completed: both send buffers are ours to return.
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
            }

            bool pending;
            try
            {
                _sendArgs.SetBuffer(chunk);
                pending = _socket.SendAsync(_sendArgs);
            }
            catch (ObjectDisposedException)
            {
                Close(SessionCloseReason.LocalClose, "the socket was disposed during a send");
                continue;
            }
            catch (SocketException e)
            {
                Close(ReasonOf(e.SocketErrorCode), $"send failed: {e.SocketErrorCode}");
                continue;
            }

            if (pending)
            {
                return;
            }

            try
            {
                ProcessSend();
            }
            catch (Exception e)
            {
                CountFault(e, "send");
            }
        }

        TryFinish();
    }

    private void ProcessSend()
    {
        var args = _sendArgs;
        if (args.SocketError != SocketError.Success)
        {
            Close(ReasonOf(args.SocketError), $"send failed: {args.SocketError}");
            return;
        }

        var sent = args.BytesTransferred;
        lock (_gate)
        {
            // A stream send may complete partially; the loop sends the rest of the buffer next.
            _send.Sent(sent);
        }

        Counters.AddBytesSent(sent);
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

        _receiveArgs.Dispose();
        _sendArgs.Dispose();
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
