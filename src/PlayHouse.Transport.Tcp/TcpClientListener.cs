using System.Collections.Concurrent;
using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using System.Net.WebSockets;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using PlayHouse.Core.Codec;
using PlayHouse.Core.Runtime;

namespace PlayHouse.Transport.Tcp;

/// <summary>A session that closed, as the listener reports it.</summary>
public readonly record struct SessionClosedInfo(long SessionId, IPEndPoint? RemoteEndPoint, SessionCloseReason Reason, string Detail);

/// <summary>
/// Accepts client connections for one <see cref="PlayServer"/> and runs a <see cref="TcpClientSession"/> for each.
/// Accepting is a completion callback (no accept task); one timer per listener sweeps every session's idle, frame
/// and slow-reader timeouts (no timer per session). Beyond <see cref="TcpTransportOptions.MaxConnections"/> open
/// sessions (and TLS handshakes under way), new connections are closed at once and counted.
/// <para>With <see cref="TcpTransportOptions.Tls"/> set, each accepted connection is a TLS server stream first.
/// <see cref="ServeWebSocketAsync"/> takes WebSockets an HTTP server accepted (Kestrel's <c>/ws</c>). Sessions of
/// every transport get their ids from the one <see cref="PlayServer"/>, so ids are unique across transports and
/// listeners.</para>
/// </summary>
/// <remarks>Thread-safe.</remarks>
public sealed class TcpClientListener : IDisposable
{
    private readonly ConcurrentDictionary<long, TcpClientSession> _sessions = new();
    private readonly UnfinishedSet<TcpClientSession> _unfinished = new();
    private readonly ILogger _logger;
    private readonly Lock _gate = new();
    private Socket? _listenSocket;
    private SocketAsyncEventArgs? _acceptArgs;
    private ITimer? _sweepTimer;
    private volatile bool _accepting;
    private volatile bool _draining;
    private int _handshakes;
    private bool _disposed;

    public TcpClientListener(PlayServer server, TcpTransportOptions? options = null, ILogger? logger = null, TimeProvider? time = null)
    {
        ArgumentNullException.ThrowIfNull(server);
        Server = server;
        Options = options ?? new TcpTransportOptions();
        Options.Validate();
        Time = time ?? RealTime.System;
        _logger = logger ?? NullLogger.Instance;
    }

    public PlayServer Server { get; }

    public TcpTransportOptions Options { get; }

    public TimeProvider Time { get; }

    public TcpTransportCounters Counters { get; } = new();

    /// <summary>Shared msg-id strings of every session: bounded, keyed by bytes with an equality check (B4).</summary>
    public Utf8StringCache MsgIds { get; } = new();

    /// <summary>The bound address (with the port the OS chose when asked for port 0).</summary>
    public IPEndPoint? LocalEndPoint { get; private set; }

    /// <summary>Sessions open now.</summary>
    public int SessionCount => _sessions.Count;

    /// <summary>Sessions closed or open whose buffers are not all back in the pool yet.</summary>
    public int UnfinishedSessionCount => _unfinished.Count;

    public bool IsAccepting => _accepting;

    /// <summary>True after <see cref="BeginDrain"/>: client requests are refused with <see cref="ErrorCodes.ServerStopping"/>.</summary>
    public bool IsDraining => _draining;

    /// <summary>Called after each session closes, on the thread that closed it.</summary>
    public event Action<SessionClosedInfo>? SessionClosed;

    /// <summary>Open sessions, in session id order.</summary>
    public IReadOnlyList<TcpClientSession> Sessions => [.. _sessions.Values.OrderBy(s => s.SessionId)];

    /// <summary>Binds, listens and starts accepting. Use port 0 to let the OS pick one.</summary>
    public IPEndPoint Start(IPEndPoint bindTo)
    {
        ArgumentNullException.ThrowIfNull(bindTo);
        lock (_gate)
        {
            ObjectDisposedException.ThrowIf(_disposed, this);
            if (_listenSocket is not null)
            {
                throw new InvalidOperationException("The listener is already started.");
            }

            var socket = new Socket(bindTo.AddressFamily, SocketType.Stream, ProtocolType.Tcp);
            try
            {
                socket.Bind(bindTo);
                socket.Listen(Options.ListenBacklog);
            }
            catch
            {
                socket.Dispose();
                throw;
            }

            _listenSocket = socket;
            LocalEndPoint = (IPEndPoint)socket.LocalEndPoint!;
            _acceptArgs = new SocketAsyncEventArgs(unsafeSuppressExecutionContextFlow: true);
            _acceptArgs.Completed += OnAcceptCompleted;
            _accepting = true;
            EnsureSweepTimerLocked();
        }

        _logger.LogInformation("Play server {NodeId} accepting clients on {EndPoint}", Server.NodeId, LocalEndPoint);
        AcceptNext();
        return LocalEndPoint!;
    }

