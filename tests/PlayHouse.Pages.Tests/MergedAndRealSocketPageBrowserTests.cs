using System.Globalization;
using PlayHouse.Sim.Cli;

namespace PlayHouse.Pages.Tests;

/// <summary>
/// The summary of a merged sharded swarm (latency from the shards' histograms, timelines linked from the shard that
/// wrote them or the command that writes one) and the timelines of real-socket runs, loaded in headless Chromium.
/// </summary>
[Collection(BrowserCollection.Name)]
public sealed class MergedAndRealSocketPageBrowserTests(HeadlessChromium chromium)
{
    [Fact]
    public async Task SwarmMergePage_OfTwoShards_PlotsTheMergedLatencyAndLinksEachFailuresTimelineOrTheCommandThatWritesIt()
    {
        var folder = Path.Combine(HeadlessChromium.ArtifactsFolder, "swarm-merge");
        Directory.CreateDirectory(folder);
        string[] swarm = ["swarm", "--scenario", "echo", "--seeds", "6", "--start-seed", "1", "--flaw", "B1", "--set", "clients=3", "--set", "requestsPerClient=10", "--parallel", "1"];
        var withPages = Cli([.. swarm, "--shard", "0/2", "--json", Path.Combine(folder, "shard-0.json"), "--html", Path.Combine(folder, "shard-0.html")]);
        var withoutPages = Cli([.. swarm, "--shard", "1/2", "--json", Path.Combine(folder, "shard-1.json")]);
        var path = Path.Combine(folder, "merged.html");
        var merged = Cli("swarm", "merge", Path.Combine(folder, "shard-0.json"), Path.Combine(folder, "shard-1.json"), "--html", path);
        var failedSeeds = FailedSeeds(withPages.Output).Concat(FailedSeeds(withoutPages.Output)).Order().ToList();
        Assert.True(FailedSeeds(withPages.Output).Count > 0 && FailedSeeds(withoutPages.Output).Count > 0, withPages.Output + withoutPages.Output);
        Assert.Equal(2, merged.ExitCode);

        await using var page = await chromium.OpenAsync(path);
        Assert.Equal(["echo"], await page.Eval<string[]>("[...document.querySelectorAll('#latency-chart path.latency-curve')].map(p => p.dataset.series)"));
        Assert.Equal(failedSeeds.Select(s => "seed " + s), await page.Eval<string[]>("[...document.querySelectorAll('#failure-table tr.failure td:first-child')].map(td => td.textContent)"));

        // The first shard wrote its failures' timelines: linked from the merged page, relative to it.
        var links = await page.Eval<string[]>("[...document.querySelectorAll('#failure-table a.timeline-link')].map(a => a.getAttribute('href'))");
        Assert.Equal(FailedSeeds(withPages.Output).Select(s => $"shard-0-timelines/seed-{s}.html"), links.Select(l => l[..l.IndexOf('#', StringComparison.Ordinal)]));

        // The second did not: its failures carry the command that writes one.
        var commands = await page.Eval<string[]>("[...document.querySelectorAll('#failure-table code.timeline-command')].map(c => c.textContent)");
        Assert.Equal(FailedSeeds(withoutPages.Output).Count, commands.Length);
        await page.Screenshot("swarm-merge-summary");
        page.AssertNoErrors();

        await using (var timeline = await chromium.OpenAsync(Path.Combine(folder, links[0][..links[0].IndexOf('#', StringComparison.Ordinal)]), fragment: links[0][links[0].IndexOf('#', StringComparison.Ordinal)..]))
        {
            Assert.Equal(1, await timeline.Eval<int>("document.querySelectorAll('#first-violation-marker').length"));
            timeline.AssertNoErrors();
        }

        // The command runs as printed (less the dotnet run prefix) and writes the seed's timeline.
        var written = Path.Combine(folder, "from-command.html");
        var arguments = PlayHouse.Fixtures.Zoo.ZooRunner.SplitArguments(commands[0][(SimCli.ReplayPrefix.Length - "run".Length)..]);
        Assert.Equal("--html", arguments[^2]);
        arguments[^1] = written;
        Assert.Equal(2, Cli([.. arguments]).ExitCode);
        await using var fromCommand = await chromium.OpenAsync(written);
        Assert.Equal(1, await fromCommand.Eval<int>("document.querySelectorAll('#first-violation-marker').length"));
        fromCommand.AssertNoErrors();
    }

