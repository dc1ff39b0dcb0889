using PlayHouse.Core.Pooling;

namespace PlayHouse.Core.Tests.Pooling;

/// <summary>
/// Every numeric <see cref="MessagePoolOptions"/> limit one below, at and one above it: the rent sizes at a class edge
/// and at the rent limit, the buffers each tier keeps, the halves a full local stack spills and an empty one refills,
/// and what pre-warming fills. Each test runs on one thread.
/// </summary>
public sealed class PoolOptionLimitTests
{
    private const int Cap = 4;

    [Theory]
    [InlineData(99, 100)]
    [InlineData(100, 100)]
    [InlineData(101, 200)]
    [InlineData(199, 200)]
    [InlineData(200, 200)]
    [InlineData(201, 201)]
    public void Rent_AroundEachConfiguredClassSize_TakesTheSmallestClassThatFits_AndPastTheLastAnExactArray(int lengthBytes, int capacityBytes)
    {
        var pool = new MessagePool(new MessagePoolOptions { SizeClassBytes = [100, 200] });

        using var payload = pool.Rent(lengthBytes, "edge");

        Assert.Equal(capacityBytes, payload.Capacity);
        Assert.Equal(lengthBytes > 200 ? 1 : 0, pool.GetStatistics().OversizeRents);
        PoolTestSupport.AssertIdentities(pool);
    }

    [Theory]
    [InlineData(999)]
    [InlineData(1000)]
    [InlineData(1001)]
    public void Rent_IsRefusedOnlyPastMaxRentBytes_AndARefusedRentIsNotCounted(int lengthBytes)
    {
        var pool = new MessagePool(new MessagePoolOptions { MaxRentBytes = 1000 });

        if (lengthBytes > 1000)
        {
            Assert.Throws<ArgumentOutOfRangeException>(() => pool.Rent(lengthBytes, "past"));
            Assert.Equal(0, pool.GetStatistics().Rents);
            return;
        }

        using var payload = pool.Rent(lengthBytes, "within");
        Assert.Equal(lengthBytes, payload.Length);
        Assert.Equal(1, pool.GetStatistics().Rents);
    }

    [Theory]
    [InlineData(Cap - 1)]
    [InlineData(Cap)]
    [InlineData(Cap + 1)]
    public void Returns_StayInTheLocalStackUpToLocalCacheCapacityPerClass_AndTheNextSpillsItsOlderHalf(int returned)
    {
        var pool = new MessagePool(new MessagePoolOptions { LocalCacheCapacityPerClass = Cap, GlobalCapacityPerClass = 16 });
        var payloads = Enumerable.Range(0, returned).Select(i => pool.Rent(128, $"p{i}")).ToList();

        payloads.ForEach(p => p.Dispose());

        // Past the cap, half the stack (Cap / 2) moves to the global tier and the returned buffer joins the rest.
        var row = pool.GetClassStatistics()[0];
        var spilled = returned > Cap ? Cap / 2 : 0;
        Assert.Equal((returned - spilled, spilled), (row.LocalCached, row.GlobalCached));
        Assert.Equal(0, row.Dropped);
        PoolTestSupport.AssertIdentities(pool);
    }

    [Theory]
    [InlineData(1, 1)]
    [InlineData(2, 1)]
    [InlineData(3, 1)]
    [InlineData(5, 2)]
    public void FullLocalStack_SpillsHalfItsCapacityRoundedDown_ButAlwaysAtLeastOne(int localCapacity, int spilled)
    {
        var pool = new MessagePool(new MessagePoolOptions { LocalCacheCapacityPerClass = localCapacity, GlobalCapacityPerClass = 16 });
        var payloads = Enumerable.Range(0, localCapacity + 1).Select(i => pool.Rent(128, $"p{i}")).ToList();

        payloads.ForEach(p => p.Dispose());

        var row = pool.GetClassStatistics()[0];
        Assert.Equal((localCapacity + 1 - spilled, spilled), (row.LocalCached, row.GlobalCached));
        PoolTestSupport.AssertIdentities(pool);
    }

    [Theory]
    [InlineData(4, 3)]
    [InlineData(5, 3)]
    [InlineData(1, 1)]
    public void EmptyLocalStack_RefillsTheRentedBufferPlusHalfItsCapacityRoundedDown_FromTheGlobalTier(int localCapacity, int taken)
    {
        var pool = new MessagePool(new MessagePoolOptions
        {
            LocalCacheCapacityPerClass = localCapacity,
            GlobalCapacityPerClass = 16,
            PreWarmCountPerClass = 16,
            PreWarmMaxBytes = 128,
        });

        using var payload = pool.Rent(128, "refill");

        var row = pool.GetClassStatistics()[0];
        Assert.Equal((taken - 1, 16 - taken), (row.LocalCached, row.GlobalCached));
        Assert.Equal(1, row.Hits);
        PoolTestSupport.AssertIdentities(pool);
    }

