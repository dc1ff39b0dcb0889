using System.Collections.Immutable;
using FsCheck;
using FsCheck.Fluent;
using PlayHouse.Simulation.Network;
using PlayHouse.Simulation.Runs;

namespace PlayHouse.Properties.Tests.Infrastructure;

/// <summary>What a property's generator draws from: which scenarios, faults and limits matter to its invariant.</summary>
public sealed record WorkloadProfile
{
    public required IReadOnlyList<string> Scenarios { get; init; }

    /// <summary>Fault episode kinds and their weights; empty means runs without faults.</summary>
    public IReadOnlyList<(int Weight, EpisodeKind Kind)> EpisodeKinds { get; init; } =
    [
        (3, EpisodeKind.LatencySpike),
        (2, EpisodeKind.LossBurst),
        (3, EpisodeKind.DisconnectClient),
        (1, EpisodeKind.ClogMesh),
        (1, EpisodeKind.PartitionMesh),
        (1, EpisodeKind.CrashRestart),
    ];

    public int EpisodesMax { get; init; } = 3;

    public int ClientsMax { get; init; } = 4;

    public int RequestsMax { get; init; } = 24;

    public int InFlightMax { get; init; } = 6;

    /// <summary>Whether steady loss may reset connections (StreamLoss=Reset) rather than only delay them.</summary>
    public bool SteadyResets { get; init; } = true;

    /// <summary>Most warm-up requests per client (0: never a warm-up phase).</summary>
    public int WarmUpMax { get; init; } = 4;

    public IReadOnlyList<int> MailboxCapacities { get; init; } = [10_000, 10_000, 64, 8];

    public int RequestTimeoutMsMin { get; init; } = 400;

    public int RequestTimeoutMsMax { get; init; } = 2_500;
}

/// <summary>
/// FsCheck generators and shrinkers for workloads and fault plans. Shrinking goes for the big wins first (fewer
/// fault episodes, fewer clients and stages, fewer requests), then smaller sizes and shorter times, so a
/// counterexample ends up as small as the failure allows.
/// </summary>
public static class WorkloadGen
{
    /// <summary>A workload drawn from <paramref name="profile"/>; sizes grow with FsCheck's size parameter.</summary>
    public static Gen<WorkloadSpec> Spec(WorkloadProfile profile)
    {
        ArgumentNullException.ThrowIfNull(profile);
        return Gen.Sized(size =>
        {
            // FsCheck's size runs 1..100; small cases come first, as in any property test.
            var scale = Math.Clamp(size, 1, 100);
            var clientsMax = Math.Max(1, Math.Min(profile.ClientsMax, 1 + (scale / 20)));
            var requestsMax = Math.Max(2, Math.Min(profile.RequestsMax, 2 + (scale / 3)));
            return
                from scenario in Gen.Elements(profile.Scenarios.ToArray())
                from seed in Gen.Choose(1, int.MaxValue)
                from clients in Gen.Choose(1, clientsMax)
                from stages in Gen.Choose(1, 3)
                from messageBytes in MessageBytes()
                from inFlight in Gen.Choose(1, profile.InFlightMax)
                from mode in Gen.Elements(WorkloadMode.RequestCallback, WorkloadMode.RequestAsync, WorkloadMode.Send)
                from requests in Gen.Choose(1, requestsMax)
                from warmUp in profile.WarmUpMax == 0 ? Gen.Constant(0) : Gen.Frequency((3, Gen.Constant(0)), (1, Gen.Choose(1, profile.WarmUpMax)))
                from timeoutMs in Gen.Choose(profile.RequestTimeoutMsMin, profile.RequestTimeoutMsMax)
                from latency in Latency()
                from loss in Gen.Frequency((3, Gen.Constant(0)), (1, Gen.Choose(1, 5)))
                from resetOnLoss in profile.SteadyResets ? Gen.Frequency((4, Gen.Constant(false)), (1, Gen.Constant(true))) : Gen.Constant(false)
                from explore in Gen.Elements(false, true)
                from mailbox in Gen.Elements(profile.MailboxCapacities.ToArray())
                from episodes in Episodes(profile, clients, timeoutMs)
                select new WorkloadSpec
                {
                    Scenario = scenario,
                    Seed = (ulong)seed,
                    Clients = clients,
                    Stages = stages,
                    MessageBytes = messageBytes,
                    InFlight = inFlight,
                    Mode = mode,
                    Requests = requests,
                    WarmUp = warmUp,
                    RequestTimeoutMs = timeoutMs,
                    LatencyShape = latency.Shape,
                    LatencyMsMin = latency.Min,
                    LatencyMsMean = latency.Mean,
                    LatencyMsMax = latency.Max,
                    LossPercent = loss,
                    ResetOnLoss = resetOnLoss,
                    ExploreSchedules = explore,
                    MailboxCapacity = mailbox,
                    Episodes = episodes,
                };
        });
    }

    public static Arbitrary<WorkloadSpec> Arbitrary(WorkloadProfile profile) => Arb.From(Spec(profile), Shrink);

    /// <summary>Mostly small messages, sometimes ones of a few KB, rarely past the largest size class.</summary>
    private static Gen<int> MessageBytes() =>
        Gen.Frequency(
            (6, Gen.Choose(0, 256)),
            (3, Gen.Choose(257, 8_192)),
            (1, Gen.Choose(60_000, 140_000)));

