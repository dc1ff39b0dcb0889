using System.Numerics;
using System.Runtime.CompilerServices;
using PlayHouse.Simulation.Metrics;

namespace PlayHouse.Simulation.Clients;

/// <summary>
/// Correct round-trip tracking for a client (the fix for bug B1): each reply is correlated with its own request
/// by sequence number, never by arrival order; the tracker holds at most <see cref="InFlightWindow"/> requests;
/// lost replies are released by <see cref="ExpireOlderThan"/>; and a request's phase (warm-up or measured) is
/// fixed when it is sent, so warm-up replies that arrive late never enter the measured histogram.
/// </summary>
/// <remarks>
/// <para>
/// Storage is a fixed array of <see cref="SlotCount"/> slots indexed by <c>seq mod SlotCount</c>. Each slot keeps
/// the full sequence of its last request and how that request ended, so a reply is classified in O(1): matched,
/// late (timed out), duplicate, or unknown (never sent, or its slot has since been reused). A slot is free again
/// only once its request was matched or timed out; a request whose slot is still busy (an older, stuck request
/// with the same sequence modulo <see cref="SlotCount"/>, for instance after the u16 sequence wrapped) is refused,
/// and the client skips to the next sequence.
/// </para>
/// <para>
/// Limit of a u16 wire sequence: a reply to a request that timed out and whose exact sequence was reused
/// (65,536 sends later) is indistinguishable from the reply to the reuse. Clients avoid it by sending fewer than
/// 65,536 requests per timeout, which the tracker cannot check on its own.
/// </para>
/// <para>Not thread-safe; one tracker per client.</para>
/// </remarks>
public sealed class RttTracker : IRttTracker, IPrefetchParts
{
    /// <summary>Half the u16 sequence space, so a slot's stored sequence always tells its generations apart.</summary>
    public const int InFlightWindowMax = 32_768;

    private readonly Slot[] _slots;
    private readonly int _slotLines;
    private readonly int _slotMask;
    private readonly LatencyHistogram _measured;
    private PhaseCounters _warmUp;
    private PhaseCounters _measuring;
    // A lower bound on the send time of every request in flight, so most expiry calls return without a scan.
    private long _oldestSentTicksLowerBound = long.MaxValue;

    /// <param name="inFlightWindow">Most requests in flight at once, 1 to <see cref="InFlightWindowMax"/>.</param>
    /// <param name="measured">Receives the round trip, in ticks, of every matched request sent in the measured
    /// phase.</param>
    public RttTracker(int inFlightWindow, LatencyHistogram measured)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(inFlightWindow, 1);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(inFlightWindow, InFlightWindowMax);
        ArgumentNullException.ThrowIfNull(measured);

