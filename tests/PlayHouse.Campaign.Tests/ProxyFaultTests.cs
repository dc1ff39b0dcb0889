using static PlayHouse.Campaign.Tests.Campaigns;

namespace PlayHouse.Campaign.Tests;

/// <summary>Fault steps drawn into a schedule reach the target through the fault proxy, and the correct server passes the checkers under them.</summary>
[Collection(TimedFaultWindows.Name)]
public sealed class ProxyFaultTests
{
    /// <summary>
    /// Three groups over three transports, every fault kind once, all healed before the last third. A window fault is
    /// realised only on traffic that crosses it, so the windows that act on chunks (latency, segmentation, loss) span a
    /// third of the run each: a host that starves the clients for a few hundred milliseconds still sends through them.
    /// </summary>
    private static CampaignSchedule EveryFault() => new(
        CampaignSchedule.TestStageProfile,
        Seed: 5,
        DurationMs: 1500,
        RequestTimeoutMs: 2000,
        Stages: 1,
        Groups: 3,
        Clients:
        [
            new CampaignClientPlan(0, CampaignTransport.Tcp, 0, 0, [Op(OperationKind.Echo, 40, 4), Op(OperationKind.Broadcast), Op(OperationKind.Heartbeat)]),
            new CampaignClientPlan(1, CampaignTransport.Tls, 0, 1, [Op(OperationKind.Echo, 40, 4), Op(OperationKind.Fail, value: 2001), Op(OperationKind.Broadcast)]),
            new CampaignClientPlan(2, CampaignTransport.Ws, 0, 2, [Op(OperationKind.Echo, 40, 4), Op(OperationKind.Large), Op(OperationKind.Broadcast)]),
        ],
        Faults:
        [
            new CampaignFault(50, CampaignFaultKind.Latency, 0, 500, Value: 20),
            new CampaignFault(50, CampaignFaultKind.Segmentation, 1, 500),
            new CampaignFault(50, CampaignFaultKind.Loss, 2, 500, Value: 5),
            new CampaignFault(600, CampaignFaultKind.Stall, 0, 150, Direction: FaultDirection.Downstream),
            new CampaignFault(600, CampaignFaultKind.Bandwidth, 2, 250, Value: 256),
            new CampaignFault(600, CampaignFaultKind.Partition, 1, 250),
            new CampaignFault(800, CampaignFaultKind.Reset, 0),
            new CampaignFault(900, CampaignFaultKind.HalfOpen, 2),
        ]);

    [Fact]
    public async Task EveryFaultKind_ThroughTheProxy_IsRealisedAndTheCorrectServerPassesTheCheckers()
    {
        await using var target = await InProcessTarget.StartAsync();
        await using var session = Session(target.Target);
        var schedule = EveryFault();

        var report = await RunAsync(session, Replaying(schedule, shrink: false));

        Assert.True(report.FindingsByChecker.Count == 0, Describe(report));
        var run = Assert.Single(report.Runs);
        Assert.Equal(schedule.Faults.Count, run.Ledger.Counter("faults.applied"));
        Assert.Equal(3, run.Ledger.Counter("liveness.probes"));
        var network = run.NetworkCounters.ToDictionary(kv => kv.Key, kv => kv.Value);
        string[] realisedBy = ["partition.windows", "stall.windows", "reset.connections", "halfOpen.connections", "split.chunksSplit", "latency.chunksDelayed"];
        var unrealised = realisedBy.Where(counter => network[counter] < 1).ToList();
        Assert.True(unrealised.Count == 0, $"not realised: {string.Join(", ", unrealised)}; proxy counters: {string.Join(' ', network)}");
        Assert.True(run.Ledger.Counter("connections") > 3, Describe(report));
    }

    /// <summary>
    /// One TLS client. A reset drops its connection while an upstream stall holds everything it sends, so the new
    /// connection's TLS handshake is held too; a half-open step then catches that handshake in flight. The connect hangs
    /// until the client's connect timeout, seconds after the step, and the client never held the connection as its own.
    /// </summary>
    [Fact]
    public async Task HalfOpenStep_CatchingATlsHandshakeInFlight_IsTheFaultsDoingAndTheClientConnectsAfterTheHeal()
    {
        await using var target = await InProcessTarget.StartAsync();
        await using var session = Session(target.Target);
        var schedule = new CampaignSchedule(
            CampaignSchedule.TestStageProfile,
            Seed: 9,
            DurationMs: 1500,
            RequestTimeoutMs: 2000,
            Stages: 1,
            Groups: 1,
            Clients: [new CampaignClientPlan(0, CampaignTransport.Tls, 0, 0, [Op(OperationKind.Echo), Op(OperationKind.Pause, value: 20)])],
            Faults:
            [
                new CampaignFault(100, CampaignFaultKind.Stall, 0, 2900, Direction: FaultDirection.Upstream),
                new CampaignFault(150, CampaignFaultKind.Reset, 0),
                new CampaignFault(1200, CampaignFaultKind.HalfOpen, 0),
            ]);

        var report = await RunAsync(session, Replaying(schedule, shrink: false));

        Assert.True(report.FindingsByChecker.Count == 0, Describe(report));
        var run = Assert.Single(report.Runs);
        var network = run.NetworkCounters.ToDictionary(kv => kv.Key, kv => kv.Value);
        Assert.True(network["reset.connections"] >= 1 && network["halfOpen.connections"] >= 1, string.Join(' ', network));
        Assert.Equal(1, run.Ledger.Counter("connects.excusedByFault"));
        Assert.Equal(1, run.Ledger.Counter("liveness.probes"));
    }

    [Fact]
    public async Task DrawnMixedFaults_OverTwoSeeds_AreAppliedAndTheCorrectServerPasses()
    {
        await using var target = await InProcessTarget.StartAsync();

        var report = await DrawnSeedsAsync(target, 11, new ScheduleShape { ClientsMax = 5, Transports = target.Target.Transports, Faults = FaultMix.Mixed, DurationMs = 1200, RequestTimeoutMs = 2000 });

        Assert.True(report.FindingsByChecker.Count == 0, Describe(report));
        Assert.All(report.Runs, r => Assert.Equal(r.Schedule.Faults.Count, r.Ledger.Counter("faults.applied")));
    }
}
