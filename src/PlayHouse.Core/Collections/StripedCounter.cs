using System.Numerics;
using PlayHouse.Core.Pooling;

namespace PlayHouse.Core.Collections;

/// <summary>
/// A running total that many threads add to, kept per thread: each thread adds into a stripe of its own (the pool's
/// per-thread index picks it) and a read sums the stripes. For totals added per message on every thread that runs
/// turns or reads sockets, whose one shared cache line would otherwise move between the cores at each add.
/// </summary>
/// <remarks>
/// Thread-safe. Threads whose indexes pick the same stripe share it through interlocked adds. A read while others add
/// sums stripes read one after another, each with acquire semantics: it counts every add that happened before the
/// read began and is exact once the adds have stopped, as a read of one interlocked total was.
/// </remarks>
internal sealed class StripedCounter
{
    // A stripe sits on lines of its own (128 bytes keeps adjacent-line prefetch from pairing two stripes); stripe 0
    // starts one stride in, away from the array's header.
    private const int StrideLongs = 16;
    private const int StripesMax = 64;

    private readonly long[] _cells;
    private readonly int _mask;

    /// <summary>A counter with at least <paramref name="stripes"/> stripes (rounded up to a power of two, at most 64).</summary>
    public StripedCounter(int stripes)
    {
        var count = (int)BitOperations.RoundUpToPowerOf2((uint)Math.Clamp(stripes, 1, StripesMax));
        _mask = count - 1;
        _cells = new long[(count + 1) * StrideLongs];
    }

    /// <summary>Stripes: a power of two.</summary>
    public int StripeCount => _mask + 1;

    /// <summary>The total over every stripe.</summary>
    public long Value
    {
        get
        {
            long total = 0;
            for (var stripe = 0; stripe <= _mask; stripe++)
            {
                total += Volatile.Read(ref _cells[Index(stripe)]);
            }

            return total;
        }
    }

    public void Increment() => Interlocked.Increment(ref _cells[Index(ThreadSlots.AssignCurrent() & _mask)]);

    /// <summary>An increment in stripe <paramref name="stripe"/>, as from a thread of that stripe. For tests.</summary>
    internal void IncrementIn(int stripe) => Interlocked.Increment(ref _cells[Index(stripe & _mask)]);

    private static int Index(int stripe) => (stripe + 1) * StrideLongs;
}
