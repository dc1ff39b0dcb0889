using PlayHouse.Core.Seams;
using PlayHouse.Simulation.Clients;
using PlayHouse.Simulation.Metrics;

namespace PlayHouse.Simulation.Tests.Clients;

public sealed class RttTrackerTests
{
    private static TimeSpan Timeout => TimeSpan.FromTicks(1_000);

    // Three significant digits keep every value below 2048 ticks in its own bucket, so recorded samples can be
    // compared exactly.
    private static LatencyHistogram ExactHistogram() => new(highestTrackableValue: 1_000_000, significantDigits: 3);

    // Exact for histograms whose samples all lie below 2048 ticks, where every bucket holds one value.
    private static long SumOfSamples(LatencyHistogram histogram) =>
        histogram.Histogram.RecordedValues().Sum(v => v.ValueIteratedTo * v.CountAddedInThisIterationStep);

    [Fact]
    public void TryBeginRequest_WhenWindowIsFull_RefusesUntilAReplyFreesASlot()
    {
        var tracker = new RttTracker(inFlightWindow: 4, ExactHistogram());
        for (ushort seq = 0; seq < 4; seq++)
        {
            Assert.True(tracker.TryBeginRequest(seq, sentTicks: seq));
        }

        Assert.False(tracker.TryBeginRequest(4, sentTicks: 10));
        Assert.True(tracker.IsWindowFull);
        Assert.Equal(1, tracker.RefusedWindowFull);
        Assert.Equal(4, tracker.Sent);

        Assert.Equal(RttOutcome.Matched, tracker.OnReply(2, receivedTicks: 20));
        Assert.True(tracker.TryBeginRequest(4, sentTicks: 21));
        Assert.Equal(4, tracker.InFlight);
        Assert.Equal(4, tracker.InFlightHighWater);
    }

    [Fact]
    public void OneDroppedReply_IsReleasedByTheTimeoutAsLost_WhileEveryOtherReplyMatchesItsOwnRequestExactly()
    {
        var histogram = ExactHistogram();
        var tracker = new RttTracker(inFlightWindow: 16, histogram);
        tracker.BeginMeasuredPhase();
        var scenario = new ExchangeScenario
        {
            RequestCount = 300,
            // Latencies from 50 to 140 ticks against a send every 10: replies overtake each other constantly.
            LatencyTicksOf = request => 50 + (request * 37 % 91),
            IsDropped = request => request == 5,
            AfterEachTick = _ => Assert.InRange(tracker.InFlight, 0, tracker.InFlightWindow),
        };

        var result = scenario.Run(tracker);

        Assert.Equal(299, result.Replies.Count);
        Assert.All(result.Replies, reply => Assert.Equal(RttOutcome.Matched, reply.Outcome));
        Assert.All(result.Replies, reply => Assert.Equal(reply.TruthTicks, reply.RttTicks));
        Assert.Equal(1, tracker.Lost);
        Assert.Equal(299, tracker.Matched);
        Assert.Equal(0, tracker.InFlight);
        Assert.True(tracker.Measured.IsBalanced);

        // The histogram holds exactly the true round trips: same count, same sum, same buckets.
        Assert.Equal(299, histogram.Count);
        Assert.Equal(result.Replies.Sum(reply => reply.TruthTicks), SumOfSamples(histogram));
        foreach (var group in result.Replies.GroupBy(reply => reply.TruthTicks))
        {
            Assert.Equal(group.Count(), histogram.Histogram.GetCountAtValue(group.Key));
        }
    }

