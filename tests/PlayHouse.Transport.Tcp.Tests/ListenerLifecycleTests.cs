using System.Net;
using System.Net.Sockets;
using System.Net.WebSockets;

namespace PlayHouse.Transport.Tcp.Tests;

/// <summary>
/// The client listener's life: its arguments checked, one start, the refusals of a stopped, draining or full listener,
/// the session list and closes in session id order, a WebSocket's serve call lasting as long as its session, and what
/// dispose and abort leave behind. WebSocket sessions are scripted on a fake clock; TCP ones use loopback with port 0.
/// </summary>
public sealed class ListenerLifecycleTests
{
    private static readonly IPEndPoint AnyLoopbackPort = new(IPAddress.Loopback, 0);

    [Fact]
    public void Constructor_WithoutAServer_ThrowsArgumentNull()
    {
        var thrown = Assert.Throws<ArgumentNullException>(() => new TcpClientListener(null!));

        Assert.Equal("server", thrown.ParamName);
    }

    [Fact]
    public void Constructor_WithAnOptionOutOfRange_ThrowsNamingIt()
    {
        using var bench = new WebSocketSessionBench(Options());

        var thrown = Assert.Throws<ArgumentException>(() => new TcpClientListener(bench.Server, new TcpTransportOptions { MaxConnections = 0 }));

        Assert.Equal(nameof(TcpTransportOptions.MaxConnections), thrown.ParamName);
    }

    [Fact]
    public void Start_WithoutAnEndPoint_ThrowsArgumentNull()
    {
        using var bench = new WebSocketSessionBench(Options());

        var thrown = Assert.Throws<ArgumentNullException>(() => bench.Listener.Start(null!));

        Assert.Equal("bindTo", thrown.ParamName);
        Assert.False(bench.Listener.IsAccepting);
    }

    [Fact]
    public void Start_AfterDispose_ThrowsObjectDisposed()
    {
        using var bench = new WebSocketSessionBench(Options());
        bench.Listener.Dispose();

        Assert.Throws<ObjectDisposedException>(() => bench.Listener.Start(AnyLoopbackPort));
        Assert.False(bench.Listener.IsAccepting);
    }

    [Fact]
    public void Start_Twice_ThrowsAlreadyStarted_AndKeepsTheFirstEndPoint()
    {
        using var bench = new WebSocketSessionBench(Options());
        var first = bench.Listener.Start(AnyLoopbackPort);

        var thrown = Assert.Throws<InvalidOperationException>(() => bench.Listener.Start(AnyLoopbackPort));

        Assert.Equal("The listener is already started.", thrown.Message);
        Assert.Equal(first, bench.Listener.LocalEndPoint);
    }

    [Fact]
    public void Start_OnAPortInUse_ThrowsTheBindError_AndLeavesTheListenerStartable()
    {
        using var bench = new WebSocketSessionBench(Options());
        var taken = bench.Listener.Start(AnyLoopbackPort);
        using var second = new TcpClientListener(bench.Server, Options());

        var thrown = Assert.Throws<SocketException>(() => second.Start(taken));
        var elsewhere = second.Start(AnyLoopbackPort);

        Assert.Equal(SocketError.AddressAlreadyInUse, thrown.SocketErrorCode);
        Assert.NotEqual(taken.Port, elsewhere.Port);
        Assert.True(second.IsAccepting);
    }

    [Fact]
    public void Sessions_CloseAllAndAbort_GoInSessionIdOrder()
    {
        using var bench = new WebSocketSessionBench(Options());
        var ids = Enumerable.Range(0, 3).Select(_ => bench.Open().Session!.SessionId).ToList();

        var listed = bench.Listener.Sessions.Select(s => s.SessionId).ToList();
        var closed = bench.Listener.CloseAll(SessionCloseReason.ClosedByServer, "all");

        Assert.Equal(ids.Order(), listed);
        Assert.Equal(3, closed);
        Assert.Equal(ids.Order(), bench.Closes.Select(c => c.SessionId));
    }

    [Fact]
    public async Task Abort_ClosesEverySessionInIdOrder_ReturnsTheCount_AndRefusesWhatComesAfter()
    {
        using var bench = new WebSocketSessionBench(Options());
        bench.Listener.Start(AnyLoopbackPort);
        var ids = Enumerable.Range(0, 2).Select(_ => bench.Open().Session!.SessionId).ToList();

        var aborted = bench.Listener.Abort("the process crashed");

        Assert.Equal(2, aborted);
        Assert.Equal(ids.Order(), bench.Closes.Select(c => c.SessionId));
        Assert.All(bench.Closes, c => Assert.Equal("the process crashed", c.Detail));
        Assert.False(bench.Listener.IsAccepting);
        Assert.Equal(0, bench.Listener.SessionCount);
        Assert.Equal(0, bench.Listener.Abort("again"));
        await Assert.ThrowsAsync<ObjectDisposedException>(() => bench.Listener.ServeWebSocketAsync(new ScriptedWebSocket(), null));
    }

