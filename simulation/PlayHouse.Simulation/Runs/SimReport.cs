using System.Globalization;
using System.Text;
using System.Text.Json;
using PlayHouse.Simulation.Checkers;
using PlayHouse.Simulation.Cluster;
using PlayHouse.Simulation.Metrics;

namespace PlayHouse.Simulation.Runs;

/// <summary>Exit codes of a run: one per kind of outcome, so scripts can tell them apart.</summary>
public static class RunExitCodes
{
    public const int Pass = 0;

    /// <summary>A safety invariant failed (ordering, exactly once, leaks, caps, lifecycle).</summary>
    public const int InvariantViolation = 2;

    /// <summary>The workload did not finish, or a client stopped progressing after faults healed.</summary>
    public const int LivenessFailure = 3;

    /// <summary>The run itself broke: an exception escaped, or work escaped the simulation thread.</summary>
    public const int Crash = 4;

    public static string Describe(int code) => code switch
    {
        Pass => "pass",
        InvariantViolation => "invariant-violation",
        LivenessFailure => "liveness-failure",
        Crash => "crash",
        _ => "unknown",
    };
}

/// <summary>One pool's counters in a report.</summary>
public sealed record PoolReport(string Name, long Rents, long Returns, long Hits, long Misses, long Dropped, long Outstanding)
{
    /// <summary>Rents and returns per size class that saw any traffic (the oversize row has size class -1).</summary>
    public IReadOnlyList<PoolClassReport> Classes { get; init; } = [];
}

/// <summary>One size class of a pool in a report; at quiescence <see cref="Rents"/> equals <see cref="Returns"/>.</summary>
public sealed record PoolClassReport(int SizeClass, int CapacityBytes, long Rents, long Returns);

/// <summary>Live stages and actors of the play servers when a run ended, and the most each held at once.</summary>
public sealed record RegistryReport(int LiveStages, int LiveActors, int StagesHighWater, int ActorsHighWater);

/// <summary>The closing report of a run: what happened, how fast, and each checker's verdict.</summary>
public sealed record SimReport
{
    public required string Scenario { get; init; }

    public required ulong Seed { get; init; }

    public required SimOptions Options { get; init; }

    public required string Banner { get; init; }

    /// <summary>Runner arguments that replay this run (after <c>run</c>).</summary>
    public required string ReplayArguments { get; init; }

    public required int ExitCode { get; init; }

    public string Outcome => RunExitCodes.Describe(ExitCode);

    public string? Failure { get; init; }

    public double VirtualSeconds { get; init; }

    public double? WallSeconds { get; init; }

    /// <summary>Virtual seconds per wall second.</summary>
    public double? SpeedUp => WallSeconds is > 0 ? VirtualSeconds / WallSeconds : null;

    public long Events { get; init; }

    public long RequestsSucceeded { get; init; }

    /// <summary>Successful requests per virtual second of workload.</summary>
    public double ThroughputPerVirtualSecond => VirtualSeconds > 0 ? RequestsSucceeded / VirtualSeconds : 0;

    public long RttSamples { get; init; }

    public double RttMsP50 { get; init; }

    public double RttMsP95 { get; init; }

    public double RttMsP99 { get; init; }

    public double RttMsMax { get; init; }

    public IReadOnlyList<PoolReport> Pools { get; init; } = [];

    public IReadOnlyList<string> QueueHighWaters { get; init; } = [];

    public IReadOnlyList<KeyValuePair<string, long>> Network { get; init; } = [];

    public IReadOnlyList<KeyValuePair<string, long>> ServerCounters { get; init; } = [];

    /// <summary>The play servers' registries when the run ended (summed over live play servers); the cap counters are in <see cref="ServerCounters"/>.</summary>
    public RegistryReport Registries { get; init; } = new(0, 0, 0, 0);

    public IReadOnlyList<KeyValuePair<string, string>> ScenarioMetrics { get; init; } = [];

    public IReadOnlyList<CheckerVerdict> Verdicts { get; init; } = [];

    public IReadOnlyList<string> Escapes { get; init; } = [];

