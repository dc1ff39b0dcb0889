using System.Globalization;
using System.Reflection;
using PlayHouse.Core.Seams;
using PlayHouse.Simulation.Cluster;
using PlayHouse.Simulation.Network;

namespace PlayHouse.Simulation.Runs;

/// <summary>How the benchmark clients load the servers (the modes of PlayHouse's benchmark client).</summary>
public enum WorkloadMode
{
    /// <summary>Closed loop: each client keeps <see cref="SimOptions.InFlight"/> requests pending, awaiting each reply.</summary>
    RequestAsync,

    /// <summary>The same loop driven by reply callbacks instead of awaits.</summary>
    RequestCallback,

    /// <summary>Fire-and-forget sends; the stage answers each with a push that carries the send's sequence.</summary>
    Send,
}

/// <summary>
/// Every option of a simulation run except the seed. The banner prints all of them as key=value, and
/// <see cref="ToArguments"/> gives the exact runner arguments that replay the run.
/// </summary>
public sealed record SimOptions
{
    public string Scenario { get; init; } = "echo";

    public int PlayServers { get; init; } = 1;

    public int ApiServers { get; init; } = 1;

    public int Clients { get; init; } = 10;

    /// <summary>Stages the clients are spread over.</summary>
    public int Stages { get; init; } = 1;

    public int MessageBytes { get; init; } = 64;

    public int InFlight { get; init; } = 4;

    public WorkloadMode Mode { get; init; } = WorkloadMode.RequestCallback;

    /// <summary>Requests (or sends) each client makes after warm-up.</summary>
    public int RequestsPerClient { get; init; } = 50;

    /// <summary>Requests each client makes before measuring starts.</summary>
    public int WarmUpPerClient { get; init; }

    public int RequestTimeoutMs { get; init; } = 5_000;

    public LatencyShape LatencyShape { get; init; } = LatencyShape.Uniform;

    public double LatencyMsMin { get; init; } = 1;

    public double LatencyMsMean { get; init; } = 5;

    public double LatencyMsMax { get; init; } = 20;

    public double LossPercent { get; init; }

    public double DuplicatePercent { get; init; }

    public double ReorderPercent { get; init; }

    public double SplitPercent { get; init; } = 10;

    public long BandwidthBytesPerSecond { get; init; }

    public StreamLossMode StreamLoss { get; init; } = StreamLossMode.Retransmit;

    public MeshSemantics Mesh { get; init; } = MeshSemantics.Stream;

    public bool ExploreSchedules { get; init; }

    public int MailboxCapacity { get; init; } = 10_000;

    /// <summary>After the last fault heals, every client must complete a request within this virtual time.</summary>
    public int LivenessWindowMs { get; init; } = 30_000;

    /// <summary>A run that has not finished by this virtual time fails the liveness check.</summary>
    public int VirtualTimeLimitMs { get; init; } = 600_000;

    /// <summary>
    /// The run's event budget, workload and wind-down together, or 0 (the default) for <see cref="EventBudget"/>'s
    /// automatic one. A run that has executed that many events without finishing is a runaway (something schedules
    /// events forever, possibly without virtual time moving, which no virtual time limit catches) and fails for
    /// liveness with its seed and replay line.
    /// </summary>
    public long EventsMax { get; init; }

    /// <summary>The automatic budget's allowance for the run as a whole (connections, timers, faults, wind-down).</summary>
    public const long EventBudgetBase = 10_000_000;

    /// <summary>
    /// The automatic budget's allowance per request or send the workload issues: a round trip takes some 6 to 10 events,
    /// a broadcast to a thousand members some 4,000, retransmits and timeouts a few more.
    /// </summary>
    public const long EventBudgetPerRequest = 10_000;

    /// <summary>
    /// The event budget in force: <see cref="EventsMax"/> when set, else <see cref="EventBudgetBase"/> plus
    /// <see cref="EventBudgetPerRequest"/> per request the workload issues (clients x (requests + warm-up)), so a
    /// big run is never cut short by a default while a stuck small one fails within seconds (15 million events at the
    /// test defaults).
    /// </summary>
    public long EventBudget => EventsMax > 0
        ? EventsMax
        : EventBudgetBase + (long)Math.Min(long.MaxValue / 2, (double)EventBudgetPerRequest * Clients * ((double)RequestsPerClient + WarmUpPerClient));

