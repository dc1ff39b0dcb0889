using PlayHouse.Simulation.Network;

namespace PlayHouse.Sim.Cli.Tests;

public sealed class BareLoopTests
{
    [Fact]
    public void BareLoop_CompletesEveryRoundTripWithRttWithinTheLatencyBoundsPlusRetransmits()
    {
        var options = new BareLoopOptions
        {
            Clients = 10,
            Stages = 3,
            InFlight = 4,
            RequestsPerClient = 25,
            MessageBytes = 64,
            Latency = LatencyModel.Uniform(TimeSpan.FromMilliseconds(1), TimeSpan.FromMilliseconds(20)),
            LossProbability = 0,
            RetransmitDelay = TimeSpan.FromMilliseconds(200),
            Seed = 3,
        };

        var result = BareLoop.Run(options);

        Assert.Equal(250, result.RoundTrips);

        // Three hops per round trip beyond the send: arrival, stage turn, reply arrival.
        Assert.Equal(250 * 3, result.Events);
        var meanRttMs = result.RttTicksSum / (double)result.RoundTrips / TimeSpan.TicksPerMillisecond;
        Assert.InRange(meanRttMs, 2, 40);
        Assert.Equal(result, BareLoop.Run(options));
    }
}
