using PlayHouse.Core.Pooling;

namespace PlayHouse.Core.Tests.Pooling;

/// <summary>
/// A pool with a replaced store (<see cref="MessagePoolOptions.Store"/>): every rent and return goes through the store,
/// the pool's counters and ownership checks stay as they are, and a store that hands out a buffer it must not is
/// refused. Each test runs on one thread.
/// </summary>
public sealed class PoolStoreTests
{
    [Fact]
    public void Rent_WithStore_MissesWhenEmptyAndHitsTheBufferTheStoreKept()
    {
        var store = default(StackStore);
        var pool = new MessagePool(new MessagePoolOptions { Store = p => store = new StackStore(p, retainedMaxPerClass: 4) });

        var first = pool.Rent(100, "first");
        var firstId = first.BufferId;
        first.Dispose();

        Assert.Equal(1, store!.Adds);
        Assert.Equal(1, store.RetainedIn(0));

        using var second = pool.Rent(120, "second");

        Assert.Equal(firstId, second.BufferId);
        Assert.Equal("second", second.Owner);
        Assert.Equal(120, second.Length);
        Assert.Equal(0, store.RetainedIn(0));
        var row = pool.GetClassStatistics()[0];
        Assert.Equal(2, row.Rents);
        Assert.Equal(1, row.Hits);
        Assert.Equal(1, row.Misses);
        Assert.Equal(1, row.Returns);
        Assert.Equal(0, row.Dropped);

        // The standard tiers stay empty: the store is the pool's only cache.
        Assert.Equal(0, row.LocalCached);
        Assert.Equal(0, pool.LocalCountForCurrentThread(0));
        PoolTestSupport.AssertIdentities(pool);
    }

    [Fact]
    public void Statistics_WithStore_CountTheStoresBuffersAsTheSharedTiers()
    {
        var pool = new MessagePool(new MessagePoolOptions { Store = p => new StackStore(p, retainedMaxPerClass: 8) });
        var small = Enumerable.Range(0, 3).Select(i => pool.Rent(128, $"s{i}")).ToArray();
        var large = pool.Rent(200, "l");

        foreach (var payload in small)
        {
            payload.Dispose();
        }

        large.Dispose();

        var rows = pool.GetClassStatistics();
        Assert.Equal(3, rows[0].GlobalCached);
        Assert.Equal(0, rows[0].LocalCached);
        Assert.Equal(1, rows[pool.FindSizeClass(200)].GlobalCached);
        Assert.Equal(0, rows[pool.FindSizeClass(200)].LocalCached);
        Assert.Equal(4, pool.RetainedBuffers);
        Assert.Equal(8, pool.RetainedMaxPerClassPerThread);
        PoolTestSupport.AssertIdentities(pool);
        PoolTestSupport.AssertBalanced(pool);
    }

    [Fact]
    public void Return_WhenTheStoreRefuses_IsDroppedAndCounted()
    {
        var pool = new MessagePool(new MessagePoolOptions { Store = p => new StackStore(p, retainedMaxPerClass: 1) });
        var kept = pool.Rent(128, "kept");
        var refused = pool.Rent(128, "refused");

        kept.Dispose();
        refused.Dispose();

        var row = pool.GetClassStatistics()[0];
        Assert.Equal(2, row.Returns);
        Assert.Equal(1, row.Dropped);
        Assert.Equal(1, row.GlobalCached);
        Assert.Equal(1, pool.GetStatistics().Dropped);
        Assert.Equal(1, pool.RetainedBuffers);
        PoolTestSupport.AssertIdentities(pool);
    }

    [Fact]
    public void Return_OfOversizeBufferWithStore_IsDroppedWithoutOfferingItToTheStore()
    {
        var store = default(StackStore);
        var pool = new MessagePool(new MessagePoolOptions
        {
            SizeClassBytes = [128, 256],
            Store = p => store = new StackStore(p, retainedMaxPerClass: 4),
        });

        var oversize = pool.Rent(300, "big");
        oversize.Dispose();

        Assert.Equal(0, store!.Adds);
        Assert.Equal(0, pool.RetainedBuffers);
        var stats = pool.GetStatistics();
        Assert.Equal(1, stats.OversizeRents);
        Assert.Equal(1, stats.Returns);
        Assert.Equal(1, stats.Dropped);
        PoolTestSupport.AssertIdentities(pool);
    }

