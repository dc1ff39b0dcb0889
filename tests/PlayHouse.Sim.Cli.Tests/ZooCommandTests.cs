using PlayHouse.Fixtures.Zoo;
using PlayHouse.Fixtures.Zoo.Twins;
using PlayHouse.Simulation.Runs;

namespace PlayHouse.Sim.Cli.Tests;

/// <summary>The bug zoo on the command line: --flaw on run/replay/swarm and the zoo command.</summary>
public sealed class ZooCommandTests
{
    [Theory]
    [InlineData("run", "--scenario", "echo", "--seed", "1", "--flaw", "B99")]
    [InlineData("swarm", "--scenario", "echo", "--seeds", "2", "--flaw", "B99")]
    [InlineData("replay", "--scenario", "echo", "--seed", "1", "--trace", "t.txt", "--flaw", "B99")]
    [InlineData("zoo", "run", "B99")]
    [InlineData("zoo", "explain", "B99")]
    public void UnknownFlaw_Exits64WithOneLineListingTheKnownIds(params string[] args)
    {
        var result = CliHarness.Run(args);

        Assert.Equal(SimCli.UsageErrorExitCode, result.ExitCode);
        var error = Assert.Single(result.Error.Split('\n', StringSplitOptions.RemoveEmptyEntries));
        Assert.StartsWith("error: unknown flaw 'B99'", error, StringComparison.Ordinal);
        Assert.Contains("B1, B2, B3", error, StringComparison.Ordinal);
        Assert.DoesNotContain("outcome=", result.Output, StringComparison.Ordinal);
    }

    [Fact]
    public void ZooExplain_OfAGroup_Exits64AskingForOneId()
    {
        var result = CliHarness.Run("zoo", "explain", "B7");

        Assert.Equal(SimCli.UsageErrorExitCode, result.ExitCode);
        Assert.StartsWith("error: zoo explain takes one id", result.Error, StringComparison.Ordinal);
    }

    [Fact]
    public void Run_WithAFlaw_NamesItInBannerReportAndJson_AndTheTraceDiffersFromTheCorrectRun()
    {
        var json = Path.Combine(Path.GetTempPath(), $"zoo-flaw-{Environment.ProcessId}.json");
        var flawed = CliHarness.Run("run", "--scenario", "echo", "--seed", "5", "--flaw", "B1", "--json", json);
        var correct = CliHarness.Run("run", "--scenario", "echo", "--seed", "5");

        Assert.EndsWith(" flaws=B1", flawed.Lines[0], StringComparison.Ordinal);
        Assert.DoesNotContain("flaws=", correct.Lines[0], StringComparison.Ordinal);
        Assert.Equal("B1", flawed.Value("flaws"));
        Assert.Null(correct.Value("flaws"));
        using (var document = System.Text.Json.JsonDocument.Parse(File.ReadAllText(json)))
        {
            Assert.Equal("B1", Assert.Single(document.RootElement.GetProperty("Flaws").EnumerateArray()).GetString());
        }

        Assert.NotEqual(correct.Value("trace-hash"), flawed.Value("trace-hash"));
        File.Delete(json);
    }

    [Fact]
    public void ZooList_NamesEveryCatalogueEntryWithSeedInvariantAndTwin()
    {
        var result = CliHarness.Run("zoo", "list");

        Assert.Equal(0, result.ExitCode);
        foreach (var entry in ZooCatalogue.Entries)
        {
            Assert.Contains(result.Lines, l => l.StartsWith(entry.Id + " ", StringComparison.Ordinal));
        }

        Assert.Contains(nameof(FifoRttTrackerTwin), result.Output, StringComparison.Ordinal);
    }

    [Fact]
    public void ZooExplain_FindsTheFlaw_AndItsReplayLineReproducesTheSameTraceHash()
    {
        var run = CliHarness.Run("zoo", "run", "B1");
        Assert.Equal(RunExitCodes.Pass, run.ExitCode);
        Assert.Contains("zoo: 1 caught, 0 failed, of 1", run.Output, StringComparison.Ordinal);

        var explain = CliHarness.Run("zoo", "explain", "B1");
        Assert.Equal(RunExitCodes.Pass, explain.ExitCode);
        Assert.Contains("(same as the search's run)", explain.Output, StringComparison.Ordinal);
        Assert.Contains("trace events up to the violation", explain.Output, StringComparison.Ordinal);
        var replayLine = explain.Value("replay");
        Assert.NotNull(replayLine);
        Assert.Contains("--flaw B1", replayLine, StringComparison.Ordinal);

        var replay = CliHarness.Run(CliHarness.ReplayArguments(replayLine));

        Assert.Equal(RunExitCodes.InvariantViolation, replay.ExitCode);
        Assert.Equal(explain.Value("trace-hash")!.Split(' ')[0], replay.Value("trace-hash"));
    }
}
