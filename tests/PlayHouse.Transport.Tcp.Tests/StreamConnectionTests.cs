using System.Net.Sockets;
using System.Net.WebSockets;
using PlayHouse.Core.Codec;

namespace PlayHouse.Transport.Tcp.Tests;

/// <summary>
/// The stream connection's send loop, close and failure handling, over a WebSocket the test scripts to fail where a
/// real one can: a receive or a send that throws, a close message or an abort that throws, a write that completes only
/// after the server closed. Each session is served by a listener on a fake clock, so every step runs on the test's thread.
/// </summary>
public sealed class StreamConnectionTests
{
    [Fact]
    public void Close_Twice_ClosesOnce_AndReportsOnlyTheFirst()
    {
        using var bench = new WebSocketSessionBench(Options());
        var (_, session) = bench.Open();

        var first = session!.Close(SessionCloseReason.ClosedByServer, "first");
        var second = session.Close(SessionCloseReason.IdleTimeout, "second");

        Assert.True(first);
        Assert.False(second);
        Assert.Equal("first", Assert.Single(bench.Closes).Detail);
    }

    [Fact]
    public void Close_WithFramesQueuedBehindAWriteInFlight_CountsTheQueuedBytesAsDropped()
    {
        using var bench = new WebSocketSessionBench(Options());
        var (socket, session) = bench.Open();
        socket.HoldSends = true;
        Assert.True(session!.TrySend("m", 1, 1, 0, bench.Pool.Copy(new byte[16], "test")));
        Assert.True(session.TrySend("m", 2, 1, 0, bench.Pool.Copy(new byte[16], "test")));
        var queued = session.QueuedBytes;

        session.Close("the server closes");

        Assert.True(queued > 0, $"queued {queued} B");
        Assert.Equal(queued, bench.Listener.Counters.SendBytesDroppedAtClose);
    }

    [Fact]
    public void Close_WithNothingQueued_CountsNoDroppedBytes()
    {
        using var bench = new WebSocketSessionBench(Options());
        var (_, session) = bench.Open();

        session!.Close("the server closes");

        Assert.Equal(0, bench.Listener.Counters.SendBytesDroppedAtClose);
        Assert.Single(bench.Closes);
    }

    [Fact]
    public void TrySend_WhileAWriteIsInFlight_QueuesBehindIt_WithoutASecondWrite()
    {
        using var bench = new WebSocketSessionBench(Options());
        var (socket, session) = bench.Open();
        socket.HoldSends = true;

        Assert.True(session!.TrySend("m", 1, 1, 0, bench.Pool.Copy(new byte[16], "test")));
        Assert.True(session.TrySend("m", 2, 1, 0, bench.Pool.Copy(new byte[16], "test")));
        var writesWhileHeld = socket.SentMessages.Count;
        socket.CompleteHeldSends();

        Assert.Equal(1, writesWhileHeld);
        Assert.Equal(2, socket.SentMessages.Count);
    }

    [Fact]
    public void TrySend_RaisesTheQueueHighWaterToTheBytesQueued()
    {
        using var bench = new WebSocketSessionBench(Options());
        var (socket, session) = bench.Open();
        socket.HoldSends = true;

        Assert.True(session!.TrySend("m", 1, 1, 0, bench.Pool.Copy(new byte[40], "test")));

        Assert.True(session.QueuedBytes > 40);
        Assert.Equal(session.QueuedBytes, bench.Listener.Counters.SendQueueHighWaterBytes);
    }

    [Fact]
    public void ServerClose_AfterAWriteCompleted_SendsACloseMessage_InsteadOfAnAbort()
    {
        using var bench = new WebSocketSessionBench(Options());
        var (socket, session) = bench.Open();
        Assert.True(session!.TrySend("m", 1, 1, 0, bench.Pool.Copy(new byte[16], "test")));
        Assert.Single(socket.SentMessages);

        session.Close("the server closes");

        Assert.True(socket.CloseOutputSent);
        Assert.False(socket.Aborted);
    }

