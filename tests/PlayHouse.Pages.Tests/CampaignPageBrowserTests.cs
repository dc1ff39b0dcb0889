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
        Assert.Contains($"html-file={path} outcomes=1 failures=2 timelines=0", run.Output, StringComparison.Ordinal);

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
    }

    private static (int ExitCode, string Output) Cli(params string[] args)
    {
        var output = new StringWriter(CultureInfo.InvariantCulture) { NewLine = "\n" };
        var error = new StringWriter(CultureInfo.InvariantCulture) { NewLine = "\n" };
        var code = SimCli.Run(args, output, error);
        return (code, output + error.ToString());
    }
}
