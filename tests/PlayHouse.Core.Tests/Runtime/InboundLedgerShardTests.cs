using PlayHouse.Core.Runtime;

namespace PlayHouse.Core.Tests.Runtime;

/// <summary>
/// One ledger shard (a ring of deadlines indexed by sequence, with an overflow table for entries the ring's window
/// outgrew) against a sorted-map model of the same rules: every open, close, sweep and count agrees, through the ring's
/// growth and its overflow.
/// </summary>
public sealed class InboundLedgerShardTests
{
    [Theory]
    [InlineData(1, 50)]
    [InlineData(2, 3_000)]
    [InlineData(3, 9_000)]
    [InlineData(4, 20_000)]
    public void RandomOpensClosesAndSweeps_AgreeWithASortedMapModel(int seed, int openMax)
    {
        var random = new Random(seed);
        var counters = new ServerCounters();
        var shard = new InboundLedgerShard(gate: null, recentExpiredMax: 1_000_000);
        var model = new ShardModel();
        long now = 0;
        var issued = new List<long>();

        for (var step = 0; step < 60_000; step++)
        {
            var roll = random.Next(100);
            if (roll < 45 && model.OpenCount < openMax)
            {
                // Deadlines mostly in order, some shorter than their elders', as requesters with different timeouts give.
                var deadline = now + 1 + random.Next(random.Next(10) == 0 ? 50 : 2_000);
                var seq = shard.Add(deadline);
                Assert.Equal(model.Add(deadline), seq);
                issued.Add(seq);
            }
            else if (roll < 90 && issued.Count > 0)
            {
                // Mostly recent requests, sometimes an old one (long answered, swept, or held in the overflow).
                var index = random.Next(4) == 0 ? random.Next(issued.Count) : Math.Max(0, issued.Count - 1 - random.Next(64));
                var seq = issued[index];
                Assert.Equal(model.Close(seq, now), shard.Close(seq, now, counters));
            }
            else if (roll < 97)
            {
                var scanAll = random.Next(3) == 0;
                Assert.Equal(model.Expire(now, scanAll), shard.Expire(now, scanAll, counters));
            }
            else
            {
                now += random.Next(400);
            }

            Assert.Equal(model.OpenCount, shard.Count);
            Assert.Equal(model.ExpiredCount, counters.UnansweredRequestsExpired);
        }

        Assert.Equal(model.Expire(long.MaxValue - 1, scanAll: true), shard.Expire(long.MaxValue - 1, scanAll: true, counters));
        Assert.Equal(0, shard.Count);
        Assert.Equal(model.ExpiredCount, counters.UnansweredRequestsExpired);
    }

    [Fact]
    public void EntriesOlderThanTheRingsWindow_MoveToTheOverflow_AndStillCloseOnceOrExpire()
    {
        var counters = new ServerCounters();
        var shard = new InboundLedgerShard(gate: null, recentExpiredMax: 16);

        // The first entry stays open while 10,000 more open and close after it: the ring cannot keep it in its window.
        var oldest = shard.Add(deadline: 100);
        var lateExpiring = shard.Add(deadline: 50);
        for (var i = 0; i < 10_000; i++)
        {
            var seq = shard.Add(deadline: 1_000);
            Assert.Equal(InboundClose.Closed, shard.Close(seq, now: 0, counters));
        }

        var openBefore = shard.Count;
        var sweptAtSixty = shard.Expire(now: 60, scanAll: true, counters);

        Assert.Equal(2, openBefore);
        Assert.Equal(1, sweptAtSixty);
        Assert.Equal(InboundClose.Expired, shard.Close(lateExpiring, now: 60, counters));
        Assert.Equal(InboundClose.Closed, shard.Close(oldest, now: 60, counters));
        Assert.Equal(InboundClose.AlreadyAnswered, shard.Close(oldest, now: 60, counters));
        Assert.Equal(1, counters.UnansweredRequestsExpired);
        Assert.Equal(0, shard.Count);
    }

    [Fact]
    public void OpenOverflowEntry_HoldsBackTheSweep_UntilItExpires_ThenItAndTheRingsExpiredOnesGo()
    {
        var counters = new ServerCounters();
        var shard = new InboundLedgerShard(gate: null, recentExpiredMax: 16);
        var (older, elder) = (shard.Add(deadline: 100), shard.Add(deadline: 150));
        PushOutOfTheRing(shard);
        var recent = shard.Add(deadline: 50);

        // At 60 the oldest open entry (in the overflow, due at 100) has not expired, so the sweep stops there.
        var openAt60 = shard.Expire(now: 60, scanAll: false, counters);
        var expiredAt60 = counters.UnansweredRequestsExpired;

        // At 100 the first overflow entry is due; the second (due at 150) stops the sweep again.
        var openAt100 = shard.Expire(now: 100, scanAll: false, counters);
        var expiredAt100 = counters.UnansweredRequestsExpired;

        // At 150 the overflow is empty, and the sweep goes on into the ring.
        var openAt150 = shard.Expire(now: 150, scanAll: false, counters);

        Assert.Equal((3, 0L), (openAt60, expiredAt60));
        Assert.Equal((2, 1L), (openAt100, expiredAt100));
        Assert.Equal((0, 3L), (openAt150, counters.UnansweredRequestsExpired));
        Assert.Equal(InboundClose.Expired, shard.Close(older, now: 150, counters));
        Assert.Equal(InboundClose.Expired, shard.Close(elder, now: 150, counters));
        Assert.Equal(InboundClose.Expired, shard.Close(recent, now: 150, counters));
        Assert.Equal((0, 3L), (shard.Count, counters.UnansweredRequestsExpired));
    }