    private static Gen<(LatencyShape Shape, int Min, int Mean, int Max)> Latency() =>
        from shape in Gen.Elements(Enum.GetValues<LatencyShape>())
        from mean in Gen.Choose(1, 40)
        from min in Gen.Choose(0, mean)
        from factor in Gen.Choose(1, 4)
        select (shape, min, mean, mean * factor);

    private static Gen<ImmutableArray<FaultEpisode>> Episodes(WorkloadProfile profile, int clients, int timeoutMs)
    {
        if (profile.EpisodeKinds.Count == 0 || profile.EpisodesMax == 0)
        {
            return Gen.Constant(ImmutableArray<FaultEpisode>.Empty);
        }

        var episode =
            from kind in Gen.Frequency(profile.EpisodeKinds.Select(k => (k.Weight, Gen.Constant(k.Kind))))
            from at in Gen.Choose(20, 2_000)
            from duration in Gen.Choose(50, 2_500)
            from target in Gen.Choose(1, clients)
            from value in kind switch
            {
                // Spikes past the request timeout make requests time out and replies arrive late.
                EpisodeKind.LatencySpike => Gen.Choose(timeoutMs / 2, timeoutMs * 2),
                EpisodeKind.LossBurst => Gen.Choose(5, 40),
                _ => Gen.Constant(0),
            }
            select new FaultEpisode(kind, at, duration, target, value);
        return
            from count in Gen.Frequency((2, Gen.Constant(0)), (5, Gen.Choose(1, profile.EpisodesMax)))
            from list in Gen.ListOf(episode, count)
            select list.ToImmutableArray();
    }

    /// <summary>
    /// Smaller workloads, biggest wins first: fewer fault episodes, fewer clients and stages, fewer requests and
    /// a smaller window, then shorter and milder faults, smaller messages, calmer networks. The seed stays: a
    /// different seed is a different run, not a smaller one.
    /// </summary>
    public static IEnumerable<WorkloadSpec> Shrink(WorkloadSpec spec)
    {
        ArgumentNullException.ThrowIfNull(spec);
        for (var i = 0; i < spec.Episodes.Length; i++)
        {
            yield return spec with { Episodes = spec.Episodes.RemoveAt(i) };
        }

        foreach (var clients in Smaller(spec.Clients, 1))
        {
            // Episodes that named a client past the new count name the last one instead.
            yield return spec with { Clients = clients, Episodes = [.. spec.Episodes.Select(e => e.Target > clients ? e with { Target = clients } : e)] };
        }

        foreach (var stages in Smaller(spec.Stages, 1))
        {
            yield return spec with { Stages = stages };
        }

        foreach (var requests in Smaller(spec.Requests, 1))
        {
            yield return spec with { Requests = requests };
        }

        if (spec.WarmUp > 0)
        {
            yield return spec with { WarmUp = 0 };
        }

        foreach (var inFlight in Smaller(spec.InFlight, 1))
        {
            yield return spec with { InFlight = inFlight };
        }

        for (var i = 0; i < spec.Episodes.Length; i++)
        {
            var e = spec.Episodes[i];
            if (e.AtMs > 20)
            {
                yield return spec with { Episodes = spec.Episodes.SetItem(i, e with { AtMs = Math.Max(20, e.AtMs / 2) }) };
            }

            if (e.DurationMs > 50)
            {
                yield return spec with { Episodes = spec.Episodes.SetItem(i, e with { DurationMs = Math.Max(50, e.DurationMs / 2) }) };
            }

            if (e.Target > 1)
            {
                yield return spec with { Episodes = spec.Episodes.SetItem(i, e with { Target = 1 }) };
            }
        }

        foreach (var bytes in Smaller(spec.MessageBytes, 0))
        {
            yield return spec with { MessageBytes = bytes };
        }

        if (spec.LossPercent > 0)
        {
            yield return spec with { LossPercent = 0 };
        }

        if (spec.ResetOnLoss)
        {
            yield return spec with { ResetOnLoss = false };
        }

        if (spec.ExploreSchedules)
        {
            yield return spec with { ExploreSchedules = false };
        }

        if (spec.LatencyShape != LatencyShape.Fixed || spec.LatencyMsMax != spec.LatencyMsMean)
        {
            yield return spec with { LatencyShape = LatencyShape.Fixed, LatencyMsMin = spec.LatencyMsMean, LatencyMsMax = spec.LatencyMsMean };
        }

        foreach (var mean in Smaller(spec.LatencyMsMean, 1))
        {
            yield return spec with { LatencyMsMean = mean, LatencyMsMin = Math.Min(spec.LatencyMsMin, mean), LatencyMsMax = Math.Max(mean, spec.LatencyMsMax / 2) };
        }
    }

    /// <summary>Candidates below <paramref name="value"/> down to <paramref name="floor"/>: the floor, half, one less.</summary>
    private static IEnumerable<int> Smaller(int value, int floor)
    {
        if (value <= floor)
        {
            yield break;
        }

        yield return floor;
        var half = floor + ((value - floor) / 2);
        if (half > floor && half < value)
        {
            yield return half;
        }

        if (value - 1 > half)
        {
            yield return value - 1;
        }
    }
}
