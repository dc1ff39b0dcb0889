using System.CommandLine;
using System.Globalization;
using System.Text.Json;
using PlayHouse.Fixtures.Zoo;
using PlayHouse.Simulation.Runs;

namespace PlayHouse.Sim.Cli;

/// <summary>The bug zoo: <c>zoo list</c>, <c>zoo run [ID|all]</c> and <c>zoo explain ID</c>.</summary>
/// <remarks>Not thread-safe; one instance serves one command line.</remarks>
internal sealed class ZooCommands(IRunView view, IWallClock clock)
{
    /// <summary>Trace lines <c>zoo explain</c> prints, the last ones up to the first violation.</summary>
    private const int ExplainTraceLines = 30;

    private static readonly JsonSerializerOptions JsonOptions = new() { WriteIndented = true };

    public Command Build()
    {
        var zoo = new Command("zoo", "The bug zoo: every flaw of the bug catalogue as a flawed twin of the component that had it, caught in simulation from a seed, shrunk and explained.");
        zoo.Subcommands.Add(ListCommand());
        zoo.Subcommands.Add(RunCommand());
        zoo.Subcommands.Add(ExplainCommand());
        return zoo;
    }

    private static Argument<string> IdArgument(string description, string? defaultValue) => new("id")
    {
        Description = description,
        Arity = defaultValue is null ? ArgumentArity.ExactlyOne : ArgumentArity.ZeroOrOne,
        DefaultValueFactory = defaultValue is null ? null : _ => defaultValue,
    };

    private static Option<string?> JsonOption() => new("--json") { Description = "Also write the results as JSON to this file." };

    private Command ListCommand()
    {
        var json = JsonOption();
        var command = new Command("list", "Lists the catalogue: id, the story in one line, the seed report it comes from, the invariant that must catch it and the scenario.") { json };
        command.SetAction(parse =>
        {
            var rows = ZooCatalogue.Entries.Select(e => (IReadOnlyList<string>)[e.Id, e.Title, e.Seed, e.Invariant, e.Scenario, FlawRegistry.Find(e.Id)?.GetType().Name ?? "none"]).ToList();
            view.Table(["id", "flaw", "seed", "invariant that must fail", "scenario", "flawed twin"], rows);
            WriteJson(parse.GetValue(json), ZooCatalogue.Entries.Select(e => new { e.Id, e.Title, e.Story, e.Seed, e.Component, e.Scenario, e.Invariant, Twin = FlawRegistry.Find(e.Id)?.GetType().Name }));
            return 0;
        });
        return command;
    }

    private Command RunCommand()
    {
        var id = IdArgument("A catalogue id (B8), a group (B7: all its sub-items) or 'all'.", "all");
        var json = JsonOption();
        var command = new Command("run", "Runs each flawed twin to its first failure (at most 100 cases), shrinks and replays it, and runs the correct core on the same cases; exits 2 if a flaw escapes or the core fails.") { id, json };
        command.SetAction(parse =>
        {
            var entries = Resolve(parse.GetValue(id)!);
            using var jsonWriter = OpenJson(parse.GetValue(json));
            var results = new List<ZooResult>();
            var missing = new List<ZooEntry>();
            var index = 0;
            foreach (var entry in entries)
            {
                index++;
                if (FlawRegistry.Find(entry.Id) is not { } twin)
                {
                    view.Line($"zoo [{index}/{entries.Count}] {entry.Id}: no flawed twin");
                    missing.Add(entry);
                    continue;
                }

                var result = ZooRunner.Run(twin, phase => view.Line($"zoo [{index}/{entries.Count}] {phase}"), () => clock.Elapsed.TotalSeconds);
                view.Line(ZooRunner.Describe(result));
                results.Add(result);
            }

            view.Table(
                ["id", "outcome", "cases to first failure", "shrunk (clients/requests/fault steps)", "invariant (first violation)", "wall s", "replay"],
                [
                    .. results.Select(r => (IReadOnlyList<string>)
                    [
                        r.Entry.Id,
                        r.Passed ? "caught" : "FAILED: " + r.Problem,
                        r.CasesToFirstFailure.ToString(CultureInfo.InvariantCulture),
                        string.Create(CultureInfo.InvariantCulture, $"{r.ShrunkClients}/{r.ShrunkRequests}/{r.ShrunkFaultSteps}"),
                        CliInputs.OneLine(r.Violation),
                        r.WallSeconds.ToString("0.0", CultureInfo.InvariantCulture),
                        r.ReplayCommand,
                    ]),
                    .. missing.Select(e => (IReadOnlyList<string>)[e.Id, "FAILED: no flawed twin", "-", "-", e.Invariant, "-", "-"]),
                ]);
            var failed = results.Count(r => !r.Passed) + missing.Count;
            view.Line(string.Create(CultureInfo.InvariantCulture, $"zoo: {results.Count - results.Count(r => !r.Passed)} caught, {failed} failed, of {entries.Count}"));
            if (jsonWriter is not null)
            {
                jsonWriter.Write(JsonSerializer.Serialize(results.Select(ToJson).Concat(missing.Select(e => (object)new { e.Id, Outcome = "no flawed twin" })), JsonOptions));
                jsonWriter.Write('\n');
            }

            return failed == 0 ? RunExitCodes.Pass : RunExitCodes.InvariantViolation;
        });
        return command;
    }

