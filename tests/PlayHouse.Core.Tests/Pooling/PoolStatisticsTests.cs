using PlayHouse.Core.Pooling;
using PlayHouse.Core.Seams;

namespace PlayHouse.Core.Tests.Pooling;

/// <summary>Counters and their identities under a deterministic single-threaded workload.</summary>
public sealed class PoolStatisticsTests
{
    [Theory]
    [InlineData(false, 1UL, 4, 6)]
    [InlineData(true, 2UL, 4, 6)]
    [InlineData(false, 3UL, 1, 1)]
    [InlineData(true, 4UL, 0, 2)]
    [InlineData(false, 5UL, 3, 0)]
    [InlineData(false, 6UL, 0, 0)]
    public void BalancedWorkload_RentsEqualReturnsPerClass(bool checkedMode, ulong seed, int localCapacity, int globalCapacity)
    {
        // Small tiers so that spills, refills and drops all happen; the edge capacities (0 and 1) take other branches.
        var pool = new MessagePool(new MessagePoolOptions
        {
            CheckedMode = checkedMode,
            LocalCacheCapacityPerClass = localCapacity,
            GlobalCapacityPerClass = globalCapacity,
            PreWarmCountPerClass = 2,
            PreWarmMaxBytes = 4096,
        });
        var random = new Xoshiro256StarStar(seed);
        var held = new List<Payload>();
        var rentsExpected = new long[pool.SizeClassBytes.Count + 1];

        for (var step = 0; step < 20_000; step++)
        {
            // Hold up to 64 buffers, returning a random one, so returns come out of rent order.
            if (held.Count > 0 && (held.Count >= 64 || random.NextBool(0.5)))
            {
                var index = random.NextInt(held.Count);
                held[index].Dispose();
                held[index] = held[^1];
                held.RemoveAt(held.Count - 1);
                continue;
            }

            var lengthBytes = random.NextBool(0.01) ? (1024 * 1024) + 1 + random.NextInt(1000) : random.NextInt(70_000);
            var sizeClass = pool.FindSizeClass(lengthBytes);
            rentsExpected[sizeClass < 0 ? ^1 : sizeClass]++;
            held.Add(pool.Rent(lengthBytes, $"step-{step}"));
        }

        PoolTestSupport.AssertIdentities(pool);
        Assert.Equal(held.Count, pool.GetStatistics().Outstanding);
        Assert.All(pool.GetClassStatistics(), r => Assert.InRange(r.LocalCached, 0, localCapacity));
        Assert.All(pool.GetClassStatistics(), r => Assert.InRange(r.GlobalCached, 0, globalCapacity));
        held.ForEach(p => p.Dispose());

        PoolTestSupport.AssertIdentities(pool);
        PoolTestSupport.AssertBalanced(pool);
        var rows = pool.GetClassStatistics();
        Assert.Equal(rentsExpected, rows.Select(r => r.Rents));
        Assert.Equal(rentsExpected, rows.Select(r => r.Returns));
        var totals = pool.GetStatistics();
        Assert.True(totals.Dropped > 0, "the workload should overflow both tiers at least once");
        Assert.True(totals.OversizeRents > 0, "the workload should rent oversize buffers");
        if (checkedMode)
        {
            pool.ThrowIfLeaks();
        }
    }

    [Fact]
    public void Statistics_HitsPlusMissesEqualRents_AndHitRateFollows()
    {
        var pool = new MessagePool();
        for (var i = 0; i < 10; i++)
        {
            using var payload = pool.Rent(500, "loop");
        }

        var stats = pool.GetStatistics();

        Assert.Equal(10, stats.Rents);
        Assert.Equal(stats.Rents, stats.Hits + stats.Misses);
        Assert.Equal(9, stats.Hits);
        Assert.Equal(1, stats.Misses);
        Assert.Equal(0.9, stats.HitRate, precision: 12);
        Assert.Equal(10, stats.Returns);
        Assert.Equal(0, stats.Outstanding);
    }

    [Fact]
    public void GetStatistics_AfterFirstCall_AllocatesNothing()
    {
        // Checkers may read the totals after every simulated step, so reading them must not feed the GC.
        var pool = new MessagePool();
        pool.Rent(100, "x").Dispose();
        var first = pool.GetStatistics();

        var allocatedBefore = GC.GetAllocatedBytesForCurrentThread();
        var second = pool.GetStatistics();
        var allocatedBytes = GC.GetAllocatedBytesForCurrentThread() - allocatedBefore;

        Assert.Equal(0, allocatedBytes);
        Assert.Equal(first, second);
    }

    [Fact]
    public void Statistics_OfNewPool_AreZeroWithFullHitRate()
    {
        var pool = new MessagePool();

        var stats = pool.GetStatistics();

        Assert.Equal(default, stats);
        Assert.Equal(1.0, stats.HitRate);
        Assert.All(pool.GetClassStatistics(), r => Assert.Equal(0, r.Rents + r.Returns + r.LocalCached + r.GlobalCached));
    }

    [Fact]
    public void ClassStatistics_RowsFollowClassOrderThenOversize()
    {
        var pool = new MessagePool();

        var rows = pool.GetClassStatistics();

        Assert.Equal(54, rows.Count);
        Assert.Equal(Enumerable.Range(0, 53), rows.Take(53).Select(r => r.SizeClass));
        Assert.Equal(pool.SizeClassBytes, rows.Take(53).Select(r => r.CapacityBytes));
        Assert.Equal(-1, rows[53].SizeClass);
        Assert.Equal(0, rows[53].CapacityBytes);
    }

    [Fact]
    public void Pools_InOneThread_KeepSeparateCachesAndCounters()
    {
        var nodeA = new MessagePool(new MessagePoolOptions { Name = "a" });
        var nodeB = new MessagePool(new MessagePoolOptions { Name = "b" });

        nodeA.Rent(128, "x").Dispose();
        using var fromB = nodeB.Rent(128, "y");

        // B must not be served from A's cache on the same thread.
        Assert.Equal(1, nodeB.GetStatistics().Misses);
        Assert.Equal(0, nodeB.GetStatistics().Hits);
        Assert.Equal(1, nodeA.GetClassStatistics()[0].LocalCached);
        Assert.Equal(0, nodeB.GetClassStatistics()[0].LocalCached);
        Assert.Equal(1, nodeA.GetStatistics().Returns);
        Assert.Equal(0, nodeB.GetStatistics().Returns);
    }
}
