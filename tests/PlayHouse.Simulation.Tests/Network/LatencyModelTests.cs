using PlayHouse.Core.Seams;
using PlayHouse.Simulation.Network;

namespace PlayHouse.Simulation.Tests.Network;

public sealed class LatencyModelTests
{
    private const int SampleCount = 10_000;

    private static readonly TimeSpan MinLatency = TimeSpan.FromMilliseconds(1);

    [Fact]
    public void FixedLatency_EverySampleIsExactlyTheLatency()
    {
        var model = LatencyModel.Fixed(TimeSpan.FromMilliseconds(12.5));
        var random = new Xoshiro256StarStar(1);

        Assert.All(Samples(model, random, 1000), s => Assert.Equal(125_000, s));
    }

    [Fact]
    public void FixedLatency_OverTheNetwork_GivesExactArrivalTimes()
    {
        var h = new NetworkHarness(seed: 1, new PathOptions { Latency = LatencyModel.Fixed(TimeSpan.FromMilliseconds(12)) });
        h.Listen("server");
        var pair = h.Connect("client", "server");
        h.RunQuiet();
        Assert.Equal(TimeSpan.FromMilliseconds(12).Ticks, h.World.NowTicks);

        var sendTicks = new List<long>();
        for (var i = 0; i < 10; i++)
        {
            h.RunFor(TimeSpan.FromMilliseconds(3 * i));
            sendTicks.Add(h.World.NowTicks);
            Assert.True(pair.Client.Send([(byte)i]));
        }

        h.RunQuiet();

        Assert.Equal(sendTicks.Select(t => t + TimeSpan.FromMilliseconds(12).Ticks), pair.Server.ChunkArrivalTicks);
    }

    [Fact]
    public void PathOptions_ApplyPerDirectedPath_AndNewDefaultsReachOnlyPathsWithoutTheirOwn()
    {
        var h = new NetworkHarness(seed: 1, new PathOptions { Latency = LatencyModel.Fixed(TimeSpan.FromMilliseconds(10)) });
        var atA = new DatagramProbe(h.Network, "a");
        var atB = new DatagramProbe(h.Network, "b");
        h.Network.SetPath("a", "b", new PathOptions { Latency = LatencyModel.Fixed(TimeSpan.FromMilliseconds(50)) });
        h.Network.SendDatagram("a", "b", DatagramProbe.Datagram(0));
        h.Network.SendDatagram("b", "a", DatagramProbe.Datagram(0));
        h.RunQuiet();

        Assert.Equal([TimeSpan.FromMilliseconds(50).Ticks], atB.ArrivalTicks);
        Assert.Equal([TimeSpan.FromMilliseconds(10).Ticks], atA.ArrivalTicks);

        h.Network.SetDefaults(new PathOptions { Latency = LatencyModel.Fixed(TimeSpan.FromMilliseconds(30)) });
        var sentTicks = h.World.NowTicks;
        h.Network.SendDatagram("a", "b", DatagramProbe.Datagram(1));
        h.Network.SendDatagram("b", "a", DatagramProbe.Datagram(1));
        h.RunQuiet();

        Assert.Equal(sentTicks + TimeSpan.FromMilliseconds(50).Ticks, atB.ArrivalTicks.Last());
        Assert.Equal(sentTicks + TimeSpan.FromMilliseconds(30).Ticks, atA.ArrivalTicks.Last());
        Assert.Equal(TimeSpan.FromMilliseconds(30), h.Network.GetPath("x", "y").Latency.Min);
    }

    [Fact]
    public void UniformLatency_StaysWithinMinAndMax_AndReachesBothEnds()
    {
        var min = TimeSpan.FromMilliseconds(5);
        var max = TimeSpan.FromMilliseconds(25);
        var samples = Samples(LatencyModel.Uniform(min, max), new Xoshiro256StarStar(2), SampleCount);

        Assert.All(samples, s => Assert.InRange(s, min.Ticks, max.Ticks));
        var rangeTicks = max.Ticks - min.Ticks;
        Assert.True(samples.Min() < min.Ticks + (rangeTicks / 100), "the low end of the range is never drawn");
        Assert.True(samples.Max() > max.Ticks - (rangeTicks / 100), "the high end of the range is never drawn");
        Assert.InRange(samples.Average(), TimeSpan.FromMilliseconds(14.5).Ticks, TimeSpan.FromMilliseconds(15.5).Ticks);
    }

    [Fact]
    public void ExponentialLatency_NeverBelowMinNorAboveMax_WithTheMeanItWasGiven()
    {
        var max = TimeSpan.FromMilliseconds(200);
        var samples = Samples(LatencyModel.Exponential(MinLatency, TimeSpan.FromMilliseconds(10), max), new Xoshiro256StarStar(3), SampleCount);

        Assert.All(samples, s => Assert.InRange(s, MinLatency.Ticks, max.Ticks));

        // The excess over the minimum is exponential with mean 9 ms (the cut at 199 ms removes a negligible tail);
        // its standard error over 10k samples is 0.09 ms, so half a millisecond either way is a wide band.
        Assert.InRange(samples.Average(), TimeSpan.FromMilliseconds(9.5).Ticks, TimeSpan.FromMilliseconds(10.5).Ticks);

        // An exponential's median is ln 2 of its mean.
        Assert.InRange(Median(samples), TimeSpan.FromMilliseconds(1 + (9 * 0.6)).Ticks, TimeSpan.FromMilliseconds(1 + (9 * 0.8)).Ticks);
    }

