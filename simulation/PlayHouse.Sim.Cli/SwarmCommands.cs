using System.CommandLine;
using System.Globalization;
using System.Text.Json;
using PlayHouse.Fixtures.Scenarios;
using PlayHouse.Simulation.Runs;

namespace PlayHouse.Sim.Cli;

/// <summary>One seed of a swarm as its report and its JSON keep it.</summary>
internal sealed record SwarmSeedResult(ulong Seed, long Index, string Scenario, string Outcome, int ExitCode, long Events, long RequestsOk, double VirtualSeconds, double WallSeconds, string TraceHash, string? Failure, string Replay, string Banner);

/// <summary>A swarm's (or one shard's) results: what was asked and what each seed gave, in seed order.</summary>
internal sealed record SwarmShardReport(string Scenario, ulong StartSeed, long Seeds, int ShardIndex, int ShardCount, string Baseline, IReadOnlyList<SwarmSeedResult> Results);

/// <summary>
/// swarm: many seeds, each with its own drawn options, on every core (<c>--parallel</c>) and split across machines
/// (<c>--shard i/n</c>, then <c>swarm merge</c>). A seed's result does not depend on which worker ran it or when:
/// each worker runs whole worlds on its own thread, and results are printed in seed order.
/// </summary>
/// <remarks>Not thread-safe; one instance serves one command line. Workers touch only their own worlds and result slots.</remarks>
internal sealed class SwarmCommands(IRunView view, IWallClock clock)
{
    /// <summary>Scenario name that makes seed i of a swarm run scenario <c>i mod count</c> of the catalogue.</summary>
    public const string AllScenarios = "all";

    private static readonly TimeSpan ProgressInterval = TimeSpan.FromSeconds(2);

    private static readonly JsonSerializerOptions JsonOptions = new() { WriteIndented = true };

    public Command Build()
    {
        var scenario = new Option<string>("--scenario", "-s") { Description = $"The scenario: {CliInputs.ScenarioList}, or '{AllScenarios}' (seed i runs scenario i mod {ScenarioCatalog.Names.Count} in name order)." };
        var seeds = new Option<long>("--seeds") { Description = "How many seeds in the whole range (S..S+K-1), before sharding.", Required = true };
        var startSeed = CliCommands.SeedOption("--start-seed", "The first seed S; when omitted a fresh one is drawn from OS entropy (printed). Required with --shard.");
        var sets = CliCommands.SetOption();
        var flaws = CliCommands.FlawOption();
        var parallel = new Option<int?>("--parallel") { Description = $"Workers, each running whole worlds on its own thread (default: the processor count, {Environment.ProcessorCount} here)." };
        var shard = new Option<string?>("--shard") { Description = "Run only shard i of n (i in 0..n-1): the seeds whose index in the range is i mod n. Every seed is in exactly one shard." };
        var json = new Option<string?>("--json") { Description = "Write this swarm's (or shard's) results as JSON, for 'swarm merge'." };
        var command = new Command(
            "swarm",
            $"Runs K seeds, each with its own options drawn by SimOptions.Swarm(new Xoshiro256StarStar(seed ^ 0x{CliCommands.SwarmOptionsSalt:X16}), baseline), where the baseline is the scenario's defaults with --set applied. Each failure's replay line names the drawn options.")
        {
            scenario, seeds, startSeed, sets, flaws, parallel, shard, json,
        };
        command.Subcommands.Add(MergeCommand());
        command.SetAction(parse =>
        {
            var name = parse.GetValue(scenario);
            var names = name == AllScenarios ? ScenarioCatalog.Names : [CliInputs.CreateScenario(name).Name];
            var count = parse.GetValue(seeds);
            if (count < 1)
            {
                throw new UsageException($"--seeds must be at least 1, got {count.ToString(CultureInfo.InvariantCulture)}.");
            }

            var workers = parse.GetValue(parallel) ?? Environment.ProcessorCount;
            if (workers < 1)
            {
                throw new UsageException($"--parallel must be at least 1, got {workers.ToString(CultureInfo.InvariantCulture)}.");
            }

            var (shardIndex, shardCount) = ParseShard(parse.GetValue(shard));
            var explicitStart = parse.GetValue(startSeed);
            if (shardCount > 1 && explicitStart is null)
            {
                throw new UsageException("--shard needs --start-seed: every shard must split the same seed range.");
            }

            var sharedSets = parse.GetValue(sets);
            var sharedFlaws = parse.GetValue(flaws);
            var baselines = names.ToDictionary(n => n, n => CliInputs.ApplyFlaws(CliInputs.ApplySets(ScenarioCatalog.Create(n).Defaults, sharedSets), sharedFlaws), StringComparer.Ordinal);
            using var jsonWriter = parse.GetValue(json) is { } path ? CliCommands.OpenWriter(path, "--json") : null;
            var start = explicitStart ?? FreshSeed.Next();
            var indices = ShardIndices(count, shardIndex, shardCount);
            var flawText = baselines.Values.First().Flaws;
            view.Line(string.Create(
                CultureInfo.InvariantCulture,
                $"swarm scenario={name} seeds={count} start-seed={start}{(flawText.Length > 0 ? " flaws=" + flawText : string.Empty)} shard={shardIndex}/{shardCount} shard-seeds={indices.Count} parallel={workers} options-of-seed=SimOptions.Swarm(new Xoshiro256StarStar(seed ^ 0x{CliCommands.SwarmOptionsSalt:X16}), baseline)"));

            var results = RunSeeds(indices, workers, index =>
            {
                var seed = unchecked(start + (ulong)index);
                var scenarioName = names[(int)(index % names.Count)];
                var options = CliCommands.SwarmOptions(seed, baselines[scenarioName]);
                var wallStart = clock.Elapsed;
                var report = SimRunner.Run(ScenarioCatalog.Create(scenarioName), seed, options, new RunSettings { WallClock = clock });
                return new SwarmSeedResult(seed, index, scenarioName, report.Outcome, report.ExitCode, report.Events, report.RequestsSucceeded, report.VirtualSeconds, (clock.Elapsed - wallStart).TotalSeconds, report.TraceHash, report.Failure, report.ReplayArguments, report.Banner);
            });

            var shardReport = new SwarmShardReport(name ?? string.Empty, start, count, shardIndex, shardCount, string.Join(' ', baselines.Values.First().ToKeyValues().Select(kv => $"{kv.Key}={kv.Value}")), results);
            if (jsonWriter is not null)
            {
                jsonWriter.Write(JsonSerializer.Serialize(shardReport, JsonOptions));
                jsonWriter.Write('\n');
            }

            return Summarize(results);
        });
        return command;
    }

