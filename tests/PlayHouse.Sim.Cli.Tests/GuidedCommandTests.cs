using PlayHouse.Simulation.Runs;

namespace PlayHouse.Sim.Cli.Tests;

/// <summary>The guided search on the command line: swarm --guided, zoo run --guided and zoo compare.</summary>
public sealed class GuidedCommandTests
{
    [Fact]
    public void SwarmGuided_FromTheSameStartSeed_RunsTheSameCasesAndCorpusOnOneWorkerOrTwo()
    {
        var one = CliHarness.Run("swarm", "--scenario", "all", "--seeds", "24", "--start-seed", "31", "--guided", "--parallel", "1");
        var two = CliHarness.Run("swarm", "--scenario", "all", "--seeds", "24", "--start-seed", "31", "--guided", "--parallel", "2");

        Assert.Equal(RunExitCodes.Pass, one.ExitCode);
        Assert.Equal(CaseLines(one), CaseLines(two));
        Assert.Equal(24, CaseLines(one).Count);
        Assert.Contains(CaseLines(one), l => l.Contains(" mutant of case ", StringComparison.Ordinal));
        Assert.Equal(CorpusHash(one), CorpusHash(two));
    }

    [Fact]
    public void SwarmGuided_FreshCases_AreThePlainSwarmsSeeds()
    {
        var guided = CliHarness.Run("swarm", "--scenario", "echo", "--seeds", "6", "--start-seed", "100", "--guided", "--parallel", "1");
        var plain = CliHarness.Run("swarm", "--scenario", "echo", "--seeds", "6", "--start-seed", "100", "--parallel", "1");

        var plainBanners = plain.Lines.Where(l => l.StartsWith("SEED=", StringComparison.Ordinal)).ToList();
        var guidedLines = guided.Lines.ToList();
        for (var i = 0; i < guidedLines.Count; i++)
        {
            if (guidedLines[i].StartsWith("case=", StringComparison.Ordinal) && guidedLines[i].Contains(" fresh ", StringComparison.Ordinal))
            {
                var caseNumber = int.Parse(guidedLines[i]["case=".Length..guidedLines[i].IndexOf(' ', StringComparison.Ordinal)], System.Globalization.CultureInfo.InvariantCulture);
                Assert.Equal(plainBanners[caseNumber - 1], guidedLines[i - 1]);
            }
        }
    }

    [Fact]
    public void SwarmGuided_WithAFlaw_EveryFailureReplaysAsAPlainRunWithTheSameTraceHash()
    {
        var swarm = CliHarness.Run("swarm", "--scenario", "mesh-ids", "--seeds", "8", "--start-seed", "3", "--guided", "--set", "playServers=2", "--flaw", "B4");

        Assert.Equal(RunExitCodes.InvariantViolation, swarm.ExitCode);
        var replays = swarm.Lines.Where(l => l.StartsWith("replay seed=", StringComparison.Ordinal)).Take(2).ToList();
        Assert.NotEmpty(replays);
        foreach (var line in replays)
        {
            var seed = line["replay seed=".Length..line.IndexOf(':', StringComparison.Ordinal)];
            var run = CliHarness.Run(CliHarness.ReplayArguments(line[(line.IndexOf(':', StringComparison.Ordinal) + 2)..]));
            Assert.Equal(RunExitCodes.InvariantViolation, run.ExitCode);
            var seedLine = swarm.Lines.First(l => l.Contains($" seed={seed} outcome=invariant-violation", StringComparison.Ordinal) && l.Contains(run.Value("trace-hash")!, StringComparison.Ordinal));
            Assert.Contains(" case=", " " + seedLine, StringComparison.Ordinal);
        }
    }

    [Fact]
    public void SwarmGuided_WithAShard_Exits64WithOneErrorLine()
    {
        var result = CliHarness.Run("swarm", "--scenario", "echo", "--seeds", "4", "--start-seed", "1", "--guided", "--shard", "0/2");

        Assert.Equal(SimCli.UsageErrorExitCode, result.ExitCode);
        var error = Assert.Single(result.Error.Split('\n', StringSplitOptions.RemoveEmptyEntries));
        Assert.StartsWith("error: --shard splits a range of seeds", error, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("zoo", "run", "B4", "--search-seed", "3")]
    [InlineData("zoo", "compare", "B4", "--searches", "random,clever")]
    [InlineData("zoo", "compare", "B4", "--budget", "0")]
    [InlineData("swarm", "--scenario", "echo", "--seeds", "2", "--guided", "--mode", "tcp")]
    public void GuidedOptions_BadInput_Exits64WithOneErrorLine(params string[] args)
    {
        var result = CliHarness.Run(args);

        Assert.Equal(SimCli.UsageErrorExitCode, result.ExitCode);
        Assert.Single(result.Error.Split('\n', StringSplitOptions.RemoveEmptyEntries));
        Assert.StartsWith("error: ", result.Error, StringComparison.Ordinal);
    }

    [Fact]
    public void ZooRunGuided_CatchesTheFlaw_ShrinksAndReplaysIt_AndTheCoreStaysClean()
    {
        var result = CliHarness.Run("zoo", "run", "B4", "--guided", "--search-seed", "2", "--cases");

        Assert.Equal(RunExitCodes.Pass, result.ExitCode);
        Assert.Contains("zoo: 1 caught, 0 failed, of 1", result.Output, StringComparison.Ordinal);
        Assert.Contains(result.Lines, l => l.StartsWith("B4 case 1: fresh", StringComparison.Ordinal));
        Assert.Contains(result.Lines, l => l.StartsWith("core case 100:", StringComparison.Ordinal));
    }

    [Fact]
    public void ZooCompare_WritesEachCell_AndASecondRunResumesWithoutRunningThemAgain_CountingACellReadTwiceOnce()
    {
        var results = Path.Combine(Path.GetTempPath(), $"zoo-compare-{Environment.ProcessId}.jsonl");
        File.Delete(results);
        var args = new[] { "zoo", "compare", "B16e", "--search-seeds", "2", "--budget", "10", "--searches", "random,full-size,guided", "--results", results };

        var first = CliHarness.Run(args);
        var second = CliHarness.Run(args);
        var twice = CliHarness.Run([.. args, "--results", results, "--report-only"]);

        Assert.Equal(0, first.ExitCode);
        Assert.Contains("cells-to-run=6", first.Output, StringComparison.Ordinal);
        Assert.Equal(6, File.ReadAllLines(results).Length);
        Assert.Contains("cells-to-run=0", second.Output, StringComparison.Ordinal);
        Assert.Equal(first.Lines[^1], second.Lines[^1]);
        Assert.Equal(first.Lines[^1], twice.Lines[^1]);
        Assert.StartsWith("B16e ", first.Lines[^1], StringComparison.Ordinal);
        File.Delete(results);
    }

    private static List<string> CaseLines(CliResult result) =>
        [.. result.Lines.Where(l => l.StartsWith("case=", StringComparison.Ordinal)).Select(l => l[..l.IndexOf(" wall-seconds=", StringComparison.Ordinal)])];

    private static string CorpusHash(CliResult result) =>
        result.Lines.Single(l => l.StartsWith("guided corpus=", StringComparison.Ordinal)).Split(' ').Single(w => w.StartsWith("corpus-hash=", StringComparison.Ordinal));
}
