using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;

namespace PlayHouse.Core.Tests.Runtime;

/// <summary>
/// The exactly-once ledger's shards: a request opens in its thread's shard, its id names the shard, and the cap,
/// the sweeps and the one late reply after expiry hold across shards as they did with one node-wide ledger.
/// </summary>
public sealed class InboundLedgerTests
{
    private const long Deadline = 1_000;

    [Fact]
    public void SingleThreadedLedger_HasOneShard_AndNumbersItsIdsOneTwoThree()
    {
        var ledger = new InboundLedger(new ServerOptions { SingleThreaded = true }, new ServerCounters());

        var ids = Enumerable.Range(0, 3).Select(_ => ledger.TryOpen(0, Deadline, out var id) ? id : -1).ToArray();

        Assert.Equal(1, ledger.ShardCount);
        Assert.Equal(new long[] { 1, 2, 3 }, ids);
    }

    [Fact]
    public void ThreadSafeLedger_HasAPowerOfTwoShards_AtLeastTwiceTheProcessors()
    {
        var ledger = new InboundLedger(new ServerOptions(), new ServerCounters());

        Assert.True(ledger.ShardCount >= Math.Min(64, 2 * Environment.ProcessorCount), $"{ledger.ShardCount} shards");
        Assert.Equal(0, ledger.ShardCount & (ledger.ShardCount - 1));
    }

    [Fact]
    public void IdsOfDifferentShards_NameTheirShard_AndEachClosesExactlyOnce()
    {
        var counters = new ServerCounters();
        var ledger = new InboundLedger(new ServerOptions(), counters);
        var opened = new List<long>();
        for (var shard = 0; shard < ledger.ShardCount; shard++)
        {
            for (var i = 0; i < 3; i++)
            {
                Assert.True(ledger.TryOpen(0, Deadline, shard, out var id));
                Assert.Equal(shard, ledger.ShardOf(id));
                opened.Add(id);
            }
        }

        var first = opened.Select(id => ledger.Close(id, now: 10)).ToList();
        var second = opened.Select(id => ledger.Close(id, now: 10)).ToList();

        Assert.Equal(opened.Count, opened.Distinct().Count());
        Assert.All(first, closed => Assert.Equal(InboundClose.Closed, closed));
        Assert.All(second, closed => Assert.Equal(InboundClose.AlreadyAnswered, closed));
        Assert.Equal(0, ledger.Count(now: 10));
        Assert.Equal(0, counters.UnansweredRequestsExpired);
    }

    [Fact]
    public void CapIsNodeWide_ARequestOverItIsRefusedWhicheverShardItOpensIn()
    {
        var ledger = new InboundLedger(new ServerOptions { UnansweredRequestsMax = 10 }, new ServerCounters());
        var share = 10 / ledger.ShardCount;

        // The first shard fills past its share; the others take the rest of the cap.
        var admitted = 0;
        for (var i = 0; i < 10; i++)
        {
            admitted += ledger.TryOpen(0, Deadline, i < share + 2 ? 0 : 1, out _) ? 1 : 0;
        }

        var overCapInFirst = ledger.TryOpen(0, Deadline, 0, out var refusedId);
        var overCapInLast = ledger.TryOpen(0, Deadline, ledger.ShardCount - 1, out _);

        Assert.Equal(10, admitted);
        Assert.False(overCapInFirst);
        Assert.Equal(0, refusedId);
        Assert.False(overCapInLast);
        Assert.Equal(10, ledger.Count(now: 0));
    }

    [Theory]
    [InlineData(1)]
    [InlineData(2)]
    [InlineData(3)]
    [InlineData(4)]
    [InlineData(5)]
    public void OnOneThread_OpensAndClosesInAnyShards_AreRefusedExactlyWhenTheCapIsFull(int seed)
    {
        var random = new Random(seed);
        for (var round = 0; round < 20; round++)
        {
            var cap = random.Next(1, 40);
            var ledger = new InboundLedger(new ServerOptions { UnansweredRequestsMax = cap }, new ServerCounters());
            var open = new List<long>();
            for (var step = 0; step < 2_000; step++)
            {
                if (open.Count > 0 && random.Next(3) == 0)
                {
                    var at = random.Next(open.Count);
                    Assert.Equal(InboundClose.Closed, ledger.Close(open[at], 0));
                    open.RemoveAt(at);
                    continue;
                }

                var admitted = ledger.TryOpen(0, long.MaxValue, random.Next(ledger.ShardCount), out var id);
                Assert.True(admitted == open.Count < cap, $"seed {seed} round {round} step {step}: cap {cap}, {open.Count} open, admitted {admitted}");
                if (admitted)
                {
                    open.Add(id);
                }
            }

            Assert.Equal(open.Count, ledger.Count(now: 0));
        }
    }

