using PlayHouse.Core.Pooling;

namespace PlayHouse.Core.Tests.Pooling;

/// <summary>The local (per-thread) and global tiers, pre-warm, oversize and limits. Each test runs on one thread.</summary>
public sealed class PoolTierTests
{
    private const int OneMiB = 1024 * 1024;

    [Fact]
    public void Rent_FromEmptyPool_IsAMiss()
    {
        var pool = new MessagePool();

        using var payload = pool.Rent(100, "test");

        var stats = pool.GetStatistics();
        Assert.Equal(1, stats.Rents);
        Assert.Equal(1, stats.Misses);
        Assert.Equal(0, stats.Hits);
        PoolTestSupport.AssertIdentities(pool);
    }

    [Fact]
    public void Rent_AfterReturn_HitsLocalCache()
    {
        var pool = new MessagePool();
        var first = pool.Rent(100, "first");
        var firstId = first.BufferId;
        first.Dispose();

        Assert.Equal(1, pool.GetClassStatistics()[0].LocalCached);

        using var second = pool.Rent(120, "second");

        Assert.Equal(firstId, second.BufferId);
        var row = pool.GetClassStatistics()[0];
        Assert.Equal(2, row.Rents);
        Assert.Equal(1, row.Hits);
        Assert.Equal(1, row.Misses);
        Assert.Equal(0, row.LocalCached);
        Assert.Equal(0, row.GlobalCached);
        PoolTestSupport.AssertIdentities(pool);
    }

    [Fact]
    public void Return_WhenLocalCacheFull_SpillsOlderHalfToGlobal()
    {
        var pool = new MessagePool(new MessagePoolOptions { LocalCacheCapacityPerClass = 4, GlobalCapacityPerClass = 16 });
        var payloads = Enumerable.Range(0, 5).Select(i => pool.Rent(128, $"p{i}")).ToArray();
        var ids = payloads.Select(p => p.BufferId).ToArray();

        for (var i = 0; i < 4; i++)
        {
            payloads[i].Dispose();
        }

        var beforeSpill = pool.GetClassStatistics()[0];
        Assert.Equal(4, beforeSpill.LocalCached);
        Assert.Equal(0, beforeSpill.GlobalCached);

        payloads[4].Dispose();

        // The two oldest local entries (p0, p1) moved to the global tier; p2, p3 and the new p4 stay local.
        var afterSpill = pool.GetClassStatistics()[0];
        Assert.Equal(3, afterSpill.LocalCached);
        Assert.Equal(2, afterSpill.GlobalCached);
        Assert.Equal(0, afterSpill.Dropped);
        Assert.Equal(5, afterSpill.Returns);

        // Local is LIFO: the next three rents get p4, p3, p2; the one after refills from the global tier (p1 on top).
        var rentedIds = Enumerable.Range(0, 4).Select(_ => pool.Rent(128, "again")).Select(p => p.BufferId).ToArray();
        Assert.Equal([ids[4], ids[3], ids[2], ids[1]], rentedIds);
        var afterRefill = pool.GetClassStatistics()[0];
        Assert.Equal(4, afterRefill.Hits);
        Assert.Equal(1, afterRefill.LocalCached);
        Assert.Equal(0, afterRefill.GlobalCached);
        PoolTestSupport.AssertIdentities(pool);
    }

    [Fact]
    public void Rent_WhenLocalCacheEmpty_RefillsHalfAStackFromGlobal()
    {
        var pool = new MessagePool(new MessagePoolOptions
        {
            LocalCacheCapacityPerClass = 4,
            GlobalCapacityPerClass = 16,
            PreWarmCountPerClass = 8,
            PreWarmMaxBytes = 128,
        });

        using var payload = pool.Rent(128, "test");

        // One refill under one lock: the renter's buffer plus half a local stack (2 of capacity 4).
        var row = pool.GetClassStatistics()[0];
        Assert.Equal(1, row.Hits);
        Assert.Equal(0, row.Misses);
        Assert.Equal(2, row.LocalCached);
        Assert.Equal(5, row.GlobalCached);
        Assert.Equal(2, pool.LocalCountForCurrentThread(0));
        PoolTestSupport.AssertIdentities(pool);
    }

