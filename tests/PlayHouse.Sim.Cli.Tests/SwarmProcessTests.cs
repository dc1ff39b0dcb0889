using System.Diagnostics;

namespace PlayHouse.Sim.Cli.Tests;

/// <summary>
/// The built runner, started as a user starts it: a swarm runs in a child process set for many short worlds (no
/// tiering, a 64 MB gen0 budget), unless the user set either variable, and other commands run in the runner's own.
/// </summary>
public sealed class SwarmProcessTests
{
    private static readonly TimeSpan Patience = TimeSpan.FromMinutes(2);

    [Fact]
    public async Task Swarm_StartedPlainly_RunsInAChildWithoutTieringAndWithTheLargerGen0Budget()
    {
        var result = await RunRunner([], "swarm", "--scenario", "echo", "--seeds", "4", "--start-seed", "1", "--parallel", "2");

        Assert.True(result.ExitCode == 0, result.ToString());
        Assert.Contains("4 passed, 0 failed", result.Output, StringComparison.Ordinal);
        Assert.Contains(" jit=full-opts gen0size=0x4000000", result.Output, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Swarm_WithTieringSetByTheUser_RunsInTheRunnersOwnProcessAsAsked()
    {
        var result = await RunRunner([("DOTNET_TieredCompilation", "1")], "swarm", "--scenario", "echo", "--seeds", "2", "--start-seed", "1", "--parallel", "1");

        Assert.True(result.ExitCode == 0, result.ToString());
        Assert.Contains("2 passed, 0 failed", result.Output, StringComparison.Ordinal);
        Assert.Contains(" jit=tiered gen0size=default", result.Output, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Swarm_WithABadOption_ExitsFromTheChildWith64AndOneErrorLine()
    {
        var result = await RunRunner([], "swarm", "--scenario", "echo", "--parallel", "0");

        Assert.True(result.ExitCode == SimCli.UsageErrorExitCode, result.ToString());
        Assert.Single(result.Error.Split('\n', StringSplitOptions.RemoveEmptyEntries), l => l.StartsWith("error: ", StringComparison.Ordinal));
    }

    private static async Task<CliResult> RunRunner(IReadOnlyList<(string Name, string Value)> environment, params string[] args)
    {
        var start = new ProcessStartInfo("dotnet") { UseShellExecute = false, RedirectStandardOutput = true, RedirectStandardError = true };
        start.ArgumentList.Add(typeof(SimCli).Assembly.Location);
        foreach (var arg in args)
        {
            start.ArgumentList.Add(arg);
        }

        // The test host's own settings must not decide for the runner.
        foreach (var name in new[] { "DOTNET_TieredCompilation", "DOTNET_GCgen0size", "COMPlus_TieredCompilation", "COMPlus_GCgen0size", "PLAYHOUSE_SIM_SWARM_PROCESS" })
        {
            start.Environment.Remove(name);
        }

        foreach (var (name, value) in environment)
        {
            start.Environment[name] = value;
        }

        using var process = Process.Start(start)!;
        var output = process.StandardOutput.ReadToEndAsync();
        var error = process.StandardError.ReadToEndAsync();
        await process.WaitForExitAsync().WaitAsync(Patience);
        return new CliResult(process.ExitCode, await output, await error);
    }
}
