using PlayHouse.Core.Codec;

namespace PlayHouse.Transport.Tcp.Tests;

/// <summary>
/// What a session says and counts as it works and as it ends: the close detail of each timeout (the wait it saw and the
/// limit it broke), the start of a partial frame held while more of it arrives, sends refused after the close or for a
/// msg id too long to encode, the bytes after a closing frame left undecoded, and the bytes sent. Each runs on a session
/// served over a <see cref="ScriptedWebSocket"/> by a listener on a fake clock (one sweep a second), so every figure is
/// exact.
/// </summary>
public sealed class SessionAccountingTests
{
    private static readonly TimeSpan Limit = TimeSpan.FromSeconds(4);

    [Fact]
    public void IdleTimeout_NamesTheSilenceAndTheLimit_InTheCloseDetail()
    {
        using var bench = new WebSocketSessionBench(Options() with { IdleTimeout = Limit });
        var (_, session) = bench.Open();

        bench.Time.Advance(TimeSpan.FromSeconds(5));

        var closed = Assert.Single(bench.Closes);
        Assert.Equal(SessionCloseReason.IdleTimeout, closed.Reason);
        Assert.Equal("nothing received for 5000 ms (idle timeout 4000 ms)", closed.Detail);
        Assert.Equal(closed.Detail, session!.CloseDetail);
    }

    [Fact]
    public void FrameTimeout_NamesTheFramesAgeAndTheLimit_InTheCloseDetail()
    {
        using var bench = new WebSocketSessionBench(Options() with { FrameTimeout = Limit });
        var (socket, session) = bench.Open();
        socket.Feed(Heartbeat(payloadBytes: 10)[..7]);

        bench.Time.Advance(TimeSpan.FromSeconds(5));

        var closed = Assert.Single(bench.Closes);
        Assert.Equal(SessionCloseReason.FrameTimeout, closed.Reason);
        Assert.Equal("a frame started 5000 ms ago is still incomplete (frame timeout 4000 ms)", closed.Detail);
        Assert.Equal(SessionCloseReason.FrameTimeout, session!.CloseReason);
    }

    [Fact]
    public void SlowReaderTimeout_NamesTheCapTheWaitAndTheLimit_InTheCloseDetail()
    {
        using var bench = new WebSocketSessionBench(Options() with { SendQueueBytesMax = 1024, SlowReaderTimeout = Limit });
        var (socket, session) = bench.Open();
        socket.HoldSends = true;
        while (session!.TrySend("m", 0, 1, 0, bench.Pool.Copy(new byte[200], "test")))
        {
        }

        bench.Time.Advance(TimeSpan.FromSeconds(5));

        var closed = Assert.Single(bench.Closes);
        Assert.Equal(SessionCloseReason.SlowReader, closed.Reason);
        Assert.Equal("the send queue has been at its cap of 1024 B for 5000 ms (slow-reader timeout 4000 ms)", closed.Detail);
    }

    [Fact]
    public void PartialFrame_KeepsTheTimeItStarted_WhileMoreOfItArrives_AndClearsOnceItCompletes()
    {
        using var bench = new WebSocketSessionBench(Options() with { FrameTimeout = Limit });
        var (socket, session) = bench.Open();
        var frame = Heartbeat(payloadBytes: 10);
        var started = bench.Time.GetTimestamp();
        socket.Feed(frame[..7]);

        bench.Time.Advance(TimeSpan.FromSeconds(3));
        socket.Feed(frame[7..9]);
        var afterMore = session!.PartialFrameSinceTimestamp;
        bench.Time.Advance(TimeSpan.FromSeconds(2));

        // The frame began 5 s ago, past the 4 s limit, though its last bytes came 2 s ago.
        Assert.Equal(started, afterMore);
        Assert.Equal(SessionCloseReason.FrameTimeout, Assert.Single(bench.Closes).Reason);
    }

