using PlayHouse.Core.Seams;
using PlayHouse.Simulation.Network;

namespace PlayHouse.Simulation.Tests.Network;

public sealed class NetworkDeterminismTests
{
    [Fact]
    public void SameSeedAndOperations_GiveTheSameTraceHashAndDeliveryTimes_AnotherSeedDoesNot()
    {
        var first = Run(seed: 42);
        var second = Run(seed: 42);
        var other = Run(seed: 43);

        Assert.Equal(first.Hash, second.Hash);
        Assert.Equal(first.DeliveryTicks, second.DeliveryTicks);
        Assert.Equal(first.Trace, second.Trace);
        Assert.NotEqual(first.Hash, other.Hash);
        Assert.NotEqual(first.DeliveryTicks, other.DeliveryTicks);
    }

    [Fact]
    public void SameSeed_WithScheduleExploration_GivesTheSameTraceHash()
    {
        var explore = new SimWorldOptions { ExploreSchedules = true };

        Assert.Equal(Run(seed: 7, explore).Hash, Run(seed: 7, explore).Hash);
    }

    private static (ulong Hash, List<long> DeliveryTicks, string Trace) Run(ulong seed, SimWorldOptions? worldOptions = null)
    {
        var options = new PathOptions
        {
            Latency = LatencyModel.Exponential(TimeSpan.FromMilliseconds(1), TimeSpan.FromMilliseconds(8), TimeSpan.FromMilliseconds(100)),
            LossProbability = 0.05,
            DuplicateProbability = 0.05,
            ReorderProbability = 0.1,
            SplitProbability = 0.3,
            BandwidthBytesPerSecond = 1_000_000,
        };
        var h = new NetworkHarness(seed, options, worldOptions);

        // The workload is fixed; only the network's draws depend on the seed.
        var workload = new Xoshiro256StarStar(1234);
        h.Listen("server");
        var atServer = new DatagramProbe(h.Network, "server");
        var pairs = Enumerable.Range(0, 3).Select(i => h.Connect($"client{i}", "server")).ToList();
        for (var round = 0; round < 60; round++)
        {
            foreach (var pair in pairs)
            {
                pair.Client.Send(1 + workload.NextInt(200), workload);
                if (pair.IsAccepted)
                {
                    pair.Server.Send(1 + workload.NextInt(200), workload);
                }
            }

            h.Network.SendDatagram("client0", "server", DatagramProbe.Datagram(round));
            if (round == 20)
            {
                h.Network.Clog("client1", "server");
            }

            if (round == 40)
            {
                h.Network.Unclog("client1", "server");
            }

            h.RunFor(TimeSpan.FromMilliseconds(workload.NextInt(5)));
        }

        h.RunQuiet();
        var deliveryTicks = pairs.SelectMany(p => p.Server.ChunkArrivalTicks.Concat(p.Client.ChunkArrivalTicks)).Concat(atServer.ArrivalTicks).ToList();
        return (h.World.Trace.Hash, deliveryTicks, h.TraceText);
    }
}
