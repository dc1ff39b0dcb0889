using static PlayHouse.Campaign.Tests.Campaigns;

namespace PlayHouse.Campaign.Tests;

/// <summary>Short campaigns against the conformance server, started by the test, over each transport.</summary>
public sealed class ConformanceCampaignTests
{
    /// <summary>Every workload of the profile, on three clients of one stage, for half a second.</summary>
    internal static CampaignSchedule EveryWorkload(CampaignTransport transport) => Schedule(
        durationMs: 500,
        requestTimeoutMs: 5000,
        stages: 1,
        Client(0, transport, 0, Op(OperationKind.Echo, 200, 16), Op(OperationKind.Fail, 2, value: 4321), Op(OperationKind.Unknown, 2), Op(OperationKind.Heartbeat, 2), Op(OperationKind.Broadcast, 3), Op(OperationKind.Large), Op(OperationKind.NoResponse), Op(OperationKind.AuthRefused), Op(OperationKind.Reconnect)),
        Client(1, transport, 0, Op(OperationKind.Echo, 100, 8), Op(OperationKind.Broadcast, 2), Op(OperationKind.Heartbeat), Op(OperationKind.NoResponse)),
        Client(2, transport, 0, Op(OperationKind.Echo, 50, 4), Op(OperationKind.Pause, value: 5)));

    [Theory]
    [InlineData(CampaignTransport.Tcp)]
    [InlineData(CampaignTransport.Tls)]
    [InlineData(CampaignTransport.Ws)]
    public async Task ShortCampaign_OverEachTransport_IsCleanAndRunsEveryWorkload(CampaignTransport transport)
    {
        await using var target = await InProcessTarget.StartAsync();
        await using var session = Session(target.Target);

        var report = await RunAsync(session, Replaying(EveryWorkload(transport), shrink: false));

        Assert.True(report.FindingsByChecker.Count == 0, Describe(report));
        Assert.Equal(CampaignExitCodes.Pass, CampaignExitCodes.Of(report));
        var ledger = Assert.Single(report.Runs).Ledger;
        Assert.True(ledger.Counter("roundTrips") >= 350, Describe(report));
        Assert.True(ledger.Counter("broadcasts.delivered") >= 5, Describe(report));
        Assert.True(ledger.Counter("timeouts.expected") >= 1, Describe(report));
        Assert.True(ledger.Counter("authRefused") >= 1, Describe(report));
        Assert.True(ledger.Counter("reconnects") >= 1, Describe(report));
        Assert.Equal(3, ledger.Counter("liveness.probes"));
    }

    [Fact]
    public async Task Campaign_MixingTransportsOverDrawnSeeds_IsClean()
    {
        await using var target = await InProcessTarget.StartAsync();

        var report = await DrawnSeedsAsync(target, 3, new ScheduleShape { ClientsMax = 6, Transports = target.Target.Transports, DurationMs = 400, RequestTimeoutMs = 5000 });

        Assert.True(report.FindingsByChecker.Count == 0, Describe(report));
        Assert.True(report.RoundTrips > 0, Describe(report));
    }

    [Fact]
    public async Task Campaign_AgainstAClosedPort_ReportsTheTargetRefusedAndStops()
    {
        var port = FreePort();
        var target = new CampaignTarget { Host = "127.0.0.1", Tcp = new System.Net.IPEndPoint(System.Net.IPAddress.Loopback, port), Http = new Uri($"http://127.0.0.1:{port}/") };
        await using var session = Session(target);

        var report = await RunAsync(session, new CampaignOptions { Seeds = 3, StartSeed = 1, Shape = new ScheduleShape { DurationMs = 200 } });

        Assert.Equal(TargetState.Refused, report.Target);
        Assert.Contains("refused", report.TargetDetail, StringComparison.OrdinalIgnoreCase);
        Assert.Single(report.Runs);
        Assert.Equal(CampaignExitCodes.TargetRefused, CampaignExitCodes.Of(report));
    }

