using Microsoft.Extensions.Time.Testing;
using PlayHouse.Simulation.Checkers;

namespace PlayHouse.Simulation.Tests.Checkers;

public sealed class QueueCapCheckerTests
{
    private readonly FakeTimeProvider _clock = CheckerClock.AtZero();

    [Fact]
    public void QueueCap_NamedQueueOverItsCap_ReportsQueueLengthAndCapOnce()
    {
        var checker = new QueueCapChecker(_clock);
        checker.Observe("session 3 send", 4, 4);
        checker.Observe("session 3 send", 5, 4);
        checker.Observe("session 3 send", 9, 4);

        var violation = Assert.Single(checker.Violations);
        Assert.Equal("queue 'session 3 send' held 5 entries, over its cap of 4", violation.Message);
        Assert.Equal(new QueueHighWater("session 3 send", 9, 4), Assert.Single(checker.GetHighWaters()));
    }

    [Fact]
    public void QueueCap_MailboxBeyondCapacityAndAllowance_ReportsBothTerms()
    {
        var checker = new QueueCapChecker(_clock);
        checker.WatchMailboxes("play-1", mailboxCapacityMax: 4, internalEntriesAllowance: 2);
        for (var length = 1; length <= 7; length++)
        {
            checker.OnMailboxPosted("play-1", 12, length, 0);
        }

        var violation = Assert.Single(checker.Violations);
        Assert.Equal("mailbox of stage play-1/12 held 7 messages, over its cap of 6 (MailboxCapacityMax 4 + 2 internal entries)", violation.Message);
    }

    [Fact]
    public void QueueCap_MailboxOverCapacityWithinInternalAllowance_Passes()
    {
        var checker = new QueueCapChecker(_clock);
        checker.WatchMailboxes("play-1", mailboxCapacityMax: 4, internalEntriesAllowance: 2);
        for (var length = 1; length <= 6; length++)
        {
            checker.OnMailboxPosted("play-1", 12, length, Math.Min(length, 4));
        }

        Assert.False(checker.HasViolations);
        Assert.Equal(
            [new QueueHighWater("mailbox play-1/12", 6, 6), new QueueHighWater("mailbox play-1/12 from outside", 4, 4)],
            checker.GetHighWaters());
    }

    [Fact]
    public void QueueCap_MessagesFromOutsidePastMailboxCapacity_AreAViolationEvenWithinTheAllowance()
    {
        // The allowance is for the stage's own entries: one message from outside past MailboxCapacityMax means the
        // mailbox queued overload it should have refused, however much room the allowance leaves.
        var checker = new QueueCapChecker(_clock);
        checker.WatchMailboxes("play-1", mailboxCapacityMax: 4, internalEntriesAllowance: 1_024);
        for (var external = 1; external <= 6; external++)
        {
            checker.OnMailboxPosted("play-1", 12, external, external);
        }

        var violation = Assert.Single(checker.Violations);
        Assert.Equal("mailbox of stage play-1/12 held 5 messages from outside, over MailboxCapacityMax 4: overload was queued instead of refused", violation.Message);
        Assert.Contains(new QueueHighWater("mailbox play-1/12 from outside", 6, 4), checker.GetHighWaters());
    }

    [Fact]
    public void QueueCap_TimerTicksPastTheirCap_ReportOnceWithTheCap()
    {
        var checker = new QueueCapChecker(_clock);
        checker.WatchTimerTicks("play-1", timerPendingTicksMax: 2);
        checker.OnTickPosted("play-1", 3, 1);
        checker.OnTickPosted("play-1", 3, 2);
        Assert.False(checker.HasViolations);

        checker.OnTickPosted("play-1", 3, 3);
        checker.OnTickPosted("play-1", 3, 4);

        var violation = Assert.Single(checker.Violations);
        Assert.Equal("a timer of stage play-1/3 had 3 ticks waiting in the mailbox, over TimerPendingTicksMax 2: ticks were queued instead of coalesced", violation.Message);
        Assert.Equal(new QueueHighWater("ticks per timer of stage play-1/3", 4, 2), Assert.Single(checker.GetHighWaters()));
    }

    [Fact]
    public void QueueCap_QueuesWithinCaps_PassAndReportHighWatersSortedByName()
    {
        var checker = new QueueCapChecker(_clock);
        checker.WatchMailboxes("play-1", 10, 0);
        checker.WatchTimerTicks("play-1", 1);
        checker.Observe("rtt client 2", 3, 8);
        checker.Observe("mesh play-1>api-1", 1, 100);
        checker.Observe("rtt client 10", 8, 8);
        checker.Observe("rtt client 2", 1, 8);
        checker.OnMailboxPosted("play-1", 10, 2, 1);
        checker.OnMailboxPosted("play-1", 9, 1, 1);
        checker.OnMailboxPosted("api-1", 1, 3, 3);
        checker.OnTickPosted("play-1", 10, 1);

        Assert.False(checker.HasViolations);
        var expected = new QueueHighWater[]
        {
            new("mesh play-1>api-1", 1, 100),
            new("rtt client 10", 8, 8),
            new("rtt client 2", 3, 8),
            new("mailbox api-1/1", 3, int.MaxValue),
            new("mailbox api-1/1 from outside", 3, int.MaxValue),
            new("mailbox play-1/9", 1, 10),
            new("mailbox play-1/9 from outside", 1, 10),
            new("mailbox play-1/10", 2, 10),
            new("mailbox play-1/10 from outside", 1, 10),
            new("ticks per timer of stage play-1/10", 1, 1),
        };
        Assert.Equal(expected, checker.GetHighWaters());
        Assert.Equal("mailbox api-1/1: high-water 3 (uncapped)", expected[3].ToString());
    }
}