    public FaultPlan Faults { get; init; } = FaultPlan.None;

    /// <summary>
    /// The bug zoo's flawed twins plugged into this run, as catalogue ids joined by commas (<c>B4,B8</c>); empty runs
    /// the correct core. The banner names them only when there are any, the replay line carries them as
    /// <c>--flaw</c>, and the trace starts with them, so a flawed trace never matches a correct one.
    /// </summary>
    public string Flaws { get; init; } = string.Empty;

    /// <summary>The ids in <see cref="Flaws"/>, in the order given.</summary>
    public IReadOnlyList<string> FlawIds => Flaws.Split(',', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries);

    public PathOptions ToPathOptions()
    {
        var mean = TimeSpan.FromMilliseconds(LatencyMsMean);
        var min = TimeSpan.FromMilliseconds(Math.Min(LatencyMsMin, LatencyMsMean));
        var max = TimeSpan.FromMilliseconds(Math.Max(LatencyMsMax, LatencyMsMean));
        return new PathOptions
        {
            Latency = LatencyShape switch
            {
                LatencyShape.Fixed => LatencyModel.Fixed(mean),
                LatencyShape.Uniform => LatencyModel.Uniform(min, max),
                LatencyShape.Exponential => LatencyModel.Exponential(min, mean, max),
                _ => LatencyModel.LongTail(min, mean, max),
            },
            LossProbability = LossPercent / 100,
            DuplicateProbability = DuplicatePercent / 100,
            ReorderProbability = ReorderPercent / 100,
            SplitProbability = SplitPercent / 100,
            BandwidthBytesPerSecond = BandwidthBytesPerSecond,
            StreamLoss = StreamLoss,
        };
    }

    /// <summary>
    /// Draws a whole configuration at random (swarm testing: each seed explores a different corner), keeping the
    /// scenario and sizes of <paramref name="baseline"/> as upper bounds.
    /// </summary>
    public static SimOptions Swarm(IRandomSource random, SimOptions baseline)
    {
        ArgumentNullException.ThrowIfNull(random);
        ArgumentNullException.ThrowIfNull(baseline);
        var latencyMean = 1 + random.NextInt(80);
        var latencyMax = latencyMean * (2 + random.NextInt(20));
        var faults = random.NextBool(0.5) ? RandomFaults(random, baseline) : FaultPlan.None;
        var streamLoss = random.NextBool(0.2) ? StreamLossMode.Reset : StreamLossMode.Retransmit;

        var lossPercent = random.NextBool(0.5) ? random.NextInt(6) : 0;
        return (DrawWorkloadAndLatency(random, baseline, latencyMean, latencyMax) with
        {
            LossPercent = lossPercent,
            DuplicatePercent = random.NextBool(0.3) ? random.NextInt(4) : 0,
            ReorderPercent = random.NextBool(0.3) ? random.NextInt(10) : 0,
            SplitPercent = random.NextInt(60),
            BandwidthBytesPerSecond = random.NextBool(0.2) ? 1_000_000 + random.NextInt(100_000_000) : 0,
            StreamLoss = streamLoss,
            ExploreSchedules = random.NextBool(0.5),
            Faults = faults,
        }).WithSwarmPatience(baseline);
    }

    /// <summary>
    /// Draws the sizes, workload mode and latency shape of a swarm seed within <paramref name="baseline"/>'s sizes, around
    /// a mean and maximum latency the caller drew: the part the simulated and the real-socket swarms share. The draws
    /// happen in a fixed order (clients, stages, message size, in flight, mode, shape, minimum latency), so a seed's
    /// options, and with them its trace hash, stay what they were.
    /// </summary>
    public static SimOptions DrawWorkloadAndLatency(IRandomSource random, SimOptions baseline, int latencyMean, int latencyMax)
    {
        ArgumentNullException.ThrowIfNull(random);
        ArgumentNullException.ThrowIfNull(baseline);
        var shapes = Enum.GetValues<LatencyShape>();
        return baseline with
        {
            Clients = 1 + random.NextInt(Math.Max(1, baseline.Clients)),
            Stages = 1 + random.NextInt(Math.Max(1, baseline.Stages)),
            MessageBytes = random.NextBool(0.2) ? 1 + random.NextInt(16 * 1024) : 8 + random.NextInt(256),
            InFlight = 1 + random.NextInt(Math.Max(1, baseline.InFlight * 2)),
            // Every scenario answers every mode (a one-way send is answered with a push), so all three are drawn.
            Mode = Enum.GetValues<WorkloadMode>()[random.NextInt(3)],
            LatencyShape = shapes[random.NextInt(shapes.Length)],
            LatencyMsMin = random.NextInt(latencyMean + 1),
            LatencyMsMean = latencyMean,
            LatencyMsMax = latencyMax,
        };
    }

