namespace PlayHouse.Simulation.Metrics;

/// <summary>
/// A fixed-memory log-linear histogram of non-negative longs (latencies in ticks of 100 ns), in the spirit of
/// HdrHistogram but written here because HdrHistogram is not on the package mirror.
/// </summary>
/// <remarks>
/// <para>
/// Layout: with <c>k</c> = <see cref="PrecisionBits"/>, values below <c>2^(k+1)</c> each have their own bucket,
/// so small values are exact. Above that, every power-of-two range <c>[2^(k+i), 2^(k+i+1))</c> is split into
/// <c>2^k</c> equal buckets of width <c>2^i</c>. A bucket's width is therefore below <c>2^-k</c> of any value in
/// it, which bounds the relative error of every reported percentile by <see cref="RelativeErrorMax"/>.
/// </para>
/// <para>
/// Min, Max, Mean and the sum are exact (kept beside the buckets), not bucket-rounded. The sum is an
/// <see cref="Int128"/>, so the mean does not depend on the order values were recorded or merged in.
/// </para>
/// <para>
/// Empty histogram: <see cref="Count"/>, <see cref="Min"/>, <see cref="Max"/>, <see cref="Mean"/> and every
/// <see cref="ValueAtPercentile"/> are 0.
/// </para>
/// <para>Not thread-safe; one histogram per client or per merge target.</para>
/// </remarks>
public sealed class LatencyHistogram
{
    /// <summary>Default precision: 7 bits, 128 buckets per power of two, relative error below 1/128 (0.78%).</summary>
    public const int DefaultPrecisionBits = 7;

    /// <summary>Default ceiling: one minute in ticks, far above any timeout a scenario uses.</summary>
    public const long DefaultHighestTrackableValue = TimeSpan.TicksPerMinute;

    // Past 20 bits a histogram needs megabytes per power of two; nobody measures latency that finely.
    private const int PrecisionBitsMax = 20;

    private readonly long[] _counts;
    private readonly int _halfSubBucketCount;
    private Int128 _sum;

    /// <param name="highestTrackableValue">Largest value recorded as itself; larger values are clamped to it
    /// and counted in <see cref="Saturated"/>.</param>
    /// <param name="precisionBits">k: each power of two is split into 2^k buckets, so the relative error of a
    /// reported value is below 2^-k. Between 1 and 20.</param>
    public LatencyHistogram(long highestTrackableValue = DefaultHighestTrackableValue, int precisionBits = DefaultPrecisionBits)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(precisionBits, 1);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(precisionBits, PrecisionBitsMax);
        ArgumentOutOfRangeException.ThrowIfLessThan(highestTrackableValue, 1);