    [Fact]
    public void Return_WhenBothTiersFull_DropsAndCountsDropped()
    {
        var pool = new MessagePool(new MessagePoolOptions { LocalCacheCapacityPerClass = 2, GlobalCapacityPerClass = 1 });
        var payloads = Enumerable.Range(0, 4).Select(i => pool.Rent(200, $"p{i}")).ToArray();

        foreach (var payload in payloads)
        {
            payload.Dispose();
        }

        var row = pool.GetClassStatistics()[pool.FindSizeClass(200)];
        Assert.Equal(4, row.Returns);
        Assert.Equal(1, row.Dropped);
        Assert.Equal(2, row.LocalCached);
        Assert.Equal(1, row.GlobalCached);
        Assert.Equal(1, pool.GetStatistics().Dropped);
        PoolTestSupport.AssertIdentities(pool);
    }

    [Fact]
    public void Return_WithNoLocalCache_GoesStraightToGlobal()
    {
        var pool = new MessagePool(new MessagePoolOptions { LocalCacheCapacityPerClass = 0, GlobalCapacityPerClass = 1 });
        var first = pool.Rent(128, "a");
        var second = pool.Rent(128, "b");

        first.Dispose();
        second.Dispose();

        var row = pool.GetClassStatistics()[0];
        Assert.Equal(0, row.LocalCached);
        Assert.Equal(1, row.GlobalCached);
        Assert.Equal(1, row.Dropped);

        using var third = pool.Rent(128, "c");
        Assert.Equal(first.BufferId, third.BufferId);
        Assert.Equal(1, pool.GetClassStatistics()[0].Hits);
        PoolTestSupport.AssertIdentities(pool);
    }

    [Fact]
    public void Rent_AfterPreWarm_FirstRentsAreHits()
    {
        var pool = new MessagePool(new MessagePoolOptions { PreWarmCountPerClass = 4, PreWarmMaxBytes = 1024 });
        var payloads = new List<Payload>();

        for (var i = 0; i < 4; i++)
        {
            payloads.Add(pool.Rent(128, "small"));
            payloads.Add(pool.Rent(1024, "kilobyte"));
        }

        var stats = pool.GetStatistics();
        Assert.Equal(8, stats.Hits);
        Assert.Equal(0, stats.Misses);

        // Classes above PreWarmMaxBytes start empty.
        payloads.Add(pool.Rent(1025, "above"));
        Assert.Equal(1, pool.GetStatistics().Misses);

        var rows = pool.GetClassStatistics();
        Assert.All(rows.Where(r => !r.IsOversize && r.CapacityBytes <= 1024), r => Assert.Equal(4, r.PreWarmed));
        Assert.All(rows.Where(r => r.IsOversize || r.CapacityBytes > 1024), r => Assert.Equal(0, r.PreWarmed));
        PoolTestSupport.AssertIdentities(pool);
        payloads.ForEach(p => p.Dispose());
        PoolTestSupport.AssertBalanced(pool);
    }

    [Fact]
    public void PreWarm_BeyondGlobalCapacity_IsCappedAtIt()
    {
        var pool = new MessagePool(new MessagePoolOptions { PreWarmCountPerClass = 10, GlobalCapacityPerClass = 3, PreWarmMaxBytes = 128 });

        var row = pool.GetClassStatistics()[0];

        Assert.Equal(3, row.PreWarmed);
        Assert.Equal(3, row.GlobalCached);
    }

    [Fact]
    public void Rent_AboveLargestClass_IsExactUnpooledArrayNeverCached()
    {
        var pool = new MessagePool();

        var first = pool.Rent(OneMiB + 1, "big");
        Assert.Equal(OneMiB + 1, first.Length);
        Assert.Equal(OneMiB + 1, first.Capacity);
        first.Dispose();
        using var second = pool.Rent(OneMiB + 1, "big again");

        Assert.NotEqual(first.BufferId, second.BufferId);
        var stats = pool.GetStatistics();
        Assert.Equal(2, stats.OversizeRents);
        Assert.Equal(2, stats.Misses);
        Assert.Equal(0, stats.Hits);

        // Oversize returns are counted as Dropped: the exact-size array goes back to the GC.
        var oversize = pool.GetClassStatistics()[^1];
        Assert.True(oversize.IsOversize);
        Assert.Equal(2, oversize.Rents);
        Assert.Equal(1, oversize.Returns);
        Assert.Equal(1, oversize.Dropped);
        Assert.Equal(1, stats.Dropped);
        PoolTestSupport.AssertIdentities(pool);
    }

