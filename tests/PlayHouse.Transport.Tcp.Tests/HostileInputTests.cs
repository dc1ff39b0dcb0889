using Microsoft.Extensions.Time.Testing;
using PlayHouse.Core.Codec;
using PlayHouse.Core.Runtime;
using PlayHouse.Sim.Tcp;

namespace PlayHouse.Transport.Tcp.Tests;

/// <summary>
/// Every hostile or broken input closes only the offending session, with a logged reason and a counter; a good
/// client on the same server keeps getting replies; no exception escapes a socket callback; the pool ledger is
/// empty afterwards (checked when each <see cref="TestServer"/> is disposed).
/// </summary>
public sealed class HostileInputTests
{
    public static TheoryData<string, byte[], FrameError> MalformedFrames() => new()
    {
        { "negative length", RawFrames.LengthThen(-5, 1, 2, 3), FrameError.NegativeLength },
        { "oversized length", RawFrames.LengthThen(64 * 1024 * 1024, 1, 2, 3), FrameError.LengthTooLarge },
        { "length below the smallest body", RawFrames.LengthThen(3, 0, 0, 0), FrameError.LengthTooSmall },
        { "msg-id length past the frame", RawFrames.LengthThen(12, 200, (byte)'A'), FrameError.MsgIdLengthPastFrame },
        { "invalid UTF-8 msg id", InvalidUtf8Frame(), FrameError.InvalidUtf8MsgId },
    };

    [Theory]
    [MemberData(nameof(MalformedFrames))]
    public async Task MalformedFrame_ClosesOnlyThatSession_WithReasonAndCounter(string name, byte[] bytes, FrameError expected)
    {
        await using var server = TestServer.Start();
        using var good = await server.ConnectAuthenticatedAsync(accountId: 1);
        using var bad = await RawClient.ConnectAsync(server.EndPoint);

        await bad.SendAsync(bytes);
        var closed = await server.NextCloseAsync();
        await bad.WaitClosedAsync();
        var reply = await good.RequestAsync(EchoMsgIds.Echo, 1, [42]).WaitAsync(TestServer.Patience);

        Assert.Equal(SessionCloseReason.MalformedFrame, closed.Reason);
        Assert.Contains(expected.ToString(), closed.Detail, StringComparison.Ordinal);
        Assert.Equal(1, server.Counters.Malformed(expected));
        Assert.Equal(1, server.Counters.Closed(SessionCloseReason.MalformedFrame));
        Assert.True(server.Logger.Contains(expected.ToString()), $"{name}: the reason was not logged");
        Assert.True(reply.IsSuccess);
        Assert.Equal(new byte[] { 42 }, reply.Payload);
    }

    [Fact]
    public async Task MalformedFrameAfterAuthentication_ClosesTheSessionAndDisconnectsItsActor()
    {
        await using var server = TestServer.Start();
        using var bad = await RawClient.ConnectAsync(server.EndPoint);
        await bad.SendAsync(RawFrames.Client(EchoMsgIds.Authenticate, 1, 1, RawFrames.Account(5)));
        var auth = await bad.ReadFrameAsync();

        await bad.SendAsync(RawFrames.LengthThen(-1));
        var closed = await server.NextCloseAsync();

        Assert.Equal(ErrorCodes.Success, auth.ErrorCode);
        Assert.Equal(SessionCloseReason.MalformedFrame, closed.Reason);
        Assert.Equal(0, server.Server.SessionCount);
    }

    [Fact]
    public async Task TruncatedFrameThenClose_IsCountedAsATruncationAndReleasesThePartialPayload()
    {
        await using var server = TestServer.Start();
        using var good = await server.ConnectAuthenticatedAsync(accountId: 1);
        using var bad = await RawClient.ConnectAsync(server.EndPoint);
        var frame = RawFrames.Client(EchoMsgIds.Authenticate, 1, 1, new byte[5000]);

        // The header and part of the payload arrive, so the decoder holds a pooled payload buffer when the stream ends.
        await bad.SendAsync(frame[..3000]);
        bad.Socket.Shutdown(System.Net.Sockets.SocketShutdown.Send);
        var closed = await server.NextCloseAsync();
        var reply = await good.RequestAsync(EchoMsgIds.Echo, 1, [1]).WaitAsync(TestServer.Patience);

        Assert.Equal(SessionCloseReason.MalformedFrame, closed.Reason);
        Assert.Equal(1, server.Counters.Malformed(FrameError.TruncatedFrame));
        Assert.True(server.Logger.Contains("TruncatedFrame"));
        Assert.True(reply.IsSuccess);
    }

