using System.Globalization;
using HdrHistogram;
using HdrHistogram.Utilities;

namespace PlayHouse.Simulation.Metrics;

/// <summary>
/// Round-trip latencies in ticks of 100 ns, recorded into an HdrHistogram <see cref="LongHistogram"/>. This type
/// only adds what a simulated run needs around the library's histogram: an exact <see cref="Min"/> and
/// <see cref="Max"/> (the library keeps neither while recording), values above the ceiling clamped and counted
/// instead of thrown (a metric must not crash a run), reported percentiles that never pass the exact maximum, and
/// 0 for every percentile of an empty histogram (where the library throws).
/// </summary>
/// <remarks>
/// The default layout, one tick to one minute at three significant digits, keeps every value below 2048 ticks
/// exact and bounds the relative error of a reported percentile by 1/1024. Not thread-safe; callers that share
/// one histogram between threads hold a lock.
/// </remarks>
public sealed class LatencyHistogram
{
    /// <summary>Default ceiling: one minute in ticks, far above any timeout a scenario uses.</summary>
    public const long DefaultHighestTrackableValue = TimeSpan.TicksPerMinute;

    /// <summary>Default precision: three significant decimal digits.</summary>
    public const int DefaultSignificantDigits = 3;

    /// <summary>
    /// Ceiling of the ceiling: 2^40 ticks, about 30 hours. HdrHistogram 2.5.0 computes the width of a bucket as
    /// the int <c>1 &lt;&lt; bucketIndex</c>, which wraps from bucket 31 on; at three or more significant digits
    /// that bucket starts at 2^41, so every value allowed here is reported correctly.
    /// </summary>
    public const long HighestTrackableValueMax = 1L << 40;

    /// <summary>The first word of <see cref="Encode"/>'s text: the form of the line, should it ever change.</summary>
    public const string EncodingName = "hdr-v2";

    private readonly LongHistogram _histogram;

