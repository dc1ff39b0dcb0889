using PlayHouse.Core.Seams;
using PlayHouse.Simulation.Network;

namespace PlayHouse.Simulation.Tests.Network;

public sealed class ClogAndPartitionTests
{
    private static readonly TimeSpan Latency = TimeSpan.FromMilliseconds(10);

    public static TheoryData<int> Seeds { get; } = [.. Enumerable.Range(1, 20)];

    [Fact]
    public void Clog_HoldsEverything_ThenUnclogDeliversItAllInOrder()
    {
        var (h, pair) = NetworkHarness.Connected(new PathOptions { Latency = LatencyModel.Fixed(Latency), SplitProbability = 0 });
        var atServer = new DatagramProbe(h.Network, "server");
        h.Network.Clog("client", "server");

        // The first send is held when it comes due; the second is still on the wire when the path unclogs.
        Assert.True(pair.Client.Send([1]));
        h.Network.SendDatagram("client", "server", DatagramProbe.Datagram(0));
        h.RunFor(TimeSpan.FromMilliseconds(15));
        Assert.True(pair.Client.Send([2]));
        h.Network.SendDatagram("client", "server", DatagramProbe.Datagram(1));
        h.RunFor(TimeSpan.FromMilliseconds(5));

        Assert.Empty(pair.Server.Received);
        Assert.Empty(atServer.Arrivals);
        Assert.Equal(2, h.Network.HeldCount);
        h.Network.Unclog("client", "server");
        h.RunQuiet();

        Assert.Equal([1, 2], pair.Server.Received);

        // Datagrams promise no order: the one still on the wire at the unclog overtakes the held one, and the
        // network says so.
        Assert.Equal([1, 0], atServer.Arrivals);
        Assert.Equal(1, h.Counters.DatagramsReordered);
        Assert.Equal(0, h.Counters.DatagramsDropped);
        Assert.Equal(h.Counters.StreamSegmentsHeld, h.TraceCount("net.hold"));
        h.AssertNoBytesInFlight();
    }

    [Fact]
    public void HeldBytes_LeaveAfterAFreshLatencyFromTheUnclog_LikeARetransmission()
    {
        var (h, pair) = NetworkHarness.Connected(new PathOptions { Latency = LatencyModel.Fixed(Latency), SplitProbability = 0 });
        h.Network.Clog("client", "server");
        Assert.True(pair.Client.Send([1]));
        Assert.True(pair.Client.Send([2]));
        h.RunFor(TimeSpan.FromSeconds(1));
        var unclogTicks = h.World.NowTicks;
        h.Network.Unclog("client", "server");
        Assert.True(pair.Client.Send([3]));
        h.RunQuiet();

        Assert.Equal([1, 2, 3], pair.Server.Received);
        Assert.Equal([unclogTicks + Latency.Ticks, unclogTicks + Latency.Ticks, unclogTicks + Latency.Ticks], pair.Server.ChunkArrivalTicks);
        Assert.Equal(2, h.Counters.StreamSegmentsHeld);
    }

    [Theory]
    [MemberData(nameof(Seeds))]
    public void ClogThenUnclog_WithJitterAndSplits_NothingWhileClogged_EverythingInOrderAfter(int seed)
    {
        var options = new PathOptions { Latency = LatencyModel.Uniform(TimeSpan.FromMilliseconds(1), TimeSpan.FromMilliseconds(20)), SplitProbability = 0.5 };
        var (h, pair) = NetworkHarness.Connected(options, (ulong)seed);
        var random = new Xoshiro256StarStar((ulong)seed);
        h.Network.Clog("client", "server");
        for (var i = 0; i < 40; i++)
        {
            Assert.True(pair.Client.Send(1 + random.NextInt(50), random));
            Assert.True(pair.Server.Send(1 + random.NextInt(50), random));
            h.RunFor(TimeSpan.FromMilliseconds(random.NextInt(3)));
        }

        Assert.Empty(pair.Server.Received);
        Assert.True(h.Network.HeldCount > 0);

        // The clog is directed: the other way flows.
        Assert.NotEmpty(pair.Client.Received);
        h.Network.Unclog("client", "server");
        for (var i = 0; i < 10; i++)
        {
            Assert.True(pair.Client.Send(1 + random.NextInt(50), random));
        }

        h.RunQuiet();

        Assert.Equal(pair.Client.Sent, pair.Server.Received);
        Assert.Equal(pair.Server.Sent, pair.Client.Received);
        Assert.Equal(h.Counters.StreamSegmentsHeld, h.TraceCount("net.hold"));
        Assert.True(h.Counters.StreamSegmentsHeld > 0);
        h.AssertNoBytesInFlight();
    }