    [Fact]
    public void ReturnWithStore_InCheckedMode_KeepsTheLedgerAndPoisons()
    {
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = true, Store = p => new StackStore(p, retainedMaxPerClass: 4) });
        var payload = pool.Rent(128, "writer");
        payload.WritableSpan.Fill(0x42);
        var memory = payload.Memory;

        Assert.Single(pool.GetOutstanding());

        payload.Dispose();

        Assert.Empty(pool.GetOutstanding());
        Assert.All(memory.ToArray(), b => Assert.Equal(MessagePoolOptions.PoisonByte, b));
        using var again = pool.Rent(128, "reader");
        Assert.Equal(payload.BufferId, again.BufferId);
        Assert.Equal("reader", Assert.Single(pool.GetOutstanding()).Owner);
    }

    [Theory]
    [InlineData("rented")]
    [InlineData("foreign")]
    [InlineData("other class")]
    public void Rent_WhenTheStoreHandsOutABufferItMustNot_ThrowsNamingTheBuffer(string flaw)
    {
        var other = new MessagePool();
        var bad = default(StackStore);
        var pool = new MessagePool(new MessagePoolOptions { Store = p => bad = new StackStore(p, retainedMaxPerClass: 4) });
        var rented = pool.Rent(128, "holder");

        // Each flaw alone: the foreign buffer and the one of another class are free (returned), the rented one is of
        // the right class and pool.
        var handedOut = flaw switch
        {
            "rented" => rented,
            "foreign" => other.Rent(128, "elsewhere"),
            _ => pool.Rent(200, "wide"),
        };
        var buffer = handedOut.Buffer!;
        if (flaw != "rented")
        {
            handedOut.Dispose();
        }

        var rentsBefore = pool.GetStatistics().Rents;
        bad!.Force(0, buffer);

        var error = Assert.Throws<PoolOwnershipException>(() => pool.Rent(128, "victim"));

        Assert.Equal(buffer.Id, error.BufferId);
        Assert.Contains($"#{buffer.Id}", error.Message, StringComparison.Ordinal);
        Assert.Contains("store handed out", error.Message, StringComparison.Ordinal);

        // The refused rent counted nothing and changed no owner.
        Assert.Equal(rentsBefore, pool.GetStatistics().Rents);
        Assert.True(rented.IsOwner);
        Assert.Equal("holder", rented.Owner);
    }

    [Fact]
    public void Rent_WhenTheStoreHandsOutAFreeBufferOfItsClass_IsAccepted()
    {
        // The counterpart of the refusals above: the same forced hand-out of a free buffer of the right class is a hit.
        var store = default(StackStore);
        var pool = new MessagePool(new MessagePoolOptions { Store = p => store = new StackStore(p, retainedMaxPerClass: 4) });
        var payload = pool.Rent(128, "first");
        var buffer = payload.Buffer!;
        payload.Dispose();
        store!.Force(0, buffer);

        using var again = pool.Rent(128, "second");

        Assert.Equal(payload.BufferId, again.BufferId);
        Assert.Equal(1, pool.GetStatistics().Hits);
    }

    [Fact]
    public void Constructor_WithStoreAndPreWarm_ThrowsBecausePreWarmFillsTheStandardTiers()
    {
        var error = Assert.Throws<ArgumentException>(() => new MessagePool(new MessagePoolOptions
        {
            PreWarmCountPerClass = 1,
            Store = p => new StackStore(p, retainedMaxPerClass: 4),
        }));

        Assert.Contains("Pre-warming", error.Message, StringComparison.Ordinal);
        Assert.Equal("options", error.ParamName);
    }

    [Fact]
    public void Constructor_WhenTheStoreFactoryMakesNoStore_Throws()
    {
        var error = Assert.Throws<ArgumentException>(() => new MessagePool(new MessagePoolOptions { Store = _ => null! }));

        Assert.Contains("made no store", error.Message, StringComparison.Ordinal);
        Assert.Equal("options", error.ParamName);
    }

    /// <summary>A bounded stack per size class; <see cref="Force"/> plants a buffer for the next take of a class.</summary>
    private sealed class StackStore(MessagePool pool, long retainedMaxPerClass) : MessagePoolStore
    {
        private readonly Stack<PooledBuffer>[] _free = [.. pool.SizeClassBytes.Select(_ => new Stack<PooledBuffer>())];

        public int Adds { get; private set; }

        public override long RetainedMaxPerClass => retainedMaxPerClass;

        public override long RetainedIn(int sizeClass) => _free[sizeClass].Count;

        public void Force(int sizeClass, PooledBuffer buffer) => _free[sizeClass].Push(buffer);

        internal override PooledBuffer? TryTake(int sizeClass) => _free[sizeClass].TryPop(out var buffer) ? buffer : null;

        internal override bool TryAdd(PooledBuffer buffer)
        {
            Adds++;
            if (_free[buffer.SizeClass].Count >= retainedMaxPerClass)
            {
                return false;
            }

            _free[buffer.SizeClass].Push(buffer);
            return true;
        }
    }
}
