using Microsoft.Extensions.Time.Testing;
using PlayHouse.Simulation.Checkers;

namespace PlayHouse.Simulation.Tests.Checkers;

/// <summary>
/// What every checker shares: the context's clock, gate and sequence, the log that keeps the first violations up to
/// its cap and counts the rest, the verdict and the exception a violated checker throws, each with its exact text.
/// </summary>
public sealed class ViolationLogTests
{
    [Fact]
    public void Context_RefusesANullClockAndAKeptMaximumBelowOne_ButTakesOne()
    {
        Assert.Equal("time", Assert.Throws<ArgumentNullException>(() => new CheckerContext(null!)).ParamName);
        Assert.Equal("violationsKeptMax", Assert.Throws<ArgumentOutOfRangeException>(() => new CheckerContext(new FakeTimeProvider(), 0)).ParamName);

        var context = new CheckerContext(new FakeTimeProvider(), 1);

        Assert.Equal(1, context.ViolationsKeptMax);
        Assert.False(context.SingleThreaded);
        Assert.False(context.HasViolations);
    }

    [Fact]
    public void Context_ReadsTheClockInTicks_WhateverItsFrequency()
    {
        var world = new SimWorld(1);
        world.RunUntil(12_345);
        var microseconds = new FrequencyClock(timestamp: 2_500_000, frequency: 1_000_000);
        var ticks = new FrequencyClock(timestamp: 777, frequency: TimeSpan.TicksPerSecond);

        Assert.Equal(12_345, new CheckerContext(world.Time).NowTicks);
        Assert.Equal(TimeSpan.FromSeconds(2.5).Ticks, new CheckerContext(microseconds).NowTicks);
        Assert.Equal(777, new CheckerContext(ticks).NowTicks);
    }

    [Fact]
    public void Enter_HoldsTheGateForItsScope_UnlessTheContextIsSingleThreaded()
    {
        var gate = new Lock();
        var shared = new CheckerContext(new FakeTimeProvider());
        var single = new CheckerContext(new FakeTimeProvider(), singleThreaded: true);

        using (shared.Enter(gate))
        {
            Assert.True(gate.IsHeldByCurrentThread);
        }

        Assert.False(gate.IsHeldByCurrentThread);
        using (single.Enter(gate))
        {
            Assert.False(gate.IsHeldByCurrentThread);
        }

        Assert.True(single.SingleThreaded);
    }

    [Fact]
    public void Log_RefusesAnEmptyNameANullContextAndAnEmptyMessage()
    {
        var context = new CheckerContext(new FakeTimeProvider());

        Assert.Throws<ArgumentException>(() => new ViolationLog(string.Empty, context));
        Assert.Throws<ArgumentNullException>(() => new ViolationLog("name", null!));
        var log = new ViolationLog("name", context);
        Assert.Throws<ArgumentException>(() => log.Record(string.Empty));
        Assert.Equal(0, log.Count);
        Assert.False(log.HasViolations);
    }

    [Fact]
    public void Log_KeepsTheFirstViolationsUpToItsContextsCap_AndCountsEveryOne()
    {
        var clock = CheckerClock.AtZero();
        var context = new CheckerContext(clock, violationsKeptMax: 2);
        var log = new ViolationLog("Fifo", context);
        var other = new ViolationLog("Other", context);

        Assert.Equal(new CheckerVerdict("Fifo", true, null, 0), log.Verdict);
        Assert.Null(log.First);
        clock.Advance(TimeSpan.FromSeconds(3));
        log.Record("first");
        other.Record("between");
        log.RecordAt(TimeSpan.FromSeconds(9).Ticks, "second");
        log.Record("third");

        var kept = log.Snapshot();
        Assert.Equal(["first", "second"], kept.Select(v => v.Message));
        Assert.Equal([1L, 3L], kept.Select(v => v.Sequence));
        Assert.Equal([TimeSpan.FromSeconds(3), TimeSpan.FromSeconds(9)], kept.Select(v => v.VirtualTime));
        Assert.Equal(3, log.Count);
        Assert.True(log.HasViolations);
        Assert.True(context.HasViolations);
        Assert.Same(kept[0], log.First);
        Assert.Equal(new CheckerVerdict("Fifo", false, "first", 3), log.Verdict);
    }

    [Fact]
    public void ThrowIfViolated_IsSilentWithoutViolations_AndOtherwiseNamesTheCountAndTheKeptOnes()
    {
        var context = new CheckerContext(CheckerClock.AtZero(), violationsKeptMax: 1);
        var log = new ViolationLog("Liveness", context);
        log.ThrowIfViolated();

        log.RecordAt(TimeSpan.FromMilliseconds(1500).Ticks, "request 7 unanswered");
        log.Record("request 8 unanswered");
        var thrown = Assert.Throws<InvariantViolationException>(log.ThrowIfViolated);

        Assert.Equal("2 invariant violation(s); first: [Liveness] at 00:00:01.5000000: request 7 unanswered\n... and 1 more.", thrown.Message);
        Assert.Equal("request 7 unanswered", Assert.Single(thrown.Violations).Message);
    }

    [Fact]
    public void Exception_ListsAtMostTenViolations_AndCountsTheRestAsMore()
    {
        var ten = Enumerable.Range(1, 10).Select(i => new Violation("C", TimeSpan.Zero, $"v{i}")).ToList();
        var eleven = Enumerable.Range(1, 11).Select(i => new Violation("C", TimeSpan.Zero, $"v{i}")).ToList();

        var allListed = InvariantViolationException.From(ten, 10).Message;
        var tenListed = InvariantViolationException.From(eleven, 11).Message;

        Assert.Equal(10, allListed.Split('\n').Length);
        Assert.EndsWith("[C] at 00:00:00: v10", allListed, StringComparison.Ordinal);
        Assert.Equal(11, tenListed.Split('\n').Length);
        Assert.DoesNotContain("v11", tenListed, StringComparison.Ordinal);
        Assert.EndsWith("[C] at 00:00:00: v10\n... and 1 more.", tenListed, StringComparison.Ordinal);
    }

    [Fact]
    public void Exception_WithNoViolationKept_SaysSo_AndRefusesANullList()
    {
        Assert.Equal("4 invariant violation(s), none kept in memory.", InvariantViolationException.From([], 4).Message);
        Assert.Throws<ArgumentNullException>(() => InvariantViolationException.From(null!, 1));
        Assert.Empty(new InvariantViolationException("text").Violations);
    }

    [Fact]
    public void VerdictAndViolation_PrintThemselvesForTheReport()
    {
        var violation = new Violation("Stray", TimeSpan.FromMinutes(2), "reply to nobody");

        Assert.Equal("[Stray] at 00:02:00: reply to nobody", violation.ToString());
        Assert.Equal("PASS Stray", new CheckerVerdict("Stray", true, null, 0).ToString());
        Assert.Equal("FAIL Stray (2 violation(s)): reply to nobody", new CheckerVerdict("Stray", false, "reply to nobody", 2).ToString());
    }

    /// <summary>A clock standing still at a timestamp, counting at a frequency of its own.</summary>
    private sealed class FrequencyClock(long timestamp, long frequency) : TimeProvider
    {
        public override long TimestampFrequency => frequency;

        public override long GetTimestamp() => timestamp;
    }
}
