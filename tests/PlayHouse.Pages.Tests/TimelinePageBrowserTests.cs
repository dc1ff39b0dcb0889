using System.Globalization;
using PlayHouse.Simulation.Pages;
using Xunit.Abstractions;

namespace PlayHouse.Pages.Tests;

/// <summary>Timeline pages of real runs, loaded in headless Chromium: lanes, arrows, the violation marker, filters, details.</summary>
[Collection(BrowserCollection.Name)]
public sealed class TimelinePageBrowserTests(HeadlessChromium chromium, ITestOutputHelper output)
{
    [Fact]
    public async Task TimelinePage_OfAnEchoRun_DrawsEveryLaneAndOneArrowPerSentMessage()
    {
        var run = RecordedRun.Of("echo", 7, "clients=3", "requestsPerClient=4");
        Assert.True(run.Report.Passed, run.Report.Failure);
        var sends = run.Count("net.send");
        Assert.Equal(sends, run.Timeline.Messages.Count);

        await using var page = await chromium.OpenAsync(run.WritePage("timeline-echo"));
        Assert.Equal("true", await page.Eval<string>("document.body.dataset.ready"));
        var lanes = await page.Eval<string[]>("[...document.querySelectorAll('#lane-labels text')].map(t => t.dataset.lane)");
        Assert.Equal(["client-1", "client-2", "client-3", "path client-1 <-> play-1", "path client-2 <-> play-1", "path client-3 <-> play-1", "play-1", "play-1/1"], lanes.Where(l => l != "run" && l != "api-1"));
        Assert.Equal("detailed", await page.Eval<string>("document.getElementById('chart').dataset.mode"));
        Assert.Equal(sends, await page.Eval<int>("document.querySelectorAll('#arrows line.arrow').length"));
        Assert.Equal(0, await page.Eval<int>("document.querySelectorAll('#arrows line.arrow.lost').length"));
        Assert.Equal(run.Report.TraceHash, await page.Eval<string>("document.getElementById('trace-hash').textContent"));
        Assert.Equal(0, await page.Eval<int>("document.querySelectorAll('.violation-marker').length"));

        // Clicking an arrow shows the fields of the frame it carried.
        await page.Eval<bool>("document.querySelector('#arrows line.arrow').dispatchEvent(new MouseEvent('click', { bubbles: true }))");
        var details = await page.Eval<string>("document.getElementById('details').textContent");
        Assert.Contains("msgIdAuthenticateRequest", details, StringComparison.Ordinal);
        Assert.Contains("latency", details, StringComparison.Ordinal);
        await page.Screenshot("timeline-echo");
        page.AssertNoErrors();
    }

    [Fact]
    public async Task TimelinePage_FilteredByStageOrRequest_DrawsOnlyTheMatchingLanesAndArrows()
    {
        var run = RecordedRun.Of("echo", 11, "clients=4", "stages=2", "requestsPerClient=3");
        Assert.True(run.Report.Passed, run.Report.Failure);
        var lanes = run.Timeline.Lanes;
        var stageTwo = lanes.ToList().FindIndex(l => l.Id == "play-1/2");
        Assert.True(stageTwo >= 0, "the run has a second stage");
        var toStageTwo = run.Timeline.Messages.Count(m => m.From == stageTwo || m.To == stageTwo || m.Frame?.StageId == 2);
        var requestThree = run.Timeline.Messages.Count(m => m.Frame?.MsgSeq == 3);
        Assert.InRange(toStageTwo, 1, run.Timeline.Messages.Count - 1);

        await using var page = await chromium.OpenAsync(run.WritePage("timeline-filter"));
        await Type(page, "filter-stage", "2");
        var shown = await page.Eval<string[]>("[...document.querySelectorAll('#lane-labels text')].map(t => t.dataset.lane)");
        Assert.Contains("play-1/2", shown);
        Assert.DoesNotContain("play-1/1", shown);
        Assert.Equal(toStageTwo, await page.Eval<int>("document.querySelectorAll('#arrows line.arrow').length"));
        await page.Screenshot("timeline-filter-stage");

        await Type(page, "filter-stage", string.Empty);
        await Type(page, "filter-request", "3");
        Assert.Equal(requestThree, await page.Eval<int>("document.querySelectorAll('#arrows line.arrow').length"));
        Assert.All(await page.Eval<string[]>("[...document.querySelectorAll('#arrows line.arrow title')].map(t => t.textContent)"), title => Assert.Contains("#3:", title, StringComparison.Ordinal));
        page.AssertNoErrors();
    }