    [Fact]
    public void ManyDroppedReplies_NeverHoldMoreThanTheWindow_AndEveryRequestEndsMatchedOrLost()
    {
        var tracker = new RttTracker(inFlightWindow: 16, ExactHistogram());
        var scenario = new ExchangeScenario
        {
            RequestCount = 2_000,
            LatencyTicksOf = request => 50 + (request * 37 % 91),
            IsDropped = request => request % 10 == 3,
            AfterEachTick = _ => Assert.InRange(tracker.InFlight, 0, tracker.InFlightWindow),
        };

        var result = scenario.Run(tracker);

        // Each lost reply holds its slot for the timeout (100 send intervals), so the window fills and the sender
        // waits; it never stalls for good because the timeout releases the slots.
        Assert.True(result.Refused > 0);
        Assert.Equal(2_000, tracker.Sent);
        Assert.Equal(200, tracker.Lost);
        Assert.Equal(1_800, tracker.Matched);
        Assert.Equal(0, tracker.InFlight);
        Assert.Equal(tracker.InFlightWindow, tracker.InFlightHighWater);
        Assert.All(result.Replies, reply => Assert.Equal(reply.TruthTicks, reply.RttTicks));
    }

    [Fact]
    public void DuplicatedReply_IsCountedDuplicate_AndRecordedOnce()
    {
        var histogram = ExactHistogram();
        var tracker = new RttTracker(inFlightWindow: 8, histogram);
        tracker.BeginMeasuredPhase();
        Assert.True(tracker.TryBeginRequest(1, sentTicks: 100));
        Assert.True(tracker.TryBeginRequest(2, sentTicks: 110));

        Assert.Equal(RttOutcome.Matched, tracker.OnReply(1, receivedTicks: 150, out var firstRttTicks));
        Assert.Equal(RttOutcome.Duplicate, tracker.OnReply(1, receivedTicks: 155, out var duplicateRttTicks));
        Assert.Equal(RttOutcome.Matched, tracker.OnReply(2, receivedTicks: 170, out var secondRttTicks));

        Assert.Equal(50, firstRttTicks);
        Assert.Equal(0, duplicateRttTicks);
        Assert.Equal(60, secondRttTicks);
        Assert.Equal(1, tracker.Duplicate);
        Assert.Equal(2, tracker.Matched);
        Assert.Equal(2, histogram.Count);
        Assert.Equal(110, SumOfSamples(histogram));
    }

    [Fact]
    public void LateReply_AfterTheTimeout_IsCountedLate_NotRecorded_AndItsCopyIsADuplicate()
    {
        var histogram = ExactHistogram();
        var tracker = new RttTracker(inFlightWindow: 8, histogram);
        tracker.BeginMeasuredPhase();
        Assert.True(tracker.TryBeginRequest(7, sentTicks: 0));

        Assert.Equal(0, tracker.ExpireOlderThan(nowTicks: 999, Timeout));
        Assert.Equal(1, tracker.ExpireOlderThan(nowTicks: 1_000, Timeout));
        Assert.Equal(RttOutcome.Late, tracker.OnReply(7, receivedTicks: 1_500));
        Assert.Equal(RttOutcome.Duplicate, tracker.OnReply(7, receivedTicks: 1_501));

        Assert.Equal(1, tracker.Lost);
        Assert.Equal(1, tracker.Late);
        Assert.Equal(1, tracker.Duplicate);
        Assert.Equal(0, tracker.Matched);
        Assert.Equal(0, tracker.InFlight);
        Assert.Equal(0, histogram.Count);
    }

    [Fact]
    public void ExpireOlderThan_ReleasesOnlyRequestsAtOrPastTheTimeout_EvenAfterTheOldestCompleted()
    {
        var tracker = new RttTracker(inFlightWindow: 8, ExactHistogram());
        Assert.True(tracker.TryBeginRequest(0, sentTicks: 0));
        Assert.True(tracker.TryBeginRequest(1, sentTicks: 500));
        Assert.True(tracker.TryBeginRequest(2, sentTicks: 600));
        // The oldest completes, so the tracker's bound on the oldest send time is stale from here on.
        Assert.Equal(RttOutcome.Matched, tracker.OnReply(0, receivedTicks: 50));

        Assert.Equal(0, tracker.ExpireOlderThan(nowTicks: 1_000, Timeout));
        Assert.Equal(0, tracker.ExpireOlderThan(nowTicks: 1_499, Timeout));
        Assert.Equal(1, tracker.ExpireOlderThan(nowTicks: 1_500, Timeout));
        Assert.Equal(0, tracker.ExpireOlderThan(nowTicks: 1_599, Timeout));
        Assert.Equal(1, tracker.ExpireOlderThan(nowTicks: 1_600, Timeout));

        Assert.Equal(2, tracker.Lost);
        Assert.Equal(0, tracker.InFlight);
    }