    [Fact]
    public void Dispose_ClosesEverySessionAsServerStopping_AndStopsAccepting()
    {
        using var bench = new WebSocketSessionBench(Options());
        bench.Listener.Start(AnyLoopbackPort);
        bench.Open();
        bench.Open();

        bench.Listener.Dispose();

        Assert.Equal(2, bench.Closes.Count);
        Assert.All(bench.Closes, c => Assert.Equal(SessionCloseReason.ServerStopping, c.Reason));
        Assert.All(bench.Closes, c => Assert.Equal("the listener was disposed", c.Detail));
        Assert.False(bench.Listener.IsAccepting);
    }

    [Fact]
    public async Task StopAccepting_ClosesTheListeningSocket_SoAConnectIsRefused()
    {
        using var bench = new WebSocketSessionBench(Options());
        var endPoint = bench.Listener.Start(AnyLoopbackPort);

        bench.Listener.StopAccepting();
        using var client = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        var thrown = await Assert.ThrowsAsync<SocketException>(() => client.ConnectAsync(endPoint).WaitAsync(TestServer.Patience));

        Assert.Equal(SocketError.ConnectionRefused, thrown.SocketErrorCode);
        Assert.False(bench.Listener.IsAccepting);
    }

    [Fact]
    public async Task ServeWebSocket_WithoutASocket_ThrowsArgumentNull()
    {
        using var bench = new WebSocketSessionBench(Options());

        var thrown = await Assert.ThrowsAsync<ArgumentNullException>(() => bench.Listener.ServeWebSocketAsync(null!, null));

        Assert.Equal("webSocket", thrown.ParamName);
    }

    [Fact]
    public async Task ServeWebSocket_AfterDispose_ThrowsObjectDisposed()
    {
        using var bench = new WebSocketSessionBench(Options());
        bench.Listener.Start(AnyLoopbackPort);
        bench.Listener.Dispose();
        var socket = new ScriptedWebSocket();

        await Assert.ThrowsAsync<ObjectDisposedException>(() => bench.Listener.ServeWebSocketAsync(socket, null));

        Assert.False(socket.Aborted);
        Assert.Equal(0, bench.Listener.Counters.ConnectionsRefusedAtLimit);
    }

    [Fact]
    public void ServeWebSocket_OnAStartedListener_ServesTheSession()
    {
        using var bench = new WebSocketSessionBench(Options());
        bench.Listener.Start(AnyLoopbackPort);

        var (socket, session) = bench.Open();

        Assert.NotNull(session);
        Assert.False(socket.Aborted);
        Assert.Equal(0, bench.Listener.Counters.ConnectionsRefusedAtLimit);
    }

    [Fact]
    public void ServeWebSocket_AfterStopAccepting_IsAbortedAndCounted_AndItsCallEnds()
    {
        using var bench = new WebSocketSessionBench(Options());
        bench.Listener.Start(AnyLoopbackPort);
        bench.Listener.StopAccepting();
        var socket = new ScriptedWebSocket();

        var served = bench.Listener.ServeWebSocketAsync(socket, null);

        Assert.True(served.IsCompletedSuccessfully);
        Assert.True(socket.Aborted);
        Assert.Equal(1, bench.Listener.Counters.ConnectionsRefusedAtLimit);
        Assert.Equal(0, bench.Listener.SessionCount);
        Assert.Equal(0, bench.Listener.Counters.ConnectionsAccepted);
    }

    [Fact]
    public void ServeWebSocket_WhileDraining_IsAbortedAndCounted()
    {
        using var bench = new WebSocketSessionBench(Options());
        bench.Listener.BeginDrain();

        var (socket, session) = bench.Open();

        Assert.Null(session);
        Assert.True(socket.Aborted);
        Assert.Equal(1, bench.Listener.Counters.ConnectionsRefusedAtLimit);
    }

    [Fact]
    public void ServeWebSocket_AtTheCap_IsAbortedAndCounted_AndItsCallEnds()
    {
        using var bench = new WebSocketSessionBench(Options() with { MaxConnections = 1 });
        bench.Open();
        var socket = new ScriptedWebSocket();

        var served = bench.Listener.ServeWebSocketAsync(socket, null);

        Assert.True(served.IsCompletedSuccessfully);
        Assert.True(socket.Aborted);
        Assert.Equal(1, bench.Listener.SessionCount);
        Assert.Equal(1, bench.Listener.Counters.ConnectionsRefusedAtLimit);
        Assert.Equal(1, bench.Listener.Counters.ConnectionsAccepted);
        Assert.Empty(bench.Closes);
    }

    [Fact]
    public async Task ServeWebSocket_LastsUntilTheSessionHasFinished()
    {
        using var bench = new WebSocketSessionBench(Options());
        var socket = new ScriptedWebSocket();

        var served = bench.Listener.ServeWebSocketAsync(socket, null);
        var openWhileServed = !served.IsCompleted;
        socket.Feed([], WebSocketMessageType.Close);

        await served.WaitAsync(TestServer.Patience);

        Assert.True(openWhileServed);
        Assert.True(served.IsCompletedSuccessfully);
        Assert.Equal(0, bench.Listener.UnfinishedSessionCount);
    }

