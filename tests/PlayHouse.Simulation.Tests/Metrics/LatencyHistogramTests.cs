using PlayHouse.Core.Seams;
using PlayHouse.Simulation.Metrics;
using Xunit.Abstractions;

namespace PlayHouse.Simulation.Tests.Metrics;

public sealed class LatencyHistogramTests(ITestOutputHelper output)
{
    [Fact]
    public void SmallValues_BelowTwoToThePrecisionPlusOne_AreExact()
    {
        var histogram = new LatencyHistogram(highestTrackableValue: 1_000_000, precisionBits: 7);
        // 2^(7+1) = 256 values, each with its own bucket.
        for (var value = 0L; value < 256; value++)
        {
            histogram.Record(value);
        }

        for (var rank = 1; rank <= 256; rank++)
        {
            // The rank-th smallest of 256 samples is the value rank - 1, at percentile rank / 256.
            var percentile = rank * 100.0 / 256;
            Assert.Equal(rank - 1, histogram.ValueAtPercentile(percentile));
            Assert.Equal(1, histogram.CountInBucketOf(rank - 1));
        }

        Assert.Equal(256, histogram.Count);
        Assert.Equal(0, histogram.Min);
        Assert.Equal(255, histogram.Max);
        Assert.Equal(127.5, histogram.Mean);
    }

    [Fact]
    public void ValueAtPercentile_ReturnsSmallestValueWithAtLeastThatShareAtOrBelowIt()
    {
        var histogram = new LatencyHistogram();
        histogram.Record(1);
        histogram.Record(2);
        histogram.Record(3);
        histogram.Record(4);

        Assert.Equal(1, histogram.ValueAtPercentile(0));
        Assert.Equal(1, histogram.ValueAtPercentile(25));
        Assert.Equal(2, histogram.ValueAtPercentile(25.0001));
        Assert.Equal(2, histogram.ValueAtPercentile(50));
        Assert.Equal(3, histogram.ValueAtPercentile(50.0001));
        Assert.Equal(4, histogram.ValueAtPercentile(100));
    }

    [Fact]
    public void ValueAtPercentile_OfDecimalPercentiles_DoesNotStepPastTheExactRank()
    {
        var histogram = new LatencyHistogram();
        for (var value = 1L; value <= 1000; value++)
        {
            histogram.Record(value);
        }

        // In doubles, 99.9 / 100 * 1000 is 999.0000000000001, whose ceiling would be the 1000th sample.
        Assert.Equal(999, histogram.ValueAtPercentile(99.9));
        Assert.Equal(1000, histogram.ValueAtPercentile(99.91));
    }

    [Theory]
    [InlineData(3)]
    [InlineData(7)]
    [InlineData(10)]
    public void UniformOneToHundredThousand_EveryPercentileWithinTheStatedRelativeError(int precisionBits)
    {
        var histogram = new LatencyHistogram(highestTrackableValue: 1_000_000, precisionBits);
        for (var value = 1L; value <= 100_000; value++)
        {
            histogram.Record(value);
        }

        var errorMax = 0.0;
        for (var tenths = 1; tenths <= 1000; tenths++)
        {
            var percentile = tenths / 10.0;
            // Exact answer: the ceil(p% of 100000)-th smallest sample, which is that rank itself.
            var exact = (long)Math.Ceiling(tenths * 100_000m / 1000m);
            var reported = histogram.ValueAtPercentile(percentile);

            Assert.True(reported >= exact, $"p{percentile}: reported {reported} understates the exact {exact}.");
            var error = (double)(reported - exact) / exact;
            Assert.True(error < histogram.RelativeErrorMax, $"p{percentile}: error {error} >= {histogram.RelativeErrorMax}.");
            errorMax = Math.Max(errorMax, error);
        }

        Assert.Equal(100_000, histogram.ValueAtPercentile(100));
        Assert.Equal(1, histogram.ValueAtPercentile(0));
        Assert.Equal(50_000.5, histogram.Mean);
        output.WriteLine($"precision {precisionBits} bits: bound {histogram.RelativeErrorMax:P4}, measured max {errorMax:P4}, buckets {histogram.BucketCount}");
    }

