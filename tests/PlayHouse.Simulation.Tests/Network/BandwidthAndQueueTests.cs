using PlayHouse.Simulation.Network;

namespace PlayHouse.Simulation.Tests.Network;

public sealed class BandwidthAndQueueTests
{
    private static readonly TimeSpan Latency = TimeSpan.FromMilliseconds(10);

    [Fact]
    public void Bandwidth_BackToBackSendsQueue_EachArrivesNoEarlierThanItsBytesOverTheRate()
    {
        // Seven bytes/s does not divide a second's ticks evenly, so rounding each send down would let the
        // seventh byte arrive before one second.
        const long RateBytesPerSecond = 7;
        var (h, pair) = NetworkHarness.Connected(new PathOptions { Latency = LatencyModel.Fixed(Latency), BandwidthBytesPerSecond = RateBytesPerSecond, SplitProbability = 0 });
        var sentAtTicks = h.World.NowTicks;
        for (var i = 0; i < 7; i++)
        {
            Assert.True(pair.Client.Send([(byte)i]));
        }

        h.RunQuiet();

        Assert.Equal([0, 1, 2, 3, 4, 5, 6], pair.Server.Received);
        for (var k = 1; k <= 7; k++)
        {
            var earliestTicks = sentAtTicks + CeilingDiv(k * TimeSpan.TicksPerSecond, RateBytesPerSecond) + Latency.Ticks;
            Assert.InRange(pair.Server.ChunkArrivalTicks[k - 1], earliestTicks, earliestTicks + k);
        }

        Assert.True(pair.Server.ChunkArrivalTicks.Last() >= sentAtTicks + TimeSpan.TicksPerSecond + Latency.Ticks);
    }

    [Fact]
    public void Bandwidth_OneLargeSend_ArrivesAfterItsTransmitTime_AndAnIdleLinkKeepsNoBacklog()
    {
        var (h, pair) = NetworkHarness.Connected(new PathOptions { Latency = LatencyModel.Fixed(Latency), BandwidthBytesPerSecond = 1000, SplitProbability = 0 });
        var firstAtTicks = h.World.NowTicks;
        Assert.True(pair.Client.Send(new byte[10_000]));
        Assert.True(pair.Server.Send(new byte[100]));
        h.RunQuiet();

        Assert.Equal(firstAtTicks + TimeSpan.FromSeconds(10).Ticks + Latency.Ticks, pair.Server.ChunkArrivalTicks.Single());

        // The reverse direction has its own link, so it is not queued behind the large send.
        Assert.Equal(firstAtTicks + TimeSpan.FromSeconds(0.1).Ticks + Latency.Ticks, pair.Client.ChunkArrivalTicks.Single());

        h.RunFor(TimeSpan.FromSeconds(3));
        var secondAtTicks = h.World.NowTicks;
        Assert.True(pair.Client.Send(new byte[500]));
        h.RunQuiet();

        Assert.Equal(secondAtTicks + TimeSpan.FromSeconds(0.5).Ticks + Latency.Ticks, pair.Server.ChunkArrivalTicks.Last());
        Assert.Equal(10_500, pair.Server.Received.Count);
    }

    [Fact]
    public void Bandwidth_IsSharedByEveryConnectionOnThePath()
    {
        var h = new NetworkHarness(seed: 1, new PathOptions { Latency = LatencyModel.Fixed(Latency), BandwidthBytesPerSecond = 1000, SplitProbability = 0 });
        h.Listen("server");
        var first = h.Connect("client", "server");
        var second = h.Connect("client", "server");
        h.RunQuiet();
        var sentAtTicks = h.World.NowTicks;
        Assert.True(first.Client.Send(new byte[1000]));
        Assert.True(second.Client.Send(new byte[1000]));
        h.RunQuiet();

        Assert.Equal(sentAtTicks + TimeSpan.FromSeconds(1).Ticks + Latency.Ticks, first.Server.ChunkArrivalTicks.Single());
        Assert.Equal(sentAtTicks + TimeSpan.FromSeconds(2).Ticks + Latency.Ticks, second.Server.ChunkArrivalTicks.Single());
    }

    [Fact]
    public void QueueCap_SendsBeyondItAreRefusedAndCounted_AndAfterDeliveryTheQueueDrainsAndSendsSucceed()
    {
        var (h, pair) = NetworkHarness.Connected(new PathOptions { Latency = LatencyModel.Fixed(Latency), QueueCapacityBytes = 1000, SplitProbability = 0.5 });
        var client = pair.Client;

        Assert.True(client.Send(new byte[400]));
        Assert.True(client.Send(new byte[400]));
        Assert.Equal(800, client.Connection.QueuedBytes);
        Assert.False(client.Send(new byte[201]));
        Assert.Equal(1, h.Counters.StreamSendsRefused);
        Assert.Equal(1, h.TraceCount("net.refuse"));
        Assert.True(client.Send(new byte[200]));
        Assert.Equal(1000, client.Connection.QueuedBytes);
        Assert.False(client.Send(new byte[1]));
        Assert.False(client.Send(new byte[1001]));
        Assert.Equal(3, h.Counters.StreamSendsRefused);

        // The other direction has its own queue.
        Assert.True(pair.Server.Send(new byte[1000]));

        h.RunQuiet();

        Assert.Equal(0, client.Connection.QueuedBytes);
        Assert.Equal(0, pair.Server.Connection.QueuedBytes);
        Assert.Equal(1000, pair.Server.Received.Count);
        Assert.True(client.Send(new byte[600]));
        Assert.True(client.Send(new byte[400]));
        Assert.Equal(3, h.Counters.StreamSendsRefused);
        h.RunQuiet();

        Assert.Equal(client.Sent, pair.Server.Received);
        Assert.Equal(2000, pair.Server.Received.Count);
        h.AssertNoBytesInFlight();
    }

    [Fact]
    public void QueueCap_CountsBytesHeldByAClog_UntilTheyAreDelivered()
    {
        var (h, pair) = NetworkHarness.Connected(new PathOptions { Latency = LatencyModel.Fixed(Latency), QueueCapacityBytes = 1000, SplitProbability = 0 });
        h.Network.Clog("client", "server");
        Assert.True(pair.Client.Send(new byte[1000]));
        h.RunFor(TimeSpan.FromSeconds(1));

        Assert.Equal(1000, pair.Client.Connection.QueuedBytes);
        Assert.False(pair.Client.Send(new byte[1]));
        h.Network.Unclog("client", "server");
        h.RunQuiet();

        Assert.Equal(0, pair.Client.Connection.QueuedBytes);
        Assert.True(pair.Client.Send(new byte[1]));
        h.RunQuiet();
        Assert.Equal(1001, pair.Server.Received.Count);
    }

    private static long CeilingDiv(long a, long b) => (a + b - 1) / b;
}