    [Fact]
    public void ServeWebSocket_WhenTheHttpRequestIsAborted_ClosesTheSessionAsAReset()
    {
        using var bench = new WebSocketSessionBench(Options());
        using var aborted = new CancellationTokenSource();
        var socket = new ScriptedWebSocket();
        _ = bench.Listener.ServeWebSocketAsync(socket, null, aborted.Token);

        aborted.Cancel();

        var closed = Assert.Single(bench.Closes);
        Assert.Equal(SessionCloseReason.ConnectionReset, closed.Reason);
        Assert.Equal("the HTTP connection was aborted", closed.Detail);
    }

    [Fact]
    public void UnfinishedSessionCount_CountsAnOpenSession_UntilItFinishes()
    {
        using var bench = new WebSocketSessionBench(Options());
        var (socket, _) = bench.Open();

        var whileOpen = bench.Listener.UnfinishedSessionCount;
        var allFinishedWhileOpen = bench.Listener.WhenAllSessionsFinished().IsCompleted;
        socket.Feed([], WebSocketMessageType.Close);

        Assert.Equal(1, whileOpen);
        Assert.False(allFinishedWhileOpen);
        Assert.Equal(0, bench.Listener.UnfinishedSessionCount);
        Assert.True(bench.Listener.WhenAllSessionsFinished().IsCompleted);
    }

    [Fact]
    public void QueuedBytes_SumsTheQueuesOfEverySession()
    {
        using var bench = new WebSocketSessionBench(Options());
        var sessions = Enumerable.Range(0, 2).Select(_ =>
        {
            var (socket, session) = bench.Open();
            socket.HoldSends = true;
            return session!;
        }).ToList();
        Assert.True(sessions[0].TrySend("m", 1, 1, 0, bench.Pool.Copy(new byte[16], "test")));
        Assert.True(sessions[1].TrySend("m", 1, 1, 0, bench.Pool.Copy(new byte[64], "test")));

        var total = bench.Listener.QueuedBytes;

        Assert.True(sessions.All(s => s.QueuedBytes > 0));
        Assert.Equal(sessions.Sum(s => (long)s.QueuedBytes), total);
    }

    [Fact]
    public void SessionClosed_ByThePeer_IsLoggedAtDebug_AndByTheServer_AtInformation()
    {
        using var bench = new WebSocketSessionBench(Options());
        var logger = new ListLogger();
        using var listener = new TcpClientListener(bench.Server, Options(), logger, bench.Time);
        var byPeer = new ScriptedWebSocket();
        var byServer = new ScriptedWebSocket { AnswersClose = true };
        _ = listener.ServeWebSocketAsync(byPeer, null);
        _ = listener.ServeWebSocketAsync(byServer, null);
        var sessions = listener.Sessions;

        byPeer.Feed([], WebSocketMessageType.Close);
        sessions[1].Close("kicked");

        Assert.Contains($"Debug: Session {sessions[0].SessionId} from (null) closed: PeerClosed (the peer closed the connection)", logger.Lines);
        Assert.Contains($"Information: Session {sessions[1].SessionId} from (null) closed: ClosedByServer (kicked)", logger.Lines);
    }

    [Fact]
    public async Task Start_LogsTheServerAndTheBoundEndPoint()
    {
        await using var server = TestServer.Start();

        Assert.Contains($"Information: Play server play-1 accepting clients on {server.EndPoint}", server.Logger.Lines);
    }

    [Fact]
    public async Task ConnectionBeyondTheCap_IsResetNotClosedGracefully()
    {
        await using var server = TestServer.Start(new TcpTransportOptions { MaxConnections = 1 });
        using var first = await server.ConnectAuthenticatedAsync(1);

        var ending = await ConnectAndReadToEndAsync(server.EndPoint).WaitAsync(TestServer.Patience);

        Assert.Equal(SocketError.ConnectionReset, ending);
        Assert.Equal(1, server.Counters.ConnectionsRefusedAtLimit);
    }

    /// <summary>Connects and reads until the server ends the connection: Success for a clean end, else the socket error.</summary>
    private static async Task<SocketError> ConnectAndReadToEndAsync(IPEndPoint endPoint)
    {
        using var client = new TcpClient();
        try
        {
            await client.ConnectAsync(endPoint.Address, endPoint.Port);
            var stream = client.GetStream();
            var buffer = new byte[64];
            while (await stream.ReadAsync(buffer) > 0)
            {
            }

            return SocketError.Success;
        }
        catch (SocketException e)
        {
            return e.SocketErrorCode;
        }
        catch (IOException e) when (e.InnerException is SocketException inner)
        {
            return inner.SocketErrorCode;
        }
    }

    private static TcpTransportOptions Options() => ScriptedSessionOptions.Quiet();
}
