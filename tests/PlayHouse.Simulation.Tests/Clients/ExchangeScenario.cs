using PlayHouse.Simulation.Clients;

namespace PlayHouse.Simulation.Tests.Clients;

/// <summary>One reply as the tracker saw it, beside the ground truth of the request it answers.</summary>
internal readonly record struct ReplySeen(int Request, ushort Seq, RttOutcome Outcome, long RttTicks, long TruthTicks);

/// <summary>
/// A deterministic request/reply exchange in virtual ticks, driving any <see cref="IRttTracker"/>: request i is
/// attempted at i * <see cref="SendIntervalTicks"/> (retried each interval while the tracker refuses), its reply
/// arrives <see cref="LatencyTicksOf"/>(i) ticks after the send unless <see cref="IsDropped"/>(i), and
/// <see cref="IRttTracker.ExpireOlderThan"/> runs every tick. The ground truth of every reply is known here.
/// </summary>
internal sealed class ExchangeScenario
{
    public required int RequestCount { get; init; }

    public long SendIntervalTicks { get; init; } = 10;

    public Func<int, long> LatencyTicksOf { get; init; } = _ => 100;

    public Func<int, bool> IsDropped { get; init; } = _ => false;

    public TimeSpan Timeout { get; init; } = TimeSpan.FromTicks(1_000);

    /// <summary>Called after every step with the current tick, to check invariants while the exchange runs.</summary>
    public Action<long>? AfterEachTick { get; init; }

    public ScenarioResult Run(IRttTracker tracker)
    {
        var sentTicks = new long[RequestCount];
        var seqOf = new ushort[RequestCount];
        var replies = new PriorityQueue<int, (long DueTicks, int Request)>();
        var seen = new List<ReplySeen>();
        var next = 0;
        ushort nextSeq = 0;
        var refused = 0L;
        var lastDueTicks = 0L;

        // A healthy run ends long before this; a tracker that never frees a slot must fail the test, not hang it.
        var nowTicksMax = (RequestCount * SendIntervalTicks * 100) + (Timeout.Ticks * 100);
        for (var nowTicks = 0L; next < RequestCount || replies.Count > 0 || nowTicks <= lastDueTicks + Timeout.Ticks; nowTicks++)
        {
            if (nowTicks > nowTicksMax)
            {
                throw new InvalidOperationException(
                    $"Exchange stalled: {next} of {RequestCount} requests sent by tick {nowTicks}, {tracker.InFlight} in flight.");
            }

            // Replies first, then expiry, then sends: a reply due now must beat its own timeout.
            while (replies.TryPeek(out var request, out var due) && due.DueTicks == nowTicks)
            {
                replies.Dequeue();
                var outcome = tracker.OnReply(seqOf[request], nowTicks, out var rttTicks);
                seen.Add(new ReplySeen(request, seqOf[request], outcome, rttTicks, nowTicks - sentTicks[request]));
            }

            tracker.ExpireOlderThan(nowTicks, Timeout);

            if (next < RequestCount && nowTicks >= next * SendIntervalTicks && nowTicks % SendIntervalTicks == 0
                && TryBegin(tracker, ref nextSeq, nowTicks, ref refused))
            {
                sentTicks[next] = nowTicks;
                seqOf[next] = nextSeq;
                lastDueTicks = Math.Max(lastDueTicks, nowTicks);
                if (!IsDropped(next))
                {
                    var dueTicks = nowTicks + LatencyTicksOf(next);
                    replies.Enqueue(next, (dueTicks, next));
                    lastDueTicks = Math.Max(lastDueTicks, dueTicks);
                }

                next++;
                nextSeq++;
            }

            AfterEachTick?.Invoke(nowTicks);
        }

        return new ScenarioResult(seen, sentTicks, refused);
    }

    private static bool TryBegin(IRttTracker tracker, ref ushort seq, long nowTicks, ref long refused)
    {
        while (!tracker.TryBeginRequest(seq, nowTicks))
        {
            refused++;
            if (tracker is RttTracker { IsWindowFull: true })
            {
                // Wait for a reply or a timeout to free a slot.
                return false;
            }

            // The slot of this sequence still holds a stuck request: skip to the next sequence, as a client would.
            seq++;
        }

        return true;
    }
}

internal sealed record ScenarioResult(IReadOnlyList<ReplySeen> Replies, long[] SentTicks, long Refused);