    /// <param name="highestTrackableValue">Largest value recorded as itself; larger values are clamped to it
    /// and counted in <see cref="Saturated"/>. From 2 to <see cref="HighestTrackableValueMax"/>.</param>
    /// <param name="significantDigits">Decimal digits kept exact, 3 to 5 (see
    /// <see cref="HighestTrackableValueMax"/> for why not fewer).</param>
    public LatencyHistogram(long highestTrackableValue = DefaultHighestTrackableValue, int significantDigits = DefaultSignificantDigits)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(highestTrackableValue, 2);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(highestTrackableValue, HighestTrackableValueMax);
        ArgumentOutOfRangeException.ThrowIfLessThan(significantDigits, 3);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(significantDigits, 5);
        _histogram = new LongHistogram(lowestTrackableValue: 1, highestTrackableValue, significantDigits);
    }

    /// <summary>The library histogram, for analysis such as <c>OutputPercentileDistribution</c> or encoding.
    /// Record through <see cref="Record"/> so that <see cref="Min"/>, <see cref="Max"/> and
    /// <see cref="Saturated"/> stay exact.</summary>
    public HistogramBase Histogram => _histogram;

    /// <summary>Largest value recorded as itself.</summary>
    public long HighestTrackableValue => _histogram.HighestTrackableValue;

    /// <summary>Samples recorded (including saturated ones).</summary>
    public long Count => _histogram.TotalCount;

    /// <summary>Samples above <see cref="HighestTrackableValue"/>, recorded as that value.</summary>
    public long Saturated { get; private set; }

    /// <summary>Smallest recorded value (after clamping); 0 when empty.</summary>
    public long Min { get; private set; }

    /// <summary>Largest recorded value (after clamping); 0 when empty.</summary>
    public long Max { get; private set; }

    /// <summary>Records one sample. O(1), allocates nothing.</summary>
    public void Record(long value)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(value);
        if (value > _histogram.HighestTrackableValue)
        {
            value = _histogram.HighestTrackableValue;
            Saturated++;
        }

        if (_histogram.TotalCount == 0)
        {
            Min = value;
            Max = value;
        }
        else
        {
            Min = Math.Min(Min, value);
            Max = Math.Max(Max, value);
        }

        _histogram.RecordValue(value);
    }

    /// <summary>
    /// HdrHistogram's value at <paramref name="percentile"/> (the highest value equivalent to the sample at that
    /// rank, so it never understates), capped at the exact <see cref="Max"/>. Returns 0 when empty.
    /// </summary>
    /// <param name="percentile">Between 0 and 100 inclusive.</param>
    public long ValueAtPercentile(double percentile)
    {
        if (!(percentile >= 0 && percentile <= 100))
        {
            throw new ArgumentOutOfRangeException(nameof(percentile), percentile, "A percentile lies between 0 and 100.");
        }

        return _histogram.TotalCount == 0 ? 0 : Math.Min(_histogram.GetValueAtPercentile(percentile), Max);
    }

    /// <summary>Adds every sample of <paramref name="other"/>; both must share one layout, so no sample is
    /// re-bucketed with less precision.</summary>
    public void Merge(LatencyHistogram other)
    {
        ArgumentNullException.ThrowIfNull(other);
        if (other._histogram.HighestTrackableValue != _histogram.HighestTrackableValue
            || other._histogram.NumberOfSignificantValueDigits != _histogram.NumberOfSignificantValueDigits)
        {
            throw new ArgumentException(
                $"Cannot merge a histogram of (highest {other.HighestTrackableValue}, {other._histogram.NumberOfSignificantValueDigits} digits) " +
                $"into one of (highest {HighestTrackableValue}, {_histogram.NumberOfSignificantValueDigits} digits).",
                nameof(other));
        }

        if (other.Count == 0)
        {
            return;
        }

        Min = Count == 0 ? other.Min : Math.Min(Min, other.Min);
        Max = Count == 0 ? other.Max : Math.Max(Max, other.Max);
        Saturated += other.Saturated;
        _histogram.Add(other._histogram);
    }

    /// <summary>
    /// The histogram as one line of text for a results file (a swarm shard's <c>--json</c>): its layout, the exact
    /// minimum, maximum and saturated count, then HdrHistogram's own compressed encoding in base64, the form its
    /// histogram logs store. <see cref="Decode"/> reads it back with every count, so shards merge without averaging.
    /// </summary>
    public string Encode()
    {
        var buffer = ByteBuffer.Allocate(_histogram.GetNeededByteBufferCapacity());
        var length = HistogramEncoding.EncodeIntoCompressedByteBuffer(_histogram, buffer);
        var bytes = new byte[length];
        buffer.Position = 0;
        for (var i = 0; i < length; i++)
        {
            bytes[i] = buffer.Get();
        }

        return string.Create(
            CultureInfo.InvariantCulture,
            $"{EncodingName} {_histogram.HighestTrackableValue} {_histogram.NumberOfSignificantValueDigits} {Min} {Max} {Saturated} {Convert.ToBase64String(bytes)}");
    }

    /// <summary>Reads a histogram written by <see cref="Encode"/>.</summary>
    /// <exception cref="FormatException">The text is not an encoded histogram.</exception>
    public static LatencyHistogram Decode(string text)
    {
        ArgumentNullException.ThrowIfNull(text);
        var parts = text.Split(' ');
        if (parts.Length != 7 || parts[0] != EncodingName
            || !long.TryParse(parts[1], NumberStyles.None, CultureInfo.InvariantCulture, out var highest)
            || !int.TryParse(parts[2], NumberStyles.None, CultureInfo.InvariantCulture, out var digits)
            || !long.TryParse(parts[3], NumberStyles.None, CultureInfo.InvariantCulture, out var min)
            || !long.TryParse(parts[4], NumberStyles.None, CultureInfo.InvariantCulture, out var max)
            || !long.TryParse(parts[5], NumberStyles.None, CultureInfo.InvariantCulture, out var saturated)
            || highest is < 2 or > HighestTrackableValueMax || digits is < 3 or > 5 || min > max)
        {
            throw new FormatException($"Not an encoded latency histogram ('{EncodingName} HIGHEST DIGITS MIN MAX SATURATED BASE64'): '{(text.Length > 80 ? text[..80] + "..." : text)}'.");
        }

        var decoded = HistogramEncoding.DecodeFromCompressedByteBuffer(ByteBuffer.Allocate(Convert.FromBase64String(parts[6])), highest);
        var histogram = new LatencyHistogram(highest, digits);
        histogram._histogram.Add(decoded);
        if (histogram.Count > 0)
        {
            histogram.Min = min;
            histogram.Max = max;
            histogram.Saturated = saturated;
        }

        return histogram;
    }

    /// <summary>Forgets every sample; the memory is kept.</summary>
    public void Reset()
    {
        _histogram.Reset();
        Saturated = 0;
        Min = 0;
        Max = 0;
    }
}