    [Fact]
    public void ServerClose_WhileAWriteIsInFlight_FinishesWhenThatWriteCompletes()
    {
        using var bench = new WebSocketSessionBench(Options());
        var socket = new FaultingWebSocket { HoldSends = true };
        var session = Serve(bench, socket);
        Assert.True(session.TrySend("m", 1, 1, 0, bench.Pool.Copy(new byte[16], "test")));

        session.Close("the server closes");
        var finishedBeforeTheWrite = session.Finished.IsCompleted;
        socket.CompleteHeldSend();

        Assert.False(finishedBeforeTheWrite);
        Assert.True(session.Finished.IsCompleted);
        Assert.True(socket.Aborted);
    }

    [Fact]
    public void SendThatFailsOnTheChannel_ClosesTheSessionNamingTheSend_AndCountsNoBytesSent()
    {
        using var bench = new WebSocketSessionBench(Options());
        var socket = new FaultingWebSocket { SendFailure = new IOException("broken pipe") };
        var session = Serve(bench, socket);

        Assert.True(session.TrySend("m", 1, 1, 0, bench.Pool.Copy(new byte[16], "test")));

        var closed = Assert.Single(bench.Closes);
        Assert.Equal(SessionCloseReason.SocketError, closed.Reason);
        Assert.Equal("send failed: IOException: broken pipe", closed.Detail);
        Assert.Equal(0, bench.Listener.Counters.BytesSent);
        Assert.Equal(1, socket.SendCalls);

        // The write is over when it failed, so the close may still say goodbye.
        Assert.True(socket.CloseOutputSent);
        Assert.False(socket.Aborted);
    }

    [Fact]
    public void SendThatThrowsOutsideTheChannelContract_IsCountedAsAFault_AndClosesTheSessionGracefully()
    {
        using var bench = new WebSocketSessionBench(Options());
        var socket = new FaultingWebSocket { SendFailure = new InvalidOperationException("boom") };
        var session = Serve(bench, socket);

        Assert.True(session.TrySend("m", 1, 1, 0, bench.Pool.Copy(new byte[16], "test")));

        var closed = Assert.Single(bench.Closes);
        Assert.Equal(SessionCloseReason.CallbackFault, closed.Reason);
        Assert.Equal("send threw InvalidOperationException: boom", closed.Detail);
        Assert.Equal(1, bench.Listener.Counters.CallbackFaults);
        Assert.Equal(0, bench.Listener.Counters.BytesSent);
        Assert.Equal(0, session.QueuedBytes);
        Assert.True(socket.CloseOutputSent);
        Assert.False(socket.Aborted);
    }

    [Theory]
    [InlineData(SocketError.ConnectionReset)]
    [InlineData(SocketError.ConnectionAborted)]
    [InlineData(SocketError.Shutdown)]
    public void ReceiveFailingWithAResetInsideAnIOException_ClosesTheSessionAsAReset(SocketError code)
    {
        using var bench = new WebSocketSessionBench(Options());
        var socket = new FaultingWebSocket();
        Serve(bench, socket);

        socket.FailReceive(new IOException("reset", new SocketException((int)code)));

        Assert.Equal(SessionCloseReason.ConnectionReset, Assert.Single(bench.Closes).Reason);
    }

    [Theory]
    [InlineData(SocketError.ConnectionReset)]
    [InlineData(SocketError.ConnectionAborted)]
    [InlineData(SocketError.Shutdown)]
    public void ReceiveFailingWithAResetSocketException_ClosesTheSessionAsAReset(SocketError code)
    {
        using var bench = new WebSocketSessionBench(Options());
        var socket = new FaultingWebSocket();
        Serve(bench, socket);

        socket.FailReceive(new SocketException((int)code));

        Assert.Equal(SessionCloseReason.ConnectionReset, Assert.Single(bench.Closes).Reason);
    }

