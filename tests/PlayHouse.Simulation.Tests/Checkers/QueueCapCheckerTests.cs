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
            checker.OnMailboxPosted("play-1", 12, length);
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
            checker.OnMailboxPosted("play-1", 12, length);
        }

        Assert.False(checker.HasViolations);
        Assert.Equal(new QueueHighWater("mailbox play-1/12", 6, 6), Assert.Single(checker.GetHighWaters()));
    }

    [Fact]
    public void QueueCap_QueuesWithinCaps_PassAndReportHighWatersSortedByName()
    {
        var checker = new QueueCapChecker(_clock);
        checker.WatchMailboxes("play-1", 10, 0);
        checker.Observe("rtt client 2", 3, 8);
        checker.Observe("mesh play-1>api-1", 1, 100);
        checker.Observe("rtt client 10", 8, 8);
        checker.Observe("rtt client 2", 1, 8);
        checker.OnMailboxPosted("play-1", 10, 2);
        checker.OnMailboxPosted("play-1", 9, 1);
        checker.OnMailboxPosted("api-1", 1, 3);

        Assert.False(checker.HasViolations);
        var expected = new QueueHighWater[]
        {
            new("mesh play-1>api-1", 1, 100),
            new("rtt client 10", 8, 8),
            new("rtt client 2", 3, 8),
            new("mailbox api-1/1", 3, int.MaxValue),
            new("mailbox play-1/9", 1, 10),
            new("mailbox play-1/10", 2, 10),
        };
        Assert.Equal(expected, checker.GetHighWaters());
        Assert.Equal("mailbox api-1/1: high-water 3 (uncapped)", expected[3].ToString());
    }
}
