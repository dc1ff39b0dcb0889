using PlayHouse.Campaign;
using PlayHouse.Conformance;
using PlayHouse.Conformance.Flawed;
using PlayHouse.Simulation.Pages;

namespace PlayHouse.Pages.Tests;

/// <summary>The timeline of one campaign run against a conformance server, as its clients saw it, loaded in headless Chromium.</summary>
[Collection(BrowserCollection.Name)]
public sealed class CampaignTimelineBrowserTests(HeadlessChromium chromium)
{
    [Fact]
    public async Task CampaignTimeline_AgainstAServerThatDropsReplies_DrawsAnArrowPerRequestEachConnectionTheFaultAndTheFirstFinding()
    {
        // Every listener on a port the system picks: the TLS and HTTPS defaults are fixed ports other tests may hold.
        var options = new ConformanceServerOptions { TcpPort = 0, HttpPort = 0, TcpTlsPort = 0, HttpsPort = 0, Flaws = ConformanceFlaws.Parse("drop-reply:5") };
        await using var server = await ConformanceServer.StartAsync(options, TimeProvider.System);
        var target = new CampaignTarget { Host = "127.0.0.1", Tcp = server.TcpEndPoint, Http = server.HttpAddress, WebSocketPath = server.Options.WebSocketPath };

        // Two clients in two fault groups, a few echoes and a pause per round; a latency window on the first group only,
        // so the replies the server drops for the second one are findings.
        CampaignOperation[] plan = [new(OperationKind.Echo, Count: 6, Window: 2), new(OperationKind.Pause, Value: 60)];
        var schedule = new CampaignSchedule(
            CampaignSchedule.TestStageProfile, Seed: 7, DurationMs: 400, RequestTimeoutMs: 300, Stages: 1, Groups: 2,
            [new CampaignClientPlan(0, CampaignTransport.Tcp, 0, 0, plan), new CampaignClientPlan(1, CampaignTransport.Tcp, 0, 1, plan)],
            [new CampaignFault(100, CampaignFaultKind.Latency, 0, 150, 5)]);
        await using var session = new CampaignSession(target, TimeProvider.System, CampaignNetworks.For, stageIdBase: 1);
        var recorder = new LiveTimelineRecorder(TimeProvider.System);
        var run = await CampaignRun.RunAsync(schedule, session, recorder);
        Assert.True(run.Failed, run.Summary());
        var timeline = recorder.Build(new TimelineMeta { Title = "campaign seed 7", Seed = "7" });

        // One arrow per request the clients sent: every step's request, each authentication, each liveness probe.
        var ledger = run.Ledger;
        var requests = timeline.Messages.Where(m => m.Kind == "request").ToList();
        Assert.Equal(ledger.Counter("requests.sent") + ledger.Counter("requests.refusedByClient") + ledger.Counter("connections") + ledger.Counter("liveness.probes") + ledger.Counter("barriers"), requests.Count);
        Assert.All(requests, m => Assert.True(m.Frame!.MsgSeq > 0 || m.LostReason is not null, $"request sent at {m.SentTicks} has no sequence"));
        Assert.InRange(requests.Count(m => m.DeliveredTicks is not null), ledger.Counter("roundTrips"), requests.Count - 1);
        Assert.Contains(requests, m => m.LostReason == "timed out");
        Assert.Equal(0, recorder.Dropped);

        var lanes = timeline.Lanes.Select(l => l.Id).ToList();
        Assert.Equal(["client-0", "client-0.1", "client-1", "client-1.1", "path group-0", "path group-1", "target"], lanes);
        var fault = Assert.Single(timeline.Faults);
        Assert.Equal("latency", fault.Kind);
        Assert.InRange((fault.EndTicks - fault.StartTicks) / (double)TimeSpan.TicksPerMillisecond, 149.9, 150.1);
        Assert.Equal(["path group-0", "client-0.1"], fault.Lanes.Select(l => lanes[l]));
        var first = timeline.FirstViolation!;
        Assert.Equal(ledger.FirstFinding!.Checker, first.Checker);
        Assert.Equal(ledger.FirstFinding.Detail, first.Message);
        Assert.Equal("client-" + ledger.FirstFinding.Client, lanes[first.Lane]);

        var path = Path.Combine(HeadlessChromium.ArtifactsFolder, "campaign-timeline.html");
        TimelinePage.Write(timeline, path);
        await using var page = await chromium.OpenAsync(path, height: 700);
        Assert.Equal(lanes, await page.Eval<string[]>("[...document.querySelectorAll('#lane-labels text')].map(t => t.dataset.lane)"));
        Assert.Equal("detailed", await page.Eval<string>("window.timelineView.mode"));
        Assert.Equal(timeline.Messages.Count, await page.Eval<int>("document.querySelectorAll('#arrows line.arrow').length"));
        Assert.Equal(timeline.Messages.Count(m => m.DeliveredTicks is null), await page.Eval<int>("document.querySelectorAll('#arrows line.arrow.lost').length"));
        Assert.Equal(1, await page.Eval<int>("document.querySelectorAll('#first-violation-marker').length"));
        Assert.Contains($"[{first.Checker}] {first.Message}", await page.Eval<string>("document.getElementById('violation-0').textContent"), StringComparison.Ordinal);
        Assert.Contains("clock wall", await page.Eval<string>("document.body.textContent"), StringComparison.Ordinal);
        await page.Screenshot("campaign-timeline");

        // The actor filter keeps a client with its connections: client 1's lanes, the arrows from them and the lane they reach.
        await page.Eval<bool>("(() => { const i = document.getElementById('filter-actor'); i.value = '1'; return i.dispatchEvent(new Event('input')); })()");
        await page.Page.WaitForFunctionAsync("() => document.getElementById('status').textContent.length > 0");
        await Task.Delay(TimeSpan.FromMilliseconds(300));
        await page.Settle();
        Assert.Equal(["client-1", "client-1.1", "target"], await page.Eval<string[]>("[...document.querySelectorAll('#lane-labels text')].map(t => t.dataset.lane)"));
        var clientOne = timeline.Messages.Count(m => lanes[m.From].StartsWith("client-1", StringComparison.Ordinal) || lanes[m.To].StartsWith("client-1", StringComparison.Ordinal));
        Assert.Equal(clientOne, await page.Eval<int>("document.querySelectorAll('#arrows line.arrow').length"));
        await page.Screenshot("campaign-timeline-client-1");
        page.AssertNoErrors();
    }
}
