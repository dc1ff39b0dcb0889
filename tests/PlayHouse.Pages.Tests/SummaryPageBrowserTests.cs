using PlayHouse.Sim.Cli;

namespace PlayHouse.Pages.Tests;

/// <summary>The summary pages the runner writes (swarm, zoo explain's timeline), loaded in headless Chromium.</summary>
[Collection(BrowserCollection.Name)]
public sealed class SummaryPageBrowserTests(HeadlessChromium chromium)
{
    [Fact]
    public async Task SwarmSummaryPage_WithAFlawedTwin_ListsOutcomesEachFailureWithItsReplayAndTimelineAndALatencyCurve()
    {
        var folder = Path.Combine(HeadlessChromium.ArtifactsFolder, "swarm");
        var path = Path.Combine(folder, "swarm.html");
        var run = Cli("swarm", "--scenario", "echo", "--seeds", "4", "--start-seed", "1", "--flaw", "B1", "--set", "clients=3", "--set", "requestsPerClient=10", "--parallel", "1", "--html", path);
        Assert.Equal(2, run.ExitCode);
        var replays = run.Output.Split('\n').Where(l => l.StartsWith("replay seed=", StringComparison.Ordinal)).Select(l => l[(l.IndexOf(": ", StringComparison.Ordinal) + 2)..]).ToList();
        Assert.NotEmpty(replays);
        Assert.Contains($"html-file={path} outcomes=1 failures={replays.Count} timelines={replays.Count}", run.Output, StringComparison.Ordinal);

        await using var page = await chromium.OpenAsync(path);
        Assert.Equal(["echo", "4", (4 - replays.Count).ToString(System.Globalization.CultureInfo.InvariantCulture)], await page.Eval<string[]>("[...document.querySelectorAll('#outcome-table tr[data-scenario] td')].slice(0, 3).map(td => td.textContent)"));
        Assert.Equal(replays, await page.Eval<string[]>("[...document.querySelectorAll('#failure-table code.replay')].map(c => c.textContent)"));
        Assert.Equal(1, await page.Eval<int>("document.querySelectorAll('#latency-chart path.latency-curve').length"));
        var link = await page.Eval<string>("document.querySelector('a.timeline-link').getAttribute('href')");
        await page.Screenshot("swarm-summary");
        page.AssertNoErrors();

        // The link opens the failing seed's timeline at its violation.
        await using var timeline = await chromium.OpenAsync(Path.Combine(folder, link[..link.IndexOf('#', StringComparison.Ordinal)]), fragment: link[link.IndexOf('#', StringComparison.Ordinal)..]);
        Assert.Equal(1, await timeline.Eval<int>("document.querySelectorAll('#first-violation-marker').length"));
        Assert.Equal(replays[0], await timeline.Eval<string>("document.getElementById('replay').textContent"));
        timeline.AssertNoErrors();
    }

    [Fact]
    public async Task ZooExplainPage_OfAnEntry_ShowsTheFlawsViolationWhereItHappened()
    {
        var path = Path.Combine(HeadlessChromium.ArtifactsFolder, "zoo-explain-B12b.html");
        var run = Cli("zoo", "explain", "B12b", "--html", path);
        Assert.Equal(0, run.ExitCode);
        var violation = run.Output.Split('\n').Single(l => l.StartsWith("violation: ", StringComparison.Ordinal))["violation: ".Length..];

        await using var page = await chromium.OpenAsync(path, fragment: "#t=0");
        Assert.Equal(1, await page.Eval<int>("document.querySelectorAll('#first-violation').length"));
        // The page lists the first violation as "time [Checker] message"; the command printed the same message.
        var first = await page.Eval<string>("document.getElementById('violation-0').textContent");
        Assert.Contains(first[(first.IndexOf("] ", StringComparison.Ordinal) + 2)..], violation, StringComparison.Ordinal);
        await page.Eval<bool>("document.getElementById('first-violation-link').dispatchEvent(new MouseEvent('click', { bubbles: true }))");
        await page.Settle();
        Assert.Equal(1, await page.Eval<int>("document.querySelectorAll('#first-violation-marker').length"));
        await page.Screenshot("zoo-explain-B12b");
        page.AssertNoErrors();
    }

    private static (int ExitCode, string Output) Cli(params string[] args)
    {
        var output = new StringWriter { NewLine = "\n" };
        var error = new StringWriter { NewLine = "\n" };
        var code = SimCli.Run(args, output, error);
        return (code, output + error.ToString());
    }
}
