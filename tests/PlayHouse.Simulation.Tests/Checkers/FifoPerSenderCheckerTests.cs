using Microsoft.Extensions.Time.Testing;
using PlayHouse.Simulation.Checkers;

namespace PlayHouse.Simulation.Tests.Checkers;

public sealed class FifoPerSenderCheckerTests
{
    private readonly FakeTimeProvider _clock = CheckerClock.AtZero();

    [Fact]
    public void FifoChecker_SequenceGoingBackwards_ReportsSenderAndStage()
    {
        var checker = new FifoPerSenderChecker(_clock);
        checker.OnDelivered("play-1", 7, 42, 1);
        checker.OnDelivered("play-1", 7, 42, 5);
        _clock.Advance(TimeSpan.FromSeconds(2));
        checker.OnDelivered("play-1", 7, 42, 3);

        var violation = Assert.Single(checker.Violations);
        Assert.Equal("FifoPerSender", violation.CheckerName);
        Assert.Equal(TimeSpan.FromSeconds(2), violation.VirtualTime);
        Assert.Contains("stage play-1/7", violation.Message, StringComparison.Ordinal);
        Assert.Contains("sender 42 seq 3 arrived after seq 5", violation.Message, StringComparison.Ordinal);
        Assert.False(checker.Verdict.Passed);
        Assert.Equal(violation.Message, checker.Verdict.FirstViolationMessage);
    }

    [Fact]
    public void FifoChecker_SameSequenceTwice_ReportsDuplicateDelivery()
    {
        var checker = new FifoPerSenderChecker(_clock);
        checker.OnDelivered("play-1", 7, 42, 4);
        checker.OnDelivered("play-1", 7, 42, 4);

        var violation = Assert.Single(checker.Violations);
        Assert.Contains("sender 42 seq 4 was delivered twice", violation.Message, StringComparison.Ordinal);
        Assert.Equal(1, checker.ViolationCount);
    }

    [Fact]
    public void FifoChecker_OneLateMessage_IsOneViolationNotACascade()
    {
        var checker = new FifoPerSenderChecker(_clock);
        foreach (var seq in new long[] { 1, 3, 2, 4, 5 })
        {
            checker.OnDelivered("play-1", 7, 42, seq);
        }

        Assert.Equal(1, checker.ViolationCount);
        Assert.Contains("seq 2 arrived after seq 3", checker.FirstViolation!.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void FifoChecker_IncreasingWithGapsAcrossSendersAndStages_Passes()
    {
        var checker = new FifoPerSenderChecker(_clock);

        // Interleaved senders, gaps (lost messages), and the same sender at two stages are all in order.
        checker.OnDelivered("play-1", 7, 1, 1);
        checker.OnDelivered("play-1", 7, 2, 10);
        checker.OnDelivered("play-1", 7, 1, 4);
        checker.OnDelivered("play-1", 8, 1, 2);
        checker.OnDelivered("play-2", 7, 1, 1);
        checker.OnDelivered("play-1", 7, 2, 11);
        checker.OnDelivered("play-1", 7, 1, 9);

        Assert.False(checker.HasViolations);
        Assert.True(checker.Verdict.Passed);
        Assert.Null(checker.Verdict.FirstViolationMessage);
        Assert.Equal(7, checker.DeliveriesChecked);
        Assert.Equal(4, checker.PathCount);
    }

    [Fact]
    public void FifoChecker_ThrowIfViolated_ThrowsOnlyAfterAViolation()
    {
        var checker = new FifoPerSenderChecker(_clock);
        checker.OnDelivered("play-1", 7, 42, 2);
        checker.ThrowIfViolated();

        checker.OnDelivered("play-1", 7, 42, 1);
        var error = Assert.Throws<InvariantViolationException>(checker.ThrowIfViolated);
        Assert.Contains("1 invariant violation(s)", error.Message, StringComparison.Ordinal);
        Assert.Contains("[FifoPerSender] at 00:00:00: stage play-1/7: sender 42 seq 1 arrived after seq 2", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void FifoChecker_NullNodeOrStage_IsRefusedByName_AndNothingIsCounted()
    {
        var checker = new FifoPerSenderChecker(_clock);

        Assert.Equal("nodeId", Assert.Throws<ArgumentNullException>(() => checker.ForStage(null!, 7)).ParamName);
        Assert.Equal("nodeId", Assert.Throws<ArgumentNullException>(() => checker.OnDelivered(null!, 7, 42, 1)).ParamName);
        Assert.Equal("stage", Assert.Throws<ArgumentNullException>(() => checker.OnDelivered(null!, 42, 1)).ParamName);
        Assert.Equal(0, checker.PathCount);
        Assert.False(checker.HasViolations);
    }

    [Fact]
    public void FifoChecker_ManyViolations_KeepsTheFirstAndCountsAll()
    {
        var checker = new FifoPerSenderChecker(new CheckerContext(_clock, violationsKeptMax: 3));
        checker.OnDelivered("play-1", 7, 42, 100);
        for (var seq = 1; seq <= 10; seq++)
        {
            checker.OnDelivered("play-1", 7, 42, seq);
        }

        Assert.Equal(10, checker.ViolationCount);
        Assert.Equal(3, checker.Violations.Count);
        Assert.Contains("seq 1 arrived", checker.Violations[0].Message, StringComparison.Ordinal);
        Assert.Equal(10, checker.Verdict.ViolationCount);
    }
}