    /// <summary>Each kind of fault the run asked for against what was injected (<see cref="FaultLedger"/>); empty when the run crashed early.</summary>
    public IReadOnlyList<FaultRealization> Faults { get; init; } = [];

    /// <summary>
    /// Whether every fault the run asked for was realized. A verdict on the test bed, not on the system under test, so
    /// it is not among the checkers' <see cref="Verdicts"/> (which real-socket runs share); a run that fails it crashes.
    /// </summary>
    public bool FaultsRealized => Faults.All(f => f.Passed);

    public required string TraceHash { get; init; }

    /// <summary>When the first violation was recorded (virtual time), or null when none was; explanations end their trace there.</summary>
    public TimeSpan? FirstViolationAt { get; init; }

    public bool Passed => ExitCode == RunExitCodes.Pass;

    internal static SimReport Create(IScenario scenario, ulong seed, SimOptions options, SimCluster? cluster, CheckerSet? checkers, LatencyHistogram rtt, IScenarioRun? run, long workloadEndTicks, bool timedOut, string? crash, TimeSpan? wall, bool quiescent = true, SimRunner.Runaway runaway = SimRunner.Runaway.None, IReadOnlyList<FaultRealization>? faults = null)
    {
        var escapes = cluster?.World.Escapes ?? [];
        faults ??= [];
        var unrealized = faults.Where(f => !f.Passed).ToList();
        var verdicts = checkers?.Verdicts ?? [];
        CheckerVerdict? safetyFailure = verdicts.Where(v => !v.Passed && v.CheckerName != LivenessChecker.CheckerName).Select(v => (CheckerVerdict?)v).FirstOrDefault();
        CheckerVerdict? livenessFailure = verdicts.Where(v => !v.Passed && v.CheckerName == LivenessChecker.CheckerName).Select(v => (CheckerVerdict?)v).FirstOrDefault();
        int exitCode;
        string? failure;
        if (crash is not null || escapes.Count > 0)
        {
            exitCode = RunExitCodes.Crash;
            failure = crash ?? escapes[0];
        }
        else if (unrealized.Count > 0)
        {
            // The test bed did not do what the run asked of it, so nothing else the run found (or did not find) counts:
            // the run itself broke.
            exitCode = RunExitCodes.Crash;
            failure = $"faults-realized: {Describe(unrealized[0])}";
        }
        else if (safetyFailure is not null)
        {
            exitCode = RunExitCodes.InvariantViolation;
            failure = $"{safetyFailure.Value.CheckerName}: {safetyFailure.Value.FirstViolationMessage}";
        }
        else if (runaway != SimRunner.Runaway.None)
        {
            // Judged before the checkers' liveness verdict: a runaway that starved everything else also left clients
            // without progress, but the budget is what ended the run.
            exitCode = RunExitCodes.LivenessFailure;
            var events = cluster?.World.EventsExecuted ?? 0;
            var now = cluster?.World.Now ?? TimeSpan.Zero;
            failure = runaway == SimRunner.Runaway.InWorkload
                ? $"runaway: the run spent its event budget ({events} events, eventsMax={options.EventBudget}{(options.EventsMax == 0 ? ", automatic" : "")}) by virtual time {now} without finishing the workload ({run?.Progress}); something schedules events forever, or the run is longer than the budget (raise it with --set eventsMax=N)"
                : $"runaway: the run spent its event budget ({events} events, eventsMax={options.EventBudget}{(options.EventsMax == 0 ? ", automatic" : "")}) winding down after the workload ended at {TimeSpan.FromTicks(workloadEndTicks)}, by virtual time {now}; something schedules events forever";
        }
        else if (livenessFailure is not null || timedOut || !quiescent)
        {
            exitCode = RunExitCodes.LivenessFailure;
            failure = livenessFailure is not null
                ? $"{livenessFailure.Value.CheckerName}: {livenessFailure.Value.FirstViolationMessage}"
                : timedOut
                    ? $"the workload did not finish by virtual time {TimeSpan.FromTicks(workloadEndTicks)} ({run?.Progress})"
                    : $"the world did not go quiet within 10 virtual minutes after the workload ended at {TimeSpan.FromTicks(workloadEndTicks)} ({run?.Progress})";
        }
        else
        {
            exitCode = RunExitCodes.Pass;
            failure = null;
        }

        var servers = new SortedDictionary<string, long>(StringComparer.Ordinal);
        foreach (var node in cluster?.Nodes ?? [])
        {
            foreach (var (name, value) in node.Server.Counters.Snapshot())
            {
                servers[name] = servers.GetValueOrDefault(name) + value;
            }
        }

        var plays = (cluster?.Nodes ?? []).Where(n => n.IsUp && n.Play is not null).Select(n => n.Play!).ToList();
        var registries = new RegistryReport(plays.Sum(p => p.StageCount), plays.Sum(p => p.ActorCount), plays.Sum(p => p.StagesHighWater), plays.Sum(p => p.ActorsHighWater));
        return new SimReport
        {
            Registries = registries,
            Scenario = scenario.Name,
            Seed = seed,
            Options = options,
            Banner = options.ToBanner(seed),
            ReplayArguments = options.ToArguments(seed, scenario.Defaults),
            ExitCode = exitCode,
            Failure = failure,
            FirstViolationAt = checkers?.FirstViolation?.VirtualTime,
            VirtualSeconds = TimeSpan.FromTicks(workloadEndTicks).TotalSeconds,
            WallSeconds = wall?.TotalSeconds,
            Events = cluster?.World.EventsExecuted ?? 0,
            RequestsSucceeded = run?.Metrics.FirstOrDefault(m => m.Key == "requests.succeeded") is { Value: { } text } ? long.Parse(text, CultureInfo.InvariantCulture) : 0,
            RttSamples = rtt.Count,
            RttMsP50 = Ms(rtt.ValueAtPercentile(50)),
            RttMsP95 = Ms(rtt.ValueAtPercentile(95)),
            RttMsP99 = Ms(rtt.ValueAtPercentile(99)),
            RttMsMax = Ms(rtt.Max),
            Pools = cluster is null ? [] : [.. cluster.LivePools().Select(p =>
            {
                var s = p.Pool.GetStatistics();
                return new PoolReport(p.Name, s.Rents, s.Returns, s.Hits, s.Misses, s.Dropped, s.Outstanding)
                {
                    Classes = [.. p.Pool.GetClassStatistics().Where(c => c.Rents != 0 || c.Returns != 0).Select(c => new PoolClassReport(c.SizeClass, c.CapacityBytes, c.Rents, c.Returns))],
                };
            })],
            QueueHighWaters = checkers is null ? [] : [.. checkers.Queues.GetHighWaters().OrderByDescending(q => q.HighWater).ThenBy(q => q.Name, StringComparer.Ordinal).Take(8).Select(q => q.ToString())],
            Network = cluster?.Network.Counters.Snapshot() ?? [],
            ServerCounters = [.. servers.Where(kv => kv.Value != 0)],
            ScenarioMetrics = run?.Metrics ?? [],
            Verdicts = verdicts,
            Escapes = [.. escapes],
            Faults = faults,
            TraceHash = cluster?.World.Trace.HashHex ?? "none",
        };
    }

