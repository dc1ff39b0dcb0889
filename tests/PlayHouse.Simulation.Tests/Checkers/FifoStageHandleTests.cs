using Microsoft.Extensions.Time.Testing;
using PlayHouse.Simulation.Checkers;

namespace PlayHouse.Simulation.Tests.Checkers;

/// <summary>
/// The <see cref="FifoStage"/> handle of <see cref="FifoPerSenderChecker"/>: the runs report every delivery through
/// it, so it must judge exactly as the calls by node id do, share their state, and keep its senders' last sequences
/// across the growth of its dense array and in its map of sparse ids.
/// </summary>
public sealed class FifoStageHandleTests
{
    private readonly FakeTimeProvider _clock = CheckerClock.AtZero();

    [Fact]
    public void FifoHandle_SequenceGoingBackwards_ReportsTheSameMessageAsTheIdPath()
    {
        // Arrange
        var byId = new FifoPerSenderChecker(_clock);
        var byHandle = new FifoPerSenderChecker(_clock);
        var stage = byHandle.ForStage("play-1", 7);

        // Act
        foreach (var seq in new long[] { 1, 5, 3 })
        {
            byId.OnDelivered("play-1", 7, 42, seq);
            byHandle.OnDelivered(stage, 42, seq);
        }

        // Assert
        var violation = Assert.Single(byHandle.Violations);
        Assert.Equal("stage play-1/7: sender 42 seq 3 arrived after seq 5 (order went backwards)", violation.Message);
        Assert.Equal(Assert.Single(byId.Violations).Message, violation.Message);
        Assert.False(byHandle.Verdict.Passed);
        Assert.Equal(violation.Message, byHandle.Verdict.FirstViolationMessage);
    }

    [Fact]
    public void FifoHandle_SameSequenceTwice_ReportsDuplicateDelivery()
    {
        var checker = new FifoPerSenderChecker(_clock);
        var stage = checker.ForStage("play-1", 7);

        checker.OnDelivered(stage, 42, 4);
        checker.OnDelivered(stage, 42, 4);

        var violation = Assert.Single(checker.Violations);
        Assert.Equal("stage play-1/7: sender 42 seq 4 was delivered twice", violation.Message);
        Assert.Equal(2, checker.DeliveriesChecked);
    }

    [Fact]
    public void FifoHandleThenIdPath_OrderBrokenAcrossThePaths_IsCaught()
    {
        // Arrange: the handle sees seq 5 of sender 42.
        var checker = new FifoPerSenderChecker(_clock);
        var stage = checker.ForStage("play-1", 7);
        checker.OnDelivered(stage, 42, 5);

        // Act: the same stage's id path sees an older seq of that sender.
        checker.OnDelivered("play-1", 7, 42, 3);

        // Assert
        var violation = Assert.Single(checker.Violations);
        Assert.Equal("stage play-1/7: sender 42 seq 3 arrived after seq 5 (order went backwards)", violation.Message);
        Assert.Equal(1, checker.PathCount);
    }

    [Fact]
    public void FifoIdPathThenHandle_OrderBrokenAcrossThePaths_IsCaught()
    {
        // Arrange: the id path sees seq 9 before any handle of the stage exists.
        var checker = new FifoPerSenderChecker(_clock);
        checker.OnDelivered("play-1", 7, 42, 9);
        var stage = checker.ForStage("play-1", 7);

        // Act
        checker.OnDelivered(stage, 42, 9);

        // Assert
        var violation = Assert.Single(checker.Violations);
        Assert.Equal("stage play-1/7: sender 42 seq 9 was delivered twice", violation.Message);
        Assert.Same(stage, checker.ForStage("play-1", 7));
        Assert.NotSame(stage, checker.ForStage("play-1", 8));
        Assert.NotSame(stage, checker.ForStage("play-2", 7));
    }

