using PlayHouse.Core.Codec;
using PlayHouse.Core.Pooling;
using PlayHouse.Simulation.Clients;
using PlayHouse.Simulation.Network;

namespace PlayHouse.Simulation.Tests.Clients;

/// <summary>
/// The simulated client's WebSocket transport (masked frames out, one packet per message in, the server's close) and
/// its application reading from the packet queue (every read interval, a bounded number of packets, the queue's cap),
/// with <see cref="ClientReadOptions"/> and <see cref="ClientPacketQueue"/> at their limits.
/// </summary>
public sealed class SimClientTransportAndReadingTests
{
    private static readonly TimeSpan Timeout5s = TimeSpan.FromSeconds(5);

    [Fact]
    public void WebSocketClient_MasksEachFrameWithAFreshKey_AndTheServerUnmasksItsPackets()
    {
        using var h = new ClientServerHarness(transport: SimClientTransport.WebSocket);
        var tap = new RecordingTap();
        h.Network.Tap = tap;
        h.Connect();

        h.Client.Request("Alpha", 5, [1, 2, 3], Timeout5s, static (_, _) => { });
        h.Client.Send("Beta", 6, [4]);
        h.World.RunFor(TimeSpan.Zero);

        Assert.Equal(new[] { ("Alpha", (ushort)1, 5L), ("Beta", (ushort)0, 6L) }, h.Received.Select(r => (r.MsgId, r.Seq, r.StageId)));
        Assert.Equal(new byte[] { 1, 2, 3 }, h.Received[0].Payload);
        Assert.Equal(2, tap.Sends.Count);
        Assert.All(tap.Sends, frame => Assert.Equal((0x82, 0x80), (frame[0], frame[1] & 0x80)));
        Assert.Equal((int)tap.Sends[0][1] & 0x7F, ClientFrameEncoder.GetEncodedLength("Alpha", 3));
        Assert.NotEqual(tap.Sends[0].AsSpan(2, 4).ToArray(), tap.Sends[1].AsSpan(2, 4).ToArray());
    }

    [Fact]
    public void WebSocketClient_TakesOnePacketPerBinaryMessage_AndSkipsControlFrames()
    {
        using var h = new ClientServerHarness(transport: SimClientTransport.WebSocket);
        h.Connect();
        var seq = h.Request("Req");

        h.ServerSends(
            ClientServerHarness.WebSocketFrame([9], WebSocketOpcode.Ping),
            ClientServerHarness.WebSocketFrame(ClientServerHarness.Frame("Req", seq, payload: [7])));

        var reply = Assert.Single(h.Replies);
        Assert.Equal(seq, reply.MsgSeq);
        Assert.Equal(new byte[] { 7 }, reply.Payload.ToArray());
        Assert.Equal((0L, true), (h.Client.Statistics.BadFrames, h.Client.IsConnected));
    }

    [Fact]
    public void WebSocketClient_HearingTheServersClose_Disconnects_AndReadsNothingAfterIt()
    {
        using var h = new ClientServerHarness(transport: SimClientTransport.WebSocket);
        h.Connect();
        var reasons = new List<string>();
        h.Client.Disconnected = (_, reason) => reasons.Add(reason);
        var pushes = 0;
        h.Client.PushReceived = (_, _, _, _) => pushes++;

        h.ServerSends([.. ClientServerHarness.WebSocketFrame([], WebSocketOpcode.Close), .. ClientServerHarness.WebSocketFrame(ClientServerHarness.Frame("P", 0))]);

        Assert.Equal(new[] { "server closed the WebSocket" }, reasons);
        Assert.Equal((0, false, 1L), (pushes, h.Client.IsConnected, h.Client.Statistics.Disconnects));
    }

    [Theory]
    [InlineData(true)]
    [InlineData(false)]
    public void WebSocketMessage_HoldingMoreOrLessThanOnePacket_IsAMalformedFrame_ThatResetsTheConnection(bool more)
    {
        using var h = new ClientServerHarness(transport: SimClientTransport.WebSocket);
        h.Connect();
        var packet = ClientServerHarness.Frame("P", 0, payload: [1, 2]);
        byte[] message = more ? [.. packet, 0] : packet.AsSpan(0, packet.Length - 1).ToArray();

        h.ServerSends(ClientServerHarness.WebSocketFrame(message));

        Assert.Equal(1, h.Client.Statistics.BadFrames);
        Assert.Equal((0L, false), (h.Client.Statistics.Pushes, h.Client.IsConnected));
        Assert.Equal(1, h.Network.Counters.ConnectionResets);
        Assert.Equal(0, h.OutstandingBuffers);
    }