    [Fact]
    public void CompletedFrame_ClearsThePartialFramesStart_SoTheFrameTimeoutNoLongerApplies()
    {
        using var bench = new WebSocketSessionBench(Options() with { FrameTimeout = Limit });
        var (socket, session) = bench.Open();
        var frame = Heartbeat(payloadBytes: 10);
        socket.Feed(frame[..7]);
        var partial = session!.PartialFrameSinceTimestamp;

        bench.Time.Advance(TimeSpan.FromSeconds(3));
        socket.Feed(frame[7..]);
        bench.Time.Advance(TimeSpan.FromSeconds(3));

        Assert.Equal(bench.Time.GetTimestamp() - TimeSpan.FromSeconds(6).Ticks, partial);
        Assert.Equal(0, session.PartialFrameSinceTimestamp);
        Assert.False(session.IsClosed);
        Assert.Equal(1, bench.Listener.Counters.FramesReceived);
    }

    [Fact]
    public void SendAfterTheClose_IsRefusedAndCounted_AndItsPayloadReturned()
    {
        using var bench = new WebSocketSessionBench(Options());
        var (socket, session) = bench.Open();
        session!.Close(SessionCloseReason.LocalClose, "closed by the test");

        var sent = session.TrySend("m", 1, 1, 0, bench.Pool.Copy(new byte[16], "test"));

        Assert.False(sent);
        Assert.Equal(1, bench.Listener.Counters.SendsRefusedClosed);
        Assert.Equal(0, bench.Listener.Counters.FramesSent);
        Assert.Empty(socket.SentMessages);
    }

    [Theory]
    [InlineData(255, true)]
    [InlineData(256, false)]
    public void MsgIdTooLongToEncode_IsRefusedAndCountedAsAnEncodeFailure(int msgIdBytes, bool encodable)
    {
        using var bench = new WebSocketSessionBench(Options());
        var (socket, session) = bench.Open();

        var sent = session!.TrySend(new string('m', msgIdBytes), 1, 1, 0, bench.Pool.Copy(new byte[16], "test"));

        Assert.Equal(encodable, sent);
        Assert.Equal(encodable ? 0 : 1, bench.Listener.Counters.EncodeFailures);
        Assert.Equal(encodable ? 1 : 0, socket.SentMessages.Count);
        Assert.False(session.IsClosed);
    }

    [Fact]
    public void BytesAfterAFrameThatClosesTheSession_InTheSameReceive_AreNeverDecoded()
    {
        using var bench = new WebSocketSessionBench(Options());
        var (socket, session) = bench.Open();
        var notAuthentication = RawFrames.Client("Echo", 1, 1, [1]);

        socket.Feed([.. notAuthentication, .. notAuthentication, .. notAuthentication]);

        Assert.True(session!.IsClosed);
        Assert.Equal(SessionCloseReason.ClosedByServer, session.CloseReason);
        Assert.Equal(1, bench.Listener.Counters.FramesReceived);
        Assert.Equal(3 * notAuthentication.Length, bench.Listener.Counters.BytesReceived);
    }

    [Fact]
    public void EveryByteWritten_IsCountedInBytesSent_AndEveryFrameInFramesSent()
    {
        using var bench = new WebSocketSessionBench(Options());
        var (socket, session) = bench.Open();

        Assert.True(session!.TrySend("m", 1, 1, 0, bench.Pool.Copy(new byte[100], "test")));
        Assert.True(session.TrySend("m", 2, 1, 0, bench.Pool.Copy(new byte[300], "test")));

        Assert.Equal(ServerFrameEncoder.GetEncodedLength("m", 100) + ServerFrameEncoder.GetEncodedLength("m", 300), bench.Listener.Counters.BytesSent);
        Assert.Equal(socket.SentMessages.Sum(m => m.Length), bench.Listener.Counters.BytesSent);
        Assert.Equal(2, bench.Listener.Counters.FramesSent);
    }

    /// <summary>Transport options whose time limits stay out of the way of the one a test sets.</summary>
    private static TcpTransportOptions Options() => TransportLimitTests.Options();

    /// <summary>A heartbeat frame (answered before authentication, so any session takes it) with a payload of zeros.</summary>
    private static byte[] Heartbeat(int payloadBytes) => TransportLimitTests.ClientFrame(payloadBytes);
}