    [Fact]
    public void FullSweep_ExpiresOverflowEntriesDueNow_BehindAnElderStillOpen_AndNotesTheEarliestLeft()
    {
        var counters = new ServerCounters();
        var shard = new InboundLedgerShard(gate: null, recentExpiredMax: 16);
        var elder = shard.Add(deadline: 300);
        var younger = shard.Add(deadline: 200);
        var youngest = shard.Add(deadline: 250);
        PushOutOfTheRing(shard);

        // The sweep from the oldest stops at the elder each time; the full sweep finds what is due behind it, and the
        // earliest deadline it notes at 200 (250) is what lets the sweep at 250 look again.
        var openAt200 = shard.Expire(now: 200, scanAll: true, counters);
        var openAt250 = shard.Expire(now: 250, scanAll: true, counters);

        Assert.Equal((2, 1), (openAt200, openAt250));
        Assert.Equal(InboundClose.Expired, shard.Close(younger, now: 250, counters));
        Assert.Equal(InboundClose.Expired, shard.Close(youngest, now: 250, counters));
        Assert.Equal(InboundClose.Closed, shard.Close(elder, now: 250, counters));
        Assert.Equal((0, 2L), (shard.Count, counters.UnansweredRequestsExpired));
    }

    [Fact]
    public void SweepFromTheOldest_ExpiresTheNewestEntryToo_WhenEveryOneIsDue()
    {
        var counters = new ServerCounters();
        var shard = new InboundLedgerShard(gate: null, recentExpiredMax: 16);
        shard.Add(deadline: 10);
        var newest = shard.Add(deadline: 10);

        var open = shard.Expire(now: 10, scanAll: false, counters);

        Assert.Equal((0, 2L), (open, counters.UnansweredRequestsExpired));
        Assert.Equal(InboundClose.Expired, shard.Close(newest, now: 10, counters));
    }

    [Fact]
    public void RingFullOfAnsweredEntriesButTheNewest_MakesRoomWithoutLosingTheNewest()
    {
        var counters = new ServerCounters();
        var shard = new InboundLedgerShard(gate: null, recentExpiredMax: 16);
        var opened = Enumerable.Range(0, 16).Select(_ => shard.Add(deadline: 1_000)).ToList();
        foreach (var seq in opened.Take(15))
        {
            Assert.Equal(InboundClose.Closed, shard.Close(seq, now: 0, counters));
        }

        // The ring's first window is full: the next open moves its base past the answered entries, up to the newest.
        var next = shard.Add(deadline: 1_000);

        Assert.Equal(InboundClose.Closed, shard.Close(opened[15], now: 0, counters));
        Assert.Equal(InboundClose.Closed, shard.Close(next, now: 0, counters));
        Assert.Equal((0, 0L), (shard.Count, counters.UnansweredRequestsExpired));
    }

    /// <summary>Opens and answers more entries than the ring's largest window, so every entry still open moves to the overflow.</summary>
    private static void PushOutOfTheRing(InboundLedgerShard shard)
    {
        var counters = new ServerCounters();
        for (var i = 0; i < 5_000; i++)
        {
            var seq = shard.Add(deadline: 1_000);
            Assert.Equal(InboundClose.Closed, shard.Close(seq, now: 0, counters));
        }
    }

    /// <summary>The shard's rules written plainly: a sorted map of open entries and a set of remembered expiries.</summary>
    private sealed class ShardModel
    {
        private readonly SortedDictionary<long, long> _open = [];
        private readonly HashSet<long> _expired = [];
        private long _nextSeq;

        public int OpenCount => _open.Count;

        public long ExpiredCount { get; private set; }

        public long Add(long deadline)
        {
            _open.Add(++_nextSeq, deadline);
            return _nextSeq;
        }

        public InboundClose Close(long seq, long now)
        {
            if (_open.Remove(seq, out var deadline))
            {
                if (deadline > now)
                {
                    return InboundClose.Closed;
                }

                ExpiredCount++;
                return InboundClose.Expired;
            }

            return _expired.Remove(seq) ? InboundClose.Expired : InboundClose.AlreadyAnswered;
        }

        public int Expire(long now, bool scanAll)
        {
            // Without scanAll only the oldest go, up to the first open entry that has not expired.
            var due = scanAll
                ? _open.Where(e => e.Value <= now).Select(e => e.Key).ToList()
                : _open.TakeWhile(e => e.Value <= now).Select(e => e.Key).ToList();
            foreach (var seq in due)
            {
                _open.Remove(seq);
                _expired.Add(seq);
                ExpiredCount++;
            }

            return _open.Count;
        }
    }
}