    [Fact]
    public void WebSocketReplyCallbackThatDisconnects_LeavesTheMessagesBehindItUnread()
    {
        using var h = new ClientServerHarness(transport: SimClientTransport.WebSocket);
        h.Connect();
        var first = h.Client.Request("A", 1, [], Timeout5s, static (c, _) => c.Disconnect("done"));
        var second = h.Request("B");

        h.ServerSends([.. ClientServerHarness.WebSocketFrame(ClientServerHarness.Frame("A", first)), .. ClientServerHarness.WebSocketFrame(ClientServerHarness.Frame("B", second))]);

        Assert.Empty(h.Replies);
        Assert.Equal((1L, 1), (h.Client.Statistics.Replies, h.Client.InFlight));
    }

    [Fact]
    public void QueuedPackets_AreReadEveryReadInterval_AtMostPacketsPerRead_OldestFirst_ThenPollingStops()
    {
        using var h = new ClientServerHarness(reading: new ClientReadOptions { ReadInterval = TimeSpan.FromMilliseconds(10), PacketsPerRead = 2 });
        h.Connect();
        var start = h.World.NowTicks;
        var read = new List<(byte Push, long AtTicks)>();
        h.Client.PushReceived = (_, _, _, payload) => read.Add((payload.Span[0], h.World.NowTicks));

        h.ServerSends([.. Enumerable.Range(1, 5).SelectMany(i => ClientServerHarness.Frame("P", 0, payload: [(byte)i]))]);
        Assert.Equal((5, 5, 0), (h.Client.PacketsQueued, h.Client.PacketQueueHighWater, read.Count));
        Assert.True(h.World.RunUntilQuiet(), "the client kept polling an empty queue");

        var ms = TimeSpan.TicksPerMillisecond;
        Assert.Equal(new (byte, long)[] { (1, start + (10 * ms)), (2, start + (10 * ms)), (3, start + (20 * ms)), (4, start + (20 * ms)), (5, start + (30 * ms)) }, read);
        Assert.Equal((0, 5L), (h.Client.PacketsQueued, h.Client.Statistics.Pushes));
    }

    [Fact]
    public void QueuedReading_StartsAgainWithTheNextPacket_AfterPollingStopped()
    {
        using var h = new ClientServerHarness(reading: new ClientReadOptions { ReadInterval = TimeSpan.FromMilliseconds(10) });
        h.Connect();
        var read = new List<long>();
        h.Client.PushReceived = (_, _, _, _) => read.Add(h.World.NowTicks);

        var start = h.World.NowTicks;
        h.ServerSends(ClientServerHarness.Frame("P", 0));
        Assert.True(h.World.RunUntilQuiet(), "the client kept polling an empty queue");
        var resend = h.World.NowTicks;
        h.ServerSends(ClientServerHarness.Frame("P", 0), ClientServerHarness.Frame(WireProtocol.HeartbeatMsgId, 0));
        Assert.Equal(1, h.Client.PacketsQueued);
        Assert.True(h.World.RunUntilQuiet(), "the client kept polling an empty queue");

        var interval = TimeSpan.FromMilliseconds(10).Ticks;
        Assert.Equal(new[] { start + interval, resend + interval }, read);
        Assert.Equal((0, 1), (h.Client.PacketsQueued, h.Client.PacketQueueHighWater));
    }

