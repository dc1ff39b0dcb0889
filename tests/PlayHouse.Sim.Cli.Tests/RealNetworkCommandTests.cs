using PlayHouse.Simulation.Runs;

namespace PlayHouse.Sim.Cli.Tests;

/// <summary>The real-network side of the runner: swarm over real sockets, bench proxy, and their bad input.</summary>
public sealed class RealNetworkCommandTests
{
    [Fact]
    public void SwarmTcp_TwoSeeds_RunsEachOverRealSocketsAndSummarises()
    {
        var result = CliHarness.Run("swarm", "--scenario", "echo", "--mode", "tcp", "--seeds", "2", "--start-seed", "7", "--parallel", "2", "--set", "clients=2", "requestsPerClient=10");

        Assert.True(result.ExitCode == 0, result.ToString());
        Assert.StartsWith("swarm scenario=echo seeds=2 start-seed=7 substrate=tcp time-limit-s=20 ", result.Lines[0], StringComparison.Ordinal);
        Assert.Equal(2, result.Lines.Count(l => l.StartsWith("SEED=", StringComparison.Ordinal) && l.Contains(" substrate=tcp transport=tcp network=", StringComparison.Ordinal)));
        Assert.Contains("2 passed, 0 failed", result.Lines);
        Assert.Contains(result.Lines, l => l.StartsWith("swarm-wall-seconds=", StringComparison.Ordinal));
    }

    [Fact]
    public void BenchProxy_ShortRun_PrintsTheMachinePairedRatiosAndSteadiness()
    {
        var result = CliHarness.Run("bench", "proxy", "--connections", "2", "--in-flight", "2", "--repeats", "2", "--duration-ms", "150", "--warm-up-ms", "50");

        Assert.True(result.ExitCode == 0, result.ToString());
        Assert.Contains(result.Lines, l => l.StartsWith("machine cpu=", StringComparison.Ordinal));
        Assert.Equal(2, result.Lines.Count(l => l.StartsWith("repeat.", StringComparison.Ordinal)));
        Assert.True(double.Parse(result.Value("proxy.roundTripsPerSecond")!, System.Globalization.CultureInfo.InvariantCulture) > 0, result.ToString());
        Assert.NotNull(result.Value("ratio.median"));
        Assert.NotNull(result.Value("steadiness"));
        Assert.StartsWith("m", result.Value("budget.proxy"), StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("async")]
    [InlineData("blocking")]
    public void BenchProxy_WithAFloorRelay_MeasuresItAgainstDirectInRepeatsOfItsOwn(string floor)
    {
        var result = CliHarness.Run("bench", "proxy", "--connections", "2", "--in-flight", "2", "--repeats", "2", "--duration-ms", "150", "--warm-up-ms", "50", "--floor", floor);

        Assert.True(result.ExitCode == 0, result.ToString());
        Assert.Equal(floor, result.Value("floor.mode"));
        Assert.Equal(2, result.Lines.Count(l => l.StartsWith("floor.repeat.", StringComparison.Ordinal)));
        Assert.Equal(2, result.Lines.Count(l => l.StartsWith("repeat.", StringComparison.Ordinal)));
        Assert.True(double.Parse(result.Value("floor.roundTripsPerSecond")!, System.Globalization.CultureInfo.InvariantCulture) > 0, result.ToString());
        Assert.NotNull(result.Value("floor.ratio.median"));
    }

    [Theory]
    [InlineData("bench", "proxy", "--floor", "fast")]
    [InlineData("swarm", "--scenario", "echo", "--seeds", "2", "--tls")]
    [InlineData("swarm", "--scenario", "echo", "--seeds", "2", "--mode", "tcp", "--time-limit-s", "0")]
    [InlineData("swarm", "--scenario", "echo", "--seeds", "2", "--mode", "tcp", "--flaw", "B1")]
    [InlineData("run", "--scenario", "echo", "--proxy")]
    [InlineData("run", "--scenario", "echo", "--mode", "tcp", "--flaw", "B1")]
    [InlineData("bench", "proxy", "--repeats", "3")]
    public void BadRealNetworkOption_Exits64WithOneErrorLine(params string[] args)
    {
        var result = CliHarness.Run(args);

        Assert.Equal(SimCli.UsageErrorExitCode, result.ExitCode);
        var lines = result.Error.Split('\n', StringSplitOptions.RemoveEmptyEntries);
        Assert.True(lines.Length == 1 && lines[0].StartsWith("error:", StringComparison.Ordinal), result.ToString());
        Assert.NotEqual(RunExitCodes.Pass, result.ExitCode);
    }
}
