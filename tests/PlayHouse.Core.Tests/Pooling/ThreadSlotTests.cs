using PlayHouse.Core.Pooling;

namespace PlayHouse.Core.Tests.Pooling;

/// <summary>Thread indexes are process-wide, so these tests run alone: no other test may start threads meanwhile.</summary>
[CollectionDefinition(nameof(ThreadSlotTests), DisableParallelization = true)]
public sealed class ThreadSlotCollection;

[Collection(nameof(ThreadSlotTests))]
public sealed class ThreadSlotTests
{
    [Fact]
    public void ThreadIndexes_OfExitedThreads_AreReused_AndTheirCachesAdopted()
    {
        const int ThreadCount = 50;
        var pool = new MessagePool();
        var highWaterBefore = ThreadSlots.HighWaterMark;

        for (var i = 0; i < ThreadCount; i++)
        {
            var worker = new Thread(() => pool.Rent(128, "short-lived").Dispose());
            worker.Start();
            worker.Join();

            // The exited thread's lease is reachable from nothing; collecting it frees the index for the next thread.
            GC.Collect();
            GC.WaitForPendingFinalizers();
        }

        // Without reuse every thread would take a fresh index (and strand a cache); with it a few indexes cycle.
        // A thread's storage may be torn down a moment after Join returns, hence a margin rather than exactly one.
        var highWaterGrowth = ThreadSlots.HighWaterMark - highWaterBefore;
        Assert.InRange(highWaterGrowth, 0, 10);

        // A thread that adopts a dead thread's cache finds the buffer that thread returned: a hit, not a miss.
        var stats = pool.GetStatistics();
        Assert.Equal(ThreadCount, stats.Rents);
        Assert.InRange(stats.Misses, 1, 10);
        Assert.Equal(ThreadCount - stats.Misses, stats.Hits);
        PoolTestSupport.AssertBalanced(pool);
        PoolTestSupport.AssertIdentities(pool);
    }

    [Fact]
    public void AssignCurrent_OnAFreshThread_AssignsOnceAndCurrentReportsIt()
    {
        int before = 0, first = 0, second = 0, current = 0, highWater = 0;
        var worker = new Thread(() =>
        {
            before = ThreadSlots.CurrentOrMinusOne;
            first = ThreadSlots.AssignCurrent();
            second = ThreadSlots.AssignCurrent();
            current = ThreadSlots.CurrentOrMinusOne;
            highWater = ThreadSlots.HighWaterMark;
        });
        worker.Start();
        worker.Join();

        Assert.Equal(-1, before);
        Assert.True(first >= 0, $"index {first}");
        Assert.Equal(first, second);
        Assert.Equal(first, current);
        Assert.True(highWater > first, $"high-water mark {highWater} at or below a live index {first}");
    }
}