    /// <summary>The indices (0..count-1) of shard <paramref name="index"/> of <paramref name="shards"/>: those equal to it mod the shard count.</summary>
    public static IReadOnlyList<long> ShardIndices(long count, int index, int shards)
    {
        var list = new List<long>();
        for (long i = index; i < count; i += shards)
        {
            list.Add(i);
        }

        return list;
    }

    /// <summary>Parses <c>i/n</c>; absent means the whole range (0/1).</summary>
    public static (int Index, int Count) ParseShard(string? text)
    {
        if (text is null)
        {
            return (0, 1);
        }

        var parts = text.Split('/');
        if (parts.Length == 2
            && int.TryParse(parts[0], NumberStyles.None, CultureInfo.InvariantCulture, out var index)
            && int.TryParse(parts[1], NumberStyles.None, CultureInfo.InvariantCulture, out var count)
            && count >= 1 && index < count)
        {
            return (index, count);
        }

        throw new UsageException($"--shard takes i/n with n >= 1 and 0 <= i < n (for example 0/4 .. 3/4), got '{text}'.");
    }

    /// <summary>
    /// Runs every index on <paramref name="workers"/> threads and prints each seed's lines in index order as soon as
    /// every earlier one is done, with a progress line every few seconds; returns the results in index order.
    /// </summary>
    private List<SwarmSeedResult> RunSeeds(IReadOnlyList<long> indices, int workers, Func<long, SwarmSeedResult> runOne)
    {
        var slots = new SwarmSeedResult?[indices.Count];
        var gate = new object();
        var next = -1;
        var done = 0;
        var failed = 0;
        Exception? workerError = null;
        void Work()
        {
            int position;
            while ((position = Interlocked.Increment(ref next)) < slots.Length)
            {
                SwarmSeedResult result;
                try
                {
                    result = runOne(indices[position]);
                }
                catch (Exception ex) when (ex is not OutOfMemoryException)
                {
                    lock (gate)
                    {
                        workerError ??= ex;
                        Monitor.PulseAll(gate);
                    }

                    return;
                }

                lock (gate)
                {
                    slots[position] = result;
                    done++;
                    failed += result.ExitCode == RunExitCodes.Pass ? 0 : 1;
                    Monitor.PulseAll(gate);
                }
            }
        }

        var threads = Enumerable.Range(0, Math.Min(workers, Math.Max(1, slots.Length)))
            .Select(i => new Thread(Work) { IsBackground = true, Name = $"swarm-worker-{i}" })
            .ToList();
        var started = clock.Elapsed;
        var lastProgress = started;
        foreach (var thread in threads)
        {
            thread.Start();
        }

        var printed = 0;
        while (printed < slots.Length)
        {
            SwarmSeedResult? ready;
            int doneNow, failedNow;
            lock (gate)
            {
                while (slots[printed] is null && workerError is null && clock.Elapsed - lastProgress < ProgressInterval)
                {
                    Monitor.Wait(gate, ProgressInterval);
                }

                if (workerError is not null)
                {
                    throw new InvalidOperationException("A swarm worker failed outside any simulation: " + workerError.Message, workerError);
                }

                ready = slots[printed];
                doneNow = done;
                failedNow = failed;
            }

            if (ready is null)
            {
                lastProgress = clock.Elapsed;
                var seconds = (lastProgress - started).TotalSeconds;
                view.Line(string.Create(CultureInfo.InvariantCulture, $"progress swarm done={doneNow}/{slots.Length} failed={failedNow} seeds-per-second={(seconds > 0 ? doneNow / seconds : 0):0.0} wall-seconds={seconds:0.0}"));
                continue;
            }

            view.Line(ready.Banner);
            view.Line(SeedLine(ready));
            printed++;
        }

        foreach (var thread in threads)
        {
            thread.Join();
        }

        var total = (clock.Elapsed - started).TotalSeconds;
        view.Line(string.Create(CultureInfo.InvariantCulture, $"swarm-wall-seconds={total:0.###} seeds-per-minute={(total > 0 ? slots.Length * 60 / total : 0):0}"));
        return [.. slots.Select(s => s!)];
    }