    [Fact]
    public void RandomValuesAcrossAllMagnitudes_ReportedWithinTheStatedRelativeError()
    {
        var random = new Xoshiro256StarStar(seed: 20260105);
        for (var trial = 0; trial < 2_000; trial++)
        {
            var histogram = new LatencyHistogram(highestTrackableValue: long.MaxValue, precisionBits: 5);
            // A random magnitude first, so small and huge values are equally likely.
            var magnitude = random.NextInt(62);
            var value = random.NextLong(1L << magnitude, 1L << (magnitude + 1));
            histogram.Record(value);
            // A larger second sample keeps the Max cap from hiding the first sample's bucket top.
            histogram.Record(long.MaxValue);

            var reported = histogram.ValueAtPercentile(50);
            Assert.True(reported >= value, $"{value} reported as {reported}.");
            Assert.True(reported - value < value * histogram.RelativeErrorMax, $"{value} reported as {reported}.");
        }
    }

    [Fact]
    public void BucketCount_FollowsTheLogLinearLayout()
    {
        // Exact region 0..7 (8 buckets), then 4 buckets for each power of two from [8, 16) to [512, 1024).
        var histogram = new LatencyHistogram(highestTrackableValue: 1023, precisionBits: 2);
        Assert.Equal(8 + (7 * 4), histogram.BucketCount);

        var defaults = new LatencyHistogram();
        Assert.Equal(TimeSpan.TicksPerMinute, defaults.HighestTrackableValue);
        Assert.Equal(1.0 / 128, defaults.RelativeErrorMax);
    }

    [Fact]
    public void Merge_EqualsRecordingBothIntoOne()
    {
        var random = new Xoshiro256StarStar(seed: 7);
        var left = new LatencyHistogram(highestTrackableValue: 5_000_000, precisionBits: 6);
        var right = new LatencyHistogram(highestTrackableValue: 5_000_000, precisionBits: 6);
        var both = new LatencyHistogram(highestTrackableValue: 5_000_000, precisionBits: 6);
        var values = new List<long>();
        for (var i = 0; i < 20_000; i++)
        {
            // Up to 6,000,000 so some samples saturate.
            var value = random.NextLong(0, 6_000_000);
            values.Add(value);
            (i % 3 == 0 ? left : right).Record(value);
            both.Record(value);
        }

        left.Merge(right);

        Assert.Equal(both.Count, left.Count);
        Assert.Equal(both.Saturated, left.Saturated);
        Assert.True(left.Saturated > 0);
        Assert.Equal(both.Min, left.Min);
        Assert.Equal(both.Max, left.Max);
        Assert.Equal(both.Sum, left.Sum);
        Assert.Equal(both.Mean, left.Mean);
        for (var halves = 0; halves <= 200; halves++)
        {
            Assert.Equal(both.ValueAtPercentile(halves / 2.0), left.ValueAtPercentile(halves / 2.0));
        }

        foreach (var value in values)
        {
            Assert.Equal(both.CountInBucketOf(value), left.CountInBucketOf(value));
        }
    }

    [Fact]
    public void Merge_IntoEmptyCopiesMinAndMax_AndFromEmptyChangesNothing()
    {
        var target = new LatencyHistogram();
        var source = new LatencyHistogram();
        source.Record(500);
        source.Record(900);

        target.Merge(new LatencyHistogram());
        Assert.Equal(0, target.Count);

        target.Merge(source);
        Assert.Equal(500, target.Min);
        Assert.Equal(900, target.Max);
        Assert.Equal(2, target.Count);
    }

    [Fact]
    public void Merge_OfDifferentLayouts_Throws()
    {
        var target = new LatencyHistogram(highestTrackableValue: 1_000, precisionBits: 7);
        var otherPrecision = new LatencyHistogram(highestTrackableValue: 1_000, precisionBits: 6);
        var otherHighest = new LatencyHistogram(highestTrackableValue: 2_000, precisionBits: 7);

        Assert.Throws<ArgumentException>(() => target.Merge(otherPrecision));
        Assert.Throws<ArgumentException>(() => target.Merge(otherHighest));
    }

    [Fact]
    public void ValuesAboveHighestTrackable_AreClampedAndCountedSaturated()
    {
        var histogram = new LatencyHistogram(highestTrackableValue: 10_000, precisionBits: 7);
        histogram.Record(5);
        histogram.Record(10_000);
        histogram.Record(10_001);
        histogram.RecordMany(long.MaxValue, 3);

        Assert.Equal(4, histogram.Saturated);
        Assert.Equal(6, histogram.Count);
        Assert.Equal(10_000, histogram.Max);
        Assert.Equal(10_000, histogram.ValueAtPercentile(100));
        Assert.Equal(5 + (5 * 10_000), histogram.Sum);
    }