    [Fact]
    public async Task RealSocketRunPage_OfTheStrayReplyTwinUnderALatencySpike_DrawsAnArrowPerRequestAndMarksTheViolation()
    {
        var path = Path.Combine(HeadlessChromium.ArtifactsFolder, "tcp-run-B12a.html");
        // Real sockets do not replay: on a busy machine another checker can fail the run first, so the run is repeated
        // (at most three times) until the stray reply is the failure it reports.
        var runTwin = () => Cli("run", "--scenario", "stage-peers", "--mode", "tcp", "--seed", "3", "--set", "playServers=2", "--set", "requestTimeoutMs=400",
            "--set", "faults=100ms:latencychange:::300;900ms:latencychange:::5", "--flaw", "B12a", "--html", path);
        var run = runTwin();
        for (var attempt = 1; attempt < 3 && !run.Output.Contains("failure=StrayReply: ", StringComparison.Ordinal); attempt++)
        {
            run = runTwin();
        }

        Assert.True(run.ExitCode == 2, run.Output);
        Assert.Contains("failure=StrayReply: ", run.Output, StringComparison.Ordinal);
        var issued = long.Parse(Value(run.Output, "requests.issued"), CultureInfo.InvariantCulture);
        Assert.Contains($"html-file={path} ", run.Output, StringComparison.Ordinal);

        await using var page = await chromium.OpenAsync(path, height: 1200);
        var lanes = await page.Eval<string[]>("[...document.querySelectorAll('#lane-labels text')].map(t => t.dataset.lane)");
        Assert.Contains("client-1", lanes);
        Assert.Contains("play-1", lanes);
        Assert.Contains(lanes, l => l.StartsWith("play-", StringComparison.Ordinal) && l.Contains('/', StringComparison.Ordinal));
        Assert.Equal(issued, await page.Eval<int>("window.timelineStats.messages"));
        if (await page.Eval<string>("window.timelineView.mode") == "detailed")
        {
            Assert.Equal(issued, await page.Eval<int>("document.querySelectorAll('#arrows line.arrow').length"));
        }

        Assert.Equal(1, await page.Eval<int>("document.querySelectorAll('#first-violation-marker').length"));
        Assert.Contains("[StrayReply]", await page.Eval<string>("document.getElementById('violation-0').textContent"), StringComparison.Ordinal);
        Assert.Equal(2, await page.Eval<int>("new Set([...document.querySelectorAll('#faults rect.fault-latencychange')].map(r => r.dataset.fault)).size"));
        await page.Screenshot("tcp-run-B12a");
        page.AssertNoErrors();
    }

    [Fact]
    public async Task RealSocketSwarmPage_OfASeedPastItsTimeLimit_LinksTheTimelineRecordedDuringTheRun()
    {
        var folder = Path.Combine(HeadlessChromium.ArtifactsFolder, "swarm-tcp");
        var path = Path.Combine(folder, "swarm-tcp.html");

        // A workload far too large for one second fails every seed for liveness; its run was recorded as it happened.
        var run = Cli("swarm", "--scenario", "echo", "--mode", "tcp", "--seeds", "1", "--start-seed", "5", "--time-limit-s", "1", "--set", "requestsPerClient=1000000", "--parallel", "1", "--html", path);
        Assert.True(run.ExitCode == 3, run.Output);
        Assert.Contains($"html-file={path} outcomes=1 failures=1 timelines=1", run.Output, StringComparison.Ordinal);

        await using var page = await chromium.OpenAsync(path);
        Assert.Equal(1, await page.Eval<int>("document.querySelectorAll('#latency-chart path.latency-curve').length"));
        var link = await page.Eval<string>("document.querySelector('a.timeline-link').getAttribute('href')");
        page.AssertNoErrors();

        await using var timeline = await chromium.OpenAsync(Path.Combine(folder, link[..link.IndexOf('#', StringComparison.Ordinal)]), fragment: link[link.IndexOf('#', StringComparison.Ordinal)..]);
        var lanes = await timeline.Eval<string[]>("[...document.querySelectorAll('#lane-labels text')].map(t => t.dataset.lane)");
        Assert.Contains("client-1", lanes);
        Assert.Contains("play-1/1", lanes);
        Assert.True(await timeline.Eval<int>("window.timelineStats.messages") > 0);
        Assert.Equal(1, await timeline.Eval<int>("document.querySelectorAll('#first-violation-marker').length"));
        Assert.Contains("clock wall", await timeline.Eval<string>("document.body.textContent"), StringComparison.Ordinal);
        Assert.Contains("recorded: ", await timeline.Eval<string>("document.getElementById('notes').textContent"), StringComparison.Ordinal);
        await timeline.Screenshot("swarm-tcp-timeline");
        timeline.AssertNoErrors();
    }

    private static List<ulong> FailedSeeds(string output) =>
        [.. output.Split('\n').Where(l => l.StartsWith("replay seed=", StringComparison.Ordinal)).Select(l => ulong.Parse(l["replay seed=".Length..l.IndexOf(':', StringComparison.Ordinal)], CultureInfo.InvariantCulture))];

    private static string Value(string output, string key) =>
        output.Split('\n').Single(l => l.StartsWith(key + "=", StringComparison.Ordinal))[(key.Length + 1)..];

    private static (int ExitCode, string Output) Cli(params string[] args)
    {
        var output = new StringWriter(CultureInfo.InvariantCulture) { NewLine = "\n" };
        var error = new StringWriter(CultureInfo.InvariantCulture) { NewLine = "\n" };
        var code = SimCli.Run(args, output, error);
        return (code, output + error.ToString());
    }
}
