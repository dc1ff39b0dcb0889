namespace PlayHouse.HangingTests;

/// <summary>
/// DELIBERATELY HANGING. One test that finishes and one that never returns (a deadlock, a wait for a reply that never
/// comes, a runaway loop: from outside they all look like this). Only HangGuardTests runs this project.
/// </summary>
public sealed class HangingTests
{
    [Fact]
    public void Finishes() => Assert.True(true);

    [Fact]
    public void NeverReturns_WaitsForASignalNobodySends()
    {
        using var never = new ManualResetEventSlim(false);
        never.Wait();
    }
}
