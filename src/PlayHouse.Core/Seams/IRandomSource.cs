namespace PlayHouse.Core.Seams;

/// <summary>The randomness seam: every random choice in the core and the simulation draws from one of these.</summary>
/// <remarks>Not thread-safe; each executor or simulated node owns its own source.</remarks>
public interface IRandomSource
{
    /// <summary>Returns the next 64 uniformly distributed bits.</summary>
    ulong NextUInt64();
}

/// <summary>Derived draws on top of <see cref="IRandomSource.NextUInt64"/>, identical on every platform.</summary>
/// <remarks>
/// The project's own generator is served by its own methods (the same draws, through the helpers below), so a hot
/// path holding it as an <see cref="IRandomSource"/> pays one type check instead of an interface call per draw.
/// </remarks>
public static class RandomSourceExtensions
{
    /// <summary>Returns an integer in [0, maxExclusive) without modulo bias (Lemire's method).</summary>
    public static int NextInt(this IRandomSource source, int maxExclusive)
    {
        ArgumentNullException.ThrowIfNull(source);
        if (source is Xoshiro256StarStar concrete)
        {
            return concrete.NextInt(maxExclusive);
        }

        CheckBound(maxExclusive);
        return (int)Below(source.NextUInt64(), (ulong)maxExclusive, source);
    }

    /// <summary>Returns an integer in [minInclusive, maxExclusive).</summary>
    public static long NextLong(this IRandomSource source, long minInclusive, long maxExclusive)
    {
        ArgumentNullException.ThrowIfNull(source);
        if (source is Xoshiro256StarStar concrete)
        {
            return concrete.NextLong(minInclusive, maxExclusive);
        }

        CheckRange(minInclusive, maxExclusive);
        return minInclusive + (long)Below(source.NextUInt64(), (ulong)(maxExclusive - minInclusive), source);
    }

    /// <summary>Returns a double in [0, 1) built from the top 53 bits.</summary>
    public static double NextDouble(this IRandomSource source)
    {
        ArgumentNullException.ThrowIfNull(source);
        return source is Xoshiro256StarStar concrete ? concrete.NextDouble() : UnitDouble(source.NextUInt64());
    }

    /// <summary>Returns true with the given probability.</summary>
    public static bool NextBool(this IRandomSource source, double probability) => source.NextDouble() < probability;

    internal static void CheckBound(int maxExclusive) => ArgumentOutOfRangeException.ThrowIfNegativeOrZero(maxExclusive);

    internal static void CheckRange(long minInclusive, long maxExclusive)
    {
        if (maxExclusive <= minInclusive)
        {
            throw new ArgumentOutOfRangeException(nameof(maxExclusive), $"maxExclusive ({maxExclusive}) must exceed minInclusive ({minInclusive}).");
        }
    }

    /// <summary>
    /// A value in [0, bound) from <paramref name="firstDraw"/>, drawing more from <paramref name="source"/> only when
    /// the first is rejected. Rejection keeps every value equally likely (Lemire's method); the loop runs more than
    /// once with probability below 1/2. The rejection threshold is below the bound, so a low part at or above the
    /// bound is accepted without computing it (a 64-bit division); the accept and reject decisions are the same.
    /// </summary>
    internal static ulong Below(ulong firstDraw, ulong bound, IRandomSource source)
    {
        var product = Math.BigMul(firstDraw, bound, out var low);
        if (low >= bound)
        {
            return product;
        }

        var threshold = (0 - bound) % bound;
        while (low < threshold)
        {
            product = Math.BigMul(source.NextUInt64(), bound, out low);
        }

        return product;
    }

    /// <summary>A double in [0, 1) from the top 53 of <paramref name="bits"/>.</summary>
    internal static double UnitDouble(ulong bits) => (bits >> 11) * (1.0 / (1UL << 53));
}