    [Fact]
    public void WarmUpRequestsAnsweredInTheMeasuredPhase_CountAsWarmUp_NotMeasured()
    {
        var histogram = ExactHistogram();
        var tracker = new RttTracker(inFlightWindow: 8, histogram);
        Assert.True(tracker.TryBeginRequest(0, sentTicks: 0));
        Assert.True(tracker.TryBeginRequest(1, sentTicks: 10));
        Assert.True(tracker.TryBeginRequest(2, sentTicks: 20));
        tracker.BeginMeasuredPhase();
        Assert.True(tracker.TryBeginRequest(3, sentTicks: 30));
        Assert.True(tracker.TryBeginRequest(4, sentTicks: 40));

        // Every reply arrives after the switch; only requests 3 and 4 were sent in the measured phase.
        for (ushort seq = 0; seq < 5; seq++)
        {
            Assert.Equal(RttOutcome.Matched, tracker.OnReply(seq, receivedTicks: 1_000));
        }

        Assert.Equal(3, tracker.WarmUpMatched);
        Assert.Equal(2, tracker.MeasuredMatched);
        Assert.Equal(new RttPhaseCounts(Sent: 3, Matched: 3, Lost: 0, InFlight: 0, Late: 0, Duplicate: 0), tracker.WarmUp);
        Assert.Equal(new RttPhaseCounts(Sent: 2, Matched: 2, Lost: 0, InFlight: 0, Late: 0, Duplicate: 0), tracker.Measured);
        Assert.Equal(2, histogram.Count);
        Assert.Equal(970 + 960, SumOfSamples(histogram));
    }

    [Fact]
    public void SequenceWrap_WithOneStuckRequest_RefusesOnlyItsSlot_AndEveryOtherReplyMatchesItsOwnRequest()
    {
        var histogram = ExactHistogram();
        var tracker = new RttTracker(inFlightWindow: 4, histogram);
        tracker.BeginMeasuredPhase();
        var farTimeout = TimeSpan.FromTicks(1_000_000);
        Assert.True(tracker.TryBeginRequest(0, sentTicks: 0));

        // Past one full wrap of the u16 sequence, with request 0 never answered.
        var nowTicks = 1L;
        var refusedSeqs = new List<int>();
        for (var n = 1; n <= 70_000; n++)
        {
            var seq = (ushort)n;
            if (!tracker.TryBeginRequest(seq, nowTicks))
            {
                refusedSeqs.Add(seq);
                continue;
            }

            var rttTicks = 1 + (n % 7);
            Assert.Equal(RttOutcome.Matched, tracker.OnReply(seq, nowTicks + rttTicks, out var measuredTicks));
            Assert.Equal(rttTicks, measuredTicks);
            nowTicks += 8;
            Assert.Equal(0, tracker.ExpireOlderThan(nowTicks, farTimeout));
        }

        // Only sequences sharing the stuck request's slot (multiples of SlotCount = 8) were refused, including
        // sequence 0 itself after the wrap.
        Assert.Equal(8, tracker.SlotCount);
        Assert.All(refusedSeqs, seq => Assert.Equal(0, seq % tracker.SlotCount));
        Assert.Equal(70_000 / 8, refusedSeqs.Count);
        Assert.Contains(0, refusedSeqs);
        Assert.Equal(refusedSeqs.Count, tracker.RefusedSlotBusy);
        Assert.Equal(1, tracker.InFlight);
        Assert.Equal(tracker.Sent - 1, tracker.Matched);
        Assert.Equal(tracker.Matched, histogram.Count);

        // The timeout finally releases it; its reply is then late, and its sequence can be used again.
        Assert.Equal(1, tracker.ExpireOlderThan(nowTicks: 1_000_000, farTimeout));
        Assert.Equal(RttOutcome.Late, tracker.OnReply(0, receivedTicks: 1_000_001));
        Assert.True(tracker.TryBeginRequest(0, sentTicks: 1_000_002));
        Assert.Equal(RttOutcome.Matched, tracker.OnReply(0, receivedTicks: 1_000_005, out var reusedRttTicks));
        Assert.Equal(3, reusedRttTicks);
        Assert.Equal(1, tracker.Lost);
    }

