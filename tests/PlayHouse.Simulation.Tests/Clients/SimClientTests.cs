using PlayHouse.Core.Codec;
using PlayHouse.Core.Runtime;
using PlayHouse.Simulation.Clients;

namespace PlayHouse.Simulation.Tests.Clients;

/// <summary>
/// The simulated client against a scripted server: what it puts on the wire, how it pairs replies with requests, how
/// its timeouts, pushes, heartbeats, disconnects and malformed input end, each counted once.
/// </summary>
public sealed class SimClientTests
{
    private static readonly TimeSpan Timeout5s = TimeSpan.FromSeconds(5);

    [Fact]
    public void Request_IsEncodedWithItsMsgIdStageAndPayload_AndSequencesCountUpFromOne()
    {
        using var h = new ClientServerHarness();
        h.Connect();

        var first = h.Client.Request("Alpha", 42, [1, 2, 3], Timeout5s, static (_, _) => { });
        var second = h.Client.Request("Beta", 43, [], Timeout5s, static (_, _) => { });
        h.World.RunFor(TimeSpan.Zero);

        Assert.Equal((1, 2), (first, second));
        Assert.Equal(2, h.Received.Count);
        Assert.Equal(("Alpha", (ushort)1, 42L), (h.Received[0].MsgId, h.Received[0].Seq, h.Received[0].StageId));
        Assert.Equal(("Beta", (ushort)2, 43L), (h.Received[1].MsgId, h.Received[1].Seq, h.Received[1].StageId));
        Assert.Equal(new byte[] { 1, 2, 3 }, h.Received[0].Payload);
        Assert.Empty(h.Received[1].Payload);
        Assert.Equal((2, 2, 2L), (h.Client.InFlight, h.Client.InFlightHighWater, h.Client.Statistics.RequestsSent));
    }

    [Fact]
    public void Requests_LargerThanTheSharedEncodeBuffer_ArriveWhole_OverTcpAndWebSocket()
    {
        foreach (var transport in new[] { SimClientTransport.Tcp, SimClientTransport.WebSocket })
        {
            using var h = new ClientServerHarness(transport: transport);
            h.Connect();
            var large = Enumerable.Range(0, 5000).Select(i => (byte)i).ToArray();
            var larger = Enumerable.Range(0, 9000).Select(i => (byte)(i * 7)).ToArray();

            h.Request("Big", payload: large);
            h.Request("Bigger", payload: larger);
            h.World.RunFor(TimeSpan.Zero);

            Assert.Equal(2, h.Received.Count);
            Assert.Equal(large, h.Received[0].Payload);
            Assert.Equal(larger, h.Received[1].Payload);
        }
    }

    [Fact]
    public void Replies_OutOfOrder_EachCompletesItsOwnRequest_WithItsErrorCodeAndPayload()
    {
        using var h = new ClientServerHarness();
        h.Connect();
        var first = h.Request("A");
        var second = h.Request("B");

        h.ServerSends(ClientServerHarness.Frame("B", second, errorCode: 7, payload: [9]), ClientServerHarness.Frame("A", first, payload: [1, 1]));

        Assert.Equal(2, h.Replies.Count);
        Assert.Equal((second, "B", (ushort)7, false), (h.Replies[0].MsgSeq, h.Replies[0].MsgId, h.Replies[0].ErrorCode, h.Replies[0].IsSuccess));
        Assert.Equal(new byte[] { 9 }, h.Replies[0].Payload.ToArray());
        Assert.Equal((first, "A", (ushort)0, true), (h.Replies[1].MsgSeq, h.Replies[1].MsgId, h.Replies[1].ErrorCode, h.Replies[1].IsSuccess));
        Assert.Equal(new byte[] { 1, 1 }, h.Replies[1].Payload.ToArray());
        Assert.Equal((0, 2L, 0L), (h.Client.InFlight, h.Client.Statistics.Replies, h.Client.Statistics.LateOrUnknownReplies));
        Assert.Equal(2, h.Client.InFlightHighWater);
    }