    [Fact]
    public async Task AbruptResetMidFrame_ClosesAsResetAndReturnsEveryBuffer()
    {
        await using var server = TestServer.Start();
        using var good = await server.ConnectAuthenticatedAsync(accountId: 1);
        using var bad = await RawClient.ConnectAsync(server.EndPoint);
        var frame = RawFrames.Client(EchoMsgIds.Authenticate, 1, 1, new byte[20_000]);
        await bad.SendAsync(frame[..9000]);
        await Eventually.True(() => server.Counters.BytesReceived >= 9000, TestServer.Patience);

        bad.Reset();
        var closed = await server.NextCloseAsync();
        var reply = await good.RequestAsync(EchoMsgIds.Echo, 1, [1]).WaitAsync(TestServer.Patience);

        Assert.Equal(SessionCloseReason.ConnectionReset, closed.Reason);
        Assert.Equal(1, server.Counters.Closed(SessionCloseReason.ConnectionReset));
        Assert.True(reply.IsSuccess);
    }

    [Fact]
    public async Task PartialFrameThenSilence_ClosesAtTheFrameTimeout()
    {
        // The listener runs on a manual clock, so the timeout fires exactly when the test moves time, whatever the load.
        var time = new FakeTimeProvider();
        var options = new TcpTransportOptions { FrameTimeout = TimeSpan.FromSeconds(10), SweepInterval = TimeSpan.FromSeconds(1) };
        await using var server = TestServer.Start(options, transportTime: time);
        using var good = await server.ConnectAuthenticatedAsync(accountId: 1);
        using var bad = await RawClient.ConnectAsync(server.EndPoint);
        var receivedBefore = server.Counters.BytesReceived;

        await bad.SendAsync(RawFrames.Client(EchoMsgIds.Authenticate, 1, 1, new byte[100])[..20]);
        await Eventually.True(() => server.Counters.BytesReceived >= receivedBefore + 20, TestServer.Patience);
        time.Advance(TimeSpan.FromSeconds(10));
        Assert.Equal(0, server.Counters.ConnectionsClosed);
        time.Advance(TimeSpan.FromSeconds(1));
        var closed = await server.NextCloseAsync();
        await bad.WaitClosedAsync();

        Assert.Equal(SessionCloseReason.FrameTimeout, closed.Reason);
        Assert.Equal(1, server.Counters.Closed(SessionCloseReason.FrameTimeout));
        Assert.True(server.Logger.Contains("FrameTimeout"));
        Assert.True(good.IsConnected);
    }

    [Fact]
    public async Task SilentSession_ClosesAtTheIdleTimeout_WhileAHeartbeatingOneStays()
    {
        var time = new FakeTimeProvider();
        var options = new TcpTransportOptions { IdleTimeout = TimeSpan.FromSeconds(30), SweepInterval = TimeSpan.FromSeconds(1) };
        await using var server = TestServer.Start(options, transportTime: time);
        using var alive = await server.ConnectAuthenticatedAsync(accountId: 1);
        using var silent = await RawClient.ConnectAsync(server.EndPoint);
        await Eventually.True(() => server.Listener.SessionCount == 2, TestServer.Patience);

        time.Advance(TimeSpan.FromSeconds(20));
        Assert.True(alive.SendHeartbeat());
        await Eventually.True(() => alive.Statistics.HeartbeatsReceived == 1, TestServer.Patience);
        time.Advance(TimeSpan.FromSeconds(11));
        var closed = await server.NextCloseAsync();
        await silent.WaitClosedAsync();
        var reply = await alive.RequestAsync(EchoMsgIds.Echo, 1, [7]).WaitAsync(TestServer.Patience);

        Assert.Equal(SessionCloseReason.IdleTimeout, closed.Reason);
        Assert.Equal(1, server.Counters.Closed(SessionCloseReason.IdleTimeout));
        Assert.True(server.Logger.Contains("IdleTimeout"));
        Assert.True(reply.IsSuccess);
        Assert.Equal(1, server.Listener.SessionCount);
    }