    [Fact]
    public void ReplyForANeverSentOrReusedSlot_IsUnknown_AndChangesNoCount()
    {
        var tracker = new RttTracker(inFlightWindow: 2, ExactHistogram());
        Assert.Equal(4, tracker.SlotCount);
        Assert.Equal(RttOutcome.Unknown, tracker.OnReply(9, receivedTicks: 1));

        Assert.True(tracker.TryBeginRequest(1, sentTicks: 0));
        Assert.Equal(RttOutcome.Matched, tracker.OnReply(1, receivedTicks: 5));
        // Sequence 5 reuses the slot of 1, so a straggling copy of reply 1 is stale.
        Assert.True(tracker.TryBeginRequest(5, sentTicks: 6));
        Assert.Equal(RttOutcome.Unknown, tracker.OnReply(1, receivedTicks: 7));

        Assert.Equal(2, tracker.Unknown);
        Assert.Equal(1, tracker.Matched);
        Assert.Equal(0, tracker.Duplicate);
        Assert.Equal(1, tracker.InFlight);
    }

    [Fact]
    public void RandomOperations_CountsBalanceAtAllTimes_AndRepliesToRequestsInFlightMatchExactly()
    {
        var random = new Xoshiro256StarStar(seed: 1_402);
        var tracker = new RttTracker(inFlightWindow: 12, ExactHistogram());
        // An independent model: which sequences are in flight, and when each was sent.
        var model = new Dictionary<ushort, long>();
        var nowTicks = 0L;
        ushort nextSeq = 0;

        for (var step = 0; step < 100_000; step++)
        {
            nowTicks += random.NextInt(5);
            if (step == 50_000)
            {
                tracker.BeginMeasuredPhase();
            }

            switch (random.NextInt(10))
            {
                case < 4:
                    // Mostly the next sequence, sometimes any sequence (a buggy or hostile client).
                    var seq = random.NextInt(8) == 0 ? (ushort)random.NextInt(65_536) : nextSeq++;
                    var began = tracker.TryBeginRequest(seq, nowTicks);
                    if (model.Count == tracker.InFlightWindow || model.ContainsKey(seq))
                    {
                        Assert.False(began);
                    }

                    if (began)
                    {
                        model.Add(seq, nowTicks);
                    }

                    break;
                case < 8:
                    // Replies to recent sequences: in flight, answered, expired or never sent.
                    var replySeq = (ushort)(nextSeq - 1 - random.NextInt(40));
                    var outcome = tracker.OnReply(replySeq, nowTicks, out var rttTicks);
                    if (model.Remove(replySeq, out var sentTicks))
                    {
                        Assert.Equal(RttOutcome.Matched, outcome);
                        Assert.Equal(nowTicks - sentTicks, rttTicks);
                    }
                    else
                    {
                        Assert.NotEqual(RttOutcome.Matched, outcome);
                    }

                    break;
                default:
                    var timeout = TimeSpan.FromTicks(random.NextInt(200));
                    var expected = model.Where(pair => pair.Value <= nowTicks - timeout.Ticks).Select(pair => pair.Key).ToList();
                    Assert.Equal(expected.Count, tracker.ExpireOlderThan(nowTicks, timeout));
                    expected.ForEach(key => model.Remove(key));
                    break;
            }

            Assert.Equal(tracker.Sent, tracker.Matched + tracker.Lost + tracker.InFlight);
            Assert.True(tracker.WarmUp.IsBalanced, tracker.WarmUp.ToString());
            Assert.True(tracker.Measured.IsBalanced, tracker.Measured.ToString());
            Assert.Equal(model.Count, tracker.InFlight);
            Assert.InRange(tracker.InFlightHighWater, tracker.InFlight, tracker.InFlightWindow);
        }

        // The random walk must have reached every outcome, or the checks above proved little.
        Assert.True(tracker.Lost > 0 && tracker.Late > 0 && tracker.Duplicate > 0 && tracker.Unknown > 0);
        Assert.True(tracker.WarmUpMatched > 0 && tracker.MeasuredMatched > 0 && tracker.RefusedWindowFull > 0);
    }