    private static string Describe(FaultRealization fault) => $"{fault.Kind} {fault}: the test bed did not inject the faults this run asked for";

    /// <summary>The report as plain key=value lines, ending with the trace hash and, on failure, the replay command.</summary>
    public string ToText(string replayCommandPrefix)
    {
        var text = new StringBuilder();
        void Line(string key, object? value) => text.Append(key).Append('=').Append(string.Format(CultureInfo.InvariantCulture, "{0}", value)).Append('\n');
        if (Options.Flaws.Length > 0)
        {
            Line("flaws", Options.Flaws);
        }

        Line("outcome", Outcome);
        if (Failure is not null)
        {
            Line("failure", Failure.ReplaceLineEndings(" | "));
        }

        Line("virtual-seconds", Math.Round(VirtualSeconds, 3));
        Line("wall-seconds", WallSeconds is { } w ? Math.Round(w, 3) : "n/a");
        Line("speed-up", SpeedUp is { } s ? Math.Round(s, 1) : "n/a");
        Line("events", Events);
        Line("requests-ok", RequestsSucceeded);
        Line("throughput-per-virtual-second", Math.Round(ThroughputPerVirtualSecond, 1));
        Line("rtt-samples", RttSamples);
        Line("rtt-ms", $"p50={RttMsP50:0.###} p95={RttMsP95:0.###} p99={RttMsP99:0.###} max={RttMsMax:0.###}");
        foreach (var pool in Pools)
        {
            Line($"pool.{pool.Name}", $"rents={pool.Rents} returns={pool.Returns} hits={pool.Hits} misses={pool.Misses} dropped={pool.Dropped} outstanding={pool.Outstanding}");
        }

        foreach (var queue in QueueHighWaters)
        {
            Line("queue", queue);
        }

        foreach (var (key, value) in Network.Where(kv => kv.Value != 0))
        {
            Line("net." + key, value);
        }

        foreach (var fault in Faults.Where(f => f.Relevant))
        {
            Line("fault." + fault.Kind, $"{fault}{(fault.Passed ? string.Empty : " UNREALIZED")}");
        }

        if (Faults.Count > 0)
        {
            Line("faults-realized", FaultsRealized ? "pass" : $"FAIL ({Faults.Count(f => !f.Passed)}): {string.Join(", ", Faults.Where(f => !f.Passed).Select(f => f.Kind))}");
        }

        Line("registry", $"live-stages={Registries.LiveStages} live-actors={Registries.LiveActors} stages-high-water={Registries.StagesHighWater} actors-high-water={Registries.ActorsHighWater}");
        foreach (var (key, value) in ServerCounters)
        {
            Line("server." + key, value);
        }

        foreach (var (key, value) in ScenarioMetrics)
        {
            Line("scenario." + key, value);
        }

        foreach (var verdict in Verdicts)
        {
            Line("check." + verdict.CheckerName, verdict.Passed ? "pass" : $"FAIL ({verdict.ViolationCount}): {verdict.FirstViolationMessage}");
        }

        foreach (var escape in Escapes)
        {
            Line("escape", escape);
        }

        Line("trace-hash", TraceHash);
        if (!Passed)
        {
            Line("replay", $"{replayCommandPrefix} {ReplayArguments}");
        }

        return text.ToString();
    }