    private static string SeedLine(SwarmSeedResult r) => string.Create(
        CultureInfo.InvariantCulture,
        $"seed={r.Seed} outcome={r.Outcome} events={r.Events} requests-ok={r.RequestsOk} virtual-seconds={r.VirtualSeconds:0.###} wall-seconds={r.WallSeconds:0.###} trace-hash={r.TraceHash}");

    /// <summary>The closing lines: the count, the failing seeds and their replay lines; the exit code of the first failure.</summary>
    private int Summarize(IReadOnlyList<SwarmSeedResult> results)
    {
        var failures = results.Where(r => r.ExitCode != RunExitCodes.Pass).ToList();
        view.Line(string.Create(CultureInfo.InvariantCulture, $"{results.Count - failures.Count} passed, {failures.Count} failed"));
        if (failures.Count == 0)
        {
            return RunExitCodes.Pass;
        }

        view.Table(
            ["seed", "scenario", "outcome", "first failure"],
            [.. failures.Select(f => (IReadOnlyList<string>)[f.Seed.ToString(CultureInfo.InvariantCulture), f.Scenario, f.Outcome, CliInputs.OneLine(f.Failure ?? string.Empty)])]);
        foreach (var failure in failures)
        {
            view.Line(string.Create(CultureInfo.InvariantCulture, $"replay seed={failure.Seed}: {SimCli.ReplayPrefix} {failure.Replay}"));
        }

        return failures[0].ExitCode;
    }

    private Command MergeCommand()
    {
        var files = new Argument<string[]>("files") { Description = "The --json files of every shard of one swarm.", Arity = ArgumentArity.OneOrMore };
        var json = new Option<string?>("--json") { Description = "Write the merged results as JSON to this file." };
        var command = new Command("merge", "Merges the --json reports of a sharded swarm into one summary; every shard must be there exactly once, all from the same range and baseline.") { files, json };
        command.SetAction(parse =>
        {
            var shards = parse.GetValue(files)!.Select(ReadShard).ToList();
            var first = shards[0];
            foreach (var (shard, path) in shards.Zip(parse.GetValue(files)!))
            {
                if (shard.StartSeed != first.StartSeed || shard.Seeds != first.Seeds || shard.ShardCount != first.ShardCount || shard.Scenario != first.Scenario || shard.Baseline != first.Baseline)
                {
                    throw new UsageException($"'{path}' is from another swarm (scenario, start seed, seed count, shard count or baseline differ from the first file's).");
                }
            }

            var missing = Enumerable.Range(0, first.ShardCount).Except(shards.Select(s => s.ShardIndex)).ToList();
            var twice = shards.GroupBy(s => s.ShardIndex).Where(g => g.Count() > 1).Select(g => g.Key).ToList();
            if (missing.Count > 0 || twice.Count > 0)
            {
                throw new UsageException($"swarm merge needs each of the {first.ShardCount} shards exactly once: missing {(missing.Count == 0 ? "none" : string.Join(',', missing))}, given twice {(twice.Count == 0 ? "none" : string.Join(',', twice))}.");
            }

            var results = shards.SelectMany(s => s.Results).OrderBy(r => r.Index).ToList();
            if (results.Count != first.Seeds || results.Select(r => r.Index).Distinct().Count() != results.Count)
            {
                throw new UsageException($"the shards hold {results.Count} results for a range of {first.Seeds} seeds: a shard file is incomplete.");
            }

            view.Line(string.Create(CultureInfo.InvariantCulture, $"swarm merge scenario={first.Scenario} seeds={first.Seeds} start-seed={first.StartSeed} shards={first.ShardCount}"));
            if (parse.GetValue(json) is { } path2)
            {
                using var writer = CliCommands.OpenWriter(path2, "--json");
                writer.Write(JsonSerializer.Serialize(first with { ShardIndex = 0, ShardCount = 1, Results = results }, JsonOptions));
                writer.Write('\n');
            }

            return Summarize(results);
        });
        return command;
    }

    private static SwarmShardReport ReadShard(string path)
    {
        try
        {
            return JsonSerializer.Deserialize<SwarmShardReport>(File.ReadAllText(path), JsonOptions)
                ?? throw new UsageException($"'{path}' is empty.");
        }
        catch (Exception ex) when (ex is IOException or UnauthorizedAccessException or JsonException or NotSupportedException or ArgumentException)
        {
            throw new UsageException($"cannot read swarm report '{path}': {CliInputs.OneLine(ex.Message)}", ex);
        }
    }
}
