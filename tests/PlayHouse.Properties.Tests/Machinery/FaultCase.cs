using System.Collections.Immutable;
using System.Globalization;
using FsCheck;
using FsCheck.Fluent;
using PlayHouse.Fixtures.Properties;
using PlayHouse.Fixtures.Scenarios;
using PlayHouse.Simulation.Cluster;
using PlayHouse.Simulation.Network;
using PlayHouse.Simulation.Runs;

namespace PlayHouse.Properties.Tests.Machinery;

/// <summary>
/// One run of the fault-realization property: a small workload on a network with every random fault setting drawn
/// (loss, duplication, reordering, splitting, stream or datagram mesh, retransmit or reset on loss) and a fault plan of
/// loss bursts, partitions, disconnects, crashes, clogs and latency spikes.
/// </summary>
public sealed record FaultCase(
    int Seed,
    string Scenario,
    int Clients,
    int Requests,
    int InFlight,
    int LossPercent,
    int DuplicatePercent,
    int ReorderPercent,
    int SplitPercent,
    MeshSemantics Mesh,
    StreamLossMode StreamLoss,
    bool ExploreSchedules,
    ImmutableArray<FaultEpisode> Episodes)
{
    public SimOptions ToOptions()
    {
        var defaults = ScenarioCatalog.Create(Scenario).Defaults;
        return defaults with
        {
            Clients = Clients,
            RequestsPerClient = Requests,
            InFlight = InFlight,
            LossPercent = LossPercent,
            DuplicatePercent = DuplicatePercent,
            ReorderPercent = ReorderPercent,
            SplitPercent = SplitPercent,
            Mesh = Mesh,
            StreamLoss = StreamLoss,
            ExploreSchedules = ExploreSchedules,
            RequestTimeoutMs = 1_500,
            Faults = new FaultPlan([.. Episodes.SelectMany(e => e.ToSteps(defaults.LatencyMsMean)).OrderBy(s => s.At)]),
        };
    }

    public override string ToString() => string.Create(
        CultureInfo.InvariantCulture,
        $"{Scenario} seed {Seed}: {Clients} client(s) x {Requests}, in flight {InFlight}, loss {LossPercent}% dup {DuplicatePercent}% reorder {ReorderPercent}% split {SplitPercent}%, mesh {Mesh}, stream loss {StreamLoss}, explore {ExploreSchedules}, faults [{string.Join("; ", Episodes)}]");

    /// <param name="burstsAlways">Every case gets at least one loss burst of at least 20 percent (for a flaw in how loss bursts reach the paths).</param>
    public static Gen<FaultCase> Cases(bool burstsAlways = false)
    {
        var kinds = burstsAlways
            ? Gen.Constant(EpisodeKind.LossBurst)
            : Gen.Frequency(
                (3, Gen.Constant(EpisodeKind.LossBurst)),
                (2, Gen.Constant(EpisodeKind.PartitionMesh)),
                (2, Gen.Constant(EpisodeKind.DisconnectClient)),
                (2, Gen.Constant(EpisodeKind.CrashRestart)),
                (1, Gen.Constant(EpisodeKind.ClogMesh)),
                (1, Gen.Constant(EpisodeKind.LatencySpike)));
        Gen<FaultEpisode> Episode(int clients) =>
            from kind in kinds
            from at in Gen.Choose(20, 1_200)
            from duration in Gen.Choose(100, 1_500)
            from target in Gen.Choose(1, clients)
            from value in kind switch
            {
                EpisodeKind.LossBurst => Gen.Choose(burstsAlways ? 20 : 5, 70),
                EpisodeKind.LatencySpike => Gen.Choose(1, 200),
                _ => Gen.Constant(0),
            }
            select new FaultEpisode(kind, at, duration, target, value);
        var percent = Gen.Frequency((2, Gen.Constant(0)), (3, Gen.Choose(1, 40)));
        return
            from seed in Gen.Choose(1, int.MaxValue)
            // Only api-create sends mesh messages between servers (stage -> API -> stage), and only those travel as
            // datagrams with mesh=Datagram, so it is drawn most.
            from scenario in Gen.Frequency((1, Gen.Constant("echo")), (1, Gen.Constant("send-push")), (1, Gen.Constant("broadcast")), (1, Gen.Constant("stage-to-stage")), (4, Gen.Constant("api-create")))
            from clients in Gen.Choose(1, 4)
            from requests in Gen.Choose(10, 100)
            from inFlight in Gen.Choose(1, 8)
            from loss in Gen.Frequency((2, Gen.Constant(0)), (3, Gen.Choose(1, 30)))
            from duplicate in percent
            from reorder in percent
            from split in Gen.Choose(0, 100)
            from mesh in Gen.Elements(MeshSemantics.Stream, MeshSemantics.Datagram)
            from streamLoss in Gen.Frequency((3, Gen.Constant(StreamLossMode.Retransmit)), (1, Gen.Constant(StreamLossMode.Reset)))
            from explore in Gen.Elements(false, true)
            from count in burstsAlways ? Gen.Choose(1, 2) : Gen.Choose(0, 3)
            from episodes in Gen.ListOf(Episode(clients), count)
            select new FaultCase(seed, scenario, clients, requests, inFlight, loss, duplicate, reorder, split, mesh, streamLoss, explore, [.. episodes]);
    }

    public static Arbitrary<FaultCase> Arbitrary(bool burstsAlways = false) => Arb.From(Cases(burstsAlways), c => Shrink(c, burstsAlways));

    /// <summary>Fewer episodes, fewer clients and requests, then calmer settings; the seed stays.</summary>
    public static IEnumerable<FaultCase> Shrink(FaultCase c, bool burstsAlways = false)
    {
        ArgumentNullException.ThrowIfNull(c);
        for (var i = 0; i < c.Episodes.Length && (!burstsAlways || c.Episodes.Length > 1); i++)
        {
            yield return c with { Episodes = c.Episodes.RemoveAt(i) };
        }

        if (c.Clients > 1)
        {
            yield return c with { Clients = 1, Episodes = [.. c.Episodes.Select(e => e with { Target = 1 })] };
        }

        if (c.Requests > 10)
        {
            yield return c with { Requests = Math.Max(10, c.Requests / 2) };
        }

        if (c.InFlight > 1)
        {
            yield return c with { InFlight = 1 };
        }

        foreach (var calmer in new[]
        {
            c with { LossPercent = 0 },
            c with { DuplicatePercent = 0 },
            c with { ReorderPercent = 0 },
            c with { SplitPercent = 0 },
            c with { Mesh = MeshSemantics.Stream },
            c with { StreamLoss = StreamLossMode.Retransmit },
            c with { ExploreSchedules = false },
            c with { Scenario = "echo" },
        })
        {
            if (calmer != c)
            {
                yield return calmer;
            }
        }
    }
}
