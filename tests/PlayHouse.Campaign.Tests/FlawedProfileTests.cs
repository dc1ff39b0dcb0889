using System.Text.RegularExpressions;
using static PlayHouse.Campaign.Tests.Campaigns;

namespace PlayHouse.Campaign.Tests;

/// <summary>
/// The deliberately flawed profiles of the conformance server, each caught by the checker it breaks and shrunk by
/// reruns, while the correct server passes the same schedule.
/// </summary>
public sealed class FlawedProfileTests
{
    private static readonly CampaignSchedule Storms = Schedule(
        durationMs: 300,
        requestTimeoutMs: 2000,
        stages: 2,
        Client(0, CampaignTransport.Tcp, 0, Op(OperationKind.Echo, 60, 8), Op(OperationKind.Heartbeat)),
        Client(1, CampaignTransport.Tls, 1, Op(OperationKind.Echo, 40, 4), Op(OperationKind.Fail, 2, value: 1234)),
        Client(2, CampaignTransport.Ws, 0, Op(OperationKind.Unknown, 2), Op(OperationKind.Echo, 30, 2)));

    private static readonly CampaignSchedule Broadcasts = Schedule(
        durationMs: 300,
        requestTimeoutMs: 5000,
        stages: 1,
        Client(0, CampaignTransport.Tcp, 0, Op(OperationKind.Broadcast, 2), Op(OperationKind.Echo, 20, 4)),
        Client(1, CampaignTransport.Tcp, 0, Op(OperationKind.Broadcast, 2), Op(OperationKind.Echo, 20, 4)),
        Client(2, CampaignTransport.Ws, 0, Op(OperationKind.Echo, 10, 2), Op(OperationKind.Broadcast)));

    private static readonly CampaignSchedule Silences = Schedule(
        durationMs: 300,
        requestTimeoutMs: 500,
        stages: 1,
        Client(0, CampaignTransport.Tcp, 0, Op(OperationKind.Echo, 4, 2), Op(OperationKind.NoResponse, 2)),
        Client(1, CampaignTransport.Ws, 0, Op(OperationKind.Echo, 4, 2)));

    private static readonly CampaignSchedule Reconnects = Schedule(
        durationMs: 2000,
        requestTimeoutMs: 5000,
        stages: 1,
        Client(0, CampaignTransport.Tcp, 0, Op(OperationKind.Echo, 2), Op(OperationKind.Reconnect)),
        Client(1, CampaignTransport.Tcp, 0, Op(OperationKind.Echo, 2), Op(OperationKind.Reconnect)),
        Client(2, CampaignTransport.Tcp, 0, Op(OperationKind.Echo, 2), Op(OperationKind.Reconnect)));

    private static readonly ResourceBounds LeakBounds = new() { ThreadsSlack = 40, DescriptorsSlack = 40, ResidentGrowthMb = 512, Settle = TimeSpan.FromSeconds(3) };

    [Theory]
    [InlineData("drop-reply:25", "Storms", Checkers.ExactlyOnceReply)]
    [InlineData("duplicate-reply:25", "Storms", Checkers.ExactlyOnceReply)]
    [InlineData("broadcast-skips-member", "Broadcasts", Checkers.Broadcast)]
    [InlineData("answers-no-response", "Silences", Checkers.OwnReply)]
    public async Task FlawedProfile_IsCaughtAndShrunk_WhileTheCorrectServerPassesTheSameSchedule(string flaw, string scheduleName, string checker)
    {
        var schedule = scheduleName switch
        {
            "Storms" => Storms,
            "Broadcasts" => Broadcasts,
            _ => Silences,
        };
        await using (var flawed = await InProcessTarget.StartAsync(flaw))
        await using (var session = Session(flawed.Target))
        {
            var report = await RunAsync(session, Replaying(schedule, reruns: 2, shrinkRunsMax: 12));

            var failure = Assert.Single(report.Failures);
            Assert.Equal(checker, failure.First.FailedChecker);
            Assert.True(failure.Reproduced >= 1, Describe(report));
            Assert.True(failure.Minimal.Clients.Count < schedule.Clients.Count || failure.Minimal.OperationCount < schedule.OperationCount || failure.Minimal.DurationMs < schedule.DurationMs, failure.Minimal.Size);
            Assert.True(failure.MinimalPath is not null && File.Exists(failure.MinimalPath));
            Assert.Equal(failure.Minimal.ToJson(), CampaignSchedule.FromJson(await File.ReadAllTextAsync(failure.MinimalPath!)).ToJson());
        }

        await using var correct = await InProcessTarget.StartAsync();
        await using var correctSession = Session(correct.Target);
        var clean = await RunAsync(correctSession, Replaying(schedule, shrink: false));
        Assert.True(clean.FindingsByChecker.Count == 0, Describe(clean));
    }

