using PlayHouse.Core.Runtime;

namespace PlayHouse.Core.Tests.Runtime;

public sealed class TimestampSpanTests
{
    [Theory]
    [InlineData(TimeSpan.TicksPerSecond)]
    [InlineData(1_000_000_000L)]
    [InlineData(1_000L)]
    [InlineData(3_579_545L)]
    [InlineData(2_400_000_001L)]
    public void ToDelta_AtAnyFrequency_EqualsTheExactProductTruncatedTowardZero(long frequency)
    {
        long[] spansTicks = [0, 1, -1, 7, 12_345_678, -98_765_432_1, TimeSpan.TicksPerDay * 30];
        foreach (var ticks in spansTicks)
        {
            var expected = (long)((decimal)ticks * frequency / TimeSpan.TicksPerSecond);

            var delta = TimestampSpan.ToDelta(TimeSpan.FromTicks(ticks), frequency);

            Assert.True(expected == delta, $"{ticks} ticks at {frequency} Hz: expected {expected}, got {delta}");
        }
    }

    [Fact]
    public void ToDelta_OfASpanTooLongForTheFrequency_ThrowsInsteadOfWrapping()
    {
        Assert.Throws<OverflowException>(() => TimestampSpan.ToDelta(TimeSpan.MaxValue, 1_000_000_000L));
        Assert.Throws<OverflowException>(() => TimestampSpan.ToDelta(TimeSpan.MaxValue, 2_400_000_001L));
    }
}
