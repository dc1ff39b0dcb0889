using PlayHouse.Simulation.Metrics;

namespace PlayHouse.Simulation.Clients.Flawed;

/// <summary>
/// DELIBERATELY FLAWED: a model of PlayHouse's original benchmark-client RTT tracking (bug B1, seed 000), kept only
/// to prove that the checkers catch B1. Never use it to measure anything.
/// </summary>
/// <remarks>
/// <para>
/// The flaws, reproduced on purpose: send timestamps go into an unbounded queue; each reply dequeues the oldest
/// timestamp whatever its sequence, so one lost, duplicated or late reply shifts every later pairing; nothing ever
/// times out, so a lost reply's timestamp stays in the queue forever and the queue grows with every loss (the
/// original client reached 1.4 TB); and the phase is decided when the reply arrives, so warm-up requests answered
/// after the switch are counted as measured.
/// </para>
/// <para>Not thread-safe; one tracker per client.</para>
/// </remarks>
public sealed class FifoRttTracker : IRttTracker
{
    private readonly Queue<long> _sentTicks = new();
    private readonly LatencyHistogram _measured;

    public FifoRttTracker(LatencyHistogram measured)
    {
        ArgumentNullException.ThrowIfNull(measured);
        _measured = measured;
    }

    public bool IsMeasuring { get; private set; }

    public long Sent { get; private set; }

    public long Matched { get; private set; }

    /// <summary>Always 0: without timeouts, a late reply is indistinguishable from a timely one.</summary>
    public long Late => 0;

    /// <summary>Always 0: without sequence numbers, a duplicate is indistinguishable from the next reply.</summary>
    public long Duplicate => 0;

    public long Unknown { get; private set; }

    /// <summary>Always 0: nothing ever times out.</summary>
    public long Lost => 0;

    public long WarmUpMatched { get; private set; }

    public long MeasuredMatched { get; private set; }

    public int InFlight => _sentTicks.Count;

    public int InFlightHighWater { get; private set; }

    public void BeginMeasuredPhase() => IsMeasuring = true;

    /// <summary>Never refuses: the original queue had no bound.</summary>
    public bool TryBeginRequest(ushort seq, long sentTicks)
    {
        _sentTicks.Enqueue(sentTicks);
        Sent++;
        InFlightHighWater = Math.Max(InFlightHighWater, _sentTicks.Count);
        return true;
    }

    public RttOutcome OnReply(ushort seq, long receivedTicks) => OnReply(seq, receivedTicks, out _);

    /// <summary>Pairs the reply with the oldest queued timestamp, ignoring <paramref name="seq"/>.</summary>
    public RttOutcome OnReply(ushort seq, long receivedTicks, out long rttTicks)
    {
        rttTicks = 0;
        if (!_sentTicks.TryDequeue(out var sentTicks))
        {
            Unknown++;
            return RttOutcome.Unknown;
        }

        Matched++;
        // Every queued timestamp precedes this reply, so the difference is non-negative, just not this
        // request's round trip once a pairing has shifted.
        rttTicks = receivedTicks - sentTicks;
        if (IsMeasuring)
        {
            MeasuredMatched++;
            _measured.Record(rttTicks);
        }
        else
        {
            WarmUpMatched++;
        }

        return RttOutcome.Matched;
    }

    /// <summary>Does nothing: the original had no timeouts.</summary>
    public int ExpireOlderThan(long nowTicks, TimeSpan timeout) => 0;
}