    [Fact]
    public async Task Campaign_WhenTheTargetDiesMidCampaign_ReportsItDeadAndKeepsTheRunsBefore()
    {
        await using var child = await ChildTarget.StartAsync();
        using var monitor = new TargetMonitor(child.Pid, TimeProvider.System, TimeSpan.FromMilliseconds(100));
        await using var session = Session(child.Target, monitor: monitor);
        var options = new CampaignOptions { Seeds = 4, StartSeed = 1, Shrink = false, Shape = new ScheduleShape { ClientsMax = 3, DurationMs = 300, RequestTimeoutMs = 5000 } };
        var lines = new List<string>();
        var runner = new CampaignRunner(session, options, line =>
        {
            lines.Add(line);
            if (line.StartsWith("seed=1 outcome=", StringComparison.Ordinal))
            {
                child.Kill();
            }
        }, path => path);

        var report = await runner.RunAsync();

        Assert.Equal(TargetState.Died, report.Target);
        Assert.Equal(CampaignExitCodes.TargetDied, CampaignExitCodes.Of(report));
        Assert.Equal(2, report.Runs.Count);
        Assert.False(report.Runs[0].Failed, Describe(report));
        Assert.Contains(lines, l => l.StartsWith("target=died", StringComparison.Ordinal));
    }

    [Fact]
    public async Task HostileRows_WhenTheTargetDiesOnARow_StopThereAndNameThatRow()
    {
        await using var child = await ChildTarget.StartAsync();
        using var monitor = new TargetMonitor(child.Pid, TimeProvider.System, TimeSpan.FromMilliseconds(100));
        await using var session = Session(child.Target, monitor: monitor);
        Assert.NotNull(monitor.SampleNow());
        var probe = new HostileProbe(session, TimeSpan.FromSeconds(2));

        // The process is gone by the first row, as a target that dies on a malformed length is by the next.
        child.Kill();
        for (var i = 0; i < 100 && monitor.IsAlive(); i++)
        {
            await Task.Delay(50);
        }

        var rows = await probe.RunAsync(_ => { });

        var row = Assert.Single(rows);
        Assert.False(row.GoodClientServed);
        Assert.Equal("negative length", probe.DiedAfter);
    }

    [Fact]
    public async Task HostileRows_AgainstTheConformanceServer_EachHasAnOutcomeAndTheGoodClientIsServed()
    {
        await using var target = await InProcessTarget.StartAsync();
        await using var session = Session(target.Target);

        var rows = await new HostileProbe(session, TimeSpan.FromSeconds(3)).RunAsync(_ => { });

        Assert.Equal(15, rows.Count);
        Assert.All(rows, r => Assert.True(r.GoodClientServed, r.ToString()));
        string Outcome(string name) => rows.Single(r => r.Name == name).Outcome;
        Assert.Matches("closed|reset", Outcome("negative length"));
        Assert.Matches("closed|reset", Outcome("length past the largest body"));
        Assert.Contains("answered @Heart@Beat@", Outcome("heartbeat before authentication"), StringComparison.Ordinal);
        Assert.Contains("answered AuthenticateReply error-code 0", Outcome("a frame in 1-byte pieces"), StringComparison.Ordinal);
        // The refusal comes straight from the dispatcher, so it may overtake the join's reply.
        Assert.Matches("EchoRequest error-code [1-9]", Outcome("message for a stage the actor is not in"));
        Assert.Contains("AuthenticateReply error-code 0", Outcome("message for a stage the actor is not in"), StringComparison.Ordinal);
        Assert.Matches("closed|reset", Outcome("first message not authentication"));
        Assert.Matches("closed|reset", Outcome("a frame started, then silence"));
        Assert.Matches("closed|reset", Outcome("a client that stops reading"));
        Assert.Matches("closed|reset", Outcome("plain bytes on the TLS port"));
        Assert.Contains("closed by the target", Outcome("a text message on the WebSocket"), StringComparison.Ordinal);
    }

    private static int FreePort()
    {
        using var listener = new System.Net.Sockets.TcpListener(System.Net.IPAddress.Loopback, 0);
        listener.Start();
        return ((System.Net.IPEndPoint)listener.LocalEndpoint).Port;
    }
}
