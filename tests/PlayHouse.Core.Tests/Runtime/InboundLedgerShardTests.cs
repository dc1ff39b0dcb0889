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