    [Fact]
    public void AtTheCap_ExpiredEntriesOfAnIdleShard_AreSweptBeforeARefusal()
    {
        var counters = new ServerCounters();
        var ledger = new InboundLedger(new ServerOptions { UnansweredRequestsMax = 4 }, counters);
        for (var i = 0; i < 4; i++)
        {
            Assert.True(ledger.TryOpen(0, Deadline, 0, out _));
        }

        // Shard 0 never opens again; its four entries expired, so the cap has room for another shard's request.
        var opened = ledger.TryOpen(Deadline, Deadline + 500, ledger.ShardCount - 1, out var id);

        Assert.True(opened);
        Assert.Equal(ledger.ShardCount - 1, ledger.ShardOf(id));
        Assert.Equal(4, counters.UnansweredRequestsExpired);
        Assert.Equal(1, ledger.Count(now: Deadline));
    }

    [Fact]
    public void ReplyAfterItsEntryWasSwept_GoesThroughOnce_InTheShardThatOpenedIt()
    {
        var counters = new ServerCounters();
        var ledger = new InboundLedger(new ServerOptions(), counters);
        var shard = ledger.ShardCount - 1;
        Assert.True(ledger.TryOpen(0, Deadline, shard, out var first));
        Assert.True(ledger.TryOpen(0, Deadline, shard, out var second));
        Assert.True(ledger.TryOpen(Deadline, 2 * Deadline, 0, out _));

        // A count sweeps every shard: both entries of the last shard expired, the one in shard 0 has not.
        var open = ledger.Count(now: Deadline);
        var firstReplies = (ledger.Close(first, Deadline), ledger.Close(first, Deadline));
        var secondReply = ledger.Close(second, Deadline);

        Assert.Equal(1, open);
        Assert.Equal((InboundClose.Expired, InboundClose.AlreadyAnswered), firstReplies);
        Assert.Equal(InboundClose.Expired, secondReply);
        Assert.Equal(2, counters.UnansweredRequestsExpired);
    }

    [Fact]
    public void ReplyPastItsDeadline_BeforeAnySweep_IsExpiredAndCounted()
    {
        var counters = new ServerCounters();
        var ledger = new InboundLedger(new ServerOptions(), counters);
        Assert.True(ledger.TryOpen(0, Deadline, 1 % ledger.ShardCount, out var id));

        var closed = ledger.Close(id, Deadline);

        Assert.Equal(InboundClose.Expired, closed);
        Assert.Equal(1, counters.UnansweredRequestsExpired);
        Assert.Equal(InboundClose.AlreadyAnswered, ledger.Close(id, Deadline));
    }

    [Fact]
    public void NullOptionsOrCounters_AreRefusedNamingTheArgument()
    {
        var noOptions = Assert.Throws<ArgumentNullException>(() => new InboundLedger(null!, new ServerCounters()));
        var noCounters = Assert.Throws<ArgumentNullException>(() => new InboundLedger(new ServerOptions(), null!));

        Assert.Equal("options", noOptions.ParamName);
        Assert.Equal("counters", noCounters.ParamName);
    }

    [Fact]
    public void RecentCompletionsMax_IsSharedOutOverTheShards_SoAShardRemembersItsShareOfExpiries()
    {
        // Twice the shard count over the shards: two remembered expiries per shard.
        var counters = new ServerCounters();
        var probe = new InboundLedger(new ServerOptions(), counters);
        var ledger = new InboundLedger(new ServerOptions { RecentCompletionsMax = 2 * probe.ShardCount }, counters);
        var ids = new long[3];
        for (var i = 0; i < ids.Length; i++)
        {
            Assert.True(ledger.TryOpen(0, Deadline, 0, out ids[i]));
        }

        var open = ledger.Count(now: Deadline);
        var lateReplies = (ledger.Close(ids[2], Deadline), ledger.Close(ids[1], Deadline), ledger.Close(ids[0], Deadline));

        Assert.Equal(0, open);
        Assert.Equal((InboundClose.Expired, InboundClose.Expired, InboundClose.AlreadyAnswered), lateReplies);
    }

    [Fact]
    public void RecentCompletionsMaxOfZero_RemembersNoExpiry_SoALateReplyIsRefused()
    {
        var ledger = new InboundLedger(new ServerOptions { RecentCompletionsMax = 0 }, new ServerCounters());
        Assert.True(ledger.TryOpen(0, Deadline, 0, out var id));

        var open = ledger.Count(now: Deadline);
        var lateReply = ledger.Close(id, Deadline);

        Assert.Equal(0, open);
        Assert.Equal(InboundClose.AlreadyAnswered, lateReply);
    }