    /// <summary>
    /// These options with the swarm's rule for a drawn network applied: it must still let a patient client make
    /// progress, or the liveness check reports the network, not the server. A request's timeout covers a round trip
    /// through two servers at the slowest latency, the liveness window several timeouts, and where every lost segment
    /// resets the connection the loss stays rare (at a few percent a 12 KiB message, split into segments, is lost more
    /// often than it arrives). A search that changes drawn options applies it again.
    /// </summary>
    public SimOptions WithSwarmPatience(SimOptions baseline)
    {
        ArgumentNullException.ThrowIfNull(baseline);
        var requestTimeoutMs = Math.Max(baseline.RequestTimeoutMs, (int)Math.Ceiling(8 * LatencyMsMax));
        return this with
        {
            LossPercent = StreamLoss == StreamLossMode.Reset ? Math.Min(LossPercent, 1) : LossPercent,
            RequestTimeoutMs = requestTimeoutMs,
            LivenessWindowMs = Math.Max(baseline.LivenessWindowMs, 4 * requestTimeoutMs),
        };
    }

    private static FaultPlan RandomFaults(IRandomSource random, SimOptions baseline) => DrawFaults(random, baseline, FaultDrawBounds.Simulation);

    /// <summary>
    /// Draws a fault plan of one of each drawn kind (loss burst, latency spike, disconnect and reconnect, clog, crash
    /// and restart, partition and heal) within <paramref name="bounds"/>; the simulation swarm draws with
    /// <see cref="FaultDrawBounds.Simulation"/>, a real-socket swarm with bounds scaled to wall time.
    /// </summary>
    public static FaultPlan DrawFaults(IRandomSource random, SimOptions baseline, FaultDrawBounds bounds)
    {
        ArgumentNullException.ThrowIfNull(random);
        ArgumentNullException.ThrowIfNull(baseline);
        ArgumentNullException.ThrowIfNull(bounds);
        var steps = new List<FaultStep>();
        var count = 1 + random.NextInt(bounds.StepsMax);
        for (var i = 0; i < count; i++)
        {
            steps.AddRange(SwarmFault(random, baseline, bounds));
        }

        return new FaultPlan([.. steps.OrderBy(s => s.At)]);
    }

    /// <summary>
    /// One fault as the swarm draws it, with the step that heals it: a loss burst or a clog (which end by themselves),
    /// a latency change and its return to the baseline's mean, a client cut off and reconnected, play-1 crashed and
    /// restarted, or the mesh partitioned and healed, within <paramref name="bounds"/>.
    /// </summary>
    public static IReadOnlyList<FaultStep> SwarmFault(IRandomSource random, SimOptions baseline, FaultDrawBounds bounds)
    {
        ArgumentNullException.ThrowIfNull(random);
        ArgumentNullException.ThrowIfNull(baseline);
        ArgumentNullException.ThrowIfNull(bounds);
        var at = TimeSpan.FromMilliseconds(bounds.AtMsMin + random.NextInt(bounds.AtMsSpan));
        var duration = TimeSpan.FromMilliseconds(bounds.DurationMsMin + random.NextInt(bounds.DurationMsSpan));
        switch (random.NextInt(6))
        {
            case 0:
                return [new FaultStep(at, FaultKind.LossBurst, Value: 5 + random.NextInt(bounds.LossPercentSpan), Duration: duration)];
            case 1:
                return [new FaultStep(at, FaultKind.LatencyChange, Value: 1 + random.NextInt(bounds.LatencyMsSpan)), new FaultStep(at + duration, FaultKind.LatencyChange, Value: baseline.LatencyMsMean)];
            case 2:
                var client = (1 + random.NextInt(Math.Max(1, baseline.Clients))).ToString(CultureInfo.InvariantCulture);
                return [new FaultStep(at, FaultKind.Disconnect, client), new FaultStep(at + duration, FaultKind.Reconnect, client)];
            case 3:
                return [new FaultStep(at, FaultKind.Clog, "play-1", "api-1", Duration: duration)];
            case 4:
                return [new FaultStep(at, FaultKind.Crash, "play-1"), new FaultStep(at + duration, FaultKind.Restart, "play-1")];
            default:
                return [new FaultStep(at, FaultKind.Partition, "play-1", "api-1"), new FaultStep(at + duration, FaultKind.Heal)];
        }
    }