    [Fact]
    public async Task RequestFloodPastTheSendQueueCap_RefusesRepliesInsteadOfBufferingThem()
    {
        // A client that sends and never reads: the replies fill the kernel buffers, then the session's queue.
        const int CapBytes = 16 * 1024;
        var options = new TcpTransportOptions { SendQueueBytesMax = CapBytes, SocketSendBufferBytes = 4096, SlowReaderTimeout = TimeSpan.FromMinutes(5) };
        await using var server = TestServer.Start(options);
        using var good = await server.ConnectAuthenticatedAsync(accountId: 1, stageId: 2);
        using var flooder = await RawClient.ConnectAsync(server.EndPoint, receiveBufferBytes: 4096);
        await flooder.SendAsync(RawFrames.Client(EchoMsgIds.Authenticate, 1, 1, RawFrames.Account(99)));
        Assert.Equal(ErrorCodes.Success, (await flooder.ReadFrameAsync()).ErrorCode);

        await FloodUntilRefusedAsync(server, flooder, RawFrames.Client(EchoMsgIds.Echo, 2, 1, new byte[1024]));
        var flooded = server.Listener.Sessions.Single(s => s.SendRefusals > 0);
        var reply = await good.RequestAsync(EchoMsgIds.Echo, 2, [3]).WaitAsync(TestServer.Patience);

        Assert.InRange(flooded.QueuedBytesHighWater, 1, CapBytes);
        Assert.True(server.Server.Counters.ClientSendsRefused > 0);
        Assert.False(flooded.IsClosed);
        Assert.True(reply.IsSuccess);
    }

    [Fact]
    public async Task SlowReader_IsClosedAfterTheSlowReaderTimeout()
    {
        var time = new FakeTimeProvider();
        var options = new TcpTransportOptions
        {
            SendQueueBytesMax = 8 * 1024,
            SocketSendBufferBytes = 4096,
            SlowReaderTimeout = TimeSpan.FromSeconds(5),
            SweepInterval = TimeSpan.FromSeconds(1),

            // The manual clock runs far ahead while flooding; only the slow-reader timeout is under test.
            IdleTimeout = TimeSpan.FromDays(1),
            FrameTimeout = TimeSpan.FromDays(1),
        };
        await using var server = TestServer.Start(options, transportTime: time);
        using var good = await server.ConnectAuthenticatedAsync(accountId: 1, stageId: 2);
        using var slow = await RawClient.ConnectAsync(server.EndPoint, receiveBufferBytes: 4096);
        await slow.SendAsync(RawFrames.Client(EchoMsgIds.Authenticate, 1, 1, RawFrames.Account(77)));
        Assert.Equal(ErrorCodes.Success, (await slow.ReadFrameAsync()).ErrorCode);

        // Each round pushes more than the queue holds, then moves the manual clock one second. Once the kernel
        // buffers are full the queue stays at its cap, and five seconds of it close the session.
        var closedTask = server.NextCloseAsync();
        var send = RawFrames.Client(EchoMsgIds.SendPush, 0, 1, new byte[2048]);
        var burst = Enumerable.Repeat(send, 16).SelectMany(b => b).ToArray();
        for (var round = 0; round < 1000 && !closedTask.IsCompleted; round++)
        {
            try
            {
                await slow.SendAsync(burst);
            }
            catch (System.Net.Sockets.SocketException)
            {
                break;
            }

            time.Advance(TimeSpan.FromSeconds(1));
        }

        var closed = await closedTask;
        var reply = await good.RequestAsync(EchoMsgIds.Echo, 2, [3]).WaitAsync(TestServer.Patience);

        Assert.Equal(SessionCloseReason.SlowReader, closed.Reason);
        Assert.Equal(1, server.Counters.Closed(SessionCloseReason.SlowReader));
        Assert.True(server.Logger.Contains("SlowReader"));
        Assert.True(reply.IsSuccess);
    }

