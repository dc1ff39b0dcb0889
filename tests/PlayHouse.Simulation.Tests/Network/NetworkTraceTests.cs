using PlayHouse.Simulation.Network;

namespace PlayHouse.Simulation.Tests.Network;

/// <summary>
/// The trace records the network writes for each thing it does: kind, the two numbers (connection or datagram, bytes
/// or peer) and the text (route, reason, options), line by line for a script that touches every kind once. The trace
/// is what a run's hash is taken over and what a reader of a failing seed follows, so its words are behaviour.
/// </summary>
public sealed class NetworkTraceTests
{
    private static readonly TimeSpan Latency = TimeSpan.FromMilliseconds(1);

    [Fact]
    public void StreamLifecycle_TracesConnectSendDeliverCloseAndRefusal_WithTheirConnectionsBytesAndRoutes()
    {
        var h = new NetworkHarness(seed: 1, new PathOptions { Latency = LatencyModel.Fixed(Latency), SplitProbability = 0, QueueCapacityBytes = 10 });
        h.Listen("server");
        var pair = h.Connect("client", "server");
        h.RunQuiet();
        Assert.True(pair.Client.Send([1, 2, 3]));
        Assert.False(pair.Client.Send(new byte[8]));
        h.RunQuiet();
        pair.Client.Connection.Close("bye");
        h.RunQuiet();
        h.Connect("client", "nobody");
        h.RunQuiet();

        Assert.Equal(
            [
                "0 net.connect 1 2 0 client->server",
                "10000 net.accept 2 0 0",
                "10000 net.send 1 3 0",
                "10000 net.refuse 1 8 0",
                "20000 net.deliver 2 3 0",
                "20000 net.close 1 0 0 bye",
                "30000 net.closed 2 0 0 bye",
                "30000 net.refused 3 0 0 client->nobody",
            ],
            NetworkLines(h));
    }

    [Fact]
    public void Faults_TraceRetransmitHoldDiscardResetAndPathChanges_WithTheirNumbersAndWords()
    {
        var options = new PathOptions { Latency = LatencyModel.Fixed(Latency), SplitProbability = 0, LossProbability = 1 };
        var h = new NetworkHarness(seed: 1, new PathOptions { Latency = LatencyModel.Fixed(Latency), SplitProbability = 0 });
        h.Listen("server");
        var pair = h.Connect("client", "server");
        h.RunQuiet();
        h.Network.SetPath("client", "server", options);
        Assert.True(pair.Client.Send([1]));
        h.RunQuiet();
        h.Network.SetDefaults(new PathOptions { Latency = LatencyModel.Uniform(Latency, Latency * 2), SplitProbability = 0 });
        h.Network.Clog("server", "client");
        Assert.True(pair.Server.Send([1, 2]));
        h.RunFor(TimeSpan.FromMilliseconds(5));
        h.Network.Partition("server", "client", twoWay: false);
        h.Network.Heal("server", "client", twoWay: false);
        pair.Client.Connection.Reset("pulled");
        h.RunQuiet();
        h.Network.Unclog("server", "client");
        var second = h.Connect("client", "server");
        h.RunQuiet();
        h.Network.SetPath("client", "server", options with { StreamLoss = StreamLossMode.Reset });
        Assert.True(second.Client.Send([7, 7]));
        h.RunQuiet();

        Assert.Equal(
            [
                "0 net.connect 1 2 0 client->server",
                "10000 net.accept 2 0 0",
                "10000 net.path 0 0 0 client->server fixed:1ms loss=1",
                "10000 net.retransmit 1 1 0",
                "10000 net.send 1 1 0",
                "2020000 net.deliver 2 1 0",
                "2020000 net.defaults 0 0 0 uniform:1-2ms",
                "2020000 net.clog 0 0 0 server->client",
                "2020000 net.send 2 2 0",
                "2070000 net.partition 0 0 0 server->client",
                "2070000 net.heal 0 0 0 server->client",
                "2070000 net.reset 1 0 0 pulled",
                "2070000 net.hold 2 2 0",
                "2070000 net.discard 2 2 0",
                "52070000 net.unclog 0 0 0 server->client",
                "52070000 net.connect 3 4 0 client->server",
                "52080000 net.accept 4 0 0",
                "52080000 net.path 0 0 0 client->server fixed:1ms loss=1",
                "52080000 net.loss-reset 3 2 0",
                "52080000 net.discard 3 2 0",
                "52080000 net.reset 3 0 0 segment lost",
            ],
            NetworkLines(h));
    }

    [Fact]
    public void Datagrams_TraceSendDelayDuplicateDeliverReorderAndDrop_WithTheirSequencesAndRoutes()
    {
        var h = new NetworkHarness(seed: 1, new PathOptions { Latency = LatencyModel.Fixed(Latency) });
        _ = new DatagramProbe(h.Network, "b");
        h.Network.SetPath("a", "b", new PathOptions { Latency = LatencyModel.Fixed(Latency), ReorderProbability = 1, ReorderDelayMax = TimeSpan.FromTicks(1), DuplicateProbability = 1 });
        h.Network.SendDatagram("a", "b", DatagramProbe.Datagram(0, 4));
        h.Network.SetPath("a", "b", new PathOptions { Latency = LatencyModel.Fixed(TimeSpan.Zero) });
        h.Network.SendDatagram("a", "b", DatagramProbe.Datagram(1, 4));
        h.RunQuiet();
        h.Network.SendDatagram("a", "nobody", DatagramProbe.Datagram(2, 4));

        // The first is on its way when the partition starts and is dropped when it arrives; the second at once.
        h.Network.SendDatagram("a", "b", DatagramProbe.Datagram(3, 4));
        h.Network.Partition("a", "b");
        h.Network.SendDatagram("a", "b", DatagramProbe.Datagram(4, 4));
        h.RunQuiet();

        var lines = NetworkLines(h).Where(l => l.Contains("dgram", StringComparison.Ordinal)).ToList();

        Assert.Equal(
            [
                "0 net.dgram-delay 1 4 0 a->b",
                "0 net.dgram-send 1 4 0 a->b",
                "0 net.dgram-dup 1 4 0 a->b",
                "0 net.dgram-send 2 4 0 a->b",
                "0 net.dgram-deliver 2 4 0 a->b",
                "10001 net.dgram-reordered 1 2 0 a->b",
                "10001 net.dgram-deliver 1 4 0 a->b",
                "10002 net.dgram-deliver 1 4 0 a->b",
                "10002 net.dgram-send 1 4 0 a->nobody",
                "10002 net.dgram-send 3 4 0 a->b",
                "10002 net.dgram-drop 4 4 0 a->b",
                "10002 net.dgram-drop 3 4 0 a->b",
                "20002 net.dgram-drop 1 4 0 a->nobody unbound",
            ],
            lines);
    }

    private static List<string> NetworkLines(NetworkHarness h) =>
        [.. h.TraceText.Split('\n').Where(l => l.Contains(" net.", StringComparison.Ordinal))];
}