    /// <summary>
    /// The run's own latency distribution scaled so that its nominal mean (<see cref="LatencyMsMean"/>) becomes
    /// <paramref name="meanMs"/>: minimum, mean and maximum move together, whatever the shape, and a step back to the
    /// run's mean restores the run's distribution exactly (a latency spike then heals).
    /// </summary>
    public LatencyModel LatencyScaledTo(double meanMs)
    {
        var baseline = ToPathOptions().Latency;
        var mean = TimeSpan.FromMilliseconds(Math.Max(0, meanMs));
        if (LatencyMsMean <= 0)
        {
            return baseline with { Min = mean, Mean = mean, Max = mean };
        }

        var factor = Math.Max(0, meanMs) / LatencyMsMean;
        return baseline with { Min = baseline.Min * factor, Mean = baseline.Mean * factor, Max = baseline.Max * factor };
    }

    /// <summary>Every option as key=value, in declaration order; the flaws only when there are any.</summary>
    public IEnumerable<KeyValuePair<string, string>> ToKeyValues() =>
        AllKeyValues().Where(kv => !(kv.Key == "flaws" && kv.Value.Length == 0));

    /// <summary>Every option as key=value, in declaration order, the flaws included when there are none.</summary>
    private IEnumerable<KeyValuePair<string, string>> AllKeyValues() =>
        OptionProperties.Select(p => new KeyValuePair<string, string>(Key(p), Format(p.GetValue(this))));

    /// <summary>The first line of every run: the seed and every option.</summary>
    public string ToBanner(ulong seed) =>
        $"SEED={seed.ToString(CultureInfo.InvariantCulture)} " + string.Join(' ', ToKeyValues().Select(kv => $"{kv.Key}={kv.Value}"));

    /// <summary>
    /// Runner arguments that replay this run exactly: every option that differs from <paramref name="baseline"/>,
    /// which must be what the runner starts from (the scenario's defaults), or the line would not be exact.
    /// </summary>
    public string ToArguments(ulong seed, SimOptions baseline)
    {
        ArgumentNullException.ThrowIfNull(baseline);
        var defaults = baseline.AllKeyValues().ToDictionary(kv => kv.Key, kv => kv.Value, StringComparer.Ordinal);
        var text = new System.Text.StringBuilder()
            .Append("--scenario ").Append(Scenario)
            .Append(" --seed ").Append(seed.ToString(CultureInfo.InvariantCulture));
        foreach (var (key, value) in AllKeyValues())
        {
            if (key == "flaws")
            {
                foreach (var flaw in FlawIds)
                {
                    text.Append(" --flaw ").Append(ShellQuote(flaw));
                }
            }
            else if (key != "scenario" && defaults[key] != value)
            {
                text.Append(" --set ").Append(ShellQuote($"{key}={value}"));
            }
        }

        return text.ToString();
    }

    /// <summary>Quotes an argument for a shell when it holds anything beyond plain word characters (fault plans hold ';').</summary>
    public static string ShellQuote(string argument)
    {
        ArgumentNullException.ThrowIfNull(argument);
        var plain = argument.Length > 0 && argument.All(c => char.IsAsciiLetterOrDigit(c) || c is '.' or '_' or '-' or ':' or '=' or ',' or '/' or '+');
        return plain ? argument : $"\"{argument}\"";
    }

    /// <summary>Applies key=value overrides (keys as in the banner, case-insensitive); unknown keys and bad values throw.</summary>
    public SimOptions With(IEnumerable<KeyValuePair<string, string>> overrides)
    {
        ArgumentNullException.ThrowIfNull(overrides);
        var copy = this with { };
        foreach (var (key, value) in overrides)
        {
            var property = OptionProperties.FirstOrDefault(p => string.Equals(Key(p), key, StringComparison.OrdinalIgnoreCase))
                ?? throw new ArgumentException($"Unknown option '{key}'. Options: {string.Join(", ", OptionProperties.Select(Key))}.");
            property.SetValue(copy, ParseValue(property.PropertyType, value, key));
        }

        copy.Validate();
        return copy;
    }