    [Fact]
    public void ReplyToASequenceNotPending_IsCountedAndHandedToTheUnmatchedPolicy_NeverToARequest()
    {
        var policy = new RecordingPolicy();
        using var h = new ClientServerHarness(unmatched: policy);
        h.Connect();
        var seq = h.Request();

        h.ServerSends(ClientServerHarness.Frame("Stray", 900), ClientServerHarness.Frame("Req", seq), ClientServerHarness.Frame("Req", seq));

        Assert.Single(h.Replies);
        Assert.Equal(2, h.Client.Statistics.LateOrUnknownReplies);
        Assert.Equal(1, h.Client.Statistics.Replies);
        Assert.Equal(new ushort[] { 900, seq }, policy.Sequences);
        Assert.Equal(0, h.Client.Statistics.Pushes);
    }

    [Fact]
    public void Push_WithSequenceZero_ReachesPushReceivedWithItsMsgIdStageAndPayload_AndHeartbeatEchoesReachNothing()
    {
        using var h = new ClientServerHarness();
        h.Connect();
        var pushes = new List<(string, long, byte[])>();
        h.Client.PushReceived = (_, msgId, stageId, payload) => pushes.Add((msgId, stageId, payload.ToArray()));

        h.ServerSends(ClientServerHarness.Frame("News", 0, payload: [5, 6], stageId: 77), ClientServerHarness.Frame(WireProtocol.HeartbeatMsgId, 0, stageId: 0));

        var push = Assert.Single(pushes);
        Assert.Equal(("News", 77L), (push.Item1, push.Item2));
        Assert.Equal(new byte[] { 5, 6 }, push.Item3);
        Assert.Equal((1L, 0L), (h.Client.Statistics.Pushes, h.Client.Statistics.LateOrUnknownReplies));
        Assert.Equal(0, h.OutstandingBuffers);
    }

    [Theory]
    [InlineData(-1, false)]
    [InlineData(0, true)]
    public void Request_TimesOutExactlyAtItsDeadline_NotOneTickSooner_AndItsLateReplyIsOnlyCounted(long ticksFromDeadline, bool timedOut)
    {
        using var h = new ClientServerHarness();
        h.Connect();
        var start = h.World.NowTicks;
        var seq = h.Request(timeout: TimeSpan.FromMilliseconds(100));

        h.World.RunUntil(start + TimeSpan.FromMilliseconds(100).Ticks + ticksFromDeadline);

        Assert.Equal(timedOut ? 1 : 0, h.Replies.Count);
        Assert.Equal(timedOut ? 1 : 0, h.Client.Statistics.Timeouts);
        if (timedOut)
        {
            Assert.Equal((seq, string.Empty, ErrorCodes.RequestTimeout, true), (h.Replies[0].MsgSeq, h.Replies[0].MsgId, h.Replies[0].ErrorCode, h.Replies[0].TimedOut));
            Assert.False(h.Replies[0].IsSuccess);
            h.ServerSends(ClientServerHarness.Frame("Req", seq));
            Assert.Equal((1, 1L, 0L), (h.Replies.Count, h.Client.Statistics.LateOrUnknownReplies, h.Client.Statistics.Replies));
        }

        Assert.Equal(timedOut ? 0 : 1, h.Client.InFlight);
    }

    [Fact]
    public void Timeouts_OfRequestsSentApart_FireEachAtItsOwnDeadline_InSendOrder_AndAnsweredOnesNever()
    {
        using var h = new ClientServerHarness();
        h.Connect();
        var timeout = TimeSpan.FromMilliseconds(100);
        var ends = new List<(ushort Seq, long AtTicks, bool TimedOut)>();
        void Send() => h.Client.Request("Req", 1, [], timeout, (c, r) => ends.Add((r.MsgSeq, h.World.NowTicks, r.TimedOut)));

        var start = h.World.NowTicks;
        Send();
        h.World.RunUntil(start + TimeSpan.FromMilliseconds(10).Ticks);
        Send();
        h.World.RunUntil(start + TimeSpan.FromMilliseconds(20).Ticks);
        Send();
        h.ServerSends(ClientServerHarness.Frame("Req", 2));
        h.World.RunUntil(start + TimeSpan.FromSeconds(1).Ticks);

        var ms = TimeSpan.TicksPerMillisecond;
        Assert.Equal(new (ushort, long, bool)[] { (2, start + (20 * ms), false), (1, start + (100 * ms), true), (3, start + (120 * ms), true) }, ends);
        Assert.Equal((2L, 1L, 0), (h.Client.Statistics.Timeouts, h.Client.Statistics.Replies, h.Client.InFlight));
    }

