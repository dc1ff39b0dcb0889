namespace PlayHouse.Core.Collections;

/// <summary>
/// How many things that start and end on many threads are in progress, counted without a cache line that every thread
/// writes: starts and ends are two per-thread totals (<see cref="StripedCounter"/>), and a read subtracts one from the
/// other.
/// </summary>
/// <remarks>
/// <para>Thread-safe. A thing may end on another thread than the one it started on, so no thread's own balance means
/// anything; the totals only grow, and a read sums every stripe's ends first and then every stripe's starts. Any end
/// it counts happened before that read, so its start happened earlier still and is counted too: a thing in progress
/// for the whole read is always counted, and the result is never below the true count at the read's start (a thing
/// that starts during the read may be counted early, never one that ended before it). Summing live balances per
/// thread instead could read 0 while something runs: one thread's end read after it happened, another thread's start
/// read before it happened.</para>
/// </remarks>
internal sealed class StartEndCount(int stripes)
{
    private readonly StripedCounter _starts = new(stripes);
    private readonly StripedCounter _ends = new(stripes);

    /// <summary>Stripes: a power of two.</summary>
    public int StripeCount => _starts.StripeCount;

    /// <summary>Things started and not yet ended, as of the read (see the remarks); never negative unless more ended than started.</summary>
    public long InProgress
    {
        get
        {
            // Ends first: see the remarks.
            var ended = _ends.Value;
            return _starts.Value - ended;
        }
    }

    public void Start() => _starts.Increment();

    public void End() => _ends.Increment();

    /// <summary>A start counted in stripe <paramref name="stripe"/>, as from a thread of that stripe. For tests.</summary>
    internal void StartIn(int stripe) => _starts.IncrementIn(stripe);

    /// <summary>An end counted in stripe <paramref name="stripe"/>. For tests.</summary>
    internal void EndIn(int stripe) => _ends.IncrementIn(stripe);
}
