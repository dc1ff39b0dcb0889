using PlayHouse.Core.Pooling;

namespace PlayHouse.Core.Tests.Pooling;

/// <summary>Assertions shared by the pool tests: the statistics identities, each asserted from both sides.</summary>
internal static class PoolTestSupport
{
    /// <summary>
    /// Asserts every identity the statistics promise at quiescence: per class and in total, Hits + Misses == Rents
    /// and Outstanding == Rents - Returns; per pooled class, buffers are conserved; and the totals equal the rows' sums.
    /// </summary>
    public static void AssertIdentities(MessagePool pool)
    {
        var totals = pool.GetStatistics();
        var rows = pool.GetClassStatistics();

        Assert.Equal(totals.Rents, totals.Hits + totals.Misses);
        Assert.Equal(totals.Outstanding, totals.Rents - totals.Returns);
        Assert.Equal(pool.SizeClassBytes.Count + 1, rows.Count);
        Assert.True(rows[^1].IsOversize);

        foreach (var row in rows)
        {
            Assert.Equal(row.Rents, row.Hits + row.Misses);
            Assert.Equal(row.Outstanding, row.Rents - row.Returns);
            if (!row.IsOversize)
            {
                // Every buffer ever made (pre-warmed or allocated on a miss) is outstanding, cached or dropped.
                Assert.Equal(row.PreWarmed + row.Misses, row.Outstanding + row.LocalCached + row.GlobalCached + row.Dropped);
            }
        }

        Assert.Equal(totals.Rents, rows.Sum(r => r.Rents));
        Assert.Equal(totals.Returns, rows.Sum(r => r.Returns));
        Assert.Equal(totals.Hits, rows.Sum(r => r.Hits));
        Assert.Equal(totals.Misses, rows.Sum(r => r.Misses));
        Assert.Equal(totals.Dropped, rows.Sum(r => r.Dropped));
        Assert.Equal(totals.OversizeRents, rows[^1].Rents);
    }

    /// <summary>Asserts that every class, and the totals, are balanced: nothing outstanding.</summary>
    public static void AssertBalanced(MessagePool pool)
    {
        var totals = pool.GetStatistics();
        Assert.Equal(totals.Rents, totals.Returns);
        Assert.Equal(0, totals.Outstanding);
        foreach (var row in pool.GetClassStatistics())
        {
            Assert.True(row.Rents == row.Returns, $"class {row.SizeClass} ({row.CapacityBytes} B): {row.Rents} rents but {row.Returns} returns");
        }
    }
}