    [Fact]
    public void AnOpen_SweepsItsShardFromTheOldest_UpToTheFirstEntryNotExpired()
    {
        var counters = new ServerCounters();
        var ledger = OpenedOutOfOrderInShardZero(counters);

        // At 20 the open drops the oldest (expired) and stops at the one due at 100; the one due at 15 waits for a count.
        Assert.True(ledger.TryOpen(20, 200, 0, out _));
        var expiredByTheOpen = counters.UnansweredRequestsExpired;
        var open = ledger.Count(now: 20);

        Assert.Equal(1, expiredByTheOpen);
        Assert.Equal((2, 2L), (open, counters.UnansweredRequestsExpired));
    }

    [Fact]
    public void ABatchOpen_SweepsItsShardFromTheOldest_UpToTheFirstEntryNotExpired()
    {
        var counters = new ServerCounters();
        var ledger = OpenedOutOfOrderInShardZero(counters);
        using var h = new RuntimeHarness();
        var batch = RequestBatch(h, requests: 1);

        ledger.OpenBatch(batch, 20, 200, 0);
        var expiredByTheOpen = counters.UnansweredRequestsExpired;

        Assert.Equal(1, expiredByTheOpen);
        Assert.NotEqual(0, batch[0].InboundId);
        Assert.Equal((2, 2L), (ledger.Count(now: 20), counters.UnansweredRequestsExpired));
    }

    [Fact]
    public void BatchWithinItsShardsShare_WhileTheLedgerIsNearTheCap_IsStillHeldToTheCap()
    {
        // As above: shard 0 takes three of a cap one over the shard count, so the other shards' shares no longer fit.
        var shards = new InboundLedger(new ServerOptions(), new ServerCounters()).ShardCount;
        var cap = shards + 1;
        var ledger = new InboundLedger(new ServerOptions { UnansweredRequestsMax = cap }, new ServerCounters());
        for (var i = 0; i < 3; i++)
        {
            Assert.True(ledger.TryOpen(0, Deadline, 0, out _));
        }

        using var h = new RuntimeHarness();
        var batches = Enumerable.Range(1, shards - 1).Select(shard =>
        {
            var batch = RequestBatch(h, requests: 1);
            ledger.OpenBatch(batch, 0, Deadline, shard);
            return batch;
        }).ToList();

        Assert.Equal(cap - 3, batches.Count(b => b[0].State != BatchedFrameState.RefusedByLedger));
        Assert.Equal(cap, ledger.Count(now: 0));
    }

    /// <summary>A ledger whose shard 0 holds entries due at 10, 100 and 15, out of order as requesters with different timeouts give.</summary>
    private static InboundLedger OpenedOutOfOrderInShardZero(ServerCounters counters)
    {
        var ledger = new InboundLedger(new ServerOptions(), counters);
        foreach (var deadline in new long[] { 10, 100, 15 })
        {
            Assert.True(ledger.TryOpen(0, deadline, 0, out _));
        }

        return ledger;
    }

    /// <summary>A batch of <paramref name="requests"/> client requests from one joined actor of <paramref name="h"/>.</summary>
    private static ClientFrameBatch RequestBatch(RuntimeHarness h, int requests)
    {
        if (!h.Play.HasStage(1))
        {
            h.CreateStage(1);
            h.Join(1, accountId: 7);
        }

        var actor = (ActorHost)h.Stages[1].Link.Actors.Single().Link;
        var batch = new ClientFrameBatch();
        for (var i = 1; i <= requests; i++)
        {
            batch.Add(actor, null, actor.Session!, "Echo", (ushort)i, 1, default);
        }

        return batch;
    }

    [Fact]
    public void AnOpenWithRoomForExactlyItself_DoesNotSweepTheOtherShards()
    {
        // A share of 1 per shard and one more: every shard fills its share, one of them with an entry that expires.
        var counters = new ServerCounters();
        var shards = new InboundLedger(new ServerOptions(), counters).ShardCount;
        var ledger = new InboundLedger(new ServerOptions { UnansweredRequestsMax = shards + 1 }, counters);
        for (var shard = 0; shard < shards; shard++)
        {
            Assert.True(ledger.TryOpen(0, shard == 1 ? 10 : Deadline, shard, out _));
        }

        // Shard 0 is past its share, so the open counts the node's room: exactly one, so nothing is swept for it.
        var opened = ledger.TryOpen(20, Deadline, 0, out _);
        var expiredByTheOpen = counters.UnansweredRequestsExpired;
        var open = ledger.Count(now: 20);

        Assert.True(opened);
        Assert.Equal(0, expiredByTheOpen);
        Assert.Equal((shards, 1L), (open, counters.UnansweredRequestsExpired));
    }