    [Fact]
    public void QueuedReply_CompletesItsRequestWhenRead_AndOneRefusedByAFullQueueForASequenceNotPendingIsOnlyCounted()
    {
        using var h = new ClientServerHarness(reading: new ClientReadOptions { ReadInterval = TimeSpan.FromMilliseconds(10), PacketQueueMax = 1 });
        h.Connect();
        var start = h.World.NowTicks;
        var seq = h.Request();

        h.ServerSends(ClientServerHarness.Frame("Req", seq, payload: [3]), ClientServerHarness.Frame("Req", 999), ClientServerHarness.Frame("P", 0));
        Assert.Empty(h.Replies);
        Assert.Equal((1L, 1L, 0L), (h.Client.Statistics.LateOrUnknownReplies, h.Client.Statistics.PushesDropped, h.Client.Statistics.RepliesRefused));
        h.World.RunUntil(start + TimeSpan.FromMilliseconds(10).Ticks - 1);
        Assert.Empty(h.Replies);
        h.World.RunUntil(start + TimeSpan.FromMilliseconds(10).Ticks);

        var reply = Assert.Single(h.Replies);
        Assert.Equal((seq, (ushort)0), (reply.MsgSeq, reply.ErrorCode));
        Assert.Equal(new byte[] { 3 }, reply.Payload.ToArray());
        Assert.Equal(0, h.OutstandingBuffers);
    }

    [Fact]
    public void PacketQueueFactory_IsAskedForAQueueOfPacketQueueMax_OnlyWhenPacketsQueue()
    {
        var asked = new List<int>();
        IClientPacketQueue Make(int capacity)
        {
            asked.Add(capacity);
            return new ClientPacketQueue(capacity);
        }

        using (new ClientServerHarness(packetQueue: Make))
        {
        }

        using (new ClientServerHarness(reading: new ClientReadOptions { ReadInterval = TimeSpan.FromTicks(1), PacketQueueMax = 3 }, packetQueue: Make))
        {
        }

        Assert.Equal(new[] { 3 }, asked);
    }

    [Fact]
    public void ClientReadOptions_AcceptEachLimitAtItsBound_AndRefuseOnePastIt()
    {
        var oneTick = TimeSpan.FromTicks(1);
        new ClientReadOptions { ReadInterval = TimeSpan.Zero, PacketsPerRead = 1, PacketQueueMax = 1 }.Validate();

        Assert.Throws<ArgumentException>(new ClientReadOptions { ReadInterval = -oneTick }.Validate);
        Assert.Throws<ArgumentException>(new ClientReadOptions { PacketsPerRead = 0 }.Validate);
        var error = Assert.Throws<ArgumentException>(new ClientReadOptions { PacketQueueMax = 0 }.Validate);
        Assert.Contains("Client read options out of range", error.Message, StringComparison.Ordinal);
        Assert.False(new ClientReadOptions { ReadInterval = TimeSpan.Zero }.IsQueued);
        Assert.True(new ClientReadOptions { ReadInterval = oneTick }.IsQueued);
    }

    [Fact]
    public void ClientPacketQueue_HoldsUpToItsCapacity_FirstInFirstOut_AndRefusesZeroCapacity()
    {
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = true, SingleThreaded = true });
        var queue = new ClientPacketQueue(2);
        ServerFrame Frame(ushort seq) => new("P", seq, 1, 0, 0, pool.Copy([(byte)seq], "test"));
        var third = Frame(3);

        Assert.False(queue.TryDequeue(out var none));
        Assert.Equal(0, none.MsgSeq);
        Assert.True(queue.TryEnqueue(Frame(1)));
        Assert.True(queue.TryEnqueue(Frame(2)));
        Assert.False(queue.TryEnqueue(third));
        Assert.Equal((2, 2), (queue.Count, queue.CapacityMax));
        Assert.True(queue.TryDequeue(out var first));
        Assert.True(queue.TryDequeue(out var second));
        Assert.Equal(((ushort)1, (ushort)2), (first.MsgSeq, second.MsgSeq));
        Assert.Equal(0, queue.Count);
        first.Dispose();
        second.Dispose();
        third.Dispose();
        Assert.Equal(0, pool.GetStatistics().Outstanding);
        Assert.Equal(1, new ClientPacketQueue(1).CapacityMax);
        Assert.Throws<ArgumentOutOfRangeException>(() => new ClientPacketQueue(0));
    }

    private sealed class RecordingTap : INetworkTap
    {
        public List<byte[]> Sends { get; } = [];

        public void OnStreamSend(long connectionId, ReadOnlySpan<byte> bytes)
        {
            // The client end is opened first, so it has the lower id of the pair.
            if (connectionId == 1)
            {
                Sends.Add(bytes.ToArray());
            }
        }
    }
}