    [Fact]
    public void Rent_AboveMaxRentBytes_ThrowsNamingTheLimit()
    {
        var pool = new MessagePool(new MessagePoolOptions { MaxRentBytes = 2 * OneMiB });

        var error = Assert.Throws<ArgumentOutOfRangeException>(() => pool.Rent((2 * OneMiB) + 1, "huge"));

        Assert.Equal("lengthBytes", error.ParamName);
        Assert.Contains("MaxRentBytes (2097152 B)", error.Message, StringComparison.Ordinal);
        Assert.Contains("2097153 B", error.Message, StringComparison.Ordinal);
        Assert.Equal(0, pool.GetStatistics().Rents);
        using var atLimit = pool.Rent(2 * OneMiB, "at limit");
        Assert.Equal(1, pool.GetStatistics().Rents);
    }

    [Fact]
    public void Rent_AboveMaxRentBytesBelowLargestClass_Throws()
    {
        var pool = new MessagePool(new MessagePoolOptions { MaxRentBytes = 1000 });

        Assert.Throws<ArgumentOutOfRangeException>(() => pool.Rent(1001, "too big"));
        using var atLimit = pool.Rent(1000, "fits");
        Assert.Equal(1024, atLimit.Capacity);
    }

    [Fact]
    public void Rent_NegativeLength_Throws()
    {
        var pool = new MessagePool();

        Assert.Throws<ArgumentOutOfRangeException>(() => pool.Rent(-1, "negative"));
        Assert.Equal(0, pool.GetStatistics().Rents);
    }

    [Fact]
    public void Copy_RentsAndCopiesTheBytes()
    {
        var pool = new MessagePool();
        byte[] bytes = [1, 2, 3, 4, 5];

        using var payload = pool.Copy(bytes, "copy");

        Assert.Equal(bytes, payload.Span.ToArray());
        Assert.Equal(5, payload.Length);
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public void RentAndReturn_WhenWarm_AllocatesNothing(bool checkedMode)
    {
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = checkedMode });
        int[] lengths = [64, 1024, 16 * 1024, 200_000];
        for (var i = 0; i < 64; i++)
        {
            foreach (var length in lengths)
            {
                pool.Rent(length, "warm-up").Dispose();
            }
        }

        const int Rounds = 5;
        const int RentsPerRound = 1000;
        var before = pool.GetStatistics();
        var allocatedBytesPerRound = new long[Rounds];
        for (var round = 0; round < Rounds; round++)
        {
            allocatedBytesPerRound[round] = MeasureSteadyRentMoveReturn(pool, lengths, RentsPerRound);
        }

        var after = pool.GetStatistics();

        // The runtime's tiered JIT may allocate a few kilobytes once, in whichever round it promotes a method (more
        // under load, when promotion is late); an allocation by the pool itself would cost at least 24 B per
        // operation in every round, 96,000 B here. So: one clean round, and no round near that per-operation floor.
        var perOperationFloorBytes = 24L * RentsPerRound * lengths.Length;
        Assert.Equal(0, allocatedBytesPerRound.Min());
        Assert.All(allocatedBytesPerRound, bytes => Assert.InRange(bytes, 0, perOperationFloorBytes / 6));
        Assert.Equal(before.Misses, after.Misses);
        Assert.Equal(before.Hits + (Rounds * RentsPerRound * lengths.Length), after.Hits);
    }

    private static long MeasureSteadyRentMoveReturn(MessagePool pool, int[] lengths, int rentsPerLength)
    {
        var allocatedBefore = GC.GetAllocatedBytesForCurrentThread();
        for (var i = 0; i < rentsPerLength; i++)
        {
            foreach (var length in lengths)
            {
                var payload = pool.Rent(length, "steady");
                var moved = payload.Move("next owner");
                moved.Dispose();
            }
        }

        return GC.GetAllocatedBytesForCurrentThread() - allocatedBefore;
    }
}
