using PlayHouse.Core.Pooling;

namespace PlayHouse.Core.Tests.Pooling;

/// <summary>Ownership rules of <see cref="Payload"/>: one owner, stale handles fail loudly, in both modes.</summary>
public sealed class PayloadOwnershipTests
{
    public static TheoryData<bool> BothModes => new() { false, true };

    public static TheoryData<bool, string> BothModesAndEveryUse
    {
        get
        {
            var data = new TheoryData<bool, string>();
            foreach (var checkedMode in new[] { false, true })
            {
                foreach (var use in new[] { "read Span", "read Memory", "write", "write Memory", "Move", "Length", "Capacity", "SetLength", "Dispose" })
                {
                    data.Add(checkedMode, use);
                }
            }

            return data;
        }
    }

    [Fact]
    public void Dispose_Twice_ThrowsNamingTheBuffer()
    {
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = true });
        var payload = pool.Rent(100, "test");
        payload.Dispose();

        var error = Assert.Throws<PoolOwnershipException>(() => payload.Dispose());
        Assert.Contains($"#{payload.BufferId}", error.Message, StringComparison.Ordinal);
        Assert.Contains("'test'", error.Message, StringComparison.Ordinal);
    }

    [Theory]
    [MemberData(nameof(BothModes))]
    public void Dispose_Twice_ThrowsNamingIdSizeAndLastOwner_AndCountsOneReturn(bool checkedMode)
    {
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = checkedMode });
        var payload = pool.Rent(300, "handler");
        var copy = payload;
        payload.Dispose();

        var error = Assert.Throws<PoolOwnershipException>(() => copy.Dispose());

        Assert.Contains($"#{payload.BufferId} (320 B)", error.Message, StringComparison.Ordinal);
        Assert.Contains("twice", error.Message, StringComparison.Ordinal);
        Assert.Contains("last owner 'handler'", error.Message, StringComparison.Ordinal);
        Assert.Equal(payload.BufferId, error.BufferId);
        var stats = pool.GetStatistics();
        Assert.Equal(1, stats.Returns);
        Assert.Equal(1, stats.Rents);
        Assert.Equal(1, pool.GetClassStatistics()[pool.FindSizeClass(300)].LocalCached);
    }

    [Theory]
    [MemberData(nameof(BothModes))]
    public void Return_ToAnotherPool_ThrowsNamingBothPoolsAndLeavesOwnershipIntact(bool checkedMode)
    {
        var nodeA = new MessagePool(new MessagePoolOptions { CheckedMode = checkedMode, Name = "node-a" });
        var nodeB = new MessagePool(new MessagePoolOptions { CheckedMode = checkedMode, Name = "node-b" });
        var payload = nodeA.Rent(128, "session-7");

        var error = Assert.Throws<PoolOwnershipException>(() => nodeB.Return(payload));

        Assert.Contains($"#{payload.BufferId} (128 B)", error.Message, StringComparison.Ordinal);
        Assert.Contains("'session-7'", error.Message, StringComparison.Ordinal);
        Assert.Contains("pool 'node-b'", error.Message, StringComparison.Ordinal);
        Assert.Contains("'node-a'", error.Message, StringComparison.Ordinal);
        Assert.True(payload.IsOwner);
        Assert.Equal(0, nodeB.GetStatistics().Returns);
        Assert.Equal(0, nodeA.GetStatistics().Returns);

        nodeA.Return(payload);
        PoolTestSupport.AssertBalanced(nodeA);
        Assert.Equal(0, nodeB.GetStatistics().Rents);
    }

    [Theory]
    [MemberData(nameof(BothModes))]
    public void Return_ThroughPoolWithStaleHandle_ThrowsAndKeepsTheNewOwner(bool checkedMode)
    {
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = checkedMode });
        var stale = pool.Rent(128, "sender");
        var current = stale.Move("receiver");

        var error = Assert.Throws<PoolOwnershipException>(() => pool.Return(stale));

        Assert.Contains("moved to 'receiver'", error.Message, StringComparison.Ordinal);
        Assert.True(current.IsOwner);
        Assert.Equal(0, pool.GetStatistics().Returns);
        pool.Return(current);
        PoolTestSupport.AssertBalanced(pool);
    }

    [Fact]
    public void Return_OfEmptyPayload_IsANoOp()
    {
        var pool = new MessagePool();

        pool.Return(Payload.Empty);
        Payload.Empty.Dispose();

        Assert.Equal(0, pool.GetStatistics().Returns);
        Assert.False(Payload.Empty.DisposeIfOwner());
    }

    [Theory]
    [MemberData(nameof(BothModesAndEveryUse))]
    public void Use_AfterReturn_ThrowsNamingBufferSizeAndLastOwner(bool checkedMode, string use)
    {
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = checkedMode });
        var payload = pool.Rent(1000, "request-handler");
        payload.Dispose();

        var error = Assert.Throws<PoolOwnershipException>(() => Use(payload, use));

        Assert.Contains($"#{payload.BufferId} (1024 B)", error.Message, StringComparison.Ordinal);
        Assert.Contains("already returned (last owner 'request-handler')", error.Message, StringComparison.Ordinal);
        Assert.False(payload.IsOwner);
        Assert.Null(payload.Owner);
        Assert.Equal(1, pool.GetStatistics().Returns);
    }

    [Theory]
    [MemberData(nameof(BothModesAndEveryUse))]
    public void Use_AfterReRentBySomeoneElse_ThrowsNamingTheOwners_AndDoesNotDisturbTheNewOwner(bool checkedMode, string use)
    {
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = checkedMode });
        var old = pool.Rent(64, "old-owner");
        old.Dispose();
        using var fresh = pool.Rent(64, "new-owner");
        Assert.Equal(old.BufferId, fresh.BufferId);
        fresh.WritableSpan.Fill(0x5A);

        var error = Assert.Throws<PoolOwnershipException>(() => Use(old, use));

        Assert.Contains($"#{old.BufferId} (128 B)", error.Message, StringComparison.Ordinal);
        // Checked mode records the previous owner at each rent; unchecked mode skips that store and names the new one.
        var expectedReason = checkedMode ? "returned (last owner 'old-owner') and re-rented by 'new-owner'" : "returned and re-rented by 'new-owner'";
        Assert.Contains(expectedReason, error.Message, StringComparison.Ordinal);
        Assert.True(fresh.IsOwner);
        Assert.Equal(64, fresh.Length);
        Assert.All(fresh.Span.ToArray(), b => Assert.Equal(0x5A, b));
        Assert.Equal(1, pool.GetStatistics().Outstanding);
    }

    [Theory]
    [MemberData(nameof(BothModesAndEveryUse))]
    public void StaleCopy_AfterMove_ThrowsWhileNewHandleWorks(bool checkedMode, string use)
    {
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = checkedMode });
        var original = pool.Rent(10, "sender");
        original.WritableSpan.Fill(7);

        var moved = original.Move("transport");
        var error = Assert.Throws<PoolOwnershipException>(() => Use(original, use));

        Assert.Contains($"#{original.BufferId} (128 B)", error.Message, StringComparison.Ordinal);
        Assert.Contains("ownership moved to 'transport'", error.Message, StringComparison.Ordinal);
        Assert.False(original.IsOwner);
        Assert.True(moved.IsOwner);
        Assert.Equal("transport", moved.Owner);
        Assert.Equal([7, 7, 7, 7, 7, 7, 7, 7, 7, 7], moved.Span.ToArray());
        moved.WritableSpan[0] = 8;
        Assert.Equal(8, moved.Span[0]);
        moved.Dispose();
        PoolTestSupport.AssertBalanced(pool);
    }

    [Fact]
    public void Move_OfStaleHandle_NamesTheIntendedNewOwner()
    {
        var pool = new MessagePool();
        var payload = pool.Rent(10, "a");
        _ = payload.Move("b");

        var error = Assert.Throws<PoolOwnershipException>(() => payload.Move("c"));

        Assert.Contains($"Cannot move buffer #{payload.BufferId} (128 B) to 'c'", error.Message, StringComparison.Ordinal);
        Assert.Contains("moved to 'b'", error.Message, StringComparison.Ordinal);
    }

    [Theory]
    [MemberData(nameof(BothModes))]
    public void DisposeIfOwner_AfterMove_IsNoOpAndReturnsFalse(bool checkedMode)
    {
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = checkedMode });
        var lent = pool.Rent(50, "runtime");
        var taken = lent.Move("handler");

        Assert.False(lent.DisposeIfOwner());
        Assert.Equal(0, pool.GetStatistics().Returns);
        Assert.True(taken.IsOwner);
        Assert.Equal(50, taken.Length);

        Assert.True(taken.DisposeIfOwner());
        Assert.False(taken.DisposeIfOwner());
        Assert.Equal(1, pool.GetStatistics().Returns);
        PoolTestSupport.AssertBalanced(pool);
    }

    [Theory]
    [MemberData(nameof(BothModes))]
    public void DisposeIfOwner_WhenOwner_ReturnsTrueAndReturnsOnce(bool checkedMode)
    {
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = checkedMode });
        var payload = pool.Rent(50, "runtime");
        var copy = payload;

        Assert.True(payload.DisposeIfOwner());
        Assert.False(copy.DisposeIfOwner());

        var stats = pool.GetStatistics();
        Assert.Equal(1, stats.Returns);
        Assert.Equal(1, stats.Rents);
    }

    [Fact]
    public void Return_InCheckedMode_PoisonsTheWholeBuffer()
    {
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = true });
        var payload = pool.Rent(100, "writer");
        var raw = payload.WritableMemory;
        raw.Span.Fill(0x11);

        payload.Dispose();

        Assert.All(raw.Span.ToArray(), b => Assert.Equal(MessagePoolOptions.PoisonByte, b));
        Assert.Equal(0xDD, MessagePoolOptions.PoisonByte);
    }

    [Fact]
    public void Return_Unchecked_LeavesBytesByDefault()
    {
        var pool = new MessagePool();
        var payload = pool.Rent(100, "writer");
        var raw = payload.WritableMemory;
        raw.Span.Fill(0x11);

        payload.Dispose();

        Assert.All(raw.Span.ToArray(), b => Assert.Equal(0x11, b));
    }

    [Fact]
    public void Return_WithClearOnReturn_ZeroesTheWholeBuffer()
    {
        var pool = new MessagePool(new MessagePoolOptions { ClearOnReturn = true });
        var payload = pool.Rent(100, "writer");
        payload.SetLength(128);
        var raw = payload.WritableMemory;
        raw.Span.Fill(0x11);

        payload.Dispose();

        Assert.Equal(128, raw.Length);
        Assert.All(raw.Span.ToArray(), b => Assert.Equal(0, b));
    }

    [Fact]
    public void Rent_CheckedWithClearOnReturn_PoisonsOnReturnAndRentsZeroed()
    {
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = true, ClearOnReturn = true });
        var payload = pool.Rent(128, "writer");
        var raw = payload.WritableMemory;
        raw.Span.Fill(0x11);

        payload.Dispose();
        Assert.All(raw.Span.ToArray(), b => Assert.Equal(MessagePoolOptions.PoisonByte, b));

        using var again = pool.Rent(128, "reader");
        Assert.Equal(payload.BufferId, again.BufferId);
        Assert.All(again.Span.ToArray(), b => Assert.Equal(0, b));
    }

    [Fact]
    public void SetLength_WithinCapacity_ChangesVisibleLength()
    {
        var pool = new MessagePool();
        using var payload = pool.Rent(100, "writer");

        payload.SetLength(128);
        Assert.Equal(128, payload.Span.Length);
        payload.SetLength(3);
        Assert.Equal(3, payload.Span.Length);

        Assert.Throws<ArgumentOutOfRangeException>(() => payload.SetLength(129));
        Assert.Throws<ArgumentOutOfRangeException>(() => payload.SetLength(-1));
    }

    [Fact]
    public void Empty_HasNoBytesAndOwnsNothing()
    {
        var empty = Payload.Empty;

        Assert.True(empty.IsEmpty);
        Assert.False(empty.IsOwner);
        Assert.Equal(0, empty.Length);
        Assert.True(empty.Span.IsEmpty);
        Assert.True(empty.Move("x").IsEmpty);
        Assert.Throws<InvalidOperationException>(() => empty.SetLength(1));
    }

    [Theory]
    [InlineData("read Span", "read")]
    [InlineData("read Memory", "read")]
    [InlineData("write", "write")]
    [InlineData("write Memory", "write")]
    [InlineData("Length", "read the length of")]
    [InlineData("Capacity", "read the capacity of")]
    [InlineData("SetLength", "set length")]
    [InlineData("Move", "move")]
    public void Use_AfterReturn_NamesWhatWasAttempted(string use, string action)
    {
        var pool = new MessagePool();
        var payload = pool.Rent(100, "owner");
        payload.Dispose();

        var error = Assert.Throws<PoolOwnershipException>(() => Use(payload, use));

        Assert.StartsWith($"Cannot {action} buffer #{payload.BufferId} (128 B)", error.Message, StringComparison.Ordinal);
        Assert.Equal(payload.BufferId, error.BufferId);
    }

    [Fact]
    public void Empty_GivesEmptyViewsAndZeroCapacity_AndOnlyLengthZeroFits()
    {
        var empty = Payload.Empty;

        Assert.True(empty.Memory.IsEmpty);
        Assert.True(empty.WritableSpan.IsEmpty);
        Assert.True(empty.WritableMemory.IsEmpty);
        Assert.Equal(0, empty.Capacity);
        Assert.Equal(0, empty.BufferId);
        Assert.Null(empty.Owner);

        empty.SetLength(0);
        var error = Assert.Throws<InvalidOperationException>(() => empty.SetLength(1));
        Assert.Equal("The empty payload has no capacity.", error.Message);
    }

    [Fact]
    public void ToString_NamesTheBufferLengthAndOwner_OrSaysEmpty()
    {
        var pool = new MessagePool();
        using var payload = pool.Rent(10, "stage-3");

        Assert.Equal($"Payload(#{payload.BufferId}, 10 B, owner 'stage-3')", payload.ToString());
        Assert.Equal("Payload(empty)", Payload.Empty.ToString());
    }

    [Theory]
    [MemberData(nameof(BothModes))]
    public void Move_AfterReRent_NeverRevivesAHandleOfAnEarlierRent(bool checkedMode)
    {
        // Each move bumps the generation forward; a step back would land on a generation an old handle still holds.
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = checkedMode });
        var firstRent = pool.Rent(100, "first");
        firstRent.Dispose();
        var secondRent = pool.Rent(100, "second");
        Assert.Equal(firstRent.BufferId, secondRent.BufferId);

        var moved = secondRent.Move("third");

        Assert.True(moved.IsOwner);
        Assert.False(secondRent.IsOwner);
        Assert.False(firstRent.IsOwner);
        Assert.Throws<PoolOwnershipException>(() => firstRent.Span.Length);
        moved.Dispose();
        Assert.Equal(2, pool.GetStatistics().Returns);
    }

    private static void Use(Payload payload, string use)
    {
        switch (use)
        {
            case "read Span":
                _ = payload.Span;
                break;
            case "read Memory":
                _ = payload.Memory;
                break;
            case "write":
                payload.WritableSpan[0] = 1;
                break;
            case "write Memory":
                _ = payload.WritableMemory;
                break;
            case "Move":
                _ = payload.Move("thief");
                break;
            case "Length":
                _ = payload.Length;
                break;
            case "Capacity":
                _ = payload.Capacity;
                break;
            case "SetLength":
                payload.SetLength(1);
                break;
            case "Dispose":
                payload.Dispose();
                break;
            default:
                throw new ArgumentOutOfRangeException(nameof(use), use, "Unknown use.");
        }
    }
}