    [Fact]
    public void LongTailLatency_NeverBelowMinNorAboveMax_MostlyFastWithASaneMean()
    {
        var max = TimeSpan.FromSeconds(1);
        var samples = Samples(LatencyModel.LongTail(MinLatency, TimeSpan.FromMilliseconds(10), max), new Xoshiro256StarStar(4), SampleCount);

        Assert.All(samples, s => Assert.InRange(s, MinLatency.Ticks, max.Ticks));

        // Pareto alpha 1.5 with scale 3 ms above the 1 ms minimum, cut at 1 s: the mean is 9.67 ms, but the
        // variance is infinite, so the band is wide; the median, 1 + 3 * 2^(2/3) = 5.76 ms, is tight.
        Assert.InRange(samples.Average(), TimeSpan.FromMilliseconds(7).Ticks, TimeSpan.FromMilliseconds(13).Ticks);
        Assert.InRange(Median(samples), TimeSpan.FromMilliseconds(5.4).Ticks, TimeSpan.FromMilliseconds(6.1).Ticks);
        Assert.True(samples.Min() < TimeSpan.FromMilliseconds(4.1).Ticks, "no sample near the Pareto scale");
        Assert.True(samples.Max() > TimeSpan.FromMilliseconds(200).Ticks, "no long tail in 10k samples");
    }

    [Theory]
    [InlineData(LatencyShape.Exponential)]
    [InlineData(LatencyShape.LongTail)]
    public void ExtremeDraws_FromASlowPath_AreClampedAtMax_NotWrappedBelowMin(LatencyShape shape)
    {
        // The largest double below one makes the heaviest draw the generator can produce; with a mean of minutes
        // it exceeds the range of a long, which must clamp at Max and never overflow into a negative latency.
        var min = TimeSpan.FromMilliseconds(1);
        var mean = TimeSpan.FromMinutes(10);
        var max = TimeSpan.FromHours(1);
        var model = new LatencyModel(shape, min, max, mean);

        Assert.Equal(max.Ticks, model.SampleTicks(new ConstantRandom(ulong.MaxValue)));
        Assert.InRange(model.SampleTicks(new ConstantRandom(0)), min.Ticks, max.Ticks);
    }

    [Fact]
    public void SameSeed_GivesTheSameSamples()
    {
        var model = LatencyModel.LongTail(MinLatency, TimeSpan.FromMilliseconds(10), TimeSpan.FromSeconds(1));

        Assert.Equal(Samples(model, new Xoshiro256StarStar(5), 100), Samples(model, new Xoshiro256StarStar(5), 100));
        Assert.NotEqual(Samples(model, new Xoshiro256StarStar(5), 100), Samples(model, new Xoshiro256StarStar(6), 100));
    }

    [Fact]
    public void PathOptions_OutOfRange_AreRejected()
    {
        Assert.Throws<ArgumentOutOfRangeException>(() => new PathOptions { LossProbability = 1.5 }.Validate());
        Assert.Throws<ArgumentOutOfRangeException>(() => new PathOptions { SplitProbability = double.NaN }.Validate());
        Assert.Throws<ArgumentException>(() => new PathOptions { QueueCapacityBytes = 0 }.Validate());
        Assert.Throws<ArgumentException>(() => new PathOptions { Latency = LatencyModel.Uniform(TimeSpan.FromMilliseconds(5), TimeSpan.FromMilliseconds(1)) }.Validate());
        Assert.Throws<ArgumentException>(() => new PathOptions { Latency = LatencyModel.Exponential(TimeSpan.FromMilliseconds(1), TimeSpan.FromMilliseconds(300), TimeSpan.FromMilliseconds(200)) }.Validate());
        Assert.Throws<ArgumentException>(() => new PathOptions { Latency = LatencyModel.LongTail(TimeSpan.FromMilliseconds(5), TimeSpan.FromMilliseconds(1), TimeSpan.FromMilliseconds(200)) }.Validate());
        Assert.Throws<ArgumentException>(() => new PathOptions { RetransmitDelay = TimeSpan.FromMilliseconds(-1) }.Validate());
        Assert.Throws<ArgumentException>(() => new PathOptions { ReorderDelayMax = TimeSpan.FromMilliseconds(-1) }.Validate());
        new PathOptions { Latency = LatencyModel.LongTail(TimeSpan.FromMilliseconds(1), TimeSpan.FromMilliseconds(10), TimeSpan.FromSeconds(1)) }.Validate();
        Assert.Throws<ArgumentException>(() => new SimNetwork(new SimWorld(1), new Xoshiro256StarStar(1), new PathOptions { BandwidthBytesPerSecond = -1 }));
    }

    private static long[] Samples(LatencyModel model, IRandomSource random, int count)
    {
        var samples = new long[count];
        for (var i = 0; i < count; i++)
        {
            samples[i] = model.SampleTicks(random);
        }

        return samples;
    }

    private static long Median(long[] samples)
    {
        var sorted = samples.Order().ToArray();
        return sorted[sorted.Length / 2];
    }

    private sealed class ConstantRandom(ulong value) : IRandomSource
    {
        public ulong NextUInt64() => value;
    }
}
