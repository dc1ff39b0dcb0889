using System.Security.Cryptography;

namespace PlayHouse.Core.Seams;

/// <summary>The real-mode randomness seam: an <see cref="Xoshiro256StarStar"/> seeded from OS entropy.</summary>
public static class EntropyRandomSource
{
    /// <summary>Creates a generator with a fresh seed; the seed is exposed so a real run can still be reported.</summary>
    public static Xoshiro256StarStar Create()
    {
#pragma warning disable RS0030 // Real-mode seam: the only place in src/ that draws an unseeded value.
        var seed = BitConverter.ToUInt64(RandomNumberGenerator.GetBytes(8));
#pragma warning restore RS0030
        return new Xoshiro256StarStar(seed);
    }
}
