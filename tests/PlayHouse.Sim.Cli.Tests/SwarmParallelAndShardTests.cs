using System.Text.RegularExpressions;
using PlayHouse.Simulation.Metrics;

namespace PlayHouse.Sim.Cli.Tests;

/// <summary>swarm on every core (--parallel) and across machines (--shard, swarm merge).</summary>
public sealed partial class SwarmParallelAndShardTests
{
    [Fact]
    public void Swarm_OnTwoWorkersAndOnOne_PrintsTheSameResultsInSeedOrder()
    {
        var one = CliHarness.Run("swarm", "--scenario", "all", "--seeds", "24", "--start-seed", "900", "--parallel", "1");
        var two = CliHarness.Run("swarm", "--scenario", "all", "--seeds", "24", "--start-seed", "900", "--parallel", "3");

        Assert.Equal(one.ExitCode, two.ExitCode);
        Assert.Equal(Results(one), Results(two));
        Assert.Equal(24, Results(one).Count(l => l.StartsWith("seed=", StringComparison.Ordinal)));
        Assert.Contains("parallel=3", two.Lines[0], StringComparison.Ordinal);
    }

    [Fact]
    public void ShardIndices_PutEverySeedInExactlyOneShard_ForAnyShardCount()
    {
        for (var count = 0; count <= 40; count++)
        {
            for (var shards = 1; shards <= 12; shards++)
            {
                var all = Enumerable.Range(0, shards).SelectMany(i => SwarmCommands.ShardIndices(count, i, shards)).Order().ToList();
                Assert.Equal(Enumerable.Range(0, count).Select(i => (long)i), all);
            }
        }
    }

    [Fact]
    public void SwarmMerge_OfEveryShard_GivesTheSameResultsAsOneUnshardedSwarm()
    {
        var dir = Directory.CreateTempSubdirectory("swarm-shards-").FullName;
        try
        {
            var whole = CliHarness.Run("swarm", "--scenario", "echo", "--seeds", "10", "--start-seed", "40", "--parallel", "2");
            var files = new List<string>();
            for (var i = 0; i < 3; i++)
            {
                var file = Path.Combine(dir, $"shard-{i}.json");
                var shard = CliHarness.Run("swarm", "--scenario", "echo", "--seeds", "10", "--start-seed", "40", "--shard", $"{i}/3", "--json", file);
                Assert.Contains($"shard={i}/3", shard.Lines[0], StringComparison.Ordinal);
                files.Add(file);
            }

            var merged = CliHarness.Run(["swarm", "merge", .. files]);

            Assert.Equal(whole.ExitCode, merged.ExitCode);
            Assert.Equal(whole.Lines.Single(l => SummaryPattern().IsMatch(l)), merged.Lines.Single(l => SummaryPattern().IsMatch(l)));
            var missing = CliHarness.Run("swarm", "merge", files[0], files[2]);
            Assert.Equal(SimCli.UsageErrorExitCode, missing.ExitCode);
            Assert.Contains("missing 1", missing.Error, StringComparison.Ordinal);
            var twice = CliHarness.Run("swarm", "merge", files[0], files[1], files[1], files[2]);
            Assert.Equal(SimCli.UsageErrorExitCode, twice.ExitCode);
            Assert.Contains("given twice 1", twice.Error, StringComparison.Ordinal);
        }
        finally
        {
            Directory.Delete(dir, recursive: true);
        }
    }

    [Fact]
    public void SwarmMerge_OfEveryShardsHistograms_GivesTheUnshardedSwarmsLatencyDistribution()
    {
        var dir = Directory.CreateTempSubdirectory("swarm-latency-").FullName;
        try
        {
            var wholeFile = Path.Combine(dir, "whole.json");
            var wholeRun = CliHarness.Run("swarm", "--scenario", "all", "--seeds", "8", "--start-seed", "70", "--json", wholeFile);
            var files = new List<string>();
            for (var i = 0; i < 2; i++)
            {
                files.Add(Path.Combine(dir, $"shard-{i}.json"));
                CliHarness.Run("swarm", "--scenario", "all", "--seeds", "8", "--start-seed", "70", "--shard", $"{i}/2", "--json", files[i]);
            }

            var mergedFile = Path.Combine(dir, "merged.json");
            Assert.Equal(wholeRun.ExitCode, CliHarness.Run(["swarm", "merge", .. files, "--json", mergedFile]).ExitCode);
            var whole = Latencies(wholeFile);
            var merged = Latencies(mergedFile);
            Assert.Equal(whole.Keys.Order(), merged.Keys.Order());
            Assert.NotEmpty(whole);
            foreach (var (scenario, histogram) in whole)
            {
                Assert.True(histogram.Count > 0, scenario);
                Assert.Equal(histogram.Count, merged[scenario].Count);
                Assert.Equal(histogram.Max, merged[scenario].Max);
                Assert.Equal(histogram.ValueAtPercentile(50), merged[scenario].ValueAtPercentile(50));
                Assert.Equal(histogram.ValueAtPercentile(99.9), merged[scenario].ValueAtPercentile(99.9));
            }

            // The shards split the seeds, so each holds only part of the round trips.
            Assert.All(files, f => Assert.True(Latencies(f).Values.Sum(h => h.Count) < whole.Values.Sum(h => h.Count)));
        }
        finally
        {
            Directory.Delete(dir, recursive: true);
        }
    }

    private static Dictionary<string, LatencyHistogram> Latencies(string file)
    {
        using var json = System.Text.Json.JsonDocument.Parse(File.ReadAllText(file));
        return json.RootElement.GetProperty("Latencies").EnumerateObject().ToDictionary(p => p.Name, p => LatencyHistogram.Decode(p.Value.GetString()!));
    }

    [Theory]
    [InlineData("--shard needs --start-seed", "swarm", "--scenario", "echo", "--seeds", "4", "--shard", "0/2")]
    [InlineData("--shard takes i/n", "swarm", "--scenario", "echo", "--seeds", "4", "--start-seed", "1", "--shard", "2/2")]
    [InlineData("--shard takes i/n", "swarm", "--scenario", "echo", "--seeds", "4", "--start-seed", "1", "--shard", "x")]
    [InlineData("--parallel must be at least 1", "swarm", "--scenario", "echo", "--seeds", "4", "--parallel", "0")]
    [InlineData("cannot read swarm report", "swarm", "merge", "/nonexistent/shard.json")]
    public void Swarm_BadShardingInput_Exits64WithOneLine(string expected, params string[] args)
    {
        var result = CliHarness.Run(args);

        Assert.Equal(SimCli.UsageErrorExitCode, result.ExitCode);
        var error = Assert.Single(result.Error.Split('\n', StringSplitOptions.RemoveEmptyEntries));
        Assert.Contains(expected, error, StringComparison.Ordinal);
    }

    /// <summary>What must not depend on scheduling: every banner, seed line (wall time removed) and the summary.</summary>
    private static List<string> Results(CliResult result) =>
        [.. result.Lines
            .Where(l => l.StartsWith("SEED=", StringComparison.Ordinal) || l.StartsWith("seed=", StringComparison.Ordinal) || l.StartsWith("replay seed=", StringComparison.Ordinal) || SummaryPattern().IsMatch(l))
            .Select(l => WallPattern().Replace(l, string.Empty))];

    [GeneratedRegex(@"^\d+ passed, \d+ failed$")]
    private static partial Regex SummaryPattern();

    [GeneratedRegex(@" wall-seconds=[0-9.]+")]
    private static partial Regex WallPattern();
}
