using PlayHouse.Core.Seams;
using PlayHouse.Simulation.Metrics;
using Xunit.Abstractions;

namespace PlayHouse.Simulation.Tests.Metrics;

/// <summary>
/// What <see cref="LatencyHistogram"/> adds around HdrHistogram: exact minimum and maximum, clamping instead of
/// throwing above the ceiling, percentiles capped at the maximum, zeros when empty, and merges of one layout only.
/// The bucket arithmetic is the library's; these tests pin the layout the reports rely on.
/// </summary>
public sealed class LatencyHistogramTests(ITestOutputHelper output)
{
    [Fact]
    public void ValuesBelow2048Ticks_AreRecordedExactly_WithTheDefaultLayout()
    {
        var histogram = new LatencyHistogram();
        for (var value = 0L; value < 2048; value++)
        {
            histogram.Record(value);
        }

        for (var rank = 1; rank <= 2048; rank++)
        {
            // The rank-th smallest of 2048 samples is the value rank - 1, at percentile rank / 2048.
            Assert.Equal(rank - 1, histogram.ValueAtPercentile(rank * 100.0 / 2048));
            Assert.Equal(1, histogram.Histogram.GetCountAtValue(rank - 1));
        }

        Assert.Equal(2048, histogram.Count);
        Assert.Equal(0, histogram.Min);
        Assert.Equal(2047, histogram.Max);
    }

    [Fact]
    public void UniformOneToHundredThousand_EveryPercentileWithinOnePart_In1024()
    {
        var histogram = new LatencyHistogram(highestTrackableValue: 1_000_000);
        for (var value = 1L; value <= 100_000; value++)
        {
            histogram.Record(value);
        }

        var errorMax = 0.0;
        for (var tenths = 1; tenths <= 1000; tenths++)
        {
            var percentile = tenths / 10.0;
            // HdrHistogram's rank is p% of the count rounded to the nearest sample; here that rank is the value.
            var exact = (long)((percentile / 100.0 * 100_000) + 0.5);
            var reported = histogram.ValueAtPercentile(percentile);

            Assert.True(reported >= exact, $"p{percentile}: reported {reported} understates the exact {exact}.");
            var error = (double)(reported - exact) / exact;
            Assert.True(error < 1.0 / 1024, $"p{percentile}: error {error} >= 1/1024.");
            errorMax = Math.Max(errorMax, error);
        }

        Assert.Equal(100_000, histogram.ValueAtPercentile(100));
        Assert.Equal(1, histogram.ValueAtPercentile(0));
        output.WriteLine($"measured max relative error {errorMax:P4} against a bound of {1.0 / 1024:P4}");
    }

    [Fact]
    public void ValueAtPercentile_OfALoneSample_IsTheSampleItself_NotItsBucketTop()
    {
        var histogram = new LatencyHistogram();
        // 1,234,567 ticks lies in a bucket 1,024 wide; the library alone reports that bucket's highest value.
        histogram.Record(1_234_567);

        Assert.True(histogram.Histogram.GetValueAtPercentile(50) > 1_234_567);
        Assert.Equal(1_234_567, histogram.ValueAtPercentile(50));
        Assert.Equal(1_234_567, histogram.ValueAtPercentile(100));
        Assert.Equal(1_234_567, histogram.Max);
        Assert.Equal(1_234_567, histogram.Min);
    }

    [Fact]
    public void RandomValuesAcrossAllMagnitudes_MinAndMaxAreExact_AndPercentilesWithinOnePart_In1024()
    {
        var random = new Xoshiro256StarStar(seed: 20260105);
        // One histogram, reset per trial: the widest layout is about 0.25 MB of counts.
        var histogram = new LatencyHistogram(highestTrackableValue: LatencyHistogram.HighestTrackableValueMax);
        for (var trial = 0; trial < 2_000; trial++)
        {
            histogram.Reset();
            // A random magnitude first, so small and huge values are equally likely.
            var magnitude = random.NextInt(40);
            var value = random.NextLong(1L << magnitude, 1L << (magnitude + 1));
            var larger = random.NextLong(value, LatencyHistogram.HighestTrackableValueMax + 1);
            histogram.Record(larger);
            histogram.Record(value);

            var reported = histogram.ValueAtPercentile(50);
            Assert.True(reported >= value, $"{value} reported as {reported}.");
            Assert.True(reported - value <= value / 1024, $"{value} reported as {reported}.");
            Assert.Equal(value, histogram.Min);
            Assert.Equal(larger, histogram.Max);
        }
    }

