using Microsoft.Extensions.Time.Testing;
using PlayHouse.Simulation.Checkers;

namespace PlayHouse.Simulation.Tests.Checkers;

/// <summary>
/// The <see cref="NamedQueue"/> handle of <see cref="QueueCapChecker"/> and its per-node mailbox lookup
/// (<see cref="StageMap{T}"/>): the runs observe queues through the handle and post mailboxes of many stages, so
/// both must judge as the calls by name do and never mix up two queues.
/// </summary>
public sealed class QueueCapHandleTests
{
    private readonly FakeTimeProvider _clock = CheckerClock.AtZero();

    [Fact]
    public void QueueCapHandle_QueueOverItsCap_ReportsTheSameMessageAsTheNamePathOnce()
    {
        // Arrange
        var byName = new QueueCapChecker(_clock);
        var byHandle = new QueueCapChecker(_clock);
        var queue = byHandle.Queue("rtt tracker of client 3");

        // Act
        foreach (var length in new[] { 4, 5, 9, 2 })
        {
            byName.Observe("rtt tracker of client 3", length, 4);
            byHandle.Observe(queue, length, 4);
        }

        // Assert
        var violation = Assert.Single(byHandle.Violations);
        Assert.Equal("queue 'rtt tracker of client 3' held 5 entries, over its cap of 4", violation.Message);
        Assert.Equal(Assert.Single(byName.Violations).Message, violation.Message);
        Assert.Equal(new QueueHighWater("rtt tracker of client 3", 9, 4), Assert.Single(byHandle.GetHighWaters()));
    }

    [Fact]
    public void QueueCapHandleThenNamePath_SameQueue_SharesHighWaterAndReportsOnce()
    {
        // Arrange: the handle sees the overflow first.
        var checker = new QueueCapChecker(_clock);
        var queue = checker.Queue("session 3 send");
        checker.Observe(queue, 5, 4);

        // Act: the name path sees a longer queue, then the handle a shorter one.
        checker.Observe("session 3 send", 11, 4);
        checker.Observe(queue, 1, 4);

        // Assert
        Assert.Equal("queue 'session 3 send' held 5 entries, over its cap of 4", Assert.Single(checker.Violations).Message);
        Assert.Equal(new QueueHighWater("session 3 send", 11, 4), Assert.Single(checker.GetHighWaters()));
    }

    [Fact]
    public void QueueCapNamePathThenHandle_OverflowFirstSeenByName_IsNotReportedAgainByTheHandle()
    {
        // Arrange
        var checker = new QueueCapChecker(_clock);
        checker.Observe("session 3 send", 3, 4);
        var queue = checker.Queue("session 3 send");
        var other = checker.Queue("session 4 send");

        // Act
        checker.Observe("session 3 send", 6, 4);
        checker.Observe(queue, 8, 4);
        checker.Observe(other, 5, 4);

        // Assert
        Assert.Equal(
            ["queue 'session 3 send' held 6 entries, over its cap of 4", "queue 'session 4 send' held 5 entries, over its cap of 4"],
            checker.Violations.Select(v => v.Message));
        Assert.Equal(
            [new QueueHighWater("session 3 send", 8, 4), new QueueHighWater("session 4 send", 5, 4)],
            checker.GetHighWaters());
    }

    [Fact]
    public void QueueCapHandle_NeverObserved_IsNotListedAndWithinCapPasses()
    {
        // Arrange
        var checker = new QueueCapChecker(_clock);
        _ = checker.Queue("idle queue");
        var busy = checker.Queue("busy queue");

        // Act
        for (var length = 0; length <= 8; length++)
        {
            checker.Observe(busy, length, 8);
        }

        // Assert
        Assert.False(checker.HasViolations);
        Assert.True(checker.Verdict.Passed);
        Assert.Equal(new QueueHighWater("busy queue", 8, 8), Assert.Single(checker.GetHighWaters()));
    }

    [Fact]
    public void QueueCapMailboxes_ManyNodesAndStagesPostedWithFreshNodeIdStrings_ReportEachOverflowOnceUnderItsOwnName()
    {
        // Arrange: six nodes with distinct caps; stage ids on both sides of the dense array's limits.
        var checker = new QueueCapChecker(_clock);
        long[] stageIds = [0, 1, 7, 8, 63, 4_095, 4_096, 1_000_000, -3];
        var nodes = Enumerable.Range(1, 6).Select(n => $"play-{n}").ToArray();
        for (var n = 0; n < nodes.Length; n++)
        {
            checker.WatchMailboxes(nodes[n], mailboxCapacityMax: 10 + n, internalEntriesAllowance: 1);
        }

        // Act: interleaved posts, each with a node id string of its own (equal text, another instance), fill every
        // mailbox to its cap; then one stage of one node goes over it, twice.
        for (var length = 1; length <= 16; length++)
        {
            foreach (var stageId in stageIds)
            {
                for (var n = 0; n < nodes.Length; n++)
                {
                    if (length <= 11 + n)
                    {
                        checker.OnMailboxPosted(new string(nodes[n].AsSpan()), stageId, length, 0);
                    }
                }
            }
        }

        Assert.False(checker.HasViolations, checker.FirstViolation?.Message);
        checker.OnMailboxPosted(nodes[3], 4_096, 15, 0);
        checker.OnMailboxPosted(new string(nodes[3].AsSpan()), 4_096, 16, 0);
        checker.OnMailboxPosted(nodes[2], 8, 14, 0);

        // Assert
        Assert.Equal(
            [
                "mailbox of stage play-4/4096 held 15 messages, over its cap of 14 (MailboxCapacityMax 13 + 1 internal entries)",
                "mailbox of stage play-3/8 held 14 messages, over its cap of 13 (MailboxCapacityMax 12 + 1 internal entries)",
            ],
            checker.Violations.Select(v => v.Message));
        var highWaters = checker.GetHighWaters();
        // Each mailbox is listed as a whole and by its messages from outside.
        Assert.Equal(2 * nodes.Length * stageIds.Length, highWaters.Count);
        Assert.Contains(new QueueHighWater(QueueCapChecker.MailboxName("play-4", 4_096), 16, 14), highWaters);
        Assert.Contains(new QueueHighWater(QueueCapChecker.MailboxName("play-1", -3), 11, 11), highWaters);
        Assert.Contains(new QueueHighWater(QueueCapChecker.MailboxName("play-6", 1_000_000), 16, 16), highWaters);
    }
}
