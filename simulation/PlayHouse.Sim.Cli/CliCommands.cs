using System.CommandLine;
using System.Globalization;
using System.Text;
using PlayHouse.Core.Seams;
using PlayHouse.Fixtures.Scenarios;
using PlayHouse.Simulation.Runs;

namespace PlayHouse.Sim.Cli;

/// <summary>The runner's commands: run, replay, swarm, list, bench and fuzz.</summary>
/// <remarks>Not thread-safe; one instance serves one command line.</remarks>
internal sealed class CliCommands(IRunView view, IWallClock clock, CancellationToken stop = default)
{
    private readonly TcpCommands _tcp = new(view, stop);

    /// <summary>
    /// Swarm seed S runs the world from S with options <c>SimOptions.Swarm(new Xoshiro256StarStar(S ^ SwarmOptionsSalt), baseline)</c>.
    /// The salt keeps the option draw independent of the world's own PRNG stream, which also starts from S.
    /// </summary>
    public const ulong SwarmOptionsSalt = 0x5357_4152_4D4F_5054; // "SWARMOPT" in ASCII.

    /// <summary>Events between progress callbacks; each callback is cheap (it reads the wall clock), the views decide when to show one.</summary>
    private const long ProgressEvents = 20_000;

    public RootCommand Build()
    {
        var root = new RootCommand("PlayHouse.Sim runner: deterministic simulation runs, swarms, replays and benchmarks. Every run is replayable from its seed and options.");
        root.Subcommands.Add(RunCommand("run", "Runs one scenario from one seed and prints the banner, progress and the closing report.", replay: false));
        root.Subcommands.Add(new SwarmCommands(view, clock).Build());
        root.Subcommands.Add(RunCommand("replay", "Reruns a seed (with the options from its replay line) and writes its trace, one canonical line per event.", replay: true));
        root.Subcommands.Add(ListCommand());
        root.Subcommands.Add(new ZooCommands(view, clock).Build());
        root.Subcommands.Add(_tcp.ServeCommand());
        var bench = new BenchCommands(view, clock).Build();
        bench.Subcommands.Add(_tcp.BenchTcpCommand());
        root.Subcommands.Add(bench);
        root.Subcommands.Add(new FuzzCommands(view, clock).Build());
        return root;
    }

    /// <summary>Draws the options of swarm seed <paramref name="seed"/> (see <see cref="SwarmOptionsSalt"/>).</summary>
    public static SimOptions SwarmOptions(ulong seed, SimOptions baseline) =>
        SimOptions.Swarm(new Xoshiro256StarStar(seed ^ SwarmOptionsSalt), baseline);

    private static Option<string> ScenarioOption() => new("--scenario", "-s") { Description = $"The scenario: {CliInputs.ScenarioList}." };

    /// <summary>A seed option: a whole number in 0..2^64-1, or absent (null).</summary>
    internal static Option<ulong?> SeedOption(string name, string description) => new(name)
    {
        Description = description,
        CustomParser = result =>
        {
            var text = result.Tokens.Count == 1 ? result.Tokens[0].Value : string.Join(' ', result.Tokens.Select(t => t.Value));
            if (ulong.TryParse(text, NumberStyles.None, CultureInfo.InvariantCulture, out var value))
            {
                return value;
            }

            result.AddError($"{name} takes a whole number in 0..{ulong.MaxValue.ToString(CultureInfo.InvariantCulture)}, got '{text}'.");
            return null;
        },
    };

    /// <summary>The bug zoo's flawed twins to plug in: catalogue ids or groups (B8, B7), repeatable or comma-separated.</summary>
    internal static Option<string[]> FlawOption() => new("--flaw")
    {
        Description = "Plug in the flawed twin of a bug catalogue entry (B1..B16, a group such as B7 for all its sub-items; repeatable). 'zoo list' shows them.",
        AllowMultipleArgumentsPerToken = true,
    };

    internal static Option<string[]> SetOption() => new("--set")
    {
        Description = "Option override key=value, keys as in the banner (repeatable; several may follow one --set).",
        AllowMultipleArgumentsPerToken = true,
    };

