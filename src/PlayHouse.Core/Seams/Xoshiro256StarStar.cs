namespace PlayHouse.Core.Seams;

/// <summary>
/// xoshiro256** seeded through SplitMix64: the project's own PRNG, because <see cref="System.Random"/>
/// sequences are not promised stable across .NET versions and a seed must replay forever.
/// </summary>
/// <remarks>Not thread-safe.</remarks>
public sealed class Xoshiro256StarStar : IRandomSource
{
    private ulong _s0;
    private ulong _s1;
    private ulong _s2;
    private ulong _s3;

    public Xoshiro256StarStar(ulong seed)
    {
        Seed = seed;
        var sm = seed;
        _s0 = SplitMix64.Next(ref sm);
        _s1 = SplitMix64.Next(ref sm);
        _s2 = SplitMix64.Next(ref sm);
        _s3 = SplitMix64.Next(ref sm);
    }

    /// <summary>The seed this generator started from.</summary>
    public ulong Seed { get; }

    public ulong NextUInt64()
    {
        var result = ulong.RotateLeft(_s1 * 5, 7) * 9;
        var t = _s1 << 17;
        _s2 ^= _s0;
        _s3 ^= _s1;
        _s1 ^= _s2;
        _s0 ^= _s3;
        _s2 ^= t;
        _s3 = ulong.RotateLeft(_s3, 45);
        return result;
    }

    /// <summary>Draws a child seed for an independent stream (a node, a client, the network).</summary>
    public ulong NextChildSeed() => NextUInt64();

    // The draws of RandomSourceExtensions (which call these for this type), on the concrete generator so the hot
    // paths of the simulation (a latency, a loss or split decision per segment) pay no interface dispatch.

    /// <summary>Returns an integer in [0, maxExclusive), as <see cref="RandomSourceExtensions.NextInt"/>.</summary>
    public int NextInt(int maxExclusive)
    {
        RandomSourceExtensions.CheckBound(maxExclusive);
        return (int)RandomSourceExtensions.Below(NextUInt64(), (ulong)maxExclusive, this);
    }

    /// <summary>Returns an integer in [minInclusive, maxExclusive), as <see cref="RandomSourceExtensions.NextLong"/>.</summary>
    public long NextLong(long minInclusive, long maxExclusive)
    {
        RandomSourceExtensions.CheckRange(minInclusive, maxExclusive);
        return minInclusive + (long)RandomSourceExtensions.Below(NextUInt64(), (ulong)(maxExclusive - minInclusive), this);
    }

    /// <summary>Returns a double in [0, 1), as <see cref="RandomSourceExtensions.NextDouble"/>.</summary>
    public double NextDouble() => RandomSourceExtensions.UnitDouble(NextUInt64());

    /// <summary>Returns true with the given probability, as <see cref="RandomSourceExtensions.NextBool"/>.</summary>
    public bool NextBool(double probability) => NextDouble() < probability;
}

/// <summary>SplitMix64: the seed expander recommended for the xoshiro family.</summary>
public static class SplitMix64
{
    public static ulong Next(ref ulong state)
    {
        state += 0x9E3779B97F4A7C15UL;
        var z = state;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9UL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBUL;
        return z ^ (z >> 31);
    }
}