        PrecisionBits = precisionBits;
        HighestTrackableValue = highestTrackableValue;
        _halfSubBucketCount = 1 << precisionBits;
        // The bucket of the highest value is the last one: IndexOf is monotonic in the value.
        _counts = new long[IndexOf(highestTrackableValue) + 1];
    }

    /// <summary>k: each power of two above 2^(k+1) is split into 2^k buckets.</summary>
    public int PrecisionBits { get; }

    /// <summary>Largest value recorded as itself.</summary>
    public long HighestTrackableValue { get; }

    /// <summary>Upper bound (exclusive) of the relative error of <see cref="ValueAtPercentile"/>: 2^-k.</summary>
    public double RelativeErrorMax => 1.0 / _halfSubBucketCount;

    /// <summary>Number of buckets, which is the whole memory cost: 8 bytes each.</summary>
    public int BucketCount => _counts.Length;

    /// <summary>Samples recorded (including saturated ones).</summary>
    public long Count { get; private set; }

    /// <summary>Samples above <see cref="HighestTrackableValue"/>, recorded as that value.</summary>
    public long Saturated { get; private set; }

    /// <summary>Smallest recorded value (after clamping); 0 when empty.</summary>
    public long Min { get; private set; }

    /// <summary>Largest recorded value (after clamping); 0 when empty.</summary>
    public long Max { get; private set; }

    /// <summary>Exact sum of the recorded values (after clamping).</summary>
    public Int128 Sum => _sum;

    /// <summary>Exact mean of the recorded values (after clamping), rounded once to a double; 0 when empty.</summary>
    public double Mean => Count == 0 ? 0 : (double)_sum / Count;

    /// <summary>Records one sample. O(1), allocates nothing.</summary>
    public void Record(long value) => RecordMany(value, 1);

    /// <summary>Records <paramref name="count"/> samples of the same value. O(1), allocates nothing.</summary>
    public void RecordMany(long value, long count)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(value);
        ArgumentOutOfRangeException.ThrowIfNegative(count);
        if (count == 0)
        {
            return;
        }

        if (value > HighestTrackableValue)
        {
            value = HighestTrackableValue;
            Saturated += count;
        }

        _counts[IndexOf(value)] += count;
        _sum += (Int128)value * count;
        if (Count == 0)
        {
            Min = value;
            Max = value;
        }
        else
        {
            Min = Math.Min(Min, value);
            Max = Math.Max(Max, value);
        }

        Count += count;
    }

    /// <summary>
    /// The smallest bucket value such that at least <paramref name="percentile"/>% of the samples are less than or
    /// equal to it. The bucket value is the highest value the bucket holds, capped at <see cref="Max"/>, so it never
    /// understates: it is at least the exact percentile and above it by less than <see cref="RelativeErrorMax"/>
    /// of it. Percentile 0 is treated like the smallest sample's bucket. Returns 0 when empty.
    /// </summary>
    /// <param name="percentile">Between 0 and 100 inclusive.</param>
    public long ValueAtPercentile(double percentile)
    {
        if (!(percentile >= 0 && percentile <= 100))
        {
            throw new ArgumentOutOfRangeException(nameof(percentile), percentile, "A percentile lies between 0 and 100.");
        }

        if (Count == 0)
        {
            return 0;
        }

        // Decimal arithmetic: 99.9% of 1000 samples is exactly 999, where doubles would give 999.0000000000001
        // and the ceiling would step to the 1000th sample.
        var target = (long)Math.Ceiling((decimal)percentile * Count / 100m);
        target = Math.Clamp(target, 1, Count);

        long cumulative = 0;
        for (var index = 0; index < _counts.Length; index++)
        {
            cumulative += _counts[index];
            if (cumulative >= target)
            {
                return Math.Min(HighestValueOf(index), Max);
            }
        }

        throw new InvalidOperationException($"Bucket counts sum to {cumulative}, below Count {Count}: the histogram is corrupt.");
    }

    /// <summary>Number of recorded samples in the bucket holding <paramref name="value"/>.</summary>
    public long CountInBucketOf(long value)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(value);
        return _counts[IndexOf(Math.Min(value, HighestTrackableValue))];
    }

    /// <summary>Adds every sample of <paramref name="other"/> to this histogram; both must share one layout.</summary>
    public void Merge(LatencyHistogram other)
    {
        ArgumentNullException.ThrowIfNull(other);
        if (other.PrecisionBits != PrecisionBits || other.HighestTrackableValue != HighestTrackableValue)
        {
            // Re-bucketing would lose precision silently; a report that merges clients should use one layout.
            throw new ArgumentException(
                $"Cannot merge a histogram of (highest {other.HighestTrackableValue}, {other.PrecisionBits} bits) " +
                $"into one of (highest {HighestTrackableValue}, {PrecisionBits} bits).",
                nameof(other));
        }

        if (other.Count == 0)
        {
            return;
        }

        for (var index = 0; index < _counts.Length; index++)
        {
            _counts[index] += other._counts[index];
        }

        Min = Count == 0 ? other.Min : Math.Min(Min, other.Min);
        Max = Count == 0 ? other.Max : Math.Max(Max, other.Max);
        Count += other.Count;
        Saturated += other.Saturated;
        _sum += other._sum;
    }

    /// <summary>Forgets every sample; the memory is kept.</summary>
    public void Reset()
    {
        Array.Clear(_counts);
        Count = 0;
        Saturated = 0;
        Min = 0;
        Max = 0;
        _sum = 0;
    }

    /// <summary>The bucket index of a value in [0, HighestTrackableValue].</summary>
    private int IndexOf(long value)
    {
        // i is the power-of-two range above the exact region; its buckets are 2^i wide. The index formula
        // i * 2^k + (value >> i) is the identity in the exact region (i = 0) and continues it seamlessly above.
        var magnitude = 63 - long.LeadingZeroCount(value | 1);
        var shift = Math.Max(0, (int)magnitude - PrecisionBits);
        return (shift * _halfSubBucketCount) + (int)(value >> shift);
    }

    /// <summary>The highest value that falls into bucket <paramref name="index"/>.</summary>
    private long HighestValueOf(int index)
    {
        var shift = Math.Max(0, (index / _halfSubBucketCount) - 1);
        var subBucket = (long)(index - (shift * _halfSubBucketCount));
        return (subBucket << shift) + (1L << shift) - 1;
    }
}