    [Fact]
    public void PartitionHealedWithinResetAfter_HoldsStreamData_AndDeliversItAfterTheHeal()
    {
        var (h, pair) = NetworkHarness.Connected(new PathOptions { Latency = LatencyModel.Fixed(Latency), SplitProbability = 0 });
        h.Network.StreamPartitionResetAfter = TimeSpan.FromSeconds(5);
        h.Network.Partition("client", "server");
        Assert.True(pair.Client.Send([1, 2]));
        Assert.True(pair.Server.Send([3]));
        h.RunFor(TimeSpan.FromSeconds(4));

        Assert.Empty(pair.Server.Received);
        Assert.Empty(pair.Client.Received);
        Assert.True(h.Network.IsPartitioned("server", "client"));
        h.Network.Heal("client", "server");
        h.RunQuiet();

        Assert.Equal([1, 2], pair.Server.Received);
        Assert.Equal([3], pair.Client.Received);
        Assert.Empty(pair.Client.CloseReasons);
        Assert.Empty(pair.Server.CloseReasons);
        Assert.Equal(0, h.Counters.ConnectionResets);
        h.AssertNoBytesInFlight();
    }

    [Fact]
    public void PartitionLongerThanResetAfter_ResetsBothEndsOnce_AndReleasesHeldBuffers()
    {
        var (h, pair) = NetworkHarness.Connected(new PathOptions { Latency = LatencyModel.Fixed(Latency), SplitProbability = 0.5 });
        h.Network.StreamPartitionResetAfter = TimeSpan.FromSeconds(5);
        h.Network.Partition("client", "server");
        Assert.True(pair.Client.Send(new byte[300]));
        h.RunFor(TimeSpan.FromSeconds(1));

        // The server's bytes are held on the other direction of the partition, armed later than the client's.
        Assert.True(pair.Server.Send(new byte[200]));
        h.RunQuiet();

        Assert.Single(pair.Client.CloseReasons);
        Assert.Single(pair.Server.CloseReasons);
        Assert.StartsWith("partitioned", pair.Client.CloseReasons[0], StringComparison.Ordinal);
        Assert.Equal(1, h.Counters.ConnectionResets);
        Assert.Empty(pair.Server.Received);
        Assert.Empty(pair.Client.Received);
        Assert.Empty(h.Network.OpenConnections);
        Assert.True(h.World.NowTicks >= TimeSpan.FromSeconds(5).Ticks);
        h.AssertNoBytesInFlight();
    }

    [Fact]
    public void PartitionHealedThenCutAgain_EachShorterThanResetAfter_DoesNotResetTheConnection()
    {
        var (h, pair) = NetworkHarness.Connected(new PathOptions { Latency = LatencyModel.Fixed(Latency), SplitProbability = 0 });
        h.Network.StreamPartitionResetAfter = TimeSpan.FromSeconds(5);
        h.Network.Partition("client", "server");
        Assert.True(pair.Client.Send([1]));
        h.RunFor(TimeSpan.FromSeconds(4));
        h.Network.Heal("client", "server");
        h.RunFor(TimeSpan.FromMilliseconds(500));
        h.Network.Partition("client", "server");
        Assert.True(pair.Client.Send([2]));
        h.RunFor(TimeSpan.FromSeconds(2));
        h.Network.Heal("client", "server");
        h.RunQuiet();

        Assert.Equal([1, 2], pair.Server.Received);
        Assert.Empty(pair.Client.CloseReasons);
        Assert.Equal(0, h.Counters.ConnectionResets);
        h.AssertNoBytesInFlight();
    }

