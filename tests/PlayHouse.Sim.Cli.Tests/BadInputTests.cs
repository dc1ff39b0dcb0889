using PlayHouse.Fixtures.Scenarios;

namespace PlayHouse.Sim.Cli.Tests;

public sealed class BadInputTests
{
    [Fact]
    public void Run_UnknownScenario_Exits64NamingTheScenarios()
    {
        var result = CliHarness.Run("run", "--scenario", "nope", "--seed", "1");

        Assert.Equal(SimCli.UsageErrorExitCode, result.ExitCode);
        AssertOneLineError(result, "nope", string.Join(", ", ScenarioCatalog.Names));
        Assert.Equal(string.Empty, result.Output);
    }

    [Fact]
    public void Run_UnknownOption_Exits64NamingTheOptions()
    {
        var result = CliHarness.Run("run", "--scenario", "echo", "--seed", "1", "--set", "clientz=3");

        Assert.Equal(SimCli.UsageErrorExitCode, result.ExitCode);
        AssertOneLineError(result, "clientz", "clients", "lossPercent", "faults");
    }

    [Theory]
    [InlineData("mode=fast", "RequestAsync, RequestCallback, Send")]
    [InlineData("latencyShape=wobbly", "Fixed")]
    [InlineData("clients=many", "an integer")]
    [InlineData("exploreSchedules=maybe", "true or false")]
    [InlineData("faults=later", "Partition")]
    [InlineData("lossPercent=150", "0..100")]
    [InlineData("clients", "key=value")]
    public void Run_BadValue_Exits64NamingWhatIsAccepted(string set, string named)
    {
        var result = CliHarness.Run("run", "--scenario", "echo", "--seed", "1", "--set", set);

        Assert.Equal(SimCli.UsageErrorExitCode, result.ExitCode);
        AssertOneLineError(result, named);
    }

    [Theory]
    [InlineData("run", "--scenario", "echo", "--seed", "minus-one")]
    [InlineData("run", "--scenario", "echo", "--seed", "-1")]
    [InlineData("run", "--scenario", "echo", "--colour", "red")]
    [InlineData("frobnicate")]
    [InlineData("replay", "--scenario", "echo")]
    [InlineData("swarm", "--scenario", "echo", "--seeds", "0")]
    [InlineData("run", "--scenario", "echo", "--set", "scenario=timers")]
    [InlineData("run")]
    public void BadCommandLine_Exits64WithOneLineAndNoRun(params string[] args)
    {
        var result = CliHarness.Run(args);

        Assert.Equal(SimCli.UsageErrorExitCode, result.ExitCode);
        AssertOneLineError(result);
        Assert.DoesNotContain("trace-hash", result.Output, StringComparison.Ordinal);
    }

    [Fact]
    public void UnknownCommand_NamesTheCommands()
    {
        var result = CliHarness.Run("frobnicate");

        AssertOneLineError(result, "run", "swarm", "replay", "list", "bench");
    }

    [Fact]
    public void Trace_ToAnUnwritablePath_Exits64BeforeRunning()
    {
        var path = Path.Combine(Path.GetTempPath(), $"playhouse-sim-{Environment.ProcessId}-not-a-dir");
        File.WriteAllText(path, "a file where a directory is needed");
        try
        {
            var result = CliHarness.Run("run", "--scenario", "echo", "--seed", "1", "--trace", Path.Combine(path, "trace.txt"));

            Assert.Equal(SimCli.UsageErrorExitCode, result.ExitCode);
            AssertOneLineError(result, "--trace");
            Assert.Equal(string.Empty, result.Output);
        }
        finally
        {
            File.Delete(path);
        }
    }

    private static void AssertOneLineError(CliResult result, params string[] named)
    {
        var lines = result.Error.Split('\n', StringSplitOptions.RemoveEmptyEntries);
        Assert.True(lines.Length == 1, $"expected one error line\n{result}");
        Assert.StartsWith("error: ", lines[0], StringComparison.Ordinal);
        Assert.DoesNotContain("   at ", lines[0], StringComparison.Ordinal);
        foreach (var word in named)
        {
            Assert.Contains(word, lines[0], StringComparison.Ordinal);
        }
    }
}