    [Fact]
    public void ReceiveFailingWithAnotherSocketError_ClosesTheSessionAsASocketError()
    {
        using var bench = new WebSocketSessionBench(Options());
        var socket = new FaultingWebSocket();
        Serve(bench, socket);

        socket.FailReceive(new IOException("unreachable", new SocketException((int)SocketError.HostUnreachable)));

        Assert.Equal(SessionCloseReason.SocketError, Assert.Single(bench.Closes).Reason);
    }

    [Fact]
    public void SessionClosedHandlerThatThrows_IsCountedAsAFault_AndTheSessionStillFinishes()
    {
        using var bench = new WebSocketSessionBench(Options());
        var (_, session) = bench.Open();
        bench.Listener.SessionClosed += _ => throw new InvalidOperationException("handler");

        var closed = session!.Close(SessionCloseReason.ClosedByServer, "the server closes");
        bench.Time.Advance(bench.Listener.Options.WebSocketCloseGrace);

        Assert.True(closed);
        Assert.Equal(1, bench.Listener.Counters.CallbackFaults);
        Assert.True(session.Finished.IsCompleted);
    }

    [Fact]
    public void ChannelWhoseAbortThrows_StillClosesTheSession()
    {
        using var bench = new WebSocketSessionBench(Options());
        var socket = new FaultingWebSocket { HoldSends = true, AbortFailure = new WebSocketException(WebSocketError.InvalidState) };
        var session = Serve(bench, socket);
        Assert.True(session.TrySend("m", 1, 1, 0, bench.Pool.Copy(new byte[16], "test")));

        var closed = session.Close(SessionCloseReason.ClosedByServer, "the server closes");
        socket.CompleteHeldSend();

        Assert.True(closed);
        Assert.True(socket.Aborted);
        Assert.Equal(SessionCloseReason.ClosedByServer, Assert.Single(bench.Closes).Reason);
        Assert.True(session.Finished.IsCompleted);
    }

    [Theory]
    [InlineData(typeof(WebSocketException))]
    [InlineData(typeof(IOException))]
    [InlineData(typeof(ObjectDisposedException))]
    [InlineData(typeof(OperationCanceledException))]
    [InlineData(typeof(InvalidOperationException))]
    public void CloseMessageThatFails_AbortsTheWebSocket(Type failure)
    {
        using var bench = new WebSocketSessionBench(Options());
        var socket = new FaultingWebSocket
        {
            CloseOutputFailure = failure == typeof(ObjectDisposedException) ? new ObjectDisposedException("socket") : (Exception)Activator.CreateInstance(failure)!,
        };
        var session = Serve(bench, socket);

        session.Close("the server closes");

        Assert.True(socket.CloseOutputSent);
        Assert.True(socket.Aborted);
        Assert.True(session.Finished.IsCompleted);
    }

    [Fact]
    public void SessionClosedMidFrame_ReturnsThePartialFramesBuffer()
    {
        using var bench = new WebSocketSessionBench(Options());
        var (socket, session) = bench.Open();
        var frame = new byte[ClientFrameEncoder.GetEncodedLength("m", 400)];
        ClientFrameEncoder.Encode(frame, "m", 1, 0, new byte[400]);
        socket.Feed(frame[..100]);
        var heldMidFrame = bench.Pool.GetStatistics().Outstanding;

        socket.Abort();

        Assert.True(session!.Finished.IsCompleted);
        Assert.True(heldMidFrame > 0, $"outstanding {heldMidFrame}");
        Assert.Equal(0, bench.Pool.GetStatistics().Outstanding);
    }

    private static TcpClientSession Serve(WebSocketSessionBench bench, WebSocket socket)
    {
        var before = bench.Listener.Sessions.Select(s => s.SessionId).ToHashSet();
        _ = bench.Listener.ServeWebSocketAsync(socket, remoteEndPoint: null);
        return bench.Listener.Sessions.Single(s => !before.Contains(s.SessionId));
    }