    [Fact]
    public void Merge_EqualsRecordingBothIntoOne()
    {
        var random = new Xoshiro256StarStar(seed: 7);
        var left = new LatencyHistogram(highestTrackableValue: 5_000_000);
        var right = new LatencyHistogram(highestTrackableValue: 5_000_000);
        var both = new LatencyHistogram(highestTrackableValue: 5_000_000);
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
        for (var halves = 0; halves <= 200; halves++)
        {
            Assert.Equal(both.ValueAtPercentile(halves / 2.0), left.ValueAtPercentile(halves / 2.0));
        }

        foreach (var value in values)
        {
            var clamped = Math.Min(value, 5_000_000);
            Assert.Equal(both.Histogram.GetCountAtValue(clamped), left.Histogram.GetCountAtValue(clamped));
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
        var target = new LatencyHistogram(highestTrackableValue: 1_000, significantDigits: 3);
        var otherPrecision = new LatencyHistogram(highestTrackableValue: 1_000, significantDigits: 4);
        var otherHighest = new LatencyHistogram(highestTrackableValue: 2_000, significantDigits: 3);

        Assert.Throws<ArgumentException>(() => target.Merge(otherPrecision));
        Assert.Throws<ArgumentException>(() => target.Merge(otherHighest));
        Assert.Equal(0, target.Count);
    }

    [Fact]
    public void ValuesAboveHighestTrackable_AreClampedAndCountedSaturated()
    {
        var histogram = new LatencyHistogram(highestTrackableValue: 10_000);
        histogram.Record(5);
        histogram.Record(10_000);
        histogram.Record(10_001);
        histogram.Record(long.MaxValue);

        Assert.Equal(2, histogram.Saturated);
        Assert.Equal(4, histogram.Count);
        Assert.Equal(10_000, histogram.Max);
        Assert.Equal(10_000, histogram.ValueAtPercentile(100));
        Assert.Equal(5, histogram.ValueAtPercentile(25));
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
    public void InvalidArguments_Throw()
    {
        var histogram = new LatencyHistogram();

        Assert.Throws<ArgumentOutOfRangeException>(() => histogram.Record(-1));
        Assert.Throws<ArgumentOutOfRangeException>(() => histogram.ValueAtPercentile(-0.1));
        Assert.Throws<ArgumentOutOfRangeException>(() => histogram.ValueAtPercentile(100.1));
        Assert.Throws<ArgumentOutOfRangeException>(() => histogram.ValueAtPercentile(double.NaN));
        Assert.Throws<ArgumentOutOfRangeException>(() => new LatencyHistogram(significantDigits: 2));
        Assert.Throws<ArgumentOutOfRangeException>(() => new LatencyHistogram(significantDigits: 6));
        Assert.Throws<ArgumentOutOfRangeException>(() => new LatencyHistogram(highestTrackableValue: 1));
        Assert.Throws<ArgumentOutOfRangeException>(() => new LatencyHistogram(highestTrackableValue: LatencyHistogram.HighestTrackableValueMax + 1));
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

    [Fact]
    public void EncodeThenDecode_OfTwoHalves_MergesToTheSameDistributionAsOneHistogramOfEverySample()
    {
        var whole = new LatencyHistogram();
        var first = new LatencyHistogram();
        var second = new LatencyHistogram();
        for (var i = 1L; i <= 20_000; i++)
        {
            // Two halves with different shapes: their percentiles averaged would be wrong, their counts summed are not.
            var value = i % 2 == 0 ? i * 3 : 50_000 + (i * i % 900_000);
            whole.Record(value);
            (i % 2 == 0 ? first : second).Record(value);
        }

        whole.Record(TimeSpan.TicksPerHour);
        second.Record(TimeSpan.TicksPerHour);
        var merged = LatencyHistogram.Decode(first.Encode());
        merged.Merge(LatencyHistogram.Decode(second.Encode()));

        Assert.Equal(whole.Count, merged.Count);
        Assert.Equal(whole.Min, merged.Min);
        Assert.Equal(whole.Max, merged.Max);
        Assert.Equal(1, merged.Saturated);
        foreach (var percentile in new[] { 0.0, 25, 50, 90, 99, 99.9, 100 })
        {
            Assert.Equal(whole.ValueAtPercentile(percentile), merged.ValueAtPercentile(percentile));
        }

        AssertEmpty(LatencyHistogram.Decode(new LatencyHistogram().Encode()));
    }

    [Theory]
    [InlineData("")]
    [InlineData("hdr-v2 60000000 3 1 2 0")]
    [InlineData("hdr-v1 60000000 3 1 2 0 AAAA")]
    [InlineData("hdr-v2 60000000 9 1 2 0 AAAA")]
    [InlineData("hdr-v2 60000000 3 5 2 0 AAAA")]
    public void Decode_OfTextThatIsNotAnEncodedHistogram_ThrowsAFormatExceptionNamingTheForm(string text)
    {
        var error = Assert.Throws<FormatException>(() => LatencyHistogram.Decode(text));
        Assert.Contains("HIGHEST DIGITS MIN MAX SATURATED BASE64", error.Message, StringComparison.Ordinal);
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
        Assert.Equal(0, histogram.ValueAtPercentile(0));
        Assert.Equal(0, histogram.ValueAtPercentile(50));
        Assert.Equal(0, histogram.ValueAtPercentile(100));
    }
}
