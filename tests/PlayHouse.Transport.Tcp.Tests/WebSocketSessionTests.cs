using System.Net.WebSockets;
using PlayHouse.Core.Codec;

namespace PlayHouse.Transport.Tcp.Tests;

/// <summary>
/// A session over a WebSocket as the client's messages and the session's close meet: a text message is refused by name
/// and counted, a close message ends the session as the peer's close, an empty binary message is skipped, a reset is a
/// reset, and the server's close waits for the client's answer only when no write is in flight. Each session is served
/// over a <see cref="ScriptedWebSocket"/> by a listener on a fake clock.
/// </summary>
public sealed class WebSocketSessionTests
{
    private static readonly TimeSpan Grace = TimeSpan.FromSeconds(1);

    [Fact]
    public void TextMessage_ClosesTheSessionAsMalformed_NamingTheRule_AndIsCounted()
    {
        using var bench = new WebSocketSessionBench(Options());
        var (socket, session) = bench.Open();

        socket.Feed(Heartbeat(), WebSocketMessageType.Text);

        var closed = Assert.Single(bench.Closes);
        Assert.Equal(SessionCloseReason.MalformedFrame, closed.Reason);
        Assert.Equal("the client sent a text message; PlayHouse frames travel in binary messages", closed.Detail);
        Assert.Equal(1, bench.Listener.Counters.WebSocketTextMessages);
        Assert.Equal(0, bench.Listener.Counters.FramesReceived);
        Assert.True(session!.IsClosed);
    }

    [Fact]
    public void CloseMessage_EndsTheSessionAsClosedByThePeer()
    {
        using var bench = new WebSocketSessionBench(Options());
        var (socket, session) = bench.Open();

        socket.Feed([], WebSocketMessageType.Close);

        Assert.Equal(SessionCloseReason.PeerClosed, Assert.Single(bench.Closes).Reason);
        Assert.Equal(0, bench.Listener.Counters.WebSocketTextMessages);
        Assert.True(session!.IsClosed);
    }

    [Fact]
    public void EmptyBinaryMessage_IsSkipped_AndTheNextMessageIsRead()
    {
        using var bench = new WebSocketSessionBench(Options());
        var (socket, session) = bench.Open();

        socket.Feed([]);
        socket.Feed(Heartbeat());

        Assert.False(session!.IsClosed);
        Assert.Empty(bench.Closes);
        Assert.Equal(1, bench.Listener.Counters.FramesReceived);
        Assert.Single(socket.SentMessages);
    }

    [Fact]
    public void ClientThatResets_ClosesTheSessionAsAReset_NamingTheReceiveThatFailed()
    {
        using var bench = new WebSocketSessionBench(Options());
        var (socket, session) = bench.Open();

        socket.Abort();

        var closed = Assert.Single(bench.Closes);
        Assert.Equal(SessionCloseReason.ConnectionReset, closed.Reason);
        Assert.StartsWith("receive failed: WebSocketException: ", closed.Detail, StringComparison.Ordinal);
        Assert.True(session!.Finished.IsCompleted);
    }

    [Fact]
    public void ServerClose_WhileAWriteIsInFlight_AbortsAtOnce_WithoutACloseMessage()
    {
        using var bench = new WebSocketSessionBench(Options());
        var (socket, session) = bench.Open();
        socket.HoldSends = true;
        Assert.True(session!.TrySend("m", 1, 1, 0, bench.Pool.Copy(new byte[16], "test")));

        session.Close("the server closes");

        // A close message may not follow a write still in flight, so the session cannot close gracefully.
        Assert.True(socket.Aborted);
        Assert.False(socket.CloseOutputSent);
        Assert.True(session.Finished.IsCompleted);
    }

    [Fact]
    public void ServerClose_AnsweredByTheClient_FinishesWithoutAnAbort_EvenAfterTheGrace()
    {
        using var bench = new WebSocketSessionBench(Options());
        var (socket, session) = bench.Open();
        socket.AnswersClose = true;

        session!.Close("the server closes");
        bench.Time.Advance(Grace + Grace);

        Assert.True(socket.CloseOutputSent);
        Assert.False(socket.Aborted);
        Assert.True(session.Finished.IsCompleted);
        Assert.Equal(SessionCloseReason.ClosedByServer, Assert.Single(bench.Closes).Reason);
    }

    private static TcpTransportOptions Options() => new()
    {
        IdleTimeout = TimeSpan.FromDays(1),
        FrameTimeout = TimeSpan.FromDays(1),
        SlowReaderTimeout = TimeSpan.FromDays(1),
        SweepInterval = TimeSpan.FromSeconds(1),
        WebSocketCloseGrace = Grace,
        BatchSends = false,
    };

    /// <summary>A heartbeat frame, answered before authentication, so any session takes it.</summary>
    private static byte[] Heartbeat()
    {
        var frame = new byte[ClientFrameEncoder.GetEncodedLength(WireProtocol.HeartbeatMsgId, 0)];
        ClientFrameEncoder.Encode(frame, WireProtocol.HeartbeatMsgId, 1, 0, []);
        return frame;
    }
}