    /// <summary>
    /// Serves one WebSocket as a client session (binary messages carrying PlayHouse frames) and completes when the
    /// session has closed and returned its buffers; an HTTP handler awaits it to keep the connection. Refused (aborted
    /// and counted) beyond <see cref="TcpTransportOptions.MaxConnections"/>, after <see cref="StopAccepting"/>, and
    /// while draining. <paramref name="aborted"/> (the HTTP request's abort token) closes the session.
    /// </summary>
    public async Task ServeWebSocketAsync(WebSocket webSocket, IPEndPoint? remoteEndPoint, CancellationToken aborted = default)
    {
        ArgumentNullException.ThrowIfNull(webSocket);
        TcpClientSession session;
        lock (_gate)
        {
            ObjectDisposedException.ThrowIf(_disposed, this);
            EnsureSweepTimerLocked();
        }

        if (_draining || (_listenSocket is not null && !_accepting))
        {
            Counters.AddRefusedAtLimit();
            webSocket.Abort();
            return;
        }

        if (_sessions.Count + Volatile.Read(ref _handshakes) >= Options.MaxConnections)
        {
            Counters.AddRefusedAtLimit();
            webSocket.Abort();
            return;
        }

        var channel = new WebSocketChannel(webSocket, Options.WebSocketMessageBytesMax, Options.WebSocketCloseGrace, Time, Counters);
        session = new TcpClientSession(channel, ClientTransportKind.WebSocket, remoteEndPoint, this);
        Register(session);
        await using (aborted.UnsafeRegister(static s => ((TcpClientSession)s!).Close(SessionCloseReason.ConnectionReset, "the HTTP connection was aborted"), session).ConfigureAwait(false))
        {
            await session.Finished.ConfigureAwait(false);
        }
    }

    /// <summary>Stops accepting connections; open sessions keep working.</summary>
    public void StopAccepting()
    {
        Socket? socket;
        lock (_gate)
        {
            _accepting = false;
            socket = _listenSocket;
        }

        // Disposing the listening socket completes the pending accept with OperationAborted, which ends the loop.
        socket?.Dispose();
    }

    /// <summary>Stops accepting and starts refusing client requests (answered with ServerStopping) while stages drain.</summary>
    public void BeginDrain()
    {
        StopAccepting();
        _draining = true;
    }

    /// <summary>Bytes queued or in flight to clients, over every open session.</summary>
    public long QueuedBytes
    {
        get
        {
            long total = 0;
            foreach (var session in _sessions.Values)
            {
                total += session.QueuedBytes;
            }

            return total;
        }
    }

    /// <summary>Closes every open session with <paramref name="reason"/>; returns how many were closed.</summary>
    public int CloseAll(SessionCloseReason reason, string detail)
    {
        var closed = 0;
        foreach (var session in _sessions.Values.OrderBy(s => s.SessionId).ToList())
        {
            if (session.Close(reason, detail))
            {
                closed++;
            }
        }

        return closed;
    }

    /// <summary>
    /// Ends the listener as a crashed process would: stops accepting and resets every open session at once, with
    /// no drain and nothing queued sent. Returns how many sessions were reset.
    /// </summary>
    public int Abort(string detail)
    {
        lock (_gate)
        {
            _disposed = true;
        }

        StopAccepting();
        _sweepTimer?.Dispose();
        var aborted = 0;
        foreach (var session in _sessions.Values.OrderBy(s => s.SessionId).ToList())
        {
            if (session.Abort(detail))
            {
                aborted++;
            }
        }

        return aborted;
    }

    public void Dispose()
    {
        lock (_gate)
        {
            if (_disposed)
            {
                return;
            }

            _disposed = true;
        }

        StopAccepting();
        _sweepTimer?.Dispose();
        CloseAll(SessionCloseReason.ServerStopping, "the listener was disposed");
    }

    internal void OnSessionClosed(TcpClientSession session, SessionCloseReason reason, string detail)
    {
        _sessions.TryRemove(session.SessionId, out _);
        if (reason is SessionCloseReason.PeerClosed or SessionCloseReason.ServerStopping)
        {
            _logger.LogDebug("Session {SessionId} from {RemoteEndPoint} closed: {Reason} ({Detail})", session.SessionId, session.RemoteEndPoint, reason, detail);
        }
        else
        {
            _logger.LogInformation("Session {SessionId} from {RemoteEndPoint} closed: {Reason} ({Detail})", session.SessionId, session.RemoteEndPoint, reason, detail);
        }

        SessionClosed?.Invoke(new SessionClosedInfo(session.SessionId, session.RemoteEndPoint, reason, detail));
    }

    internal void OnSessionFinished(TcpClientSession session) => _unfinished.Finished(session);

    /// <summary>Completes when no session is open or still returning buffers (every session finished).</summary>
    public Task WhenAllSessionsFinished() => _unfinished.WhenAllFinished();