    [Fact]
    public void AtTheCap_AnExpiredEntryBehindAnOpenOne_IsSweptToMakeRoom()
    {
        var counters = new ServerCounters();
        var ledger = new InboundLedger(new ServerOptions { UnansweredRequestsMax = 2 }, counters);
        var last = ledger.ShardCount - 1;
        Assert.True(ledger.TryOpen(0, 100, last, out _));
        Assert.True(ledger.TryOpen(0, 10, last, out var expiring));

        // Full at 20: only the younger entry of the last shard has expired, behind an elder that has not.
        var opened = ledger.TryOpen(20, Deadline, 0, out _);

        Assert.True(opened);
        Assert.Equal(1, counters.UnansweredRequestsExpired);
        Assert.Equal(InboundClose.Expired, ledger.Close(expiring, 20));
        Assert.Equal(2, ledger.Count(now: 20));
    }

    [Fact]
    public void OneShardPastItsShare_ThenEveryOtherShardWithinItsShare_NeverOpensPastTheCap()
    {
        // A share of 1 per shard and one more: shard 0 takes three, so the other shards' shares no longer all fit.
        var shards = new InboundLedger(new ServerOptions(), new ServerCounters()).ShardCount;
        var cap = shards + 1;
        var ledger = new InboundLedger(new ServerOptions { UnansweredRequestsMax = cap }, new ServerCounters());
        var admitted = 0;
        for (var i = 0; i < 3; i++)
        {
            admitted += ledger.TryOpen(0, Deadline, 0, out _) ? 1 : 0;
        }

        for (var shard = 1; shard < shards; shard++)
        {
            admitted += ledger.TryOpen(0, Deadline, shard, out _) ? 1 : 0;
        }

        Assert.Equal(cap, admitted);
        Assert.Equal(cap, ledger.Count(now: 0));
    }

    [Fact]
    public void AnOpenWithoutAShardIndex_OpensInTheShardOfTheCallingThreadsSlot()
    {
        var ledger = new InboundLedger(new ServerOptions(), new ServerCounters());
        var seen = new List<(bool Opened, int Expected, int Actual)>();

        // Threads alive at once hold distinct slots, so among them some map to shards other than 0.
        var threadCount = 2 * ledger.ShardCount;
        using var allOpened = new Barrier(threadCount);
        var threads = Enumerable.Range(0, threadCount).Select(_ => new Thread(() =>
        {
            var expected = ThreadSlots.AssignCurrent() & (ledger.ShardCount - 1);
            var opened = ledger.TryOpen(0, Deadline, out var id);
            lock (seen)
            {
                seen.Add((opened, expected, ledger.ShardOf(id)));
            }

            allOpened.SignalAndWait();
        })).ToList();
        threads.ForEach(t => t.Start());
        threads.ForEach(t => t.Join());

        Assert.All(seen, s => Assert.Equal((true, s.Expected), (s.Opened, s.Actual)));
        Assert.Contains(seen, s => s.Actual != 0);
    }

    [Fact]
    public async Task ThreadsOpeningAndClosingAtOnce_CloseEveryRequestExactlyOnce()
    {
        const int threads = 4;
        const int requestsPerThread = 20_000;
        var counters = new ServerCounters();
        var ledger = new InboundLedger(new ServerOptions(), counters);
        var ids = new long[threads][];
        using var start = new Barrier(threads);

        // Each thread opens in its own shard and closes half its requests itself and half of its neighbour's, so
        // closes cross shards while other threads open in them.
        var workers = Enumerable.Range(0, threads).Select(t => Task.Factory.StartNew(
            () =>
            {
                var mine = new long[requestsPerThread];
                start.SignalAndWait();
                for (var i = 0; i < requestsPerThread; i++)
                {
                    Assert.True(ledger.TryOpen(0, long.MaxValue, out mine[i]));
                }

                ids[t] = mine;
            },
            TaskCreationOptions.LongRunning)).ToArray();
        await Task.WhenAll(workers);

        var closers = Enumerable.Range(0, threads).Select(t => Task.Factory.StartNew(
            () =>
            {
                var outcomes = new List<InboundClose>();
                start.SignalAndWait();
                foreach (var id in ids[t].Where((_, i) => i % 2 == 0).Concat(ids[(t + 1) % threads].Where((_, i) => i % 2 == 1)))
                {
                    outcomes.Add(ledger.Close(id, 0));
                }

                return outcomes;
            },
            TaskCreationOptions.LongRunning)).ToArray();
        var closed = (await Task.WhenAll(closers)).SelectMany(o => o).ToList();

        Assert.Equal(threads * requestsPerThread, ids.SelectMany(i => i).Distinct().Count());
        Assert.Equal(threads * requestsPerThread, closed.Count(c => c == InboundClose.Closed));
        Assert.Equal(0, ledger.Count(now: 0));
        Assert.Equal(0, counters.SecondReplyAttempts + counters.UnansweredRequestsExpired);
    }
}