    [Fact]
    public void EmptyHistogram_ReportsZeroEverywhere_AndResetReturnsToEmpty()
    {
        var histogram = new LatencyHistogram();
        AssertEmpty(histogram);

        histogram.Record(42);
        histogram.Record(TimeSpan.TicksPerHour);
        histogram.Reset();

        AssertEmpty(histogram);
        histogram.Record(7);
        Assert.Equal(7, histogram.Min);
        Assert.Equal(7, histogram.ValueAtPercentile(50));
    }

    [Fact]
    public void Mean_OfValuesWhoseSumOverflowsALong_IsExactAndOrderIndependent()
    {
        var forward = new LatencyHistogram(highestTrackableValue: long.MaxValue, precisionBits: 3);
        var backward = new LatencyHistogram(highestTrackableValue: long.MaxValue, precisionBits: 3);
        var values = new[] { long.MaxValue, long.MaxValue - 1, 1, long.MaxValue / 3, 12_345 };

        foreach (var value in values)
        {
            forward.Record(value);
        }

        for (var i = values.Length - 1; i >= 0; i--)
        {
            backward.Record(values[i]);
        }

        var exactSum = values.Aggregate(Int128.Zero, (sum, value) => sum + value);
        Assert.Equal(exactSum, forward.Sum);
        Assert.Equal((double)exactSum / values.Length, forward.Mean);
        Assert.Equal(forward.Mean, backward.Mean);
    }

    [Fact]
    public void RecordMany_EqualsRecordingOneAtATime()
    {
        var many = new LatencyHistogram();
        var single = new LatencyHistogram();
        many.RecordMany(1_234_567, 1_000);
        many.RecordMany(3, 0);
        for (var i = 0; i < 1_000; i++)
        {
            single.Record(1_234_567);
        }

        Assert.Equal(single.Count, many.Count);
        Assert.Equal(single.Sum, many.Sum);
        Assert.Equal(single.ValueAtPercentile(50), many.ValueAtPercentile(50));
        Assert.Equal(single.Min, many.Min);
    }

    [Fact]
    public void InvalidArguments_Throw()
    {
        var histogram = new LatencyHistogram();

        Assert.Throws<ArgumentOutOfRangeException>(() => histogram.Record(-1));
        Assert.Throws<ArgumentOutOfRangeException>(() => histogram.RecordMany(1, -1));
        Assert.Throws<ArgumentOutOfRangeException>(() => histogram.ValueAtPercentile(-0.1));
        Assert.Throws<ArgumentOutOfRangeException>(() => histogram.ValueAtPercentile(100.1));
        Assert.Throws<ArgumentOutOfRangeException>(() => histogram.ValueAtPercentile(double.NaN));
        Assert.Throws<ArgumentOutOfRangeException>(() => new LatencyHistogram(precisionBits: 0));
        Assert.Throws<ArgumentOutOfRangeException>(() => new LatencyHistogram(highestTrackableValue: 0));
        Assert.Equal(0, histogram.Count);
    }

    [Fact]
    public void Record_HundredThousandValues_AllocatesNothing()
    {
        var histogram = new LatencyHistogram();
        // Warm up first, so tiered compilation of these methods is not charged to the measured loop.
        RecordSpread(histogram);
        _ = histogram.ValueAtPercentile(99);

        var before = GC.GetAllocatedBytesForCurrentThread();
        RecordSpread(histogram);
        var p99 = histogram.ValueAtPercentile(99);
        var allocatedBytes = GC.GetAllocatedBytesForCurrentThread() - before;

        Assert.Equal(0, allocatedBytes);
        Assert.Equal(200_000, histogram.Count);
        Assert.True(p99 > 0);
    }

    private static void RecordSpread(LatencyHistogram histogram)
    {
        for (var i = 0L; i < 100_000; i++)
        {
            // Spread across magnitudes (and past the ceiling) so every path of the index computation runs.
            histogram.Record(i * i * 7);
        }
    }

    private static void AssertEmpty(LatencyHistogram histogram)
    {
        Assert.Equal(0, histogram.Count);
        Assert.Equal(0, histogram.Saturated);
        Assert.Equal(0, histogram.Min);
        Assert.Equal(0, histogram.Max);
        Assert.Equal(0, histogram.Mean);
        Assert.Equal(0, histogram.ValueAtPercentile(0));
        Assert.Equal(0, histogram.ValueAtPercentile(50));
        Assert.Equal(0, histogram.ValueAtPercentile(100));
    }
}