    [Fact]
    public void ALaterRequestWithAShorterTimeout_IsTimedOutAtItsOwnDeadline_NotAfterTheHeadsDeadline()
    {
        using var h = new ClientServerHarness();
        h.Connect();
        var start = h.World.NowTicks;
        var ends = new List<(ushort Seq, long AtTicks)>();
        h.Client.Request("Req", 1, [], TimeSpan.FromMilliseconds(100), (_, r) => ends.Add((r.MsgSeq, h.World.NowTicks)));
        h.Client.Request("Req", 1, [], TimeSpan.FromMilliseconds(30), (_, r) => ends.Add((r.MsgSeq, h.World.NowTicks)));

        h.World.RunUntil(start + TimeSpan.FromSeconds(1).Ticks);

        // Send order is deadline order only when timeouts are equal: the shorter one still fires, behind the head.
        var ms = TimeSpan.TicksPerMillisecond;
        Assert.Equal(new (ushort, long)[] { (1, start + (100 * ms)), (2, start + (100 * ms)) }, ends);
        Assert.Equal(2, h.Client.Statistics.Timeouts);
    }

    [Theory]
    [InlineData(1)]
    [InlineData(3)]
    public void Requests_PastInFlightMax_AreRefusedWithSequenceZero_UntilAReplyFreesASlot(int inFlightMax)
    {
        using var h = new ClientServerHarness(inFlightMax: inFlightMax);
        h.Connect();
        var sequences = Enumerable.Range(0, inFlightMax).Select(_ => h.Request()).ToList();

        var refused = h.Request();

        Assert.Equal(0, refused);
        Assert.Equal(1, h.Client.Statistics.RequestsRefused);
        Assert.Equal((inFlightMax, inFlightMax), (h.Client.InFlight, h.Client.InFlightHighWater));
        h.ServerSends(ClientServerHarness.Frame("Req", sequences[0]));
        Assert.Equal(inFlightMax + 1, h.Request());
        Assert.Equal(inFlightMax, h.Client.InFlightHighWater);
    }

    [Fact]
    public void Sequence_SkipsOneStillPending_AndWrapsPastZero()
    {
        using var h = new ClientServerHarness(inFlightMax: 256);
        h.Connect();

        // Only the client's sequence counter matters here: its requests stay held on the wire, and the server answers
        // each batch in one chunk, so 65,535 requests cost one delivery per batch.
        h.Network.Clog("client", "server");
        var stuck = h.Request(timeout: TimeSpan.FromDays(1));
        Assert.Equal(1, stuck);
        var frameBytes = ServerFrameEncoder.GetEncodedLength("R", 0);
        for (var next = 2; next <= ushort.MaxValue;)
        {
            var batch = Math.Min(128, ushort.MaxValue + 1 - next);
            var replies = new byte[batch * frameBytes];
            for (var i = 0; i < batch; i++)
            {
                var seq = h.Client.Request("R", 1, [], Timeout5s, static (_, _) => { });
                if (seq != next + i)
                {
                    Assert.Fail($"request {next + i} got sequence {seq}");
                }

                ServerFrameEncoder.Encode(replies.AsSpan(i * frameBytes), "R", seq, 1, 0, []);
            }

            h.ServerSends(replies);
            next += batch;
        }

        Assert.Equal((1, (long)ushort.MaxValue - 1), (h.Client.InFlight, h.Client.Statistics.Replies));

        // The counter stands at 65,535: the next is 1 (never 0), which is still pending, so 2.
        Assert.Equal(2, h.Request());
        Assert.Equal(2, h.Client.InFlight);
    }