    [Fact]
    public async Task SecondCopyOfAnEchoReply_IsReportedWithTheEchoItCarries_SoTheFindingNamesTheRequestItAnswered()
    {
        var echoes = Schedule(durationMs: 200, requestTimeoutMs: 2000, stages: 1, Client(0, CampaignTransport.Tcp, 0, Op(OperationKind.Echo, 8)));
        await using var flawed = await InProcessTarget.StartAsync("duplicate-reply:2");
        await using var session = Session(flawed.Target);

        var report = await RunAsync(session, Replaying(echoes, reruns: 0, shrink: false));

        var copies = report.Runs.Single().Ledger.Findings.Where(f => f.Checker == Checkers.ExactlyOnceReply && f.Detail.Contains("a second reply EchoReply", StringComparison.Ordinal)).ToList();
        Assert.NotEmpty(copies);
        Assert.All(copies, f => Assert.Matches(@"which already had its reply \(it echoes '[^']+' sequence -?\d+;", f.Detail));
    }

    [Fact]
    public async Task AnsweredNoResponseRequest_IsReportedWithTheEchoItCarries_WhileTheCorrectServerLetsItTimeOut()
    {
        // Each NoResponseRequest follows two echoes of the same connection, so the stage's latest echo is one of them.
        var silences = Schedule(durationMs: 200, requestTimeoutMs: 300, stages: 1, Client(0, CampaignTransport.Tcp, 0, Op(OperationKind.Echo, 2), Op(OperationKind.NoResponse, 2)));
        await using (var flawed = await InProcessTarget.StartAsync("answers-no-response"))
        await using (var session = Session(flawed.Target))
        {
            var report = await RunAsync(session, Replaying(silences, reruns: 0, shrink: false));

            var answered = report.Runs.Single().Ledger.Findings.Where(f => f.Checker == Checkers.OwnReply).ToList();
            Assert.NotEmpty(answered);
            Assert.All(answered, f =>
            {
                var named = Regex.Match(f.Detail, @"^NoResponseRequest \(connection (?<connection>\d+)\) was answered with EchoReply; the protocol never answers it \(it echoes '[^.']+\.0\.(?<echoConnection>\d+)\.(?<number>\d+)' sequence (?<sequence>\d+);");
                Assert.True(named.Success, f.Detail);
                Assert.Equal(named.Groups["connection"].Value, named.Groups["echoConnection"].Value);
                Assert.Equal(named.Groups["number"].Value, named.Groups["sequence"].Value);
            });
        }

        await using var correct = await InProcessTarget.StartAsync();
        await using var correctSession = Session(correct.Target);
        var clean = await RunAsync(correctSession, Replaying(silences, reruns: 0, shrink: false));
        var run = clean.Runs.Single();
        Assert.DoesNotContain(run.Ledger.Findings, f => f.Checker == Checkers.OwnReply);
        Assert.True(run.Ledger.Counter("timeouts.expected") >= 2, Describe(clean));
    }

    [Fact]
    public async Task LeakPerConnection_IsCaughtFromProc_WhileTheCorrectServerStaysWithinBounds()
    {
        await using (var flawed = await ChildTarget.StartAsync("leak-per-connection"))
        {
            using var monitor = new TargetMonitor(flawed.Pid, TimeProvider.System, TimeSpan.FromMilliseconds(200));
            Assert.NotNull(monitor.SampleNow());
            await using var session = Session(flawed.Target, monitor: monitor, bounds: LeakBounds);

            var report = await RunAsync(session, Replaying(Reconnects, reruns: 2, shrinkRunsMax: 6));

            var failure = Assert.Single(report.Failures);
            Assert.Equal(Checkers.TargetResources, failure.First.FailedChecker);
            Assert.Contains("threads", failure.First.Ledger.FirstFinding!.Detail, StringComparison.Ordinal);
        }

        await using var correct = await ChildTarget.StartAsync();
        using var correctMonitor = new TargetMonitor(correct.Pid, TimeProvider.System, TimeSpan.FromMilliseconds(200));
        Assert.NotNull(correctMonitor.SampleNow());
        await using var correctSession = Session(correct.Target, monitor: correctMonitor, bounds: LeakBounds);
        var clean = await RunAsync(correctSession, Replaying(Reconnects, shrink: false));
        Assert.True(clean.FindingsByChecker.Count == 0, Describe(clean));
        Assert.True(clean.Runs.Single().Ledger.Counter("connections") >= 60, Describe(clean));
        Assert.NotNull(correctMonitor.Last);
    }
}