    private Command RunCommand(string name, string description, bool replay)
    {
        var scenario = ScenarioOption();
        var seed = SeedOption("--seed", replay ? "The seed to replay." : "The seed; when omitted a fresh one is drawn from OS entropy (printed in the banner).");
        seed.Required = replay;
        var sets = SetOption();
        var flaws = FlawOption();
        var json = new Option<string?>("--json") { Description = "Also write the report as JSON to this file." };
        var trace = new Option<string?>("--trace")
        {
            Description = "Write the trace to this file: one canonical line per event.",
            Required = replay,
        };
        var command = new Command(name, description) { scenario, seed, sets, flaws, json, trace };

        // Real sockets are not replayable, so only run (not replay) takes a substrate.
        var mode = replay ? null : TcpCommands.ModeOption();
        var timeLimit = replay ? null : TcpCommands.TimeLimitOption();
        var tlsOption = replay ? null : TcpCommands.TlsOption();
        if (mode is not null && timeLimit is not null && tlsOption is not null)
        {
            command.Options.Add(mode);
            command.Options.Add(timeLimit);
            command.Options.Add(tlsOption);
        }

        command.SetAction(parse =>
        {
            var instance = CliInputs.CreateScenario(parse.GetValue(scenario));
            var defaults = instance.Defaults;
            var options = CliInputs.ApplyFlaws(CliInputs.ApplySets(defaults, parse.GetValue(sets)), parse.GetValue(flaws));
            var runSeed = parse.GetValue(seed) ?? FreshSeed.Next();
            var tracePath = parse.GetValue(trace);
            var jsonPath = parse.GetValue(json);
            var modeName = mode is null ? TcpCommands.SimMode : parse.GetValue(mode);
            var webSocket = modeName == TcpCommands.WebSocketMode;
            var tcp = modeName == TcpCommands.TcpMode || webSocket;
            var tls = tlsOption is not null && parse.GetValue(tlsOption);
            var limitSeconds = timeLimit is null ? null : parse.GetValue(timeLimit);
            if (!tcp && tls)
            {
                throw new UsageException("--tls needs --mode tcp (TCP+TLS clients) or --mode ws (wss:// clients); the simulation has no TLS.");
            }

            if (tcp && tracePath is not null)
            {
                throw new UsageException("--trace needs --mode sim: a TCP run has no event trace (threads, not a simulated schedule, order its events).");
            }

            if (tcp && options.Flaws.Length > 0)
            {
                throw new UsageException($"--flaw needs --mode sim: the flawed twins run in the simulation only (flaws given: {options.Flaws}).");
            }

            if (!tcp && limitSeconds is not null)
            {
                throw new UsageException("--time-limit-s applies to --mode tcp and ws; a simulated run's limit is virtual time (--set virtualTimeLimitMs=...).");
            }

            if (tcp)
            {
                using var tcpJson = jsonPath is null ? null : OpenWriter(jsonPath, "--json");
                return _tcp.RunTcp(instance, options, runSeed, limitSeconds, jsonPath, tcpJson, webSocket, tls);
            }

            // Open both files before running, so a bad path is a usage error and not a lost run.
            using var traceWriter = tracePath is null ? null : new LineCountingWriter(OpenWriter(tracePath, "--trace"));
            using var jsonWriter = jsonPath is null ? null : OpenWriter(jsonPath, "--json");
            view.Line(options.ToBanner(runSeed));
            var report = Execute(instance, runSeed, options, defaults, traceWriter, title: $"{instance.Name} seed {runSeed.ToString(CultureInfo.InvariantCulture)}");
            if (jsonWriter is not null)
            {
                jsonWriter.Write(report.ToJson());
                jsonWriter.Write('\n');
                view.Line("json-file=" + jsonPath);
            }

            if (traceWriter is not null)
            {
                traceWriter.Flush();
                view.Line(string.Create(CultureInfo.InvariantCulture, $"trace-file={tracePath} trace-lines={traceWriter.Lines}"));
            }

            view.Report(report);
            return report.ExitCode;
        });
        return command;
    }

    private Command ListCommand()
    {
        var command = new Command("list", "Lists the scenarios with their descriptions, default options, and whether run --mode tcp and serve support them.");
        command.SetAction(_ =>
        {
            var scenarios = ScenarioCatalog.Names.Select(ScenarioCatalog.Create).ToList();
            if (view is PlainView)
            {
                foreach (var scenario in scenarios)
                {
                    view.Line($"{scenario.Name}: {scenario.Description}");
                    view.Line("  " + DefaultsBanner(scenario.Defaults));
                    view.Line("  " + Substrates(scenario));
                }
            }
            else
            {
                // A terminal table stays readable with only what each scenario changes; the shared rest follows once.
                var common = new SimOptions().ToKeyValues().ToDictionary(kv => kv.Key, kv => kv.Value, StringComparer.Ordinal);
                view.Table(
                    ["scenario", "description", "defaults that differ from the common ones", "substrates"],
                    [.. scenarios.Select(s => (IReadOnlyList<string>)[s.Name, s.Description, string.Join(' ', s.Defaults.ToKeyValues().Where(kv => kv.Key != "scenario" && common[kv.Key] != kv.Value).Select(kv => $"{kv.Key}={kv.Value}")), Substrates(s)])]);
                view.Line("common defaults: " + string.Join(' ', new SimOptions().ToKeyValues().Where(kv => kv.Key != "scenario").Select(kv => $"{kv.Key}={kv.Value}")));
            }

            return 0;
        });
        return command;
    }

    /// <summary>Where a scenario runs: <c>modes=sim,tcp serve=yes</c> (run --mode, and whether serve hosts it).</summary>
    private static string Substrates(IScenario scenario) =>
        $"modes={(TcpCommands.SupportsTcp(scenario) ? "sim,tcp" : "sim")} serve={(TcpCommands.SupportsServe(scenario.Name) ? "yes" : "no")}";

    private static string DefaultsBanner(SimOptions defaults) => string.Join(' ', defaults.ToKeyValues().Select(kv => $"{kv.Key}={kv.Value}"));

    private SimReport Execute(IScenario scenario, ulong seed, SimOptions options, SimOptions defaults, TextWriter? trace, string title)
    {
        var report = view.Run(title, progress => SimRunner.Run(scenario, seed, options, new RunSettings
        {
            TraceWriter = trace,
            Progress = progress,
            ProgressEvents = ProgressEvents,
            WallClock = clock,
        }));

        return report;
    }

    internal static StreamWriter OpenWriter(string path, string option)
    {
        try
        {
            var directory = Path.GetDirectoryName(Path.GetFullPath(path));
            if (!string.IsNullOrEmpty(directory))
            {
                Directory.CreateDirectory(directory);
            }

            // A large buffer: a trace is many short lines written on the simulation thread.
            return new StreamWriter(path, append: false, new UTF8Encoding(encoderShouldEmitUTF8Identifier: false), bufferSize: 1 << 16) { NewLine = "\n" };
        }
        catch (Exception ex) when (ex is IOException or UnauthorizedAccessException or ArgumentException or NotSupportedException)
        {
            throw new UsageException($"{option} cannot write '{path}': {ex.Message}", ex);
        }
    }
}
