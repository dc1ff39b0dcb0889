using Microsoft.Extensions.Time.Testing;
using PlayHouse.Simulation.Checkers;

namespace PlayHouse.Simulation.Tests.Checkers;

public sealed class LivenessCheckerTests
{
    private const long Second = TimeSpan.TicksPerSecond;
    private readonly FakeTimeProvider _clock = CheckerClock.AtZero();

    [Fact]
    public void Liveness_ClientsSilentAfterHeal_ReportsTheStalledClients()
    {
        var checker = new LivenessChecker(_clock, TimeSpan.FromSeconds(10));
        for (var client = 1; client <= 4; client++)
        {
            checker.Register(client, 0);
        }

        checker.OnProgress(2, 50 * Second);
        checker.FaultsHealedAt(100 * Second);
        checker.OnProgress(1, 105 * Second);
        checker.OnProgress(4, 110 * Second);
        checker.OnProgress(3, 150 * Second);

        checker.Check(109 * Second);
        Assert.False(checker.HasViolations);
        checker.Check(110 * Second);

        var violation = Assert.Single(checker.Violations);
        Assert.Equal(TimeSpan.FromSeconds(110), violation.VirtualTime);
        Assert.Equal(
            "2 client(s) made no progress within 00:00:10 of the heal at 00:01:40: client 2 (last progress at 00:00:50), client 3 (last progress at 00:02:30)",
            violation.Message);
    }

    [Fact]
    public void Liveness_EveryClientProgressesWithinWindow_Passes()
    {
        var checker = new LivenessChecker(_clock, TimeSpan.FromSeconds(10));
        checker.Register(1, 0);
        checker.Register(2, 0);
        checker.Register(3, 0, expectsProgress: false);
        checker.FaultsHealedAt(100 * Second);
        checker.OnProgress(1, 101 * Second);
        checker.OnProgress(2, 110 * Second);
        checker.Check(500 * Second);
        checker.CheckQuiescent();

        Assert.False(checker.HasViolations);
        Assert.Equal(3, checker.ClientCount);
    }

    [Fact]
    public void Liveness_WithoutFaults_EachClientIsJudgedFromItsRegistration()
    {
        var checker = new LivenessChecker(_clock, TimeSpan.FromSeconds(5));
        checker.Register(1, 0);
        checker.Register(2, 20 * Second);
        checker.OnProgress(1, 3 * Second);
        checker.Check(24 * Second);
        Assert.False(checker.HasViolations);

        checker.Check(25 * Second);

        Assert.Equal("1 client(s) made no progress within 00:00:05 of registration: client 2 (never progressed)", Assert.Single(checker.Violations).Message);
    }

    [Fact]
    public void Liveness_ClientThatStoppedExpecting_IsNotJudged()
    {
        var checker = new LivenessChecker(_clock, TimeSpan.FromSeconds(5));
        checker.Register(1, 0);
        checker.Register(2, 0);
        checker.StopExpecting(2);
        checker.OnProgress(1, 1 * Second);
        checker.Check(60 * Second);

        Assert.False(checker.HasViolations);

        // Re-registering starts a new window for the client.
        checker.Register(2, 60 * Second);
        checker.Check(65 * Second);
        Assert.Contains("client 2 (never progressed)", Assert.Single(checker.Violations).Message, StringComparison.Ordinal);
    }

    [Fact]
    public void Liveness_QuietWorldBeforeWindowEnds_ReportsClientsThatCanNoLongerProgress()
    {
        var checker = new LivenessChecker(_clock, TimeSpan.FromSeconds(30));
        checker.Register(1, 0);
        checker.Register(2, 0);
        checker.FaultsHealedAt(10 * Second);
        checker.OnProgress(1, 12 * Second);
        _clock.Advance(TimeSpan.FromSeconds(15));
        checker.CheckStep();
        Assert.False(checker.HasViolations);

        checker.CheckQuiescent();

        var violation = Assert.Single(checker.Violations);
        Assert.Equal(TimeSpan.FromSeconds(15), violation.VirtualTime);
        Assert.Equal(
            "1 client(s) made no progress within 00:00:30 of the heal at 00:00:10 (the run went quiet; nothing is left to make them progress): client 2 (never progressed)",
            violation.Message);
    }

    [Fact]
    public void Liveness_CheckStep_UsesTheRunClockAndJudgesEachClientOnce()
    {
        var checker = new LivenessChecker(_clock, TimeSpan.FromSeconds(5));
        checker.Register(7, 0);
        _clock.Advance(TimeSpan.FromSeconds(4));
        checker.CheckStep();
        Assert.False(checker.HasViolations);

        _clock.Advance(TimeSpan.FromSeconds(2));
        checker.CheckStep();
        checker.CheckStep();
        checker.CheckQuiescent();

        Assert.Equal(1, checker.ViolationCount);
        Assert.Contains("client 7 (never progressed)", checker.FirstViolation!.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void Liveness_SecondHeal_StartsNewWindowsForEveryClient()
    {
        var checker = new LivenessChecker(_clock, TimeSpan.FromSeconds(5));
        checker.Register(1, 0);
        checker.FaultsHealedAt(10 * Second);
        checker.OnProgress(1, 11 * Second);
        checker.Check(20 * Second);
        Assert.False(checker.HasViolations);

        checker.FaultsHealedAt(30 * Second);
        checker.Check(36 * Second);

        Assert.Equal(
            "1 client(s) made no progress within 00:00:05 of the heal at 00:00:30: client 1 (last progress at 00:00:11)",
            Assert.Single(checker.Violations).Message);
    }

    [Fact]
    public void Liveness_HealReportedAfterTheProgressItEnabled_CountsThatProgress()
    {
        var checker = new LivenessChecker(_clock, TimeSpan.FromSeconds(5));
        checker.Register(1, 0);
        checker.Register(2, 0);
        checker.OnProgress(1, 102 * Second);
        checker.OnProgress(2, 99 * Second);
        checker.FaultsHealedAt(100 * Second);
        checker.Check(200 * Second);

        Assert.Equal(
            "1 client(s) made no progress within 00:00:05 of the heal at 00:01:40: client 2 (last progress at 00:01:39)",
            Assert.Single(checker.Violations).Message);
    }
}
