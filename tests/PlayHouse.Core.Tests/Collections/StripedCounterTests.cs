using PlayHouse.Core.Codec;
using PlayHouse.Core.Collections;

namespace PlayHouse.Core.Tests.Collections;

/// <summary>A total kept per thread: every increment counts once, whichever stripe it lands in.</summary>
public sealed class StripedCounterTests
{
    [Fact]
    public void IncrementsInAnyStripes_SumToTheirCount()
    {
        var counter = new StripedCounter(4);
        counter.IncrementIn(0);
        counter.IncrementIn(3);
        counter.IncrementIn(7);
        counter.Increment();

        Assert.Equal(4, counter.StripeCount);
        Assert.Equal(4, counter.Value);
    }

    [Fact]
    public async Task MoreThreadsThanStripes_IncrementingAtOnce_LoseNoIncrement()
    {
        const int threads = 6;
        const int incrementsPerThread = 100_000;
        var counter = new StripedCounter(2);
        using var start = new Barrier(threads);

        var workers = Enumerable.Range(0, threads).Select(_ => Task.Factory.StartNew(
            () =>
            {
                start.SignalAndWait();
                for (var i = 0; i < incrementsPerThread; i++)
                {
                    counter.Increment();
                }
            },
            TaskCreationOptions.LongRunning));
        await Task.WhenAll(workers);

        Assert.Equal(threads * (long)incrementsPerThread, counter.Value);
    }

    [Fact]
    public async Task SharedMsgIdCache_HitFromManyThreads_CountsEveryLookup()
    {
        const int threads = 4;
        const int lookupsPerThread = 50_000;
        var cache = new Utf8StringCache();
        var id = "Echo"u8.ToArray();
        Assert.True(cache.TryGetString(id, out _));

        // Each thread looks the id up as a connection's decoder does, through its own hinted slot.
        var workers = Enumerable.Range(0, threads).Select(_ => Task.Factory.StartNew(
            () =>
            {
                var slot = -1;
                for (var i = 0; i < lookupsPerThread; i++)
                {
                    Assert.True(cache.TryGetString(id, ref slot, out var value));
                    Assert.Equal("Echo", value);
                }
            },
            TaskCreationOptions.LongRunning));
        await Task.WhenAll(workers);
        var statistics = cache.GetStatistics();

        Assert.Equal((threads * (long)lookupsPerThread, 1L), (statistics.Hits, statistics.Misses));
    }
}