    [Theory]
    [InlineData(16)]
    [InlineData(32)]
    [InlineData(64)]
    public async Task ConnectionChurn_OpenAndCloseRepeatedly_LeavesNoSessionAndNoBuffer(int connections)
    {
        // Seed 003's churn shape: a batch of connections opened and closed, round after round.
        const int Rounds = 4;
        await using var server = TestServer.Start();
        using var good = await server.ConnectAuthenticatedAsync(accountId: 1);
        for (var round = 0; round < Rounds; round++)
        {
            var batch = await Task.WhenAll(Enumerable.Range(0, connections).Select(_ => RawClient.ConnectAsync(server.EndPoint)));
            for (var i = 0; i < batch.Length; i++)
            {
                // Half authenticate and echo once; the rest close straight away (a quarter of them abruptly).
                if (i % 2 == 0)
                {
                    await batch[i].SendAsync(RawFrames.Client(EchoMsgIds.Authenticate, 1, 1 + (i % 3), RawFrames.Account(1000 + (round * connections) + i)));
                }
            }

            for (var i = 0; i < batch.Length; i++)
            {
                if (i % 2 == 0)
                {
                    // A PlayHouse client waits for the authenticate reply before its first request.
                    Assert.Equal(ErrorCodes.Success, (await batch[i].ReadFrameAsync()).ErrorCode);
                    await batch[i].SendAsync(RawFrames.Client(EchoMsgIds.Echo, 2, 1 + (i % 3), [(byte)i]));
                    Assert.Equal(new byte[] { (byte)i }, (await batch[i].ReadFrameAsync()).Payload);
                }

                if (i % 4 == 1)
                {
                    batch[i].Reset();
                }
                else
                {
                    batch[i].Dispose();
                }
            }
        }

        var expected = (Rounds * connections) + 1;
        await Eventually.True(
            () => server.Counters.ConnectionsClosed == expected - 1 && server.Listener.SessionCount == 1 && server.Server.SessionCount == 1,
            TestServer.Patience,
            () => $"closed {server.Counters.ConnectionsClosed}, open {server.Listener.SessionCount}");
        var reply = await good.RequestAsync(EchoMsgIds.Echo, 1, [1]).WaitAsync(TestServer.Patience);

        Assert.Equal(expected, server.Counters.ConnectionsAccepted);
        Assert.Equal(1, server.Listener.SessionCount);
        Assert.Equal(1, server.Server.SessionCount);
        Assert.True(reply.IsSuccess);
    }

    [Fact]
    public async Task SendAndReceiveFailingTogether_ReturnEachBufferExactlyOnce()
    {
        // B7e: PlayHouse returned a session's receive buffer twice when send and receive failed together. Here the
        // server has a send in flight to a reader that stopped, and a receive pending, when the reader resets.
        var options = new TcpTransportOptions { SendQueueBytesMax = 64 * 1024, SocketSendBufferBytes = 4096, SlowReaderTimeout = TimeSpan.FromMinutes(5) };
        await using var server = TestServer.Start(options);
        for (var attempt = 0; attempt < 10; attempt++)
        {
            using var victim = await RawClient.ConnectAsync(server.EndPoint, receiveBufferBytes: 4096);
            await victim.SendAsync(RawFrames.Client(EchoMsgIds.Authenticate, 1, 1, RawFrames.Account(500 + attempt)));
            Assert.Equal(ErrorCodes.Success, (await victim.ReadFrameAsync()).ErrorCode);
            var send = RawFrames.Client(EchoMsgIds.SendPush, 0, 1, new byte[4096]);
            for (var i = 0; i < 64; i++)
            {
                await victim.SendAsync(send);
            }

            await Eventually.True(() => server.Listener.Sessions.Any(s => s.QueuedBytes > 0), TestServer.Patience);
            victim.Reset();
            var closed = await server.NextCloseAsync();
            // Whichever loop sees the reset first names the reason: the send (reset), a receive that then reads EOF, or
            // that EOF read in the middle of one of the 4 KiB frames (the decoder's truncated frame).
            var truncated = closed.Reason == SessionCloseReason.MalformedFrame && closed.Detail.Contains("TruncatedFrame", StringComparison.Ordinal);
            Assert.True(closed.Reason is SessionCloseReason.ConnectionReset or SessionCloseReason.PeerClosed || truncated, $"closed as {closed.Reason}: {closed.Detail}");
        }

        await server.Listener.WhenAllSessionsFinished().WaitAsync(TestServer.Patience);
        Assert.Equal(0, server.Counters.CallbackFaults);
        Assert.True(server.Counters.SendBytesDroppedAtClose > 0);
    }

    /// <summary>Sends bursts of <paramref name="frame"/> until the server refuses a frame at a session's send-queue cap.</summary>
    private static async Task FloodUntilRefusedAsync(TestServer server, RawClient client, byte[] frame, int refusals = 1)
    {
        var burst = new byte[frame.Length * 32];
        for (var i = 0; i < 32; i++)
        {
            frame.CopyTo(burst, i * frame.Length);
        }

        var deadline = DateTime.UtcNow + TestServer.Patience;
        while (server.Counters.SendQueueRefusals < refusals)
        {
            Assert.True(DateTime.UtcNow < deadline, $"no refusal after {server.Counters.BytesReceived} bytes received; queued {server.Listener.QueuedBytes}");
            await client.SendAsync(burst);
        }
    }

    private static byte[] InvalidUtf8Frame()
    {
        // A 2-byte msg id 0xC3 0x28 (a lead byte followed by a non-continuation byte), then MsgSeq and StageId.
        var body = new byte[] { 2, 0xC3, 0x28, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0 };
        return RawFrames.LengthThen(body.Length, body);
    }
}