    [Fact]
    public void FifoHandle_DenseArrayGrowsAfterASenderWasSeen_KeepsThatSendersLastSequence()
    {
        // Arrange: sender 1 sits in the first dense array; sender 20_000 makes it grow many times over.
        var checker = new FifoPerSenderChecker(_clock);
        var stage = checker.ForStage("play-1", 7);
        checker.OnDelivered(stage, 1, 5);
        checker.OnDelivered(stage, 15, 2);
        checker.OnDelivered(stage, 16, 2);
        checker.OnDelivered(stage, 20_000, 1);

        // Act: each sender goes backwards after the growth.
        checker.OnDelivered(stage, 1, 4);
        checker.OnDelivered(stage, 15, 2);
        checker.OnDelivered(stage, 16, 1);
        checker.OnDelivered(stage, 20_000, 1);

        // Assert
        Assert.Equal(
            [
                "stage play-1/7: sender 1 seq 4 arrived after seq 5 (order went backwards)",
                "stage play-1/7: sender 15 seq 2 was delivered twice",
                "stage play-1/7: sender 16 seq 1 arrived after seq 2 (order went backwards)",
                "stage play-1/7: sender 20000 seq 1 was delivered twice",
            ],
            checker.Violations.Select(v => v.Message));
        Assert.Equal(4, checker.PathCount);
    }

    [Fact]
    public void FifoHandle_SenderIdsOutsideTheDenseRange_AreJudgedLikeSmallOnes()
    {
        // Arrange: ids past the dense array's limit, negative and extreme ids all go to the sparse map.
        var checker = new FifoPerSenderChecker(_clock);
        var stage = checker.ForStage("play-1", 7);
        long[] senders = [1L << 15, (1L << 15) + 1, 1_000_000, -1, long.MinValue, long.MaxValue];
        foreach (var sender in senders)
        {
            checker.OnDelivered(stage, sender, 10);
            checker.OnDelivered(stage, sender, 11);
        }

        Assert.False(checker.HasViolations);

        // Act: the id path and the handle each send half of them backwards.
        for (var i = 0; i < senders.Length; i++)
        {
            if (i % 2 == 0)
            {
                checker.OnDelivered(stage, senders[i], 10);
            }
            else
            {
                checker.OnDelivered("play-1", 7, senders[i], 10);
            }
        }

        // Assert
        Assert.Equal(senders.Length, checker.ViolationCount);
        for (var i = 0; i < senders.Length; i++)
        {
            Assert.Equal($"stage play-1/7: sender {senders[i]} seq 10 arrived after seq 11 (order went backwards)", checker.Violations[i].Message);
        }

        Assert.Equal(senders.Length, checker.PathCount);
    }

    [Fact]
    public void FifoHandles_InOrderWithGapsAcrossPathsSendersAndStages_Pass()
    {
        // Arrange
        var checker = new FifoPerSenderChecker(_clock);
        var stage7 = checker.ForStage("play-1", 7);
        var stage8 = checker.ForStage("play-1", 8);
        var otherNode = checker.ForStage("play-2", 7);

        // Act: interleaved senders, gaps (lost messages), both paths, the same sender at three stages.
        checker.OnDelivered(stage7, 1, 1);
        checker.OnDelivered("play-1", 7, 1, 2);
        checker.OnDelivered(stage7, 1, 9);
        checker.OnDelivered(stage7, 2, 100);
        checker.OnDelivered(stage8, 1, 1);
        checker.OnDelivered(otherNode, 1, 1);
        checker.OnDelivered("play-1", 7, 2, 101);
        checker.OnDelivered(stage7, 70_000, 3);
        checker.OnDelivered("play-1", 7, 70_000, 4);
        checker.CheckQuiescent();

        // Assert
        Assert.False(checker.HasViolations);
        Assert.True(checker.Verdict.Passed);
        Assert.Null(checker.Verdict.FirstViolationMessage);
        Assert.Equal(9, checker.DeliveriesChecked);
        Assert.Equal(5, checker.PathCount);
    }
}
