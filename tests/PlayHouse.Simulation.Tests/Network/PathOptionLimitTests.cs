using PlayHouse.Simulation.Network;

namespace PlayHouse.Simulation.Tests.Network;

/// <summary>
/// Every numeric <see cref="PathOptions"/> limit at its bound and one past it: each probability at 0 and 1 (never and
/// always) and the nearest doubles outside them, the queue cap one byte below, at and above, the bandwidth's rounding at
/// an exact and an inexact transmit time, and the extra delays at zero and at their maximum.
/// </summary>
public sealed class PathOptionLimitTests
{
    private static readonly TimeSpan Latency = TimeSpan.FromMilliseconds(10);
    private static readonly TimeSpan OneTick = TimeSpan.FromTicks(1);

    public static TheoryData<string> Probabilities() =>
    [
        nameof(PathOptions.LossProbability),
        nameof(PathOptions.DuplicateProbability),
        nameof(PathOptions.ReorderProbability),
        nameof(PathOptions.SplitProbability),
    ];

    [Theory]
    [MemberData(nameof(Probabilities))]
    public void Probability_AcceptsZeroAndOne_AndRefusesTheNearestValuesOutside(string name)
    {
        WithProbability(name, 0).Validate();
        WithProbability(name, 1).Validate();

        var below = Assert.Throws<ArgumentOutOfRangeException>(WithProbability(name, Math.BitDecrement(0.0)).Validate);
        var above = Assert.Throws<ArgumentOutOfRangeException>(WithProbability(name, Math.BitIncrement(1.0)).Validate);
        Assert.Throws<ArgumentOutOfRangeException>(WithProbability(name, double.NaN).Validate);

        Assert.Equal((name, name), (below.ParamName, above.ParamName));
    }