    public void Validate()
    {
        static void Require(bool ok, string what)
        {
            if (!ok)
            {
                throw new ArgumentException($"Invalid option: {what}.");
            }
        }

        Require(PlayServers >= 1, "playServers must be at least 1");
        Require(ApiServers >= 0, "apiServers must not be negative");
        Require(Clients >= 0, "clients must not be negative");
        Require(Stages >= 1, "stages must be at least 1");
        Require(MessageBytes is >= 0 and <= 1024 * 1024, "messageBytes must be within 0..1048576");
        Require(InFlight is >= 1 and <= 30_000, "inFlight must be within 1..30000");
        Require(RequestsPerClient >= 0 && WarmUpPerClient >= 0, "request counts must not be negative");
        Require(RequestTimeoutMs > 0, "requestTimeoutMs must be positive");
        Require(LatencyMsMin >= 0 && LatencyMsMean >= 0 && LatencyMsMax >= 0, "latencies must not be negative");
        Require(LossPercent is >= 0 and <= 100 && DuplicatePercent is >= 0 and <= 100 && ReorderPercent is >= 0 and <= 100 && SplitPercent is >= 0 and <= 100, "percentages must be within 0..100");
        Require(MailboxCapacity > 0, "mailboxCapacity must be positive");
        Require(VirtualTimeLimitMs > 0 && LivenessWindowMs > 0, "time limits must be positive");
        Require(EventsMax >= 0, "eventsMax must not be negative (0 = automatic)");
    }

    private static readonly PropertyInfo[] OptionProperties = typeof(SimOptions)
        .GetProperties(BindingFlags.Public | BindingFlags.Instance)
        .Where(p => p.CanWrite && p.Name != "EqualityContract")
        .OrderBy(p => p.MetadataToken)
        .ToArray();

    private static string Key(PropertyInfo property) => char.ToLowerInvariant(property.Name[0]) + property.Name[1..];

    private static string Format(object? value) => value switch
    {
        null => string.Empty,
        bool b => b ? "true" : "false",
        double d => d.ToString(CultureInfo.InvariantCulture),
        IFormattable f => f.ToString(null, CultureInfo.InvariantCulture),
        _ => value.ToString() ?? string.Empty,
    };

    private static object ParseValue(Type type, string value, string key)
    {
        try
        {
            if (type == typeof(string))
            {
                return value;
            }

            if (type == typeof(FaultPlan))
            {
                return FaultPlan.Parse(value);
            }

            if (type.IsEnum)
            {
                return Enum.Parse(type, value, ignoreCase: true);
            }

            if (type == typeof(bool))
            {
                return bool.Parse(value);
            }

            return Convert.ChangeType(value, type, CultureInfo.InvariantCulture);
        }
        catch (Exception ex) when (ex is FormatException or ArgumentException or OverflowException or InvalidCastException)
        {
            throw new ArgumentException($"Option '{key}' cannot take the value '{value}': {ex.Message}", ex);
        }
    }
}

/// <summary>The bounds within which <see cref="SimOptions.DrawFaults"/> draws a fault plan.</summary>
/// <param name="StepsMax">Drawn kinds per plan, 1 up to this many.</param>
/// <param name="AtMsMin">The earliest instant of a step.</param>
/// <param name="AtMsSpan">Steps start within this many ms after the earliest.</param>
/// <param name="DurationMsMin">The shortest window (a burst, a clog, the time until the heal or restart).</param>
/// <param name="DurationMsSpan">Windows last up to this many ms more.</param>
/// <param name="LossPercentSpan">A loss burst's percentage is 5 plus up to this much less one.</param>
/// <param name="LatencyMsSpan">A latency spike's mean is 1 plus up to this much less one (ms).</param>
public sealed record FaultDrawBounds(int StepsMax, int AtMsMin, int AtMsSpan, int DurationMsMin, int DurationMsSpan, int LossPercentSpan, int LatencyMsSpan)
{
    /// <summary>The simulation swarm's bounds: virtual seconds, where a spike of 200 ms and windows of 3 s cost nothing.</summary>
    public static FaultDrawBounds Simulation { get; } = new(StepsMax: 4, AtMsMin: 100, AtMsSpan: 3_000, DurationMsMin: 100, DurationMsSpan: 3_000, LossPercentSpan: 30, LatencyMsSpan: 200);
}
