using System.Collections.Immutable;
using System.Globalization;
using PlayHouse.Simulation.Network;
using PlayHouse.Simulation.Runs;

namespace PlayHouse.Properties.Tests.Infrastructure;

/// <summary>The kinds of fault episode a generated plan holds; each expands to steps that heal by themselves.</summary>
public enum EpisodeKind
{
    /// <summary>Mean latency jumps to Value ms, then returns to the run's mean after the duration.</summary>
    LatencySpike,

    /// <summary>Stream loss at Value percent for the duration.</summary>
    LossBurst,

    /// <summary>Client Target is cut off, then reconnects after the duration.</summary>
    DisconnectClient,

    /// <summary>The mesh between play-1 and api-1 holds all traffic for the duration.</summary>
    ClogMesh,

    /// <summary>The mesh between play-1 and api-1 is cut both ways, then healed after the duration.</summary>
    PartitionMesh,

    /// <summary>play-1 crashes (stages, sessions and links gone at once), then restarts empty after the duration.</summary>
    CrashRestart,
}

/// <summary>
/// One fault episode: a fault and its own end, so that every generated plan heals (liveness is judged after the
/// heal). Plans are generated and shrunk as episodes and expanded to <see cref="FaultStep"/>s for a run.
/// </summary>
public sealed record FaultEpisode(EpisodeKind Kind, int AtMs, int DurationMs, int Target, int Value)
{
    public IEnumerable<FaultStep> ToSteps(double baselineLatencyMsMean)
    {
        var at = TimeSpan.FromMilliseconds(AtMs);
        var end = TimeSpan.FromMilliseconds(AtMs + DurationMs);
        var client = Target.ToString(CultureInfo.InvariantCulture);
        switch (Kind)
        {
            case EpisodeKind.LatencySpike:
                yield return new FaultStep(at, FaultKind.LatencyChange, Value: Value);
                yield return new FaultStep(end, FaultKind.LatencyChange, Value: baselineLatencyMsMean);
                break;
            case EpisodeKind.LossBurst:
                yield return new FaultStep(at, FaultKind.LossBurst, Value: Value, Duration: end - at);
                break;
            case EpisodeKind.DisconnectClient:
                yield return new FaultStep(at, FaultKind.Disconnect, client);
                yield return new FaultStep(end, FaultKind.Reconnect, client);
                break;
            case EpisodeKind.ClogMesh:
                yield return new FaultStep(at, FaultKind.Clog, "play-1", "api-1", Duration: end - at);
                break;
            case EpisodeKind.CrashRestart:
                yield return new FaultStep(at, FaultKind.Crash, "play-1");
                yield return new FaultStep(end, FaultKind.Restart, "play-1");
                break;
            default:
                yield return new FaultStep(at, FaultKind.Partition, "play-1", "api-1");
                yield return new FaultStep(end, FaultKind.Heal);
                break;
        }
    }

    public override string ToString() => Kind switch
    {
        EpisodeKind.LatencySpike => $"latency {Value} ms at {AtMs} ms for {DurationMs} ms",
        EpisodeKind.LossBurst => $"loss {Value}% at {AtMs} ms for {DurationMs} ms",
        EpisodeKind.DisconnectClient => $"client {Target} cut at {AtMs} ms for {DurationMs} ms",
        EpisodeKind.ClogMesh => $"mesh clog at {AtMs} ms for {DurationMs} ms",
        EpisodeKind.CrashRestart => $"play-1 crashed at {AtMs} ms, restarted after {DurationMs} ms",
        _ => $"mesh partition at {AtMs} ms for {DurationMs} ms",
    };
}

/// <summary>
/// A generated workload and fault plan: every field FsCheck draws and shrinks, and how it becomes
/// <see cref="SimOptions"/> for one run from one seed.
/// </summary>
public sealed record WorkloadSpec
{
    public required string Scenario { get; init; }

    public required ulong Seed { get; init; }

    public int Clients { get; init; } = 1;

    public int Stages { get; init; } = 1;

    public int MessageBytes { get; init; } = 64;

    public int InFlight { get; init; } = 1;

    public WorkloadMode Mode { get; init; } = WorkloadMode.RequestCallback;

    public int Requests { get; init; } = 1;

    public int WarmUp { get; init; }

    public int RequestTimeoutMs { get; init; } = 1_000;

    public LatencyShape LatencyShape { get; init; } = LatencyShape.Fixed;

    public int LatencyMsMin { get; init; }

    public int LatencyMsMean { get; init; } = 1;

    public int LatencyMsMax { get; init; } = 1;

    public int LossPercent { get; init; }

    public bool ResetOnLoss { get; init; }

    public bool ExploreSchedules { get; init; }

    public int MailboxCapacity { get; init; } = 10_000;

    /// <summary>
    /// After the last heal a client needs a timeout to free a slot stuck behind the fault, then a round trip; and a
    /// segment sent during a latency spike still holds up its stream (in-order delivery) for up to the spike's
    /// longest one-way latency, both ways. The window leaves room for all of that, so only a client that really
    /// stopped progressing fails it. Derived, so it follows the workload as it shrinks.
    /// </summary>
    public int LivenessWindowMs => RequestTimeoutMs + 4_000 + (2 * SpikeTailMs);

    /// <summary>The longest one-way latency any latency spike of the plan can draw (the run's maximum, scaled).</summary>
    public int SpikeTailMs => Episodes.IsDefaultOrEmpty
        ? 0
        : Episodes.Where(e => e.Kind == EpisodeKind.LatencySpike)
            .Select(e => (int)Math.Ceiling(e.Value * (double)Math.Max(LatencyMsMax, LatencyMsMean) / Math.Max(1, LatencyMsMean)))
            .DefaultIfEmpty(0)
            .Max();

    public ImmutableArray<FaultEpisode> Episodes { get; init; } = [];

    public FaultPlan Faults =>
        Episodes.IsDefaultOrEmpty
            ? FaultPlan.None
            : new FaultPlan([.. Episodes.SelectMany(e => e.ToSteps(LatencyMsMean)).OrderBy(s => s.At)]);

    /// <summary>Fault steps the plan holds after expansion.</summary>
    public int FaultStepCount => Faults.Steps.Count;

    public SimOptions ToOptions()
    {
        var options = new SimOptions
        {
            Scenario = Scenario,
            Clients = Clients,
            Stages = Stages,
            MessageBytes = MessageBytes,
            InFlight = InFlight,
            Mode = Mode,
            RequestsPerClient = Requests,
            WarmUpPerClient = WarmUp,
            RequestTimeoutMs = RequestTimeoutMs,
            LatencyShape = LatencyShape,
            LatencyMsMin = Math.Min(LatencyMsMin, LatencyMsMean),
            LatencyMsMean = LatencyMsMean,
            LatencyMsMax = Math.Max(LatencyMsMax, LatencyMsMean),
            LossPercent = LossPercent,
            StreamLoss = ResetOnLoss ? StreamLossMode.Reset : StreamLossMode.Retransmit,
            ExploreSchedules = ExploreSchedules,
            MailboxCapacity = MailboxCapacity,
            LivenessWindowMs = LivenessWindowMs,

            // Generated runs are short; a run still going after two virtual minutes is stuck.
            VirtualTimeLimitMs = 120_000,
            Faults = Faults,
        };
        options.Validate();
        return options;
    }

    /// <summary>The banner of the run (every option, the fault plan included) and the episodes it came from.</summary>
    public override string ToString() =>
        ToOptions().ToBanner(Seed) + (Episodes.IsDefaultOrEmpty ? string.Empty : $" | episodes: {string.Join("; ", Episodes)}");
}
