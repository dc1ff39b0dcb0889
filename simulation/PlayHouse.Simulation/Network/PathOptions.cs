using PlayHouse.Core.Seams;

namespace PlayHouse.Simulation.Network;

/// <summary>The shape of a path's one-way latency distribution.</summary>
public enum LatencyShape
{
    Fixed,
    Uniform,
    Exponential,

    /// <summary>Pareto (alpha 1.5) above the minimum, clamped at the maximum: mostly fast, sometimes very slow.</summary>
    LongTail,
}

/// <summary>A one-way latency distribution. All draws are in ticks of 100 ns from the path's PRNG.</summary>
public sealed record LatencyModel(LatencyShape Shape, TimeSpan Min, TimeSpan Max, TimeSpan Mean)
{
    public static LatencyModel Zero { get; } = Fixed(TimeSpan.Zero);

    public static LatencyModel Fixed(TimeSpan latency) => new(LatencyShape.Fixed, latency, latency, latency);

    public static LatencyModel Uniform(TimeSpan min, TimeSpan max) => new(LatencyShape.Uniform, min, max, (min + max) / 2);

    public static LatencyModel Exponential(TimeSpan min, TimeSpan mean, TimeSpan max) => new(LatencyShape.Exponential, min, max, mean);

    public static LatencyModel LongTail(TimeSpan min, TimeSpan mean, TimeSpan max) => new(LatencyShape.LongTail, min, max, mean);

    public long SampleTicks(IRandomSource random)
    {
        var min = Min.Ticks;
        var max = Math.Max(min, Max.Ticks);
        return Shape switch
        {
            LatencyShape.Fixed => min,
            LatencyShape.Uniform => max == min ? min : random.NextLong(min, max + 1),
            LatencyShape.Exponential => ExponentialDraw(min, max, random.NextDouble()),
            LatencyShape.LongTail => LongTailDraw(min, max, random.NextDouble()),
            _ => throw new InvalidOperationException($"Unknown latency shape {Shape}."),
        };
    }

    public override string ToString() => Shape switch
    {
        LatencyShape.Fixed => $"fixed:{Min.TotalMilliseconds}ms",
        LatencyShape.Uniform => $"uniform:{Min.TotalMilliseconds}-{Max.TotalMilliseconds}ms",
        _ => $"{Shape.ToString().ToLowerInvariant()}:{Min.TotalMilliseconds}/{Mean.TotalMilliseconds}/{Max.TotalMilliseconds}ms",
    };

    private long ExponentialDraw(long min, long max, double unit)
    {
        var scale = Math.Max(0, Mean.Ticks - min);
        return AboveMin(min, max, -Math.Log(1.0 - unit) * scale);
    }

    private long LongTailDraw(long min, long max, double unit)
    {
        // Pareto with alpha 1.5 has mean xm * 3; choose xm so the mean above the minimum matches.
        var scale = Math.Max(0, Mean.Ticks - min) / 3.0;
        return AboveMin(min, max, scale * Math.Pow(1.0 - unit, -1.0 / 1.5));
    }

    /// <summary>
    /// Adds a draw to the minimum, clamped at the maximum. The clamp is taken in floating point first: a heavy
    /// tail draw can exceed the range of a long, and the saturated cast plus the minimum would wrap negative.
    /// </summary>
    private static long AboveMin(long min, long max, double drawTicks) =>
        min + (long)Math.Min(drawTicks, max - min);
}

/// <summary>What loss means on a stream connection, which keeps TCP's promise (in order, or broken).</summary>
public enum StreamLossMode
{
    /// <summary>A lost segment is retransmitted: it and everything behind it arrive later.</summary>
    Retransmit,

    /// <summary>A lost segment breaks the connection: both ends see a reset.</summary>
    Reset,
}

/// <summary>The behaviour of one directed path between two endpoints.</summary>
public sealed record PathOptions
{
    public LatencyModel Latency { get; init; } = LatencyModel.Zero;

    /// <summary>Per segment or datagram. On streams see <see cref="StreamLoss"/>.</summary>
    public double LossProbability { get; init; }

    /// <summary>Datagrams only: a second copy arrives later.</summary>
    public double DuplicateProbability { get; init; }

    /// <summary>Datagrams only: an extra delay up to <see cref="ReorderDelayMax"/>, so later datagrams may overtake.</summary>
    public double ReorderProbability { get; init; }

    public TimeSpan ReorderDelayMax { get; init; } = TimeSpan.FromMilliseconds(50);

    /// <summary>0 = unlimited; otherwise sends queue behind each other at this rate.</summary>
    public long BandwidthBytesPerSecond { get; init; }

    /// <summary>Bytes a stream end may have queued and not yet delivered before sends are refused.</summary>
    public int QueueCapacityBytes { get; init; } = 4 * 1024 * 1024;

    public StreamLossMode StreamLoss { get; init; } = StreamLossMode.Retransmit;

    /// <summary>Extra delay of a retransmitted stream segment.</summary>
    public TimeSpan RetransmitDelay { get; init; } = TimeSpan.FromMilliseconds(200);

    /// <summary>Probability that a stream send is delivered as several chunks split at random offsets (exercises framing).</summary>
    public double SplitProbability { get; init; } = 0.1;

    public void Validate()
    {
        Probability(LossProbability, nameof(LossProbability));
        Probability(DuplicateProbability, nameof(DuplicateProbability));
        Probability(ReorderProbability, nameof(ReorderProbability));
        Probability(SplitProbability, nameof(SplitProbability));
        // A mean outside [Min, Max] could never be the mean of the clamped draws; a negative delay would let a
        // retransmitted or reordered message arrive earlier than an undisturbed one.
        if (BandwidthBytesPerSecond < 0 || QueueCapacityBytes <= 0 || Latency.Min < TimeSpan.Zero || Latency.Max < Latency.Min
            || Latency.Mean < Latency.Min || Latency.Mean > Latency.Max || RetransmitDelay < TimeSpan.Zero || ReorderDelayMax < TimeSpan.Zero)
        {
            throw new ArgumentException($"Path options out of range: {this}.");
        }
    }

    private static void Probability(double p, string name)
    {
        if (p is < 0 or > 1 || double.IsNaN(p))
        {
            throw new ArgumentOutOfRangeException(name, p, $"{name} must be within [0, 1].");
        }
    }
}