    [Fact]
    public void RequestAndReply_HundredThousandTimes_AllocateNothing()
    {
        var tracker = new RttTracker(inFlightWindow: 64, ExactHistogram());
        tracker.BeginMeasuredPhase();
        var nowTicks = 0L;
        // Warm up first, so tiered compilation of these methods is not charged to the measured loop.
        RunExchanges(tracker, ref nowTicks);

        var before = GC.GetAllocatedBytesForCurrentThread();
        RunExchanges(tracker, ref nowTicks);
        var allocatedBytes = GC.GetAllocatedBytesForCurrentThread() - before;

        Assert.Equal(0, allocatedBytes);
        // Each lost request holds its slot for the timeout (1,000 sends), so about 7% of the sequences meet a busy
        // slot; this loop skips them rather than retrying.
        Assert.Equal(200_000, tracker.Sent + tracker.RefusedSlotBusy + tracker.RefusedWindowFull);
        Assert.True(tracker.Lost > 1_000 && tracker.Matched > 150_000);
    }

    [Fact]
    public void Constructor_RejectsWindowsOutsideOneToHalfTheSequenceSpace_AndSizesSlotsToTwiceThePowerOfTwo()
    {
        Assert.Throws<ArgumentOutOfRangeException>(() => new RttTracker(0, ExactHistogram()));
        Assert.Throws<ArgumentOutOfRangeException>(() => new RttTracker(RttTracker.InFlightWindowMax + 1, ExactHistogram()));

        Assert.Equal(2, new RttTracker(1, ExactHistogram()).SlotCount);
        Assert.Equal(2_048, new RttTracker(1_000, ExactHistogram()).SlotCount);
        Assert.Equal(65_536, new RttTracker(RttTracker.InFlightWindowMax, ExactHistogram()).SlotCount);
    }

    [Fact]
    public void ReplyBeforeItsRequestWasSent_Throws_AndLeavesTheRequestInFlight()
    {
        var tracker = new RttTracker(inFlightWindow: 4, ExactHistogram());
        Assert.True(tracker.TryBeginRequest(3, sentTicks: 100));

        Assert.Throws<ArgumentOutOfRangeException>(() => tracker.OnReply(3, receivedTicks: 99));
        Assert.Equal(1, tracker.InFlight);
        Assert.Equal(RttOutcome.Matched, tracker.OnReply(3, receivedTicks: 100));
    }

    private static void RunExchanges(RttTracker tracker, ref long nowTicks)
    {
        for (var n = 0; n < 100_000; n++)
        {
            var seq = (ushort)n;
            nowTicks++;
            if (!tracker.TryBeginRequest(seq, nowTicks))
            {
                continue;
            }

            // Every 100th reply is lost, so expiry runs for real as well.
            if (n % 100 != 0)
            {
                tracker.OnReply(seq, nowTicks + 3);
            }

            tracker.ExpireOlderThan(nowTicks, Timeout);
        }
    }
}
