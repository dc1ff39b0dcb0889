using Microsoft.Extensions.Time.Testing;

namespace PlayHouse.Simulation.Tests.Checkers;

/// <summary>The checker tests' clock.</summary>
internal static class CheckerClock
{
    /// <summary>
    /// A <see cref="FakeTimeProvider"/> whose timestamps start at 0, as the simulated world's do, so the ticks a test
    /// passes to a checker by hand and the ticks a checker reads from the clock share one origin.
    /// </summary>
    public static FakeTimeProvider AtZero() => new(DateTimeOffset.MinValue);
}
