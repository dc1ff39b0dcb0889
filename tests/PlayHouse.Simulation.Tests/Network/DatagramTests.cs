using PlayHouse.Simulation.Network;

namespace PlayHouse.Simulation.Tests.Network;

public sealed class DatagramTests
{
    public static TheoryData<int> Seeds { get; } = [.. Enumerable.Range(1, 50)];

    [Theory]
    [MemberData(nameof(Seeds))]
    public void Datagrams_UnderLossDuplicationAndReordering_CountsEqualWhatTheReceiverSawAndTheTrace(int seed)
    {
        var options = new PathOptions
        {
            Latency = LatencyModel.Uniform(TimeSpan.FromMilliseconds(2), TimeSpan.FromMilliseconds(4)),
            LossProbability = 0.1,
            DuplicateProbability = 0.15,
            ReorderProbability = 0.2,
            ReorderDelayMax = TimeSpan.FromMilliseconds(20),
        };
        var h = new NetworkHarness((ulong)seed, options);
        var atB = new DatagramProbe(h.Network, "b");
        var atA = new DatagramProbe(h.Network, "a");
        const int CountPerDirection = 200;
        for (var i = 0; i < CountPerDirection; i++)
        {
            h.Network.SendDatagram("a", "b", DatagramProbe.Datagram(i, 8 + (i % 50)));
            h.Network.SendDatagram("b", "a", DatagramProbe.Datagram(i));
            h.RunFor(TimeSpan.FromMilliseconds(1));
        }

        h.RunQuiet();

        var dropped = (2 * CountPerDirection) - atA.Distinct - atB.Distinct;
        var duplicated = atA.Duplicates + atB.Duplicates;
        var overtaken = atA.Overtaken + atB.Overtaken;
        Assert.True(dropped > 0 && duplicated > 0 && overtaken > 0, $"every fault should occur: dropped {dropped}, duplicated {duplicated}, overtaken {overtaken}");
        Assert.Equal(dropped, h.Counters.DatagramsDropped);
        Assert.Equal(dropped, h.TraceCount("net.dgram-drop"));
        Assert.Equal(duplicated, h.Counters.DatagramsDuplicated);
        Assert.Equal(duplicated, h.TraceCount("net.dgram-dup"));
        Assert.Equal(overtaken, h.Counters.DatagramsReordered);
        Assert.Equal(overtaken, h.TraceCount("net.dgram-reordered"));
        Assert.Equal(2 * CountPerDirection, h.Counters.DatagramsSent);
        Assert.Equal(atA.Arrivals.Count + atB.Arrivals.Count, h.Counters.DatagramsDelivered);
        Assert.Equal(h.Counters.DatagramsDelivered, h.TraceCount("net.dgram-deliver"));
        Assert.All(atB.Senders, s => Assert.Equal("a", s));
        h.AssertNoBytesInFlight();
    }

    [Fact]
    public void Datagrams_WithoutFaults_ArriveOnceInSendOrderAfterTheFixedLatency()
    {
        var h = new NetworkHarness(seed: 1, new PathOptions { Latency = LatencyModel.Fixed(TimeSpan.FromMilliseconds(7)) });
        var atB = new DatagramProbe(h.Network, "b");
        var sentAtTicks = new List<long>();
        for (var i = 0; i < 20; i++)
        {
            sentAtTicks.Add(h.World.NowTicks);
            h.Network.SendDatagram("a", "b", DatagramProbe.Datagram(i));
            h.RunFor(TimeSpan.FromMilliseconds(i % 3));
        }

        h.RunQuiet();

        Assert.Equal(Enumerable.Range(0, 20), atB.Arrivals);
        Assert.Equal(sentAtTicks.Select(t => t + TimeSpan.FromMilliseconds(7).Ticks), atB.ArrivalTicks);
        h.AssertNoBytesInFlight();
    }

    [Fact]
    public void Datagram_ToAnEndpointNobodyIsBoundTo_IsCountedAsDropped()
    {
        var h = new NetworkHarness(seed: 2);
        var atB = new DatagramProbe(h.Network, "b");
        h.Network.SendDatagram("a", "nobody", DatagramProbe.Datagram(0));
        h.Network.SendDatagram("a", "b", DatagramProbe.Datagram(1));
        h.Network.Unbind("b");
        h.RunQuiet();

        Assert.Empty(atB.Arrivals);
        Assert.Equal(2, h.Counters.DatagramsDropped);
        Assert.Equal(2, h.TraceCount("net.dgram-drop"));
        Assert.Equal(0, h.Counters.DatagramsDelivered);
        h.AssertNoBytesInFlight();
    }

    [Fact]
    public void DuplicateCopy_ArrivesAfterTheOriginal_AndIsNotCountedAsReordered()
    {
        var h = new NetworkHarness(seed: 3, new PathOptions { Latency = LatencyModel.Fixed(TimeSpan.FromMilliseconds(1)), DuplicateProbability = 1, ReorderDelayMax = TimeSpan.FromMilliseconds(30) });
        var atB = new DatagramProbe(h.Network, "b");
        for (var i = 0; i < 30; i++)
        {
            h.Network.SendDatagram("a", "b", DatagramProbe.Datagram(i));
            h.RunFor(TimeSpan.FromMilliseconds(1));
        }

        h.RunQuiet();

        Assert.Equal(30, h.Counters.DatagramsDuplicated);
        Assert.Equal(60, atB.Arrivals.Count);
        Assert.Equal(Enumerable.Range(0, 30), atB.Arrivals.Distinct());
        Assert.Equal(0, atB.Overtaken);
        Assert.Equal(0, h.Counters.DatagramsReordered);
    }
}