    public string ToJson() => JsonSerializer.Serialize(
        new
        {
            Scenario,
            Seed,
            Banner,
            Flaws = Options.FlawIds,
            Outcome,
            ExitCode,
            Failure,
            VirtualSeconds,
            WallSeconds,
            SpeedUp,
            Events,
            RequestsSucceeded,
            ThroughputPerVirtualSecond,
            Rtt = new { Samples = RttSamples, P50Ms = RttMsP50, P95Ms = RttMsP95, P99Ms = RttMsP99, MaxMs = RttMsMax },
            Pools,
            QueueHighWaters,
            Network = Network.ToDictionary(kv => kv.Key, kv => kv.Value),
            ServerCounters = ServerCounters.ToDictionary(kv => kv.Key, kv => kv.Value),
            Registries,
            ScenarioMetrics = ScenarioMetrics.ToDictionary(kv => kv.Key, kv => kv.Value),
            Verdicts = Verdicts.Select(v => new { v.CheckerName, v.Passed, v.ViolationCount, v.FirstViolationMessage }),
            Escapes,
            Faults = Faults.Where(f => f.Relevant).Select(f => new { f.Kind, f.IsRandom, f.Opportunities, f.Expected, f.StandardDeviation, f.Requested, f.Realized, f.Passed }),
            FaultsRealized,
            TraceHash,
            Options = Options.ToKeyValues().ToDictionary(kv => kv.Key, kv => kv.Value),
            ReplayArguments,
        },
        JsonOptions);

    private static readonly JsonSerializerOptions JsonOptions = new() { WriteIndented = true };

    private static double Ms(long ticks) => ticks / (double)TimeSpan.TicksPerMillisecond;
}