    [Fact]
    public async Task TimelinePage_OfAFlawedRun_MarksTheFirstViolationAtItsTimeAndLinksItsCheckersMessage()
    {
        // The B1 twin (an RTT tracker that pairs replies first-in first-out) breaks a checker from this seed.
        var run = RecordedRun.Of("echo", 2, "clients=3", "requestsPerClient=10", "messageBytes=1208", "inFlight=1", "latencyMsMin=11", "latencyMsMean=37", "latencyMsMax=148", "splitPercent=23", "streamLoss=Reset",
            "faults=230ms:crash:play-1::0:0ms;291ms:partition:play-1:api-1:0:0ms;956ms:restart:play-1::0:0ms;1690ms:latencychange:::154:0ms;2114ms:heal;3312ms:latencychange:::5:0ms", "flaws=B1");
        Assert.False(run.Report.Passed);
        var first = run.Timeline.FirstViolation!;
        Assert.Equal(run.Report.FirstViolationAt!.Value.Ticks, first.TimeTicks);
        var violationMs = first.TimeTicks / (double)TimeSpan.TicksPerMillisecond;

        await using var page = await chromium.OpenAsync(run.WritePage("timeline-violation"), fragment: "#t=" + violationMs.ToString(CultureInfo.InvariantCulture));
        Assert.Equal(1, await page.Eval<int>("document.querySelectorAll('#first-violation-marker').length"));

        // The marker stands where the violation happened: its x maps back to the violation's time within a pixel.
        var markerMs = await page.Eval<double>("(() => { const v = window.timelineView, x = +document.querySelector('#first-violation-marker line').getAttribute('x1'); return (v.from + (x - v.labelWidth) / v.plotWidth * (v.to - v.from)) / 10000; })()");
        var msPerPixel = await page.Eval<double>("(window.timelineView.to - window.timelineView.from) / window.timelineView.plotWidth / 10000");
        Assert.InRange(markerMs, violationMs - msPerPixel, violationMs + msPerPixel);

        // On the lane the checker's message names, and linked to that message.
        var laneRow = run.Timeline.Lanes[first.Lane].Id;
        var circleY = await page.Eval<double>("+document.querySelector('#first-violation-marker circle').getAttribute('cy')");
        var labelY = await page.Eval<double>($"+document.querySelector('#lane-labels text[data-lane=\"{laneRow}\"]').getAttribute('y')");
        Assert.InRange(circleY, labelY - 12, labelY + 2);
        Assert.Equal("#violation-0", await page.Eval<string>("document.getElementById('first-violation-marker').getAttribute('href')"));
        var listed = await page.Eval<string>("document.getElementById('violation-0').textContent");
        Assert.Contains($"[{first.Checker}] {first.Message}", listed, StringComparison.Ordinal);
        await page.Screenshot("timeline-violation");
        page.AssertNoErrors();
    }