    [Theory]
    [InlineData(Cap - 1)]
    [InlineData(Cap)]
    [InlineData(Cap + 1)]
    public void Returns_PastGlobalCapacityPerClass_AreDroppedToTheGC(int returned)
    {
        var pool = new MessagePool(new MessagePoolOptions { LocalCacheCapacityPerClass = 0, GlobalCapacityPerClass = Cap });
        var payloads = Enumerable.Range(0, returned).Select(i => pool.Rent(128, $"p{i}")).ToList();

        payloads.ForEach(p => p.Dispose());

        var row = pool.GetClassStatistics()[0];
        Assert.Equal(Math.Min(returned, Cap), row.GlobalCached);
        Assert.Equal(Math.Max(0, returned - Cap), row.Dropped);
        PoolTestSupport.AssertIdentities(pool);
    }

    [Theory]
    [InlineData(Cap - 1)]
    [InlineData(Cap)]
    [InlineData(Cap + 1)]
    public void PreWarmCountPerClass_FillsTheGlobalTier_UpToItsCapacity(int preWarmCount)
    {
        var pool = new MessagePool(new MessagePoolOptions { PreWarmCountPerClass = preWarmCount, GlobalCapacityPerClass = Cap, PreWarmMaxBytes = 128 });

        var row = pool.GetClassStatistics()[0];

        Assert.Equal(Math.Min(preWarmCount, Cap), row.PreWarmed);
        Assert.Equal(Math.Min(preWarmCount, Cap), row.GlobalCached);
        PoolTestSupport.AssertIdentities(pool);
    }

    [Theory]
    [InlineData(159)]
    [InlineData(160)]
    [InlineData(161)]
    public void PreWarmMaxBytes_PreWarmsAClassOfExactlyThatSize_ButNotOneByteLarger(int preWarmMaxBytes)
    {
        // The default classes start 128, 160, 192: the 160 B class is pre-warmed from a limit of 160 B up.
        var pool = new MessagePool(new MessagePoolOptions { PreWarmCountPerClass = 2, PreWarmMaxBytes = preWarmMaxBytes });

        var rows = pool.GetClassStatistics();

        Assert.Equal(160, rows[1].CapacityBytes);
        Assert.Equal(2, rows[0].PreWarmed);
        Assert.Equal(preWarmMaxBytes >= 160 ? 2 : 0, rows[1].PreWarmed);
        Assert.Equal(0, rows[2].PreWarmed);
    }

    [Theory]
    [InlineData(nameof(MessagePoolOptions.LocalCacheCapacityPerClass))]
    [InlineData(nameof(MessagePoolOptions.GlobalCapacityPerClass))]
    [InlineData(nameof(MessagePoolOptions.PreWarmCountPerClass))]
    [InlineData(nameof(MessagePoolOptions.MaxRentBytes))]
    public void Constructor_AcceptsZero_AndRefusesMinusOne_ForEachCount(string name)
    {
        _ = new MessagePool(With(name, 0));
        var error = Assert.Throws<ArgumentOutOfRangeException>(() => new MessagePool(With(name, -1)));

        Assert.Equal(name, error.ParamName);
    }

    [Fact]
    public void MaxRentBytesOfZero_AcceptsOnlyTheEmptyRent()
    {
        var pool = new MessagePool(new MessagePoolOptions { MaxRentBytes = 0 });

        using var empty = pool.Rent(0, "empty");
        Assert.Throws<ArgumentOutOfRangeException>(() => pool.Rent(1, "one byte"));
        Assert.Equal(0, empty.Length);
    }

    private static MessagePoolOptions With(string name, int value) => name switch
    {
        nameof(MessagePoolOptions.LocalCacheCapacityPerClass) => new MessagePoolOptions { LocalCacheCapacityPerClass = value },
        nameof(MessagePoolOptions.GlobalCapacityPerClass) => new MessagePoolOptions { GlobalCapacityPerClass = value },
        nameof(MessagePoolOptions.PreWarmCountPerClass) => new MessagePoolOptions { PreWarmCountPerClass = value },
        nameof(MessagePoolOptions.MaxRentBytes) => new MessagePoolOptions { MaxRentBytes = value },
        _ => throw new ArgumentOutOfRangeException(nameof(name), name, "not a numeric MessagePoolOptions count"),
    };
}
