using System.Globalization;
using System.Text.RegularExpressions;
using PlayHouse.Simulation.Network;
using PlayHouse.Simulation.Runs;

namespace PlayHouse.Sim.Cli.Tests;

public sealed class ReplayAndSwarmTests
{
    [Fact]
    public void Replay_WithTrace_WritesOneLinePerEventWhoseHashIsTheRunsTraceHash()
    {
        var path = Path.Combine(Path.GetTempPath(), $"playhouse-sim-{Environment.ProcessId}-{Guid.NewGuid():N}.trace");
        try
        {
            var run = CliHarness.Run("run", "--scenario", "broadcast", "--seed", "21");
            var replay = CliHarness.Run("replay", "--scenario", "broadcast", "--seed", "21", "--trace", path);

            Assert.True(replay.ExitCode == 0, replay.ToString());
            Assert.Equal(run.Lines[0], replay.Lines[0]);
            Assert.Equal(run.Value("trace-hash"), replay.Value("trace-hash"));
            var lines = File.ReadAllLines(path);
            Assert.True(lines.Length > 0);
            Assert.Equal(lines.Length.ToString(CultureInfo.InvariantCulture), Regex.Match(replay.Value("trace-file")!, @"trace-lines=(\d+)").Groups[1].Value);
            Assert.Equal(run.Value("trace-hash"), CliHarness.HashOfTraceLines(lines));
        }
        finally
        {
            File.Delete(path);
        }
    }

    [Fact]
    public void Swarm_OverThreeSeeds_PrintsEachBannerAndTheSummary()
    {
        var result = CliHarness.Run("swarm", "--scenario", "echo", "--seeds", "3", "--start-seed", "500");

        var summary = Assert.Single(result.Lines, l => Regex.IsMatch(l, @"^\d+ passed, \d+ failed$"));
        var counts = Regex.Matches(summary, @"\d+").Select(m => int.Parse(m.Value, CultureInfo.InvariantCulture)).ToArray();
        Assert.Equal(3, counts[0] + counts[1]);
        Assert.Equal(counts[1] == 0, result.ExitCode == 0);
        var banners = result.Lines.Where(l => l.StartsWith("SEED=", StringComparison.Ordinal)).ToList();
        Assert.Equal(["SEED=500 ", "SEED=501 ", "SEED=502 "], banners.Select(b => b[..(b.IndexOf(' ', StringComparison.Ordinal) + 1)]));
        Assert.Equal(CliCommands.SwarmOptions(501, PlayHouse.Fixtures.Scenarios.ScenarioCatalog.Create("echo").Defaults).ToBanner(501), banners[1]);
    }

    [Fact]
    public void Swarm_Failures_ListEachSeedWithAReplayLineNamingItsDrawnOptions()
    {
        var result = CliHarness.Run("swarm", "--scenario", "reconnect", "--seeds", "3", "--start-seed", "100", "--set", "virtualTimeLimitMs=100");

        Assert.Equal(RunExitCodes.LivenessFailure, result.ExitCode);
        Assert.Contains("0 passed, 3 failed", result.Lines);
        var replays = result.Lines.Where(l => l.StartsWith("replay seed=", StringComparison.Ordinal)).ToList();
        Assert.Equal(3, replays.Count);

        // Replaying seed 101 as a plain run with the drawn options reproduces the swarm's run of it exactly.
        var swarmRun = result.Lines.Single(l => l.StartsWith("seed=101 ", StringComparison.Ordinal));
        var replayLine = replays.Single(l => l.StartsWith("replay seed=101: ", StringComparison.Ordinal))["replay seed=101: ".Length..];
        Assert.Contains("--set latencyMsMax=", replayLine, StringComparison.Ordinal);
        var replayed = CliHarness.Run(CliHarness.ReplayArguments(replayLine));

        Assert.Equal(RunExitCodes.LivenessFailure, replayed.ExitCode);
        Assert.EndsWith("trace-hash=" + replayed.Value("trace-hash"), swarmRun, StringComparison.Ordinal);
        Assert.Equal(result.Lines.Single(l => l.StartsWith("SEED=101 ", StringComparison.Ordinal)), replayed.Lines[0]);
    }

    [Fact]
    public void SwarmOptions_EveryDraw_LetsAPatientClientMakeProgress()
    {
        var baseline = PlayHouse.Fixtures.Scenarios.ScenarioCatalog.Create("clogged-peer").Defaults;

        for (ulong seed = 0; seed < 500; seed++)
        {
            var drawn = CliCommands.SwarmOptions(seed, baseline);

            Assert.True(drawn.RequestTimeoutMs >= 8 * drawn.LatencyMsMax && drawn.RequestTimeoutMs >= baseline.RequestTimeoutMs, drawn.ToBanner(seed));
            Assert.True(drawn.LivenessWindowMs >= 4 * drawn.RequestTimeoutMs, drawn.ToBanner(seed));
            Assert.True(drawn.StreamLoss != StreamLossMode.Reset || drawn.LossPercent <= 1, drawn.ToBanner(seed));
        }
    }

    [Fact]
    public void SwarmOptions_SameSeed_DrawTheSameOptionsAndOtherSeedsDiffer()
    {
        var baseline = PlayHouse.Fixtures.Scenarios.ScenarioCatalog.Create("echo").Defaults;

        Assert.Equal(CliCommands.SwarmOptions(7, baseline).ToBanner(7), CliCommands.SwarmOptions(7, baseline).ToBanner(7));
        Assert.NotEqual(CliCommands.SwarmOptions(7, baseline).ToBanner(0), CliCommands.SwarmOptions(8, baseline).ToBanner(0));
    }
}
