using PlayHouse.Core.Seams;

namespace PlayHouse.Sim.Cli;

/// <summary>Seeds for runs the user did not pin: drawn from OS entropy through the core's real-mode seam, then printed.</summary>
internal static class FreshSeed
{
    /// <summary>A new seed; it is printed in the banner, so the run it starts can still be replayed.</summary>
    public static ulong Next() => EntropyRandomSource.Create().Seed;
}