    [Fact]
    public void Requests_WhileNotConnected_AreRefused_AndSendsAndHeartbeatsReturnFalse()
    {
        using var h = new ClientServerHarness();

        Assert.Equal(0, h.Request());
        Assert.False(h.Client.Send("Fire", 1, [1]));
        Assert.False(h.Client.SendHeartbeat());

        Assert.Equal((1L, 0L, 0L, 0L), (h.Client.Statistics.RequestsRefused, h.Client.Statistics.RequestsSent, h.Client.Statistics.SendsSent, h.Client.Statistics.HeartbeatsSent));
        Assert.False(h.Client.IsConnected);
        Assert.Throws<ArgumentNullException>(() => h.Client.Request("R", 1, [], Timeout5s, null!));
    }

    [Fact]
    public void OneWaySend_GoesOutWithSequenceZero_AndIsCounted()
    {
        using var h = new ClientServerHarness();
        h.Connect();

        Assert.True(h.Client.Send("Fire", 9, [4]));
        h.World.RunFor(TimeSpan.Zero);

        var sent = Assert.Single(h.Received);
        Assert.Equal(("Fire", (ushort)0, 9L), (sent.MsgId, sent.Seq, sent.StageId));
        Assert.Equal(new byte[] { 4 }, sent.Payload);
        Assert.Equal((1L, 0, 0L), (h.Client.Statistics.SendsSent, h.Client.InFlight, h.Client.Statistics.RequestsSent));
    }

    [Fact]
    public void Heartbeat_IsSentEveryInterval_AsAnEmptyFrameWithSequenceZero_AndStopsWithTheDispose()
    {
        var h = new ClientServerHarness();
        h.Connect();
        var start = h.World.NowTicks;

        h.Client.StartHeartbeat(TimeSpan.FromMilliseconds(100));
        h.World.RunUntil(start + TimeSpan.FromMilliseconds(350).Ticks);

        Assert.Equal(3, h.Received.Count);
        Assert.All(h.Received, r => Assert.Equal((WireProtocol.HeartbeatMsgId, (ushort)0, 0L, 0), (r.MsgId, r.Seq, r.StageId, r.Payload.Length)));
        Assert.Equal(3, h.Client.Statistics.HeartbeatsSent);
        h.Dispose();
        Assert.True(h.World.RunUntilQuiet(), "a disposed client's heartbeat kept the world busy");
        Assert.Equal(3, h.Client.Statistics.HeartbeatsSent);
    }

    [Fact]
    public void Connect_WhileConnected_IsRefused_AndDisconnectTellsTheCallbackOnce()
    {
        using var h = new ClientServerHarness();
        h.Connect();
        var reasons = new List<string>();
        h.Client.Disconnected = (_, reason) => reasons.Add(reason);

        var error = Assert.Throws<InvalidOperationException>(() => h.Client.Connect(ClientServerHarness.ServerEndpoint));
        h.Client.Disconnect("bye");
        h.Client.Disconnect("again");
        h.World.RunFor(TimeSpan.Zero);

        Assert.Contains("already connected", error.Message, StringComparison.Ordinal);
        Assert.Equal(new[] { "bye" }, reasons);
        Assert.Equal(1, h.Client.Statistics.Disconnects);
        Assert.False(h.Client.IsConnected);
        Assert.False(h.ServerEnd!.IsOpen);
    }

    [Fact]
    public void ServerClosingTheConnection_DisconnectsTheClient_AndItsPartFrameGoesBackToThePool()
    {
        using var h = new ClientServerHarness();
        h.Connect();
        var reasons = new List<string>();
        h.Client.Disconnected = (_, reason) => reasons.Add(reason);
        var frame = ClientServerHarness.Frame("Big", 0, payload: new byte[100]);

        h.ServerSends(frame.AsSpan(0, frame.Length - 10).ToArray());
        Assert.Equal(1, h.OutstandingBuffers);
        h.ServerEnd!.Close("server going away");
        h.World.RunFor(TimeSpan.Zero);

        Assert.Equal(new[] { "server going away" }, reasons);
        Assert.Equal((1L, false), (h.Client.Statistics.Disconnects, h.Client.IsConnected));
        Assert.Equal(0, h.OutstandingBuffers);
    }

