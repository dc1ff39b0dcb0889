using FsCheck.Xunit;
using PlayHouse.Fixtures.Testing;
using Xunit.Abstractions;

namespace PlayHouse.Sample.Game.Tests;

/// <summary>
/// The sample game tested the way a team would test its own: a scenario over many seeds under every built-in
/// checker, the game's own invariant, a planted bug found from a seed and shrunk and replayed, the same game over
/// real sockets, and a property over generated runs.
/// </summary>
public sealed class TurnGameTests(ITestOutputHelper output)
{
    [Fact]
    public void TurnGame_OverAHundredSeeds_PassesEveryBuiltInCheckerAndEveryPlayerFinishes()
    {
        var sweep = SimulationAssert.PassesOverSeeds(() => new TurnGameScenario(), seedCount: 100);

        Assert.Equal(100, sweep.SeedsRun);
        Assert.All(sweep.Reports, r => Assert.Contains(r.ScenarioMetrics, m => m.Key == "players.finished" && m.Value == "4"));
        Assert.True(sweep.RequestsSucceeded > 0, "no move was ever accepted");
    }

    [Fact]
    public void TurnLedger_OverTwentySeeds_SeesEveryTurnOnceAndCatchesALateMovePlayedAgain()
    {
        var slow = new GameCase { Pairs = 2, TurnTimeMs = 200, ThinkMsMax = 400 };
        for (ulong seed = 1; seed <= 20; seed++)
        {
            var (report, scenario) = (slow with { Seed = seed }).Run();
            Assert.True(report.Passed, report.Failure);
            Assert.True(scenario.Ledger!.TurnsReported > 0);
        }

        // Players who think longer than the turn lasts send late moves; the buggy room plays them again.
        var caught = Enumerable.Range(1, 20)
            .Select(seed => (slow with { Seed = (ulong)seed, Bug = PlantedBug.AcceptsLateMoves }).Run().Report)
            .FirstOrDefault(r => !r.Passed);
        Assert.NotNull(caught);
        Assert.StartsWith(TurnLedgerChecker.CheckerName, caught.Failure);
    }

    [Fact]
    public void PlantedBug_IsFoundFromASeed_ShrunkToOnePair_AndReplayedFromThePrintedCommand()
    {
        var search = PropertySearch.Find(GameCaseGen.Of(PlantedBug.AcceptsLateMoves), c => c.Run().Report.Failure, casesMax: 300, seed: 2026, gamma: 7);

        Assert.True(search.Found, "the late-move bug was not found in 300 cases");
        var shrunk = search.Shrunk!;
        var printed = $"found after {search.Tests} case(s) and {search.Shrinks} shrink(s): {search.ShrunkViolation}\nreplay: {shrunk.ReplayCommand}";
        output.WriteLine(printed);
        Assert.Equal(1, shrunk.Pairs);
        Assert.StartsWith(TurnLedgerChecker.CheckerName, search.ShrunkViolation);

        // Replay from the printed line: the case parses back and fails the same way with the same trace.
        var line = printed[(printed.IndexOf(GameCase.ReplayVariable + "=\"", StringComparison.Ordinal) + GameCase.ReplayVariable.Length + 2)..];
        var replayed = GameCase.Parse(line[..line.IndexOf('"', StringComparison.Ordinal)]);
        Assert.Equal(shrunk, replayed);
        var (again, _) = replayed.Run();
        var (first, _) = shrunk.Run();
        Assert.Equal(search.ShrunkViolation, again.Failure);
        Assert.Equal(first.TraceHash, again.TraceHash);

        // The correct game passes the very case the bug failed.
        Assert.True((replayed with { Bug = PlantedBug.None }).Run().Report.Passed);
    }

    [Fact]
    public void PrintedCase_FromTheEnvironmentOrTheKnownLateMove_FailsWithTheBugAndPassesWithout()
    {
        // Replays a case printed by a failure (SAMPLE_GAME_CASE="..."); without one, a known late-move case.
        var text = Environment.GetEnvironmentVariable(GameCase.ReplayVariable);
        var printed = GameCase.Parse(string.IsNullOrWhiteSpace(text) ? "seed=3 pairs=1 turnTimeMs=200 thinkMsMax=400 latencyMsMax=80 lossPercent=0 bug=AcceptsLateMoves" : text);
        var (report, _) = printed.Run();
        output.WriteLine($"{printed}: {report.Outcome} {report.Failure}");

        Assert.Equal(printed.Bug == PlantedBug.None, report.Passed);
        Assert.True((printed with { Bug = PlantedBug.None }).Run().Report.Passed);
    }

    [Fact]
    public async Task TurnGame_OverLoopbackTcp_PassesTheSameCheckersAndEveryPlayerFinishes()
    {
        var report = await TcpGameRun.RunAsync(pairs: 2, new GameOptions { TurnTimeMs = 300, ThinkMsMax = 50 }, TimeSpan.FromSeconds(60));

        Assert.True(report.Quiesced, "the cluster did not wind down");
        Assert.Empty(report.Failed);
        Assert.All(report.Players, p => Assert.Equal(ScriptState.Finished, p.State));
        Assert.True(report.TurnsReported > 0);
    }

    [Property(MaxTest = 30, Replay = "20260,7", Arbitrary = new[] { typeof(GameCases) })]
    public void TurnGame_OverGeneratedRuns_PassesEveryChecker(GameCase game)
    {
        var (report, _) = game.Run();

        Assert.True(report.Passed, $"{report.Failure}\nreplay: {game.ReplayCommand}");
    }
}
