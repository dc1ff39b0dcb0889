using Microsoft.Extensions.Time.Testing;
using PlayHouse.Core.Pooling;
using PlayHouse.Simulation.Checkers;

namespace PlayHouse.Simulation.Tests.Checkers;

public sealed class PoolLedgerCheckerTests
{
    private readonly FakeTimeProvider _clock = CheckerClock.AtZero();

    private static MessagePool CheckedPool() => new(new MessagePoolOptions { CheckedMode = true });

    [Fact]
    public void PoolLedger_BuffersNotReturned_ListsLeakedBuffersWithOwners()
    {
        var pool = CheckedPool();
        var checker = new PoolLedgerChecker(_clock);
        checker.Add("play-1", pool);
        var returned = pool.Rent(10, "client");
        var leakA = pool.Rent(16, "stage 7 reply");
        var leakB = pool.Rent(300, "mesh");
        returned.Dispose();

        checker.CheckStep();
        Assert.False(checker.HasViolations);
        checker.CheckQuiescent();

        var violation = Assert.Single(checker.Violations);
        Assert.StartsWith("pool 'play-1': 2 buffer(s) outstanding at quiescence (rents 3, returns 1)", violation.Message, StringComparison.Ordinal);
        Assert.Contains($"first leaked: #{leakA.BufferId} (16 B, owner 'stage 7 reply'), #{leakB.BufferId} (300 B, owner 'mesh')", violation.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void PoolLedger_ManyLeaks_ListsTheFirstAndCountsTheRest()
    {
        var pool = CheckedPool();
        var checker = new PoolLedgerChecker(_clock, leakedBuffersListedMax: 3);
        checker.Add("play-1", pool);
        for (var i = 0; i < 7; i++)
        {
            _ = pool.Rent(8, $"owner {i}");
        }

        checker.CheckQuiescent();

        var message = Assert.Single(checker.Violations).Message;
        Assert.Contains("owner 'owner 2'), and 4 more", message, StringComparison.Ordinal);
        Assert.DoesNotContain("owner 3", message, StringComparison.Ordinal);
    }

    [Fact]
    public void PoolLedger_SameLeakAtTwoQuiescentPoints_IsReportedOnceAndANewLeakAgain()
    {
        var pool = CheckedPool();
        var checker = new PoolLedgerChecker(_clock);
        checker.Add("play-1", pool);
        _ = pool.Rent(8, "first");
        checker.CheckQuiescent();
        checker.CheckQuiescent();
        Assert.Equal(1, checker.ViolationCount);

        _ = pool.Rent(8, "second");
        checker.CheckQuiescent();

        Assert.Equal(2, checker.ViolationCount);
        Assert.Contains("2 buffer(s) outstanding", checker.Violations[1].Message, StringComparison.Ordinal);
    }

    [Fact]
    public void PoolLedger_ByteStoreStillHoldingBytesAtQuiescence_IsALeakReportedOnce()
    {
        var checker = new PoolLedgerChecker(_clock);
        long held = 0;
        checker.AddByteStore("network stream bytes in flight", () => held);
        checker.CheckQuiescent();
        Assert.False(checker.HasViolations);

        held = 42;
        checker.CheckStep();
        Assert.False(checker.HasViolations);
        checker.CheckQuiescent();
        checker.CheckQuiescent();

        var violation = Assert.Single(checker.Violations);
        Assert.Equal("store 'network stream bytes in flight': 42 byte(s) still held at quiescence (nothing is left to deliver or discard them)", violation.Message);
    }

    [Fact]
    public void PoolLedger_ByteStoreEmptiedBeforeQuiescence_Passes()
    {
        var checker = new PoolLedgerChecker(_clock);
        long held = 64;
        checker.AddByteStore("network stream bytes in flight", () => held);
        held = 0;

        checker.CheckQuiescent();

        Assert.False(checker.HasViolations);
        Assert.Equal(0, checker.ViolationCount);
    }

    [Fact]
    public void PoolLedger_EveryRentReturned_Passes()
    {
        var pool = CheckedPool();
        var other = CheckedPool();
        var checker = new PoolLedgerChecker(_clock);
        Assert.True(checker.Add("play-1", pool));
        Assert.True(checker.Add("api-1", other));
        Assert.False(checker.Add("play-1 again", pool));
        for (var i = 0; i < 5; i++)
        {
            using var payload = pool.Rent(100 * i, "client");
            var moved = other.Copy([1, 2, 3], "mesh").Move("reply");
            moved.Dispose();
        }

        checker.CheckQuiescent();

        Assert.False(checker.HasViolations);
        Assert.Equal(2, checker.PoolCount);
        Assert.Equal(5, pool.GetStatistics().Rents);
        Assert.Equal(5, other.GetStatistics().Returns);
    }

    [Fact]
    public void PoolLedger_PoolWithoutCheckedMode_IsRefused()
    {
        var checker = new PoolLedgerChecker(_clock);
        var error = Assert.Throws<ArgumentException>(() => checker.Add("play-1", new MessagePool()));
        Assert.Contains("not in checked mode", error.Message, StringComparison.Ordinal);
        Assert.Equal(0, checker.PoolCount);
    }
}

/// <summary>Ownership faults are violations of the pool ledger from the moment a pool detects them.</summary>
public sealed class PoolLedgerFaultTests
{
    private readonly FakeTimeProvider _clock = new();

    [Fact]
    public void OwnershipFault_IsRecordedWithThePoolAndBuffer_EvenWhenItsExceptionIsCaught()
    {
        var checker = new PoolLedgerChecker(_clock);
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = true, OnOwnershipFault = f => checker.OnOwnershipFault("play-1", f) });
        var payload = pool.Rent(40, "relay");
        var stale = payload;
        payload.Dispose();

        PoolOwnershipException? caught = null;
        try
        {
            _ = stale.Span.Length;
        }
        catch (PoolOwnershipException e)
        {
            // A stage that catches a handler's exception: the fault must not vanish with it.
            caught = e;
        }

        var violation = Assert.Single(checker.Violations);
        Assert.StartsWith($"pool 'play-1': ownership fault: Cannot read buffer #{payload.BufferId}", violation.Message, StringComparison.Ordinal);
        Assert.Contains("(last owner 'relay')", violation.Message, StringComparison.Ordinal);
        Assert.True(checker.HasRecorded(caught));
        Assert.True(checker.HasRecorded(new AggregateException(new InvalidOperationException("wrapper", caught))));
        Assert.False(checker.HasRecorded(new PoolOwnershipException("another fault")));
        Assert.Equal(1, checker.OwnershipFaults);
    }
}