    [Fact]
    public void MalformedFrame_IsCountedAndResetsTheConnection()
    {
        using var h = new ClientServerHarness();
        h.Connect();
        var reasons = new List<string>();
        h.Client.Disconnected = (_, reason) => reasons.Add(reason);

        // A length prefix of zero: no body can be that short.
        h.ServerSends([0, 0, 0, 0, 1, 2, 3, 4]);

        Assert.Equal(1, h.Client.Statistics.BadFrames);
        Assert.Equal(new[] { "client got a malformed frame: LengthTooSmall" }, reasons);
        Assert.False(h.Client.IsConnected);
        Assert.Equal(1, h.Network.Counters.ConnectionResets);
    }

    [Fact]
    public void ReplyCallbackThatReconnects_LeavesTheOldConnectionsRemainingFramesUnread()
    {
        using var h = new ClientServerHarness();
        h.Connect();
        var first = h.Client.Request("A", 1, [], Timeout5s, (c, _) =>
        {
            c.Disconnect("switch");
            c.Connect(ClientServerHarness.ServerEndpoint);
        });
        var second = h.Request("B");

        h.ServerSends([.. ClientServerHarness.Frame("A", first), .. ClientServerHarness.Frame("B", second)]);

        // The second reply came on the connection the callback left: nobody reads it, and its request stays pending.
        Assert.Empty(h.Replies);
        Assert.Equal((1L, 1), (h.Client.Statistics.Replies, h.Client.InFlight));
        Assert.True(h.Client.IsConnected);
        Assert.Equal(0, h.OutstandingBuffers);
    }

    [Fact]
    public void Dispose_ClosesTheConnection_AndReturnsEveryUnreadPacketsPayload()
    {
        var h = new ClientServerHarness(reading: new ClientReadOptions { ReadInterval = TimeSpan.FromSeconds(1) });
        h.Connect();
        h.ServerSends(ClientServerHarness.Frame("P", 0, payload: [1]), ClientServerHarness.Frame("P", 0, payload: [2]));
        Assert.Equal((2, 2), (h.Client.PacketsQueued, (int)h.OutstandingBuffers));

        h.Dispose();

        Assert.Equal((0, 0L), (h.Client.PacketsQueued, h.OutstandingBuffers));
        Assert.False(h.Client.IsConnected);
        Assert.Equal(1, h.Client.Statistics.Disconnects);
    }

    [Fact]
    public void Constructor_TakesAnInFlightMaxFromOneToTwoBelowTheSequenceSpace_AndRefusesZeroAndOneMore()
    {
        using var h = new ClientServerHarness();
        var pool = h.Pool;
        var ids = new Utf8StringCache(singleThreaded: true);

        Assert.Equal(1, new SimClient(h.Network, "a", pool, ids, inFlightMax: 1).InFlightMax);
        Assert.Equal(ushort.MaxValue - 1, new SimClient(h.Network, "b", pool, ids, inFlightMax: ushort.MaxValue - 1).InFlightMax);
        Assert.Throws<ArgumentOutOfRangeException>(() => new SimClient(h.Network, "c", pool, ids, inFlightMax: 0));
        Assert.Throws<ArgumentOutOfRangeException>(() => new SimClient(h.Network, "d", pool, ids, inFlightMax: ushort.MaxValue));
        Assert.Throws<ArgumentException>(() => new SimClient(h.Network, "e", pool, ids, reading: new ClientReadOptions { PacketsPerRead = 0 }));
    }

    private sealed class RecordingPolicy : IUnmatchedReplyPolicy
    {
        public List<ushort> Sequences { get; } = [];

        public void OnUnmatchedReply(SimClient client, in ServerFrame frame) => Sequences.Add(frame.MsgSeq);
    }
}
