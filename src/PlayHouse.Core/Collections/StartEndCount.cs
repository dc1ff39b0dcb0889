using System.Numerics;
using PlayHouse.Core.Pooling;

namespace PlayHouse.Core.Collections;

/// <summary>
/// How many things that start and end on many threads are in progress, counted without a cache line that every thread
/// writes: each thread counts its starts and ends in a stripe of its own, and a read adds the stripes up.
/// </summary>
/// <remarks>
/// <para>Thread-safe. A thing may end on another thread than the one it started on, so a stripe's own balance means
/// nothing; the stripes keep two monotonic counts instead, and a read sums every stripe's ends first and then every
/// stripe's starts. Any end it counts happened before that read, so its start happened earlier still and is counted
/// too: a thing in progress for the whole read is always counted, and the result is never below the true count at the
/// read's start (a thing that starts during the read may be counted early, never one that ended before it). Summing
/// live balances per thread instead could read 0 while something runs: one thread's end read after it happened,
/// another thread's start read before it happened.</para>
/// <para>Threads whose stripes coincide (more threads than stripes) share a stripe through interlocked adds.</para>
/// </remarks>
internal sealed class StartEndCount
{
    // A stripe's two counts sit on a line of their own (128 bytes keeps adjacent-line prefetch from pairing two
    // stripes); stripe 0 starts one stride in, away from the array's header.
    private const int StrideLongs = 16;
    private const int EndOffset = 1;
    private const int StripesMax = 64;

    private readonly long[] _cells;
    private readonly int _mask;

    /// <summary>A count with at least <paramref name="stripes"/> stripes (rounded up to a power of two, at most 64).</summary>
    public StartEndCount(int stripes)
    {
        var count = (int)BitOperations.RoundUpToPowerOf2((uint)Math.Clamp(stripes, 1, StripesMax));
        _mask = count - 1;
        _cells = new long[(count + 1) * StrideLongs];
    }

    /// <summary>Stripes: a power of two.</summary>
    public int StripeCount => _mask + 1;

    /// <summary>Things started and not yet ended, as of the read (see the remarks); never negative unless more ended than started.</summary>
    public long InProgress
    {
        get
        {
            long ended = 0;
            for (var stripe = 0; stripe <= _mask; stripe++)
            {
                ended += Volatile.Read(ref _cells[Index(stripe) + EndOffset]);
            }

            long started = 0;
            for (var stripe = 0; stripe <= _mask; stripe++)
            {
                started += Volatile.Read(ref _cells[Index(stripe)]);
            }

            return started - ended;
        }
    }

    public void Start() => Interlocked.Increment(ref _cells[Index(CurrentStripe())]);

    public void End() => Interlocked.Increment(ref _cells[Index(CurrentStripe()) + EndOffset]);

    /// <summary>A start counted in stripe <paramref name="stripe"/>, as from a thread of that stripe. For tests.</summary>
    internal void StartIn(int stripe) => Interlocked.Increment(ref _cells[Index(stripe & _mask)]);

    /// <summary>An end counted in stripe <paramref name="stripe"/>. For tests.</summary>
    internal void EndIn(int stripe) => Interlocked.Increment(ref _cells[Index(stripe & _mask) + EndOffset]);

    private static int Index(int stripe) => (stripe + 1) * StrideLongs;

    private int CurrentStripe() => ThreadSlots.AssignCurrent() & _mask;
}
