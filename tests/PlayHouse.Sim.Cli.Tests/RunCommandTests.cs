using System.Text.Json;
using PlayHouse.Fixtures.Scenarios;
using PlayHouse.Simulation.Runs;

namespace PlayHouse.Sim.Cli.Tests;

public sealed class RunCommandTests
{
    [Fact]
    public void Run_WithFixedSeed_PrintsBannerFirstTraceHashAndExitsZero()
    {
        var result = CliHarness.Run("run", "--scenario", "echo", "--seed", "12345");

        Assert.True(result.ExitCode == 0, result.ToString());
        Assert.Equal(ScenarioCatalog.Create("echo").Defaults.ToBanner(12345), result.Lines[0]);
        Assert.StartsWith("SEED=12345 scenario=echo ", result.Lines[0], StringComparison.Ordinal);
        Assert.Matches("^[0-9a-f]{16}$", result.Value("trace-hash"));
        Assert.Equal("pass", result.Value("outcome"));
        Assert.DoesNotContain(result.Lines, l => l.StartsWith("replay=", StringComparison.Ordinal));
        Assert.Equal(string.Empty, result.Error);
    }

    [Fact]
    public void Run_Report_CarriesDurationsSpeedRttPoolsQueuesAndVerdicts()
    {
        var result = CliHarness.Run("run", "--scenario", "echo", "--seed", "5");

        foreach (var key in new[] { "virtual-seconds", "wall-seconds", "speed-up", "throughput-per-virtual-second", "rtt-ms", "queue", "check.Liveness", "check.ExactlyOnceRequest" })
        {
            Assert.True(result.Value(key) is not null, $"no {key} line\n{result}");
        }

        Assert.Matches(@"^p50=[\d.]+ p95=[\d.]+ p99=[\d.]+ max=[\d.]+$", result.Value("rtt-ms"));
        Assert.Contains(result.Lines, l => l.StartsWith("pool.", StringComparison.Ordinal) && l.Contains("outstanding=0", StringComparison.Ordinal));
        Assert.NotEqual("n/a", result.Value("wall-seconds"));
    }

    [Fact]
    public void Run_SameSeedTwice_PrintsTheSameTraceHash()
    {
        var first = CliHarness.Run("run", "--scenario", "stage-to-stage", "--seed", "77");
        var second = CliHarness.Run("run", "--scenario", "stage-to-stage", "--seed", "77");
        var other = CliHarness.Run("run", "--scenario", "stage-to-stage", "--seed", "78");

        Assert.Equal(first.Value("trace-hash"), second.Value("trace-hash"));
        Assert.Equal(first.Value("events"), second.Value("events"));
        Assert.NotEqual(first.Value("trace-hash"), other.Value("trace-hash"));
    }

    [Fact]
    public void Run_WithoutSeed_DrawsAFreshSeedAndPrintsItInTheBanner()
    {
        var first = CliHarness.Run("run", "--scenario", "echo", "--set", "clients=2", "requestsPerClient=5");
        var second = CliHarness.Run("run", "--scenario", "echo", "--set", "clients=2", "requestsPerClient=5");

        Assert.Equal(0, first.ExitCode);
        Assert.Matches("^SEED=[0-9]+ scenario=echo ", first.Lines[0]);
        Assert.NotEqual(first.Lines[0], second.Lines[0]);
    }

    [Fact]
    public void Run_FailingRun_EndsWithAReplayLineThatReproducesTraceHashAndExitCode()
    {
        var failing = CliHarness.Run("run", "--scenario", "echo", "--seed", "9", "--set", "virtualTimeLimitMs=1", "requestsPerClient=20");

        Assert.Equal(RunExitCodes.LivenessFailure, failing.ExitCode);
        Assert.Equal("liveness-failure", failing.Value("outcome"));
        var last = failing.Lines[^1];
        Assert.StartsWith("replay=" + SimCli.ReplayPrefix + " ", last, StringComparison.Ordinal);

        var replayed = CliHarness.Run(CliHarness.ReplayArguments(last["replay=".Length..]));

        Assert.Equal(failing.ExitCode, replayed.ExitCode);
        Assert.Equal(failing.Value("trace-hash"), replayed.Value("trace-hash"));
        Assert.Equal(failing.Lines[0], replayed.Lines[0]);
    }

    [Fact]
    public void Run_OptionEqualToTheGlobalDefaultButNotTheScenarios_IsKeptInTheReplayLine()
    {
        // The reconnect scenario's defaults carry a fault plan; "faults=none" must survive into the replay line.
        var failing = CliHarness.Run("run", "--scenario", "reconnect", "--seed", "4", "--set", "faults=none", "virtualTimeLimitMs=1");

        Assert.Equal(RunExitCodes.LivenessFailure, failing.ExitCode);
        var replay = failing.Lines[^1]["replay=".Length..];
        Assert.Contains("--set faults=none", replay, StringComparison.Ordinal);

        var replayed = CliHarness.Run(CliHarness.ReplayArguments(replay));

        Assert.Equal(failing.Value("trace-hash"), replayed.Value("trace-hash"));
        Assert.Equal(failing.Lines[0], replayed.Lines[0]);
    }

    [Fact]
    public void Run_WithJson_WritesValidJsonWithSeedAndOutcome()
    {
        var path = Path.Combine(Path.GetTempPath(), $"playhouse-sim-{Environment.ProcessId}-{Guid.NewGuid():N}.json");
        try
        {
            var result = CliHarness.Run("run", "--scenario", "echo", "--seed", "31", "--set", "virtualTimeLimitMs=1", "--json", path);

            using var json = JsonDocument.Parse(File.ReadAllText(path));
            var root = json.RootElement;
            Assert.Equal(31UL, root.GetProperty("Seed").GetUInt64());
            Assert.Equal("liveness-failure", root.GetProperty("Outcome").GetString());
            Assert.Equal(result.ExitCode, root.GetProperty("ExitCode").GetInt32());
            Assert.Equal(result.Value("trace-hash"), root.GetProperty("TraceHash").GetString());
            Assert.Equal(result.Lines[^1]["replay=".Length..], SimCli.ReplayPrefix + " " + root.GetProperty("ReplayArguments").GetString());
        }
        finally
        {
            File.Delete(path);
        }
    }

    [Fact]
    public void Run_Interactive_RendersTheReportWithoutFailing()
    {
        var plain = CliHarness.Run("run", "--scenario", "echo", "--seed", "8");
        var interactive = CliHarness.Run(interactive: true, "run", "--scenario", "echo", "--seed", "8");

        Assert.Equal(0, interactive.ExitCode);
        Assert.Equal(plain.Lines[0], interactive.Lines[0]);
        Assert.Contains(plain.Value("trace-hash")!, interactive.Output, StringComparison.Ordinal);
    }
}
