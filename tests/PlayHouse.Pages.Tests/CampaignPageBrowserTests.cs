using System.Globalization;
using PlayHouse.Conformance;
using PlayHouse.Conformance.Flawed;
using PlayHouse.Sim.Cli;

namespace PlayHouse.Pages.Tests;

/// <summary>The summary page of <c>campaign --html</c> against a conformance server, loaded in headless Chromium.</summary>
[Collection(BrowserCollection.Name)]
public sealed class CampaignPageBrowserTests(HeadlessChromium chromium)
{
    [Fact]
    public async Task CampaignPage_AgainstAServerThatDropsReplies_ListsTheSeedsEachFailureWithItsReplayTheFaultsAndTheLatency()
    {
        // Every listener on a port the system picks: the TLS and HTTPS defaults are fixed ports other tests may hold.
        var options = new ConformanceServerOptions { TcpPort = 0, HttpPort = 0, TcpTlsPort = 0, HttpsPort = 0, Flaws = ConformanceFlaws.Parse("drop-reply:25") };
        await using var server = await ConformanceServer.StartAsync(options, TimeProvider.System);
        var folder = Path.Combine(HeadlessChromium.ArtifactsFolder, "campaign");
        var path = Path.Combine(folder, "campaign.html");
        var run = Cli(
            "campaign", "--target", "tcp://" + server.TcpEndPoint, "--http", server.HttpAddress.ToString().TrimEnd('/'), "--seeds", "2", "--start-seed", "1",
            "--duration", "300ms", "--transports", "tcp", "--workload", "storm", "--clients", "2", "--faults", "gentle", "--request-timeout-ms", "500",
            "--reruns", "1", "--no-shrink", "--schedule-out", Path.Combine(folder, "schedules"), "--html", path);

        Assert.True(run.ExitCode == 2, run.Output);
        var replays = run.Output.Split('\n').Where(l => l.Contains(" replay=", StringComparison.Ordinal)).Select(l => l[(l.IndexOf(" replay=", StringComparison.Ordinal) + " replay=".Length)..]).ToList();
        Assert.Equal(2, replays.Count);
        Assert.Contains($"html-file={path} outcomes=1 failures=2 timelines=2 in {Path.Combine(folder, "campaign-timelines")}", run.Output, StringComparison.Ordinal);

        await using var page = await chromium.OpenAsync(path);
        Assert.Equal("true", await page.Eval<string>("document.body.dataset.ready"));
        Assert.Equal(["seeds", "2", "0"], await page.Eval<string[]>("[...document.querySelectorAll('#outcome-table tr[data-scenario] td')].slice(0, 3).map(td => td.textContent)"));
        Assert.Equal(replays, await page.Eval<string[]>("[...document.querySelectorAll('#failure-table code.replay')].map(c => c.textContent)"));
        Assert.Contains("ExactlyOnceReply", await page.Eval<string>("document.getElementById('failure-table').textContent"), StringComparison.Ordinal);
        Assert.Equal(["echo"], await page.Eval<string[]>("[...document.querySelectorAll('#latency-chart path.latency-curve')].map(p => p.dataset.series)"));

        // The notes name the faults the schedule applied per kind, as the closing line of the command does.
        var notes = await page.Eval<string[]>("[...document.querySelectorAll('#notes span')].map(s => s.textContent)");
        var applied = run.Output.Split('\n').Single(l => l.StartsWith("faults.applied ", StringComparison.Ordinal))["faults.applied ".Length..];
        var appliedNote = Assert.Single(notes, n => n.StartsWith("faults applied: ", StringComparison.Ordinal));
        Assert.Equal(string.Join(", ", applied.Split(' ').Select(kv => kv.Replace('=', ' '))), appliedNote["faults applied: ".Length..]);
        Assert.Contains(notes, n => n.StartsWith("round trips: ", StringComparison.Ordinal));
        await page.Screenshot("campaign-summary");
        page.AssertNoErrors();

        // Each failing seed links the timeline of its first run, opened at its first finding, with its replay command.
        var links = await page.Eval<string[]>("[...document.querySelectorAll('#failure-table a.timeline-link')].map(a => a.getAttribute('href'))");
        Assert.Equal(["campaign-timelines/seed-1.html", "campaign-timelines/seed-2.html"], links.Select(l => l[..l.IndexOf('#', StringComparison.Ordinal)]));
        await using var timeline = await chromium.OpenAsync(Path.Combine(folder, links[0][..links[0].IndexOf('#', StringComparison.Ordinal)]), fragment: links[0][links[0].IndexOf('#', StringComparison.Ordinal)..]);
        Assert.Equal(1, await timeline.Eval<int>("document.querySelectorAll('#first-violation-marker').length"));
        Assert.Contains("[ExactlyOnceReply]", await timeline.Eval<string>("document.getElementById('violation-0').textContent"), StringComparison.Ordinal);
        Assert.Equal(replays[0], await timeline.Eval<string>("document.getElementById('replay').textContent"));
        var lanes = await timeline.Eval<string[]>("[...document.querySelectorAll('#lane-labels text')].map(t => t.dataset.lane)");
        Assert.Contains("target", lanes);
        Assert.Contains(lanes, l => l.StartsWith("path group-", StringComparison.Ordinal));
        Assert.Contains(lanes, l => l.StartsWith("client-0.", StringComparison.Ordinal));
        await timeline.Screenshot("campaign-summary-timeline");
        timeline.AssertNoErrors();
    }

    private static (int ExitCode, string Output) Cli(params string[] args)
    {
        var output = new StringWriter(CultureInfo.InvariantCulture) { NewLine = "\n" };
        var error = new StringWriter(CultureInfo.InvariantCulture) { NewLine = "\n" };
        var code = SimCli.Run(args, output, error);
        return (code, output + error.ToString());
    }
}