    [Fact]
    public void PartitionOfACloggedPath_ResetsTheConnectionAfterResetAfter()
    {
        // The bytes were already held by the clog when the cut came; they are stuck behind the partition all the same.
        var (h, pair) = NetworkHarness.Connected(new PathOptions { Latency = LatencyModel.Fixed(Latency) });
        h.Network.StreamPartitionResetAfter = TimeSpan.FromSeconds(5);
        h.Network.Clog("client", "server");
        Assert.True(pair.Client.Send(new byte[50]));
        h.RunFor(TimeSpan.FromSeconds(1));
        var cutTicks = h.World.NowTicks;
        h.Network.Partition("client", "server");
        h.RunQuiet();

        Assert.Equal(1, h.Counters.ConnectionResets);
        Assert.Single(pair.Server.CloseReasons);
        Assert.Equal(cutTicks + TimeSpan.FromSeconds(5).Ticks, h.World.NowTicks);
        h.AssertNoBytesInFlight();
    }

    [Fact]
    public void OneWayPartition_BlocksOneDirectionOnly()
    {
        var (h, pair) = NetworkHarness.Connected(new PathOptions { Latency = LatencyModel.Fixed(Latency) });
        h.Network.Partition("client", "server", twoWay: false);

        Assert.True(h.Network.IsPartitioned("client", "server"));
        Assert.False(h.Network.IsPartitioned("server", "client"));
        Assert.True(pair.Client.Send([1]));
        Assert.True(pair.Server.Send([2]));
        h.RunFor(TimeSpan.FromSeconds(1));

        Assert.Empty(pair.Server.Received);
        Assert.Equal([2], pair.Client.Received);
        h.Network.Heal("client", "server", twoWay: false);
        h.RunQuiet();

        Assert.Equal([1], pair.Server.Received);
        h.AssertNoBytesInFlight();
    }

    [Fact]
    public void DatagramsAcrossAPartition_AreDroppedAndCounted_AndFlowAgainAfterTheHeal()
    {
        var h = new NetworkHarness(seed: 1, new PathOptions { Latency = LatencyModel.Fixed(Latency) });
        var atB = new DatagramProbe(h.Network, "b");
        var atA = new DatagramProbe(h.Network, "a");

        // One datagram is already on the wire when the partition starts; it is dropped on arrival.
        h.Network.SendDatagram("a", "b", DatagramProbe.Datagram(0));
        h.Network.Partition("a", "b", twoWay: false);
        for (var i = 1; i <= 5; i++)
        {
            h.Network.SendDatagram("a", "b", DatagramProbe.Datagram(i));
        }

        h.Network.SendDatagram("b", "a", DatagramProbe.Datagram(100));
        h.RunQuiet();

        Assert.Empty(atB.Arrivals);
        Assert.Equal([100], atA.Arrivals);
        Assert.Equal(6, h.Counters.DatagramsDropped);
        Assert.Equal(6, h.TraceCount("net.dgram-drop"));
        h.Network.HealAll();
        h.Network.SendDatagram("a", "b", DatagramProbe.Datagram(6));
        h.RunQuiet();

        Assert.Equal([6], atB.Arrivals);
        h.AssertNoBytesInFlight();
    }

