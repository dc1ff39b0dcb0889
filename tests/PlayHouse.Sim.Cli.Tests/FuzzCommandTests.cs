using PlayHouse.Fixtures.Flawed.Pools;
using PlayHouse.Simulation.Runs;

namespace PlayHouse.Sim.Cli.Tests;

public sealed class FuzzCommandTests : IDisposable
{
    private readonly string _saveDirectory = Path.Combine(Path.GetTempPath(), "playhouse-fuzz-tests-" + Environment.ProcessId + "-" + Guid.NewGuid().ToString("N"));

    public void Dispose()
    {
        if (Directory.Exists(_saveDirectory))
        {
            Directory.Delete(_saveDirectory, recursive: true);
        }
    }

    [Theory]
    [InlineData("pool")]
    [InlineData("codec")]
    [InlineData("mesh")]
    public void Fuzz_RealTargetsForAFewHundredInputs_Pass(string target)
    {
        var result = CliHarness.Run("fuzz", target, "--seed", "7", "--iterations", "300", "--save-dir", _saveDirectory);

        Assert.True(result.ExitCode == RunExitCodes.Pass, result.ToString());
        Assert.Equal("pass", result.Value("outcome"));
        Assert.Equal("300", result.Value("fuzz.iterations"));
        Assert.True(long.Parse(result.Value("fuzz.distinctStates")!, System.Globalization.CultureInfo.InvariantCulture) > 1, result.ToString());
    }

    [Fact]
    public void FuzzPool_OnThreadsInCheckedMode_Passes()
    {
        var result = CliHarness.Run("fuzz", "pool", "--seed", "3", "--iterations", "200", "--threads", "4", "--checked");

        Assert.True(result.ExitCode == RunExitCodes.Pass, result.ToString());
        Assert.Contains("threads=4 checked=all", result.Output, StringComparison.Ordinal);
    }

    public static TheoryData<string> Flaws { get; } = [.. FlawedPools.FlawNames];

    [Theory]
    [MemberData(nameof(Flaws))]
    public void FuzzPool_AFlawedPool_IsFoundShrunkAndReplayable(string flaw)
    {
        var result = CliHarness.Run("fuzz", "pool", "--pool", flaw, "--seed", "1", "--iterations", "2000", "--save-dir", _saveDirectory);

        Assert.True(result.ExitCode is RunExitCodes.InvariantViolation or RunExitCodes.Crash, result.ToString());
        var steps = result.Lines.Count(l => l.StartsWith("step ", StringComparison.Ordinal));
        Assert.InRange(steps, 1, 6);
        Assert.Contains("seed=1 iteration=", result.Output, StringComparison.Ordinal);

        // The replay line reruns the saved, shrunk input and fails the same way; the real pool passes it.
        var replay = CliHarness.Run(CliHarness.ReplayArguments(result.Value("replay")!));
        Assert.Equal(result.ExitCode, replay.ExitCode);
        var real = CliHarness.Run("fuzz", "pool", "--replay", result.Value("failure-file")!);
        Assert.True(real.ExitCode == RunExitCodes.Pass, real.ToString());
    }

    [Theory]
    [InlineData("fuzz", "heap")]
    [InlineData("fuzz", "pool", "--iterations", "0")]
    [InlineData("fuzz", "pool", "--iterations", "-5")]
    [InlineData("fuzz", "pool", "--duration", "soon")]
    [InlineData("fuzz", "pool", "--iterations", "5", "--duration", "1s")]
    [InlineData("fuzz", "pool", "--threads", "9")]
    [InlineData("fuzz", "pool", "--pool", "leaky")]
    [InlineData("fuzz", "codec", "--threads", "2")]
    [InlineData("fuzz", "pool", "--replay", "/nonexistent/input.bin")]
    [InlineData("fuzz")]
    public void Fuzz_BadInput_Exits64WithOneErrorLine(params string[] args)
    {
        var result = CliHarness.Run(args);

        Assert.Equal(SimCli.UsageErrorExitCode, result.ExitCode);
        var lines = result.Error.Split('\n', StringSplitOptions.RemoveEmptyEntries);
        Assert.Single(lines);
        Assert.StartsWith("error: ", lines[0], StringComparison.Ordinal);
    }

    [Fact]
    public void Fuzz_UnknownTarget_NamesTheTargets()
    {
        var result = CliHarness.Run("fuzz", "heap");

        Assert.Contains("pool, codec, mesh", result.Error, StringComparison.Ordinal);
    }
}
