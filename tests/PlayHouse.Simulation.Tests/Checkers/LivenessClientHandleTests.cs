using Microsoft.Extensions.Time.Testing;
using PlayHouse.Simulation.Checkers;

namespace PlayHouse.Simulation.Tests.Checkers;

/// <summary>
/// The <see cref="LivenessClient"/> handle of <see cref="LivenessChecker"/>: the runs report progress through it
/// and register, re-arm and retire clients by id, so both must judge one and the same client.
/// </summary>
public sealed class LivenessClientHandleTests
{
    private const long Second = TimeSpan.TicksPerSecond;
    private readonly FakeTimeProvider _clock = CheckerClock.AtZero();

    [Fact]
    public void LivenessHandle_ProgressAfterTheWindow_ReportsTheSameStallAsTheIdPath()
    {
        // Arrange
        var byId = new LivenessChecker(_clock, TimeSpan.FromSeconds(5));
        var byHandle = new LivenessChecker(_clock, TimeSpan.FromSeconds(5));
        var onTime = byHandle.ForClient(1);
        var late = byHandle.ForClient(2);
        foreach (var checker in new[] { byId, byHandle })
        {
            checker.Register(1, 0);
            checker.Register(2, 0);
        }

        // Act
        byId.OnProgress(1, 4 * Second);
        byId.OnProgress(2, 6 * Second);
        byHandle.OnProgress(onTime, 4 * Second);
        byHandle.OnProgress(late, 6 * Second);
        byId.Check(6 * Second);
        byHandle.Check(6 * Second);

        // Assert
        var violation = Assert.Single(byHandle.Violations);
        Assert.Equal("1 client(s) made no progress within 00:00:05 of registration: client 2 (last progress at 00:00:06)", violation.Message);
        Assert.Equal(Assert.Single(byId.Violations).Message, violation.Message);
        Assert.Equal(TimeSpan.FromSeconds(6), violation.VirtualTime);
    }

    [Fact]
    public void LivenessHandle_FirstProgressOfAnUnknownClient_RegistersItThenAndJudgesItAfterAHeal()
    {
        // Arrange: the handle's progress is the client's first sign of life (no Register).
        var checker = new LivenessChecker(_clock, TimeSpan.FromSeconds(5));
        var client = checker.ForClient(7);
        Assert.Equal(0, checker.ClientCount);
        checker.OnProgress(client, 3 * Second);

        // Act: after a heal the client is silent until past its window.
        checker.FaultsHealedAt(10 * Second);
        checker.OnProgress(client, 16 * Second);
        checker.Check(15 * Second);

        // Assert
        Assert.Equal(1, checker.ClientCount);
        Assert.Equal("1 client(s) made no progress within 00:00:05 of the heal at 00:00:10: client 7 (last progress at 00:00:16)", Assert.Single(checker.Violations).Message);
    }

    [Fact]
    public void LivenessHandleAndIdPath_ReArmedByIdAndSilentOnTheHandle_IsReportedStalled()
    {
        // Arrange: the handle is bound by its first progress; the id path re-arms the same client later.
        var checker = new LivenessChecker(_clock, TimeSpan.FromSeconds(5));
        var client = checker.ForClient(7);
        checker.Register(7, 0);
        checker.OnProgress(client, 1 * Second);
        checker.Check(5 * Second);
        Assert.False(checker.HasViolations);

        // Act: a new phase of work starts at 20 s; the progress before it does not count for it.
        checker.Register(7, 20 * Second);
        checker.Check(25 * Second);

        // Assert
        Assert.Equal("1 client(s) made no progress within 00:00:05 of registration: client 7 (last progress at 00:00:01)", Assert.Single(checker.Violations).Message);
        Assert.Equal(1, checker.ClientCount);
    }

    [Fact]
    public void LivenessHandleAndIdPath_ProgressOnTheHandleCountsForTheClientRegisteredById()
    {
        // Arrange: registered by id first, then two handles on it (the handle binds to the existing client).
        var checker = new LivenessChecker(_clock, TimeSpan.FromSeconds(5));
        checker.Register(7, 0);
        checker.Register(8, 0);
        var first = checker.ForClient(7);
        var second = checker.ForClient(7);

        // Act
        checker.OnProgress(first, 2 * Second);
        checker.FaultsHealedAt(10 * Second);
        checker.OnProgress(second, 12 * Second);
        checker.OnProgress(8, 12 * Second);
        checker.Check(100 * Second);
        checker.CheckQuiescent();

        // Assert
        Assert.False(checker.HasViolations, checker.FirstViolation?.Message);
        Assert.Equal(2, checker.ClientCount);
    }

    [Fact]
    public void LivenessHandle_ClientStoppedById_IsNotJudgedAndAClientNeverProgressingIs()
    {
        // Arrange
        var checker = new LivenessChecker(_clock, TimeSpan.FromSeconds(5));
        var done = checker.ForClient(1);
        checker.Register(1, 0);
        checker.Register(2, 0);
        checker.OnProgress(done, 1 * Second);
        checker.StopExpecting(1);

        // Act: a heal re-arms everyone; client 1 finished its work, client 2 never did anything.
        checker.FaultsHealedAt(10 * Second);
        _clock.Advance(TimeSpan.FromSeconds(12));
        checker.CheckQuiescent();

        // Assert
        Assert.Equal(
            "1 client(s) made no progress within 00:00:05 of the heal at 00:00:10 (the run went quiet; nothing is left to make them progress): client 2 (never progressed)",
            Assert.Single(checker.Violations).Message);
    }
}