    private static TcpTransportOptions Options() => ScriptedSessionOptions.Quiet();
}

/// <summary>Options for scripted sessions: no timeout fires unless a test moves the clock by days; sends start at once.</summary>
internal static class ScriptedSessionOptions
{
    public static TcpTransportOptions Quiet() => new()
    {
        IdleTimeout = TimeSpan.FromDays(1),
        FrameTimeout = TimeSpan.FromDays(1),
        SlowReaderTimeout = TimeSpan.FromDays(1),
        SweepInterval = TimeSpan.FromSeconds(1),
        WebSocketCloseGrace = TimeSpan.FromSeconds(1),
        BatchSends = false,
    };
}

/// <summary>
/// A WebSocket that fails where the test says: its receive stays pending until <see cref="FailReceive"/> or an abort,
/// a send throws <see cref="SendFailure"/> or is held until <see cref="CompleteHeldSend"/> (an abort does not end it),
/// the close message throws <see cref="CloseOutputFailure"/> and the abort throws <see cref="AbortFailure"/> after it has
/// ended the receive. Completions run inside the call that causes them, on the test's thread.
/// </summary>
/// <remarks>Not thread-safe: one test thread drives it.</remarks>
internal sealed class FaultingWebSocket : MemoryOnlyWebSocket
{
    private TaskCompletionSource<ValueWebSocketReceiveResult>? _pendingReceive;
    private TaskCompletionSource? _heldSend;
    private WebSocketState _state = WebSocketState.Open;

    public Exception? SendFailure { get; init; }

    public Exception? CloseOutputFailure { get; init; }

    public Exception? AbortFailure { get; init; }

    public bool HoldSends { get; init; }

    public int SendCalls { get; private set; }

    public bool CloseOutputSent { get; private set; }

    public bool Aborted { get; private set; }

    public override WebSocketCloseStatus? CloseStatus => null;

    public override WebSocketState State => _state;

    public void FailReceive(Exception failure)
    {
        var receive = _pendingReceive!;
        _pendingReceive = null;
        receive.SetException(failure);
    }

    public void CompleteHeldSend()
    {
        var held = _heldSend!;
        _heldSend = null;
        held.SetResult();
    }

    public override ValueTask<ValueWebSocketReceiveResult> ReceiveAsync(Memory<byte> buffer, CancellationToken cancellationToken)
    {
        if (Aborted)
        {
            return ValueTask.FromException<ValueWebSocketReceiveResult>(new WebSocketException(WebSocketError.ConnectionClosedPrematurely));
        }

        _pendingReceive = new TaskCompletionSource<ValueWebSocketReceiveResult>();
        return new ValueTask<ValueWebSocketReceiveResult>(_pendingReceive.Task);
    }

    public override ValueTask SendAsync(ReadOnlyMemory<byte> buffer, WebSocketMessageType messageType, bool endOfMessage, CancellationToken cancellationToken)
    {
        SendCalls++;
        if (SendFailure is { } failure)
        {
            return ValueTask.FromException(failure);
        }

        if (!HoldSends)
        {
            return ValueTask.CompletedTask;
        }

        _heldSend = new TaskCompletionSource();
        return new ValueTask(_heldSend.Task);
    }

    public override Task CloseOutputAsync(WebSocketCloseStatus closeStatus, string? statusDescription, CancellationToken cancellationToken)
    {
        CloseOutputSent = true;
        if (CloseOutputFailure is { } failure)
        {
            return Task.FromException(failure);
        }

        _state = WebSocketState.CloseSent;
        return Task.CompletedTask;
    }

    public override void Abort()
    {
        Aborted = true;
        _state = WebSocketState.Aborted;
        var receive = _pendingReceive;
        _pendingReceive = null;
        receive?.SetException(new WebSocketException(WebSocketError.ConnectionClosedPrematurely));
        if (AbortFailure is { } failure)
        {
            throw failure;
        }
    }
}