    [Fact]
    public async Task TimelinePage_OfALargeTrace_CountsPerPixelWhenZoomedOutAndDrawsEachItemWhenZoomedIn()
    {
        // Synthetic, so the test stays short: 40 clients and a server, 150,000 events and 100,000 messages.
        var builder = new TimelineBuilder(new TimelineMeta { Title = "large synthetic timeline", TraceHash = "0123456789abcdef" });
        var server = builder.Lane("server-1", "server-1", LaneKind.Server);
        var clients = Enumerable.Range(1, 40).Select(i => builder.Lane($"client-{i}", $"client-{i}", LaneKind.Client)).ToArray();
        for (var i = 0; i < 100_000; i++)
        {
            var sent = i * 1_000L;
            var message = builder.Send(clients[i % clients.Length], server, sent, "stream", 64, new MessageFrame("Echo", (i % 60_000) + 1, 1, 0, 1));
            builder.Deliver(message, sent + 20_000 + (i % 7 * 1_000));
            builder.Instant(server, sent + 20_000, "turn", "Echo");
            if (i % 2 == 0)
            {
                builder.Instant(clients[i % clients.Length], sent, "request", "request");
            }
        }

        var timeline = builder.Build();
        var path = Path.Combine(HeadlessChromium.ArtifactsFolder, "timeline-large.html");
        TimelinePage.Write(timeline, path);
        var bytes = new FileInfo(path).Length;
        Assert.Contains("id=\"page-data\" data-encoding=\"gzip-base64\"", File.ReadAllText(path), StringComparison.Ordinal);

        // Tall enough that all 41 lanes are on screen (lanes scrolled out of view are not drawn).
        await using var page = await chromium.OpenAsync(path, height: 1500);
        Assert.Equal(41, await page.Eval<int>("document.querySelectorAll('#lane-labels text').length"));
        Assert.Equal("aggregated", await page.Eval<string>("window.timelineView.mode"));
        Assert.Equal(0, await page.Eval<int>("document.querySelectorAll('#arrows line.arrow').length"));
        var loadMs = await page.Eval<double>("window.timelineStats.loadMs");
        output.WriteLine($"{timeline.Events.Count} events, {timeline.Messages.Count} messages: {bytes} bytes ({(double)bytes / (timeline.Events.Count + timeline.Messages.Count):0.0} per item), loaded and drawn in {loadMs:0} ms (load average {File.ReadAllText("/proc/loadavg").Split(' ')[0]}, not a figure for the docs)");

        // Zoomed to 3 ms, every message that starts or ends inside (or crosses) the window is an arrow of its own.
        await SetWindow(page, "50", "53");
        Assert.Equal("detailed", await page.Eval<string>("window.timelineView.mode"));
        var from = 50 * TimeSpan.TicksPerMillisecond;
        var to = 53 * TimeSpan.TicksPerMillisecond;
        Assert.Equal(timeline.Messages.Count(m => m.SentTicks <= to && m.EndTicks >= from), await page.Eval<int>("document.querySelectorAll('#arrows line.arrow').length"));
        await page.Screenshot("timeline-large-zoomed");
        page.AssertNoErrors();

        // A page written by the runner (docs/timeline.md measures one of a million events this way) loads the same.
        if (Environment.GetEnvironmentVariable(MeasureVariable) is { Length: > 0 } measured)
        {
            await using var big = await chromium.OpenAsync(measured, height: 1000);
            var stats = await big.Eval<double[]>("[window.timelineStats.parsed - window.timelineStats.started, window.timelineStats.decoded - window.timelineStats.parsed, window.timelineStats.rendered - window.timelineStats.decoded, window.timelineStats.loadMs]");
            var items = await big.Eval<int[]>("[window.timelineStats.events, window.timelineStats.messages]");
            output.WriteLine($"{measured}: {new FileInfo(measured).Length} bytes; read and parsed {stats[0]:0} ms, decoded {stats[1]:0} ms, first draw {stats[2]:0} ms, total {stats[3]:0} ms (mode {await big.Eval<string>("window.timelineView.mode")}, {items[0]} events and {items[1]} messages; load average {File.ReadAllText("/proc/loadavg").Split(' ')[0]})");
            var redraw = await big.Eval<double>("(() => { const t0 = performance.now(); document.getElementById('zoom-reset').click(); return new Promise(r => requestAnimationFrame(() => r(performance.now() - t0))); })()");
            output.WriteLine($"a redraw of the whole run took {redraw:0} ms");
            big.AssertNoErrors();
        }
    }

    /// <summary>Names a page to load and time after the large-trace test (see docs/timeline.md).</summary>
    public const string MeasureVariable = "PLAYHOUSE_SIM_PAGE_MEASURE";

    private static async Task Type(LoadedPage page, string id, string text)
    {
        await page.Eval<bool>($"(() => {{ const i = document.getElementById('{id}'); i.value = {System.Text.Json.JsonSerializer.Serialize(text)}; return i.dispatchEvent(new Event('input')); }})()");
        await page.Page.WaitForFunctionAsync($"() => document.getElementById('status').textContent.length > 0");
        await Task.Delay(TimeSpan.FromMilliseconds(300));
        await page.Settle();
    }

    private static async Task SetWindow(LoadedPage page, string fromMs, string toMs)
    {
        await page.Eval<bool>($"(() => {{ document.getElementById('window-from').value = '{fromMs}'; const t = document.getElementById('window-to'); t.value = '{toMs}'; return t.dispatchEvent(new Event('change')); }})()");
        await page.Settle();
    }
}
