namespace PlayHouse.Core.Seams;

/// <summary>The randomness seam: every random choice in the core and the simulation draws from one of these.</summary>
/// <remarks>Not thread-safe; each executor or simulated node owns its own source.</remarks>
public interface IRandomSource
{
    /// <summary>Returns the next 64 uniformly distributed bits.</summary>
    ulong NextUInt64();
}

/// <summary>Derived draws on top of <see cref="IRandomSource.NextUInt64"/>, identical on every platform.</summary>
public static class RandomSourceExtensions
{
    /// <summary>Returns an integer in [0, maxExclusive) without modulo bias (Lemire's method).</summary>
    public static int NextInt(this IRandomSource source, int maxExclusive)
    {
        ArgumentNullException.ThrowIfNull(source);
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(maxExclusive);
        return (int)source.NextUInt64Below((ulong)maxExclusive);
    }

    /// <summary>Returns an integer in [minInclusive, maxExclusive).</summary>
    public static long NextLong(this IRandomSource source, long minInclusive, long maxExclusive)
    {
        ArgumentNullException.ThrowIfNull(source);
        if (maxExclusive <= minInclusive)
        {
            throw new ArgumentOutOfRangeException(nameof(maxExclusive), $"maxExclusive ({maxExclusive}) must exceed minInclusive ({minInclusive}).");
        }

        return minInclusive + (long)source.NextUInt64Below((ulong)(maxExclusive - minInclusive));
    }

    /// <summary>Returns a double in [0, 1) built from the top 53 bits.</summary>
    public static double NextDouble(this IRandomSource source)
    {
        ArgumentNullException.ThrowIfNull(source);
        return (source.NextUInt64() >> 11) * (1.0 / (1UL << 53));
    }

    /// <summary>Returns true with the given probability.</summary>
    public static bool NextBool(this IRandomSource source, double probability) => source.NextDouble() < probability;

    private static ulong NextUInt64Below(this IRandomSource source, ulong bound)
    {
        // Rejection keeps every value equally likely; the loop runs more than once with probability < 1/2.
        var threshold = (0 - bound) % bound;
        while (true)
        {
            var product = Math.BigMul(source.NextUInt64(), bound, out var low);
            if (low >= threshold)
            {
                return product;
            }
        }
    }
}