    private void AcceptNext()
    {
        var args = _acceptArgs!;
        while (_accepting)
        {
            args.AcceptSocket = null;
            bool pending;
            try
            {
                pending = _listenSocket!.AcceptAsync(args);
            }
            catch (ObjectDisposedException)
            {
                return;
            }
            catch (Exception e)
            {
                Counters.AddCallbackFault();
                _logger.LogError(e, "Accepting on {EndPoint} failed; the listener stops", LocalEndPoint);
                return;
            }

            if (pending)
            {
                return;
            }

            ProcessAccept(args);
        }
    }

    private void OnAcceptCompleted(object? sender, SocketAsyncEventArgs args)
    {
        ProcessAccept(args);
        AcceptNext();
    }

    private void ProcessAccept(SocketAsyncEventArgs args)
    {
        try
        {
            if (args.SocketError != SocketError.Success)
            {
                if (_accepting)
                {
                    Counters.AddAcceptError();
                    _logger.LogWarning("Accept failed on {EndPoint}: {Error}", LocalEndPoint, args.SocketError);
                }

                return;
            }

            var socket = args.AcceptSocket!;
            args.AcceptSocket = null;
            if (!_accepting)
            {
                socket.Dispose();
                return;
            }

            if (_sessions.Count + Volatile.Read(ref _handshakes) >= Options.MaxConnections)
            {
                Counters.AddRefusedAtLimit();
                socket.LingerState = new LingerOption(true, 0);
                socket.Dispose();
                return;
            }

            socket.NoDelay = Options.NoDelay;
            if (Options.SocketSendBufferBytes > 0)
            {
                socket.SendBufferSize = Options.SocketSendBufferBytes;
            }

            if (Options.Tls is { } tls)
            {
                // The handshake runs on its own; the accept loop goes on at once.
                _ = HandshakeAsync(socket, tls);
                return;
            }

            Register(new TcpClientSession(socket, this));
        }
        catch (Exception e)
        {
            // No exception escapes a socket callback; the listener keeps accepting.
            Counters.AddCallbackFault();
            _logger.LogError(e, "Accepting a connection on {EndPoint} threw", LocalEndPoint);
        }
    }

    private void Register(TcpClientSession session)
    {
        _unfinished.Add(session);
        _sessions.TryAdd(session.SessionId, session);
        Counters.AddAccepted();
        session.Start();
        if (Volatile.Read(ref _disposed))
        {
            // Disposed while this connection was being set up, after CloseAll had run.
            session.Close(SessionCloseReason.ServerStopping, "the listener was disposed");
        }
    }

    private async Task HandshakeAsync(Socket socket, TlsServerOptions tls)
    {
        Interlocked.Increment(ref _handshakes);
        var remote = socket.RemoteEndPoint as IPEndPoint;
        var stream = new SslStream(new NetworkStream(socket, ownsSocket: true), leaveInnerStreamOpen: false);
        string? failure = null;
        try
        {
            using var timeout = new CancellationTokenSource(tls.HandshakeTimeout, Time);
            var authentication = new SslServerAuthenticationOptions { ServerCertificate = tls.Certificate, ClientCertificateRequired = false };
            await stream.AuthenticateAsServerAsync(authentication, timeout.Token).ConfigureAwait(false);
            if (_accepting)
            {
                // Registered before the handshake slot is given back, so the cap never admits one connection too many.
                Register(new TcpClientSession(new TlsChannel(stream, socket), ClientTransportKind.Tls, remote, this));
                Interlocked.Decrement(ref _handshakes);
                return;
            }
        }
        catch (Exception e) when (e is IOException or System.Security.Authentication.AuthenticationException or OperationCanceledException or SocketException or ObjectDisposedException)
        {
            // Garbage instead of a ClientHello, a client that stalls or drops mid-handshake: no session was made.
            failure = e.Message;
        }
        catch (Exception e)
        {
            Counters.AddCallbackFault();
            _logger.LogError(e, "Setting up a TLS session from {RemoteEndPoint} threw", remote);
        }

        try
        {
            socket.LingerState = new LingerOption(true, 0);
        }
        catch (Exception e) when (e is SocketException or ObjectDisposedException)
        {
            // Already gone; disposing the stream below is all that is left.
        }

        await stream.DisposeAsync().ConfigureAwait(false);

        // The slot is free before the failure is counted, so whoever sees the count can connect at once.
        Interlocked.Decrement(ref _handshakes);
        if (failure is not null)
        {
            Counters.AddTlsHandshakeFailure();
            _logger.LogInformation("TLS handshake from {RemoteEndPoint} failed: {Error}", remote, failure);
        }
    }

    private void EnsureSweepTimerLocked() =>
        _sweepTimer ??= Time.CreateTimer(static s => ((TcpClientListener)s!).Sweep(), this, Options.SweepInterval, Options.SweepInterval);

    private void Sweep()
    {
        try
        {
            var now = Time.GetTimestamp();
            foreach (var session in _sessions.Values)
            {
                session.CheckTimeouts(now, Time, Options);
            }
        }
        catch (Exception e)
        {
            Counters.AddCallbackFault();
            _logger.LogError(e, "The session timeout sweep threw");
        }
    }
}
