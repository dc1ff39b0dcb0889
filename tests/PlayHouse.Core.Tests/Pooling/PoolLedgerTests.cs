using PlayHouse.Core.Pooling;

namespace PlayHouse.Core.Tests.Pooling;

/// <summary>The checked-mode ledger: outstanding buffers with owners, and leak reports that name them.</summary>
public sealed class PoolLedgerTests
{
    [Fact]
    public void ThrowIfLeaks_NamesLeakedBufferSizeAndOwner()
    {
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = true, Name = "play-1" });
        var returned = pool.Rent(100, "returned");
        var leaked = pool.Rent(3000, "stage-42").Move("stage-42/handler");
        returned.Dispose();

        var error = Assert.Throws<PoolOwnershipException>(pool.ThrowIfLeaks);

        Assert.Contains($"#{leaked.BufferId} (3072 B, length 3000 B, owner 'stage-42/handler')", error.Message, StringComparison.Ordinal);
        Assert.Contains("1 pooled buffer(s) leaked", error.Message, StringComparison.Ordinal);
        Assert.Contains("'play-1'", error.Message, StringComparison.Ordinal);
        Assert.DoesNotContain("'returned'", error.Message, StringComparison.Ordinal);
        Assert.Equal(leaked.BufferId, error.BufferId);

        leaked.Dispose();
        pool.ThrowIfLeaks();
        Assert.Empty(pool.GetOutstanding());
    }

    [Fact]
    public void ThrowIfLeaks_WithManyLeaks_NamesTheFirstTenAndCountsTheRest()
    {
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = true });
        var leaked = Enumerable.Range(0, 12).Select(i => pool.Rent(10, $"owner-{i}")).ToArray();

        var error = Assert.Throws<PoolOwnershipException>(pool.ThrowIfLeaks);

        Assert.Contains("12 pooled buffer(s) leaked", error.Message, StringComparison.Ordinal);
        Assert.Contains("'owner-9'", error.Message, StringComparison.Ordinal);
        Assert.DoesNotContain("'owner-10'", error.Message, StringComparison.Ordinal);
        Assert.Contains("and 2 more", error.Message, StringComparison.Ordinal);
        Array.ForEach(leaked, p => p.Dispose());
    }

    [Fact]
    public void GetOutstanding_ListsBuffersInRentOrderWithCurrentOwners()
    {
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = true });
        var first = pool.Rent(10, "a");
        var second = pool.Rent(2000, "b");
        var third = pool.Rent(2_000_000, "c").Move("d");

        var outstanding = pool.GetOutstanding();

        Assert.Equal(
            [
                new OutstandingBuffer(first.BufferId, 128, 10, "a"),
                new OutstandingBuffer(second.BufferId, 2048, 2000, "b"),
                new OutstandingBuffer(third.BufferId, 2_000_000, 2_000_000, "d"),
            ],
            outstanding);
        Assert.Equal(outstanding.Count, pool.GetStatistics().Outstanding);

        second.Dispose();
        Assert.Equal([first.BufferId, third.BufferId], pool.GetOutstanding().Select(b => b.BufferId));
        Assert.Equal(2, pool.GetStatistics().Outstanding);
        first.Dispose();
        third.Dispose();
    }

    [Fact]
    public void GetOutstanding_Unchecked_ThrowsBecauseThereIsNoLedger()
    {
        var pool = new MessagePool();

        var error = Assert.Throws<InvalidOperationException>(() => pool.GetOutstanding());

        Assert.Contains("CheckedMode", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void ThrowIfLeaks_Unchecked_CountsLeaksWithoutNames()
    {
        var pool = new MessagePool();
        var leaked = pool.Rent(10, "leaker");

        var error = Assert.Throws<PoolOwnershipException>(pool.ThrowIfLeaks);

        Assert.Contains("1 pooled buffer(s) leaked", error.Message, StringComparison.Ordinal);
        Assert.Contains("CheckedMode", error.Message, StringComparison.Ordinal);
        leaked.Dispose();
        pool.ThrowIfLeaks();
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public void Ledger_ManyRentsReturnedOutOfOrder_ListsExactlyTheOutstandingOnesInIdOrder(bool singleThreaded)
    {
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = true, SingleThreaded = singleThreaded });
        var rented = Enumerable.Range(0, 200).Select(i => pool.Rent(16 + i, $"owner-{i}")).ToArray();

        // Returning from the middle moves the last entry into each hole; what is left must still be listed, once each.
        for (var i = 0; i < rented.Length; i++)
        {
            if (i % 3 != 0)
            {
                rented[i].Dispose();
            }
        }

        var outstanding = pool.GetOutstanding();
        var expected = rented.Where((_, i) => i % 3 == 0).OrderBy(p => p.BufferId).ToArray();
        Assert.Equal(expected.Select(p => p.BufferId), outstanding.Select(b => b.BufferId));
        Assert.Equal(expected.Select(p => p.Owner), outstanding.Select(b => b.Owner));
        Array.ForEach(expected, p => p.Dispose());
        Assert.Empty(pool.GetOutstanding());
        pool.ThrowIfLeaks();
    }

    [Theory]
    [InlineData(10, "")]
    [InlineData(11, ", and 1 more")]
    public void ThrowIfLeaks_AtAndJustAboveTenLeaks_CountsOnlyTheUnnamed(int leakCount, string tail)
    {
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = true });
        var leaked = Enumerable.Range(0, leakCount).Select(i => pool.Rent(10, $"owner-{i}")).ToArray();

        var error = Assert.Throws<PoolOwnershipException>(pool.ThrowIfLeaks);

        // The names are joined by ", " and the message ends with the count of the ones left out, if any.
        Assert.Contains($"owner 'owner-0'), #{leaked[1].BufferId} ", error.Message, StringComparison.Ordinal);
        Assert.EndsWith($"owner 'owner-9'){tail}.", error.Message, StringComparison.Ordinal);
        Array.ForEach(leaked, p => p.Dispose());
    }

    [Fact]
    public void Rent_OfABufferTheLedgerStillLists_ThrowsAndReachesTheHook()
    {
        // A return path that put a buffer back without taking it off the ledger: the next rent of it must not hand it out.
        var faults = new List<PoolOwnershipException>();
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = true, OnOwnershipFault = faults.Add });
        var payload = pool.Rent(100, "first");
        var buffer = payload.Buffer!;
        payload.Dispose();
        buffer.LedgerSlot = 0;

        var error = Assert.Throws<PoolOwnershipException>(() => pool.Rent(100, "second"));

        Assert.Contains($"handed out buffer #{buffer.Id} (128 B) to 'second' while its ledger still lists it", error.Message, StringComparison.Ordinal);
        Assert.Equal(buffer.Id, error.BufferId);
        Assert.Same(error, Assert.Single(faults));
    }

    [Fact]
    public void Return_OfABufferTheLedgerDoesNotList_ThrowsAndReachesTheHook()
    {
        // A rent path that handed a buffer out without listing it: its return must fail loudly, not corrupt the ledger.
        var faults = new List<PoolOwnershipException>();
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = true, Name = "ledger", OnOwnershipFault = faults.Add });
        var listed = pool.Rent(100, "listed");
        var unlisted = pool.Rent(100, "unlisted");
        unlisted.Buffer!.LedgerSlot = -1;

        var error = Assert.Throws<PoolOwnershipException>(unlisted.Dispose);

        Assert.Equal($"Cannot return buffer #{unlisted.BufferId} (128 B) (owner 'unlisted'): the ledger of pool 'ledger' does not list it as outstanding.", error.Message);
        Assert.Equal(unlisted.BufferId, error.BufferId);
        Assert.Same(error, Assert.Single(faults));
        Assert.Equal(2, pool.GetOutstanding().Count);
        listed.Dispose();
    }
}