        InFlightWindow = inFlightWindow;
        _measured = measured;
        // Twice the window rounded up to a power of two: with sequential sequences, a slot collides with a request
        // still in flight only when that request is older than SlotCount - window >= window sends, that is, stuck.
        SlotCount = (int)BitOperations.RoundUpToPowerOf2((uint)inFlightWindow) * 2;
        _slotMask = SlotCount - 1;
        _slots = new Slot[SlotCount];
        _slotLines = Prefetch.LinesOf<Slot>(SlotCount);
    }

    void IPrefetchParts.PrefetchParts(int depth)
    {
        if (depth == 0)
        {
            Prefetch.Object(_slots, _slotLines);
        }
    }

    /// <summary>Most requests in flight at once.</summary>
    public int InFlightWindow { get; }

    /// <summary>Slots in the fixed store: twice <see cref="InFlightWindow"/>, rounded up to a power of two.</summary>
    public int SlotCount { get; }

    public bool IsMeasuring { get; private set; }

    /// <summary>True when no request may begin until a reply or a timeout frees a slot.</summary>
    public bool IsWindowFull => InFlight == InFlightWindow;

    public long Sent => _warmUp.Sent + _measuring.Sent;

    public long Matched => _warmUp.Matched + _measuring.Matched;

    public long Late => _warmUp.Late + _measuring.Late;

    public long Duplicate => _warmUp.Duplicate + _measuring.Duplicate;

    public long Unknown { get; private set; }

    public long Lost => _warmUp.Lost + _measuring.Lost;

    public long WarmUpMatched => _warmUp.Matched;

    public long MeasuredMatched => _measuring.Matched;

    public int InFlight => _warmUp.InFlight + _measuring.InFlight;

    public int InFlightHighWater { get; private set; }

    /// <summary>Requests refused because the window was full.</summary>
    public long RefusedWindowFull { get; private set; }

    /// <summary>Requests refused because their slot still held an older request in flight.</summary>
    public long RefusedSlotBusy { get; private set; }

    /// <summary>Counts of requests sent during the warm-up.</summary>
    public RttPhaseCounts WarmUp => _warmUp.Snapshot();

    /// <summary>Counts of requests sent during the measured phase.</summary>
    public RttPhaseCounts Measured => _measuring.Snapshot();

    public void BeginMeasuredPhase() => IsMeasuring = true;

    /// <summary>
    /// Registers request <paramref name="seq"/>. Returns false, and the client must not send it, when the window
    /// is full (<see cref="IsWindowFull"/>) or when the slot of <paramref name="seq"/> still holds an older
    /// request in flight; in the second case the client may try the next sequence.
    /// </summary>
    public bool TryBeginRequest(ushort seq, long sentTicks)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(sentTicks);
        if (IsWindowFull)
        {
            RefusedWindowFull++;
            return false;
        }

        ref var slot = ref _slots[seq & _slotMask];
        if (slot.State == SlotState.InFlight)
        {
            RefusedSlotBusy++;
            return false;
        }

        slot = new Slot { Seq = seq, SentTicks = sentTicks, State = SlotState.InFlight, Measured = IsMeasuring };
        ref var phase = ref PhaseOf(slot.Measured);
        phase.Sent++;
        phase.InFlight++;
        _oldestSentTicksLowerBound = Math.Min(_oldestSentTicksLowerBound, sentTicks);
        InFlightHighWater = Math.Max(InFlightHighWater, InFlight);
        AssertBalanced();
        return true;
    }

    public RttOutcome OnReply(ushort seq, long receivedTicks) => OnReply(seq, receivedTicks, out _);

    public RttOutcome OnReply(ushort seq, long receivedTicks, out long rttTicks)
    {
        rttTicks = 0;
        ref var slot = ref _slots[seq & _slotMask];
        if (slot.State == SlotState.Empty || slot.Seq != seq)
        {
            Unknown++;
            return RttOutcome.Unknown;
        }

        ref var phase = ref PhaseOf(slot.Measured);
        switch (slot.State)
        {
            case SlotState.InFlight:
                if (receivedTicks < slot.SentTicks)
                {
                    ThrowClockWentBack(seq, receivedTicks, slot.SentTicks);
                }

                rttTicks = receivedTicks - slot.SentTicks;
                slot.State = SlotState.Matched;
                phase.InFlight--;
                phase.Matched++;
                if (slot.Measured)
                {
                    _measured.Record(rttTicks);
                }

                AssertBalanced();
                return RttOutcome.Matched;

            case SlotState.TimedOut:
                slot.State = SlotState.TimedOutAnswered;
                phase.Late++;
                return RttOutcome.Late;

            default:
                // Matched or TimedOutAnswered: this request already had its one answer.
                phase.Duplicate++;
                return RttOutcome.Duplicate;
        }
    }

    /// <summary>
    /// Releases every request sent at or before <c>nowTicks - timeout</c> and counts it as lost, so a lost reply
    /// never holds a slot for longer than the timeout. Scans the slots only when a request may have expired.
    /// </summary>
    public int ExpireOlderThan(long nowTicks, TimeSpan timeout)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(timeout, TimeSpan.Zero);
        var deadlineTicks = nowTicks - timeout.Ticks;
        if (InFlight == 0 || _oldestSentTicksLowerBound > deadlineTicks)
        {
            return 0;
        }

        var expired = 0;
        var oldestRemainingTicks = long.MaxValue;
        for (var index = 0; index < _slots.Length; index++)
        {
            ref var slot = ref _slots[index];
            if (slot.State != SlotState.InFlight)
            {
                continue;
            }

            if (slot.SentTicks <= deadlineTicks)
            {
                slot.State = SlotState.TimedOut;
                ref var phase = ref PhaseOf(slot.Measured);
                phase.InFlight--;
                phase.Lost++;
                expired++;
            }
            else
            {
                oldestRemainingTicks = Math.Min(oldestRemainingTicks, slot.SentTicks);
            }
        }

        _oldestSentTicksLowerBound = oldestRemainingTicks;
        AssertBalanced();
        return expired;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void ThrowClockWentBack(ushort seq, long receivedTicks, long sentTicks) =>
        throw new ArgumentOutOfRangeException(
            nameof(receivedTicks),
            receivedTicks,
            $"Reply {seq} received before its request was sent at {sentTicks}: the clock went backwards.");

    private ref PhaseCounters PhaseOf(bool measured)
    {
        if (measured)
        {
            return ref _measuring;
        }

        return ref _warmUp;
    }

    private void AssertBalanced()
    {
        // Checked where the counts change, so a broken identity fails at the operation that broke it.
        if (!_warmUp.IsBalanced || !_measuring.IsBalanced || InFlight > InFlightWindow)
        {
            ThrowOutOfBalance();
        }
    }

    // Out of line: the message's formatting would otherwise widen the frame of every request and reply.
    [MethodImpl(MethodImplOptions.NoInlining)]
    private void ThrowOutOfBalance() =>
        throw new InvalidOperationException(
            $"RTT tracker out of balance: warm-up {_warmUp.Snapshot()}, measured {_measuring.Snapshot()}, window {InFlightWindow}.");

    private enum SlotState : byte
    {
        Empty,
        InFlight,
        Matched,
        TimedOut,
        TimedOutAnswered,
    }

    private struct Slot
    {
        public long SentTicks;
        public ushort Seq;
        public SlotState State;
        public bool Measured;
    }

    private struct PhaseCounters
    {
        public long Sent;
        public long Matched;
        public long Lost;
        public int InFlight;
        public long Late;
        public long Duplicate;

        /// <summary>As <see cref="RttPhaseCounts.IsBalanced"/>, without building the snapshot.</summary>
        public readonly bool IsBalanced => Sent == Matched + Lost + InFlight;

        public readonly RttPhaseCounts Snapshot() => new(Sent, Matched, Lost, InFlight, Late, Duplicate);
    }
}