    [Fact]
    public void Connect_WithNoListener_ClosesTheClientWithConnectionRefused()
    {
        var h = new NetworkHarness(seed: 1, new PathOptions { Latency = LatencyModel.Fixed(Latency) });
        var client = new StreamProbe(h.Network.Connect("client", "nowhere"), h.World);

        Assert.False(client.Connection.IsOpen);
        Assert.False(client.Send([1]));
        h.RunQuiet();

        Assert.Equal(["connection refused"], client.CloseReasons);
        Assert.Equal(Latency.Ticks, h.World.NowTicks);
        Assert.Equal(1, h.Counters.ConnectionsRefused);
        Assert.Equal(0, h.Counters.ConnectionsOpened);
        Assert.Empty(h.Network.OpenConnections);
    }

    [Theory]
    [InlineData(true)]
    [InlineData(false)]
    public void Connect_AcrossAPartition_ClosesTheClientWithConnectionRefused(bool forwardCut)
    {
        // A handshake needs both directions, so a cut either way refuses the connection.
        var h = new NetworkHarness(seed: 1, new PathOptions { Latency = LatencyModel.Fixed(Latency) });
        var accepted = 0;
        h.Network.Listen("server", _ => accepted++);
        if (forwardCut)
        {
            h.Network.Partition("client", "server", twoWay: false);
        }
        else
        {
            h.Network.Partition("server", "client", twoWay: false);
        }

        var client = new StreamProbe(h.Network.Connect("client", "server"), h.World);
        h.RunQuiet();

        Assert.Equal(["connection refused"], client.CloseReasons);
        Assert.Equal(0, accepted);
        Assert.Equal(1, h.Counters.ConnectionsRefused);
        Assert.Equal(1, h.TraceCount("net.refused"));
        Assert.Empty(h.Network.OpenConnections);
    }

    [Fact]
    public void ListenerGoneBeforeTheHandshakeArrives_ResetsBothEnds()
    {
        var h = new NetworkHarness(seed: 1, new PathOptions { Latency = LatencyModel.Fixed(Latency) });
        h.Listen("server");
        var pair = h.Connect("client", "server");
        Assert.True(pair.Client.Send(new byte[100]));
        h.Network.StopListening("server");
        h.RunQuiet();

        Assert.Equal(["listener went away"], pair.Client.CloseReasons);
        Assert.False(pair.IsAccepted);
        Assert.Equal(1, h.Counters.ConnectionResets);
        Assert.Empty(h.Network.OpenConnections);
        h.AssertNoBytesInFlight();
    }

    [Fact]
    public void GracefulCloseThroughAClog_DeliversTheBytesFirst_ThenTheClose()
    {
        var (h, pair) = NetworkHarness.Connected(new PathOptions { Latency = LatencyModel.Fixed(Latency) });
        h.Network.Clog("client", "server");
        Assert.True(pair.Client.Send([1, 2, 3]));
        pair.Client.Connection.Close("bye");
        h.RunFor(TimeSpan.FromSeconds(1));

        Assert.Empty(pair.Server.CloseReasons);
        Assert.True(pair.Server.Connection.IsOpen);
        h.Network.Unclog("client", "server");
        h.RunQuiet();

        Assert.Equal([1, 2, 3], pair.Server.Received);
        Assert.Equal(["bye"], pair.Server.CloseReasons);
        Assert.Empty(h.Network.OpenConnections);
        h.AssertNoBytesInFlight();
    }

    [Fact]
    public void ResetWhileBytesAreHeldByAClog_ReleasesThemAtOnce()
    {
        var (h, pair) = NetworkHarness.Connected(new PathOptions { Latency = LatencyModel.Fixed(Latency) });
        h.Network.Clog("client", "server");
        Assert.True(pair.Client.Send(new byte[100]));
        h.RunFor(TimeSpan.FromSeconds(1));
        Assert.Equal(1, h.Network.HeldCount);
        pair.Server.Connection.Reset("abort");
        h.RunQuiet();

        Assert.Equal(["abort"], pair.Client.CloseReasons);
        Assert.Equal(["abort"], pair.Server.CloseReasons);
        h.AssertNoBytesInFlight();
        Assert.Equal(100, h.Counters.StreamBytesDiscarded);
    }
}