    private Command ExplainCommand()
    {
        var id = IdArgument("One catalogue id (B8).", defaultValue: null);
        var command = new Command("explain", "Prints an entry's story, finds and shrinks its counterexample, and prints the shrunk fault plan and the last events of the trace up to the violation.") { id };
        command.SetAction(parse =>
        {
            var entries = Resolve(parse.GetValue(id)!);
            if (entries.Count != 1)
            {
                throw new UsageException($"zoo explain takes one id, not a group; ids: {ZooCatalogue.IdList}.");
            }

            var entry = entries[0];
            view.Line($"{entry.Id}: {entry.Title}");
            view.Line($"seed report: {entry.Seed}    component: {entry.Component}");
            view.Line("story: " + entry.Story);
            view.Line("scenario: " + entry.Scenario);
            view.Line("invariant that must fail: " + entry.Invariant);
            if (FlawRegistry.Find(entry.Id) is not { } twin)
            {
                view.Line("flawed twin: none");
                return RunExitCodes.InvariantViolation;
            }

            var result = ZooRunner.Run(twin, phase => view.Line("zoo " + phase), () => clock.Elapsed.TotalSeconds);
            view.Line(ZooRunner.Describe(result));
            if (result.Flawed.ShrunkReport is not { } shrunk || result.Flawed.Shrunk is not { } spec)
            {
                view.Line("the flaw escaped: " + result.Problem);
                return RunExitCodes.InvariantViolation;
            }

            view.Line(string.Create(CultureInfo.InvariantCulture, $"found after {result.CasesToFirstFailure} case(s); shrunk to {spec.Clients} client(s), {spec.Requests} request(s) each, {spec.FaultStepCount} fault step(s)"));
            view.Line("shrunk run: " + shrunk.Banner);
            view.Line("fault plan: " + (spec.FaultStepCount == 0 ? "none" : spec.Faults.ToString()));
            view.Line("violation: " + CliInputs.OneLine(result.Violation));

            // Replaying the shrunk run with a trace writer shows the events that led to the violation.
            var tail = new TraceTailWriter(shrunk.FirstViolationAt?.Ticks ?? long.MaxValue, ExplainTraceLines);
            var replay = ZooRunner.Replay(shrunk, new RunSettings { TraceWriter = tail });
            view.Line(string.Create(CultureInfo.InvariantCulture, $"last {tail.Lines.Count} trace events up to the violation at {shrunk.FirstViolationAt?.TotalMilliseconds ?? 0:0.###} ms (virtual time in ticks, kind, numbers, text):"));
            foreach (var line in tail.Lines)
            {
                view.Line("  " + line);
            }

            view.Line("trace-hash=" + replay.TraceHash + (replay.TraceHash == shrunk.TraceHash ? " (same as the search's run)" : " (DIFFERS from the search's run)"));
            view.Line("replay=" + result.ReplayCommand);
            view.Line("correct core on the same cases: " + (result.Core.Passed ? $"passed all {result.Core.Tests}" : "FAILED: " + result.Core.ShrunkViolation));
            return result.Passed ? RunExitCodes.Pass : RunExitCodes.InvariantViolation;
        });
        return command;
    }

    private static IReadOnlyList<ZooEntry> Resolve(string id)
    {
        try
        {
            return ZooCatalogue.Resolve(id);
        }
        catch (ArgumentException ex)
        {
            throw new UsageException(CliInputs.OneLine(ex.Message), ex);
        }
    }

    private static object ToJson(ZooResult r) => new
    {
        r.Entry.Id,
        Outcome = r.Passed ? "caught" : "failed",
        r.Problem,
        r.CasesToFirstFailure,
        r.ShrunkClients,
        r.ShrunkRequests,
        r.ShrunkFaultSteps,
        r.Entry.Invariant,
        r.Violation,
        r.WallSeconds,
        CoreCases = r.Core.Tests,
        CorePassed = r.Core.Passed,
        r.ReplayMatches,
        TraceHash = r.Flawed.ShrunkReport?.TraceHash,
        r.ReplayCommand,
    };

    private void WriteJson(string? path, object value)
    {
        using var writer = OpenJson(path);
        if (writer is not null)
        {
            writer.Write(JsonSerializer.Serialize(value, JsonOptions));
            writer.Write('\n');
            view.Line("json-file=" + path);
        }
    }

    private static StreamWriter? OpenJson(string? path)
    {
        if (path is null)
        {
            return null;
        }

        try
        {
            var directory = Path.GetDirectoryName(Path.GetFullPath(path));
            if (!string.IsNullOrEmpty(directory))
            {
                Directory.CreateDirectory(directory);
            }

            return new StreamWriter(path, append: false) { NewLine = "\n" };
        }
        catch (Exception ex) when (ex is IOException or UnauthorizedAccessException or ArgumentException or NotSupportedException)
        {
            throw new UsageException($"--json cannot write '{path}': {ex.Message}", ex);
        }
    }

    /// <summary>Keeps the last trace lines at or before an instant (the trace's lines start with the virtual time in ticks).</summary>
    private sealed class TraceTailWriter(long untilTicks, int capacity) : TextWriter
    {
        private readonly Queue<string> _lines = new();

        public override System.Text.Encoding Encoding => System.Text.Encoding.UTF8;

        public IReadOnlyCollection<string> Lines => _lines;

        public override void Write(char value) => Write(value.ToString());

        public override void Write(string? value)
        {
            if (string.IsNullOrEmpty(value))
            {
                return;
            }

            var line = value.TrimEnd('\n');
            var space = line.IndexOf(' ', StringComparison.Ordinal);
            if (space <= 0 || !long.TryParse(line.AsSpan(0, space), NumberStyles.None, CultureInfo.InvariantCulture, out var ticks) || ticks > untilTicks)
            {
                return;
            }

            if (_lines.Count == capacity)
            {
                _lines.Dequeue();
            }

            _lines.Enqueue(line);
        }
    }
}