    [Theory]
    [InlineData("QueueCapacityBytes")]
    [InlineData("BandwidthBytesPerSecond")]
    [InlineData("RetransmitDelay")]
    [InlineData("ReorderDelayMax")]
    [InlineData("Latency.Min")]
    [InlineData("Latency.Max")]
    [InlineData("Latency.Mean below")]
    [InlineData("Latency.Mean above")]
    public void RangeLimit_IsAcceptedAtItsBound_AndRefusedOnePast(string limit)
    {
        var (atBound, pastBound) = RangeBound(limit);

        atBound.Validate();
        var error = Assert.Throws<ArgumentException>(pastBound.Validate);

        Assert.Contains("Path options out of range", error.Message, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData(-1)]
    [InlineData(0)]
    [InlineData(1)]
    public void StreamSend_ThatFillsTheQueueToQueueCapacityBytesIsTaken_AndOneByteMoreIsRefused(int bytesPastTheCap)
    {
        var (h, pair) = NetworkHarness.Connected(new PathOptions { Latency = LatencyModel.Fixed(Latency), QueueCapacityBytes = 1000, SplitProbability = 0 });
        Assert.True(pair.Client.Send(new byte[300]));

        var taken = pair.Client.Send(new byte[700 + bytesPastTheCap]);

        Assert.Equal(bytesPastTheCap <= 0, taken);
        Assert.Equal(taken ? 1000 + bytesPastTheCap : 300, pair.Client.Connection.QueuedBytes);
        Assert.Equal(taken ? 0 : 1, h.Counters.StreamSendsRefused);
        h.RunQuiet();
        h.AssertNoBytesInFlight();
    }

    [Theory]
    [InlineData(0.0, 0)]
    [InlineData(1.0, 20)]
    public void DatagramLoss_AtZeroDropsNone_AndAtOneDropsEvery(double lossProbability, int dropped)
    {
        var h = new NetworkHarness(seed: 5, new PathOptions { Latency = LatencyModel.Fixed(Latency), LossProbability = lossProbability });
        var atB = new DatagramProbe(h.Network, "b");
        SendDatagrams(h, 20);

        Assert.Equal(dropped, h.Counters.DatagramsLost);
        Assert.Equal(20 - dropped, atB.Distinct);
    }

    [Theory]
    [InlineData(0.0, 0)]
    [InlineData(1.0, 20)]
    public void DatagramDuplication_AtZeroCopiesNone_AndAtOneCopiesEvery(double duplicateProbability, int copies)
    {
        var h = new NetworkHarness(seed: 5, new PathOptions { Latency = LatencyModel.Fixed(Latency), DuplicateProbability = duplicateProbability });
        var atB = new DatagramProbe(h.Network, "b");
        SendDatagrams(h, 20);

        Assert.Equal(copies, atB.Duplicates);
        Assert.Equal(20, atB.Distinct);
    }

    [Theory]
    [InlineData(0.0, 0)]
    [InlineData(1.0, 20)]
    public void StreamSplitting_AtZeroSplitsNoSend_AndAtOneSplitsEveryMultiByteSend(double splitProbability, int split)
    {
        var (h, pair) = NetworkHarness.Connected(new PathOptions { Latency = LatencyModel.Fixed(Latency), SplitProbability = splitProbability });
        for (var i = 0; i < 20; i++)
        {
            Assert.True(pair.Client.Send(new byte[64]));
        }

        Assert.True(pair.Client.Send(new byte[1]));
        h.RunQuiet();

        Assert.Equal(20, h.Counters.StreamSplitOpportunities);
        Assert.Equal(split, h.Counters.StreamSegmentsSplit);
        Assert.Equal(pair.Client.Sent, pair.Server.Received);
    }

    [Theory]
    [InlineData(0L)]
    [InlineData(1L)]
    [InlineData(50L * TimeSpan.TicksPerMillisecond)]
    public void ReorderedDatagram_IsDelayedAtLeastOneTick_AndAtMostReorderDelayMax(long reorderDelayMaxTicks)
    {
        var h = new NetworkHarness(seed: 9, new PathOptions { Latency = LatencyModel.Fixed(Latency), ReorderProbability = 1, ReorderDelayMax = TimeSpan.FromTicks(reorderDelayMaxTicks) });
        var atB = new DatagramProbe(h.Network, "b");
        var sentAt = h.World.NowTicks;
        for (var i = 0; i < 50; i++)
        {
            h.Network.SendDatagram("a", "b", DatagramProbe.Datagram(i));
        }

        h.RunQuiet();

        // A delay of zero still delays by one tick, so a delayed datagram never ties with one sent undelayed.
        var extra = atB.ArrivalTicks.Select(t => t - sentAt - Latency.Ticks).ToList();
        Assert.Equal(50, h.Counters.DatagramsDelayed);
        Assert.All(extra, e => Assert.InRange(e, 1, Math.Max(1, reorderDelayMaxTicks)));
    }

    [Theory]
    [InlineData(0L)]
    [InlineData(200L * TimeSpan.TicksPerMillisecond)]
    public void RetransmittedStreamSegment_ArrivesExactlyRetransmitDelayLate(long retransmitDelayTicks)
    {
        var (h, pair) = NetworkHarness.Connected(new PathOptions { Latency = LatencyModel.Fixed(Latency), LossProbability = 1, RetransmitDelay = TimeSpan.FromTicks(retransmitDelayTicks), SplitProbability = 0 });
        var sentAt = h.World.NowTicks;

        Assert.True(pair.Client.Send(new byte[10]));
        h.RunQuiet();

        Assert.Equal(1, h.Counters.StreamRetransmits);
        Assert.Equal(sentAt + Latency.Ticks + retransmitDelayTicks, pair.Server.ChunkArrivalTicks.Single());
    }

    [Theory]
    [InlineData(1000L, 1000, 1L * TimeSpan.TicksPerSecond)]
    [InlineData(1000L, 1001, 1_001L * TimeSpan.TicksPerMillisecond)]
    [InlineData(3L, 1, 3_333_334L)]
    [InlineData(0L, 1_000_000, 0L)]
    public void Bandwidth_TakesTheTransmitTimeRoundedUpToATick_AndZeroMeansUnlimited(long bytesPerSecond, int sendBytes, long transmitTicks)
    {
        var (h, pair) = NetworkHarness.Connected(new PathOptions { Latency = LatencyModel.Fixed(Latency), BandwidthBytesPerSecond = bytesPerSecond, SplitProbability = 0, QueueCapacityBytes = 2_000_000 });
        var sentAt = h.World.NowTicks;

        Assert.True(pair.Client.Send(new byte[sendBytes]));
        h.RunQuiet();

        Assert.Equal(sentAt + transmitTicks + Latency.Ticks, pair.Server.ChunkArrivalTicks.Single());
    }

    private static void SendDatagrams(NetworkHarness h, int count)
    {
        for (var i = 0; i < count; i++)
        {
            h.Network.SendDatagram("a", "b", DatagramProbe.Datagram(i));
        }

        h.RunQuiet();
    }

    /// <summary>Options with one range limit at its bound, and the same one step past it.</summary>
    private static (PathOptions AtBound, PathOptions PastBound) RangeBound(string limit) => limit switch
    {
        "QueueCapacityBytes" => (new PathOptions { QueueCapacityBytes = 1 }, new PathOptions { QueueCapacityBytes = 0 }),
        "BandwidthBytesPerSecond" => (new PathOptions { BandwidthBytesPerSecond = 0 }, new PathOptions { BandwidthBytesPerSecond = -1 }),
        "RetransmitDelay" => (new PathOptions { RetransmitDelay = TimeSpan.Zero }, new PathOptions { RetransmitDelay = -OneTick }),
        "ReorderDelayMax" => (new PathOptions { ReorderDelayMax = TimeSpan.Zero }, new PathOptions { ReorderDelayMax = -OneTick }),
        "Latency.Min" => (new PathOptions { Latency = LatencyModel.Fixed(TimeSpan.Zero) }, new PathOptions { Latency = LatencyModel.Fixed(-OneTick) }),
        "Latency.Max" => (
            new PathOptions { Latency = LatencyModel.Uniform(Latency, Latency) },
            new PathOptions { Latency = new LatencyModel(LatencyShape.Uniform, Latency, Latency - OneTick, Latency - OneTick) }),
        "Latency.Mean below" => (
            new PathOptions { Latency = LatencyModel.Exponential(Latency, Latency, Latency * 2) },
            new PathOptions { Latency = LatencyModel.Exponential(Latency, Latency - OneTick, Latency * 2) }),
        "Latency.Mean above" => (
            new PathOptions { Latency = LatencyModel.LongTail(Latency, Latency * 2, Latency * 2) },
            new PathOptions { Latency = LatencyModel.LongTail(Latency, (Latency * 2) + OneTick, Latency * 2) }),
        _ => throw new ArgumentOutOfRangeException(nameof(limit), limit, "not a PathOptions range limit"),
    };

    private static PathOptions WithProbability(string name, double value) => name switch
    {
        nameof(PathOptions.LossProbability) => new PathOptions { LossProbability = value },
        nameof(PathOptions.DuplicateProbability) => new PathOptions { DuplicateProbability = value },
        nameof(PathOptions.ReorderProbability) => new PathOptions { ReorderProbability = value },
        nameof(PathOptions.SplitProbability) => new PathOptions { SplitProbability = value },
        _ => throw new ArgumentOutOfRangeException(nameof(name), name, "not a PathOptions probability"),
    };
}
