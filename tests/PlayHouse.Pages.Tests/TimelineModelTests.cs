using PlayHouse.Fixtures.Scenarios;
using PlayHouse.Sim.Cli;
using PlayHouse.Simulation;
using PlayHouse.Simulation.Pages;
using PlayHouse.Simulation.Runs;

namespace PlayHouse.Pages.Tests;

/// <summary>The timeline model, the recorder and the pages' data, without a browser.</summary>
public sealed class TimelineModelTests
{
    [Fact]
    public void TraceRecord_ParsedFromEveryCanonicalLine_IsTheRecordThatWroteIt()
    {
        var listener = new Collector();
        var trace = new StringWriter { NewLine = "\n" };
        var recorder = new RecordingRecorder(listener);
        SimRunner.Run(ScenarioCatalog.Create("echo"), 3, ScenarioCatalog.Create("echo").Defaults.With([new("clients", "2"), new("requestsPerClient", "3")]), new RunSettings { TraceWriter = trace, Recorder = recorder });
        var lines = trace.ToString().Split('\n', StringSplitOptions.RemoveEmptyEntries);
        Assert.Equal(listener.Records.Count, lines.Length);
        for (var i = 0; i < lines.Length; i++)
        {
            Assert.True(TraceRecord.TryParse(lines[i], out var parsed), lines[i]);
            Assert.Equal(listener.Records[i], parsed);
        }

        Assert.False(TraceRecord.TryParse("12 kind 1 2", out _));
        Assert.False(TraceRecord.TryParse("x net.send 1 2 3", out _));
        Assert.True(TraceRecord.TryParse("5 drop 0 0 0 play-1 queue full Echo", out var spaced));
        Assert.Equal("play-1 queue full Echo", spaced.Text);
    }

    [Fact]
    public void Recorder_AttachedToARun_LeavesItsTraceHashUnchanged()
    {
        var scenario = ScenarioCatalog.Create("echo");
        var options = scenario.Defaults.With([new("clients", "3"), new("lossPercent", "5")]);
        var plain = SimRunner.Run(ScenarioCatalog.Create("echo"), 21, options);
        using var recorder = new SimTimelineRecorder();
        var recorded = SimRunner.Run(ScenarioCatalog.Create("echo"), 21, options, new RunSettings { Recorder = recorder });
        Assert.Equal(plain.TraceHash, recorded.TraceHash);
        Assert.Equal(plain.Events, recorded.Events);
        Assert.True(recorder.Records > 0);
        Assert.True(recorder.DecodedMessages > 0, "frames were decoded from the bytes on the wire");
    }

    [Fact]
    public void Recorder_FedASavedTraceFile_DrawsTheSameLanesAndMessagesAsTheLiveRunWithoutFrames()
    {
        var run = RecordedRun.Of("echo", 5, "clients=3", "requestsPerClient=5", "lossPercent=10", "faults=100ms:partition:play-1:api-1:0:0ms;300ms:heal");
        using var fromFile = new SimTimelineRecorder();
        foreach (var line in run.TraceLines)
        {
            Assert.True(TraceRecord.TryParse(line, out var record));
            fromFile.OnRecord(record);
        }

        var timeline = fromFile.ToTimeline(new TimelineMeta());
        Assert.Equal(run.Timeline.Events.Count, timeline.Events.Count);
        Assert.Equal(run.Timeline.Messages.Count, timeline.Messages.Count);
        Assert.All(timeline.Messages, m => Assert.Null(m.Frame));
        Assert.Equal(run.Timeline.Messages.Select(m => (m.SentTicks, m.DeliveredTicks, m.LostReason)), timeline.Messages.Select(m => (m.SentTicks, m.DeliveredTicks, m.LostReason)));

        // Every stream send is one message, and with retransmission (not resets) every one of them arrives.
        Assert.Equal(run.Count("net.send"), run.Timeline.Messages.Count);
        Assert.All(run.Timeline.Messages, m => Assert.NotNull(m.DeliveredTicks));
        Assert.Contains(run.Timeline.Faults, f => f.Kind == "partition");
    }

    [Fact]
    public void Recorder_OfARunWithResets_DrawsLostMessagesWhereTheyWereLost()
    {
        var run = RecordedRun.Of("echo", 9, "clients=4", "requestsPerClient=8", "lossPercent=8", "streamLoss=Reset");
        var lost = run.Timeline.Messages.Where(m => m.DeliveredTicks is null).ToList();
        Assert.NotEmpty(lost);
        Assert.All(lost, m => Assert.NotNull(m.LostReason));
        Assert.Equal(run.Count("net.loss-reset"), lost.Count(m => m.LostReason!.StartsWith("lost", StringComparison.Ordinal)));
        Assert.Contains(run.Timeline.Faults, f => f.Kind == "reset");
    }

    [Fact]
    public void TimelineBuilder_OrdersLanesByKindWithStagesUnderTheirServerAndNumbersAsNumbers()
    {
        var builder = new TimelineBuilder();
        var server = builder.Lane("play-1", "play-1", LaneKind.Server);
        builder.Lane("play-1/10", "stage 10", LaneKind.Stage, server);
        builder.Lane("client-10", "client-10", LaneKind.Client);
        builder.Lane("api-1", "api-1", LaneKind.Server);
        builder.Lane("play-1/2", "stage 2", LaneKind.Stage, server);
        var two = builder.Lane("client-2", "client-2", LaneKind.Client);
        var message = builder.Send(two, server, 10, "stream", 5);
        builder.Deliver(message, 30);
        Assert.Throws<InvalidOperationException>(() => builder.Deliver(message, 40));
        Assert.Throws<ArgumentOutOfRangeException>(() => builder.Send(two, 99, 0, "stream", 1));
        builder.Send(two, server, 50, "stream", 5);

        var timeline = builder.Build();
        Assert.Equal(["client-2", "client-10", "api-1", "play-1", "play-1/2", "play-1/10"], timeline.Lanes.Select(l => l.Id));
        Assert.Equal(3, timeline.Lanes[4].Parent);
        Assert.Equal((0, 3), (timeline.Messages[0].From, timeline.Messages[0].To));
        Assert.Equal("in flight when the trace ended", timeline.Messages[1].LostReason);
    }

    [Fact]
    public void TimelinePage_DataOverTheInlineLimit_IsCompressedAndSmallDataStaysPlainJson()
    {
        var small = new TimelineBuilder(new TimelineMeta { Title = "small </script> <b>" });
        small.Instant(small.Lane("a", "a", LaneKind.Other), 0, "other", "</script>");
        var page = Write(small.Build());
        Assert.Contains("data-encoding=\"json\"", page, StringComparison.Ordinal);
        // The data element and the two scripts end in "</script>"; the one inside the data was escaped.
        Assert.Equal(3, page.Split("</script>").Length - 1);
        Assert.Contains("<title>small &lt;/script&gt; &lt;b&gt;</title>", page, StringComparison.Ordinal);

        var large = new TimelineBuilder();
        var lane = large.Lane("a", "a", LaneKind.Other);
        for (var i = 0; i < 50_000; i++)
        {
            large.Instant(lane, i * 10L, "other", "event " + i);
        }

        Assert.Contains("data-encoding=\"gzip-base64\"", Write(large.Build()), StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("run", "--scenario", "echo", "--mode", "tcp", "--html", "/proc/no-such-folder/x.html")]
    [InlineData("run", "--scenario", "echo", "--seed", "1", "--html", "/proc/no-such-folder/x.html")]
    [InlineData("swarm", "--scenario", "echo", "--seeds", "1", "--html", "/proc/no-such-folder/x.html")]
    [InlineData("swarm", "--scenario", "echo", "--seeds", "1", "--mode", "tcp", "--html", "/proc/no-such-folder/x.html")]
    public void HtmlOption_WithoutAWritableFile_IsAUsageErrorOfOneLineBeforeAnyRun(params string[] args)
    {
        var output = new StringWriter();
        var error = new StringWriter();
        Assert.Equal(SimCli.UsageErrorExitCode, SimCli.Run(args, output, error));
        var line = Assert.Single(error.ToString().Split('\n', StringSplitOptions.RemoveEmptyEntries));
        Assert.StartsWith("error: ", line, StringComparison.Ordinal);
        Assert.Contains("--html", line, StringComparison.Ordinal);
    }

    [Fact]
    public void LiveTimelineRecorder_PastItsCap_KeepsTheFirstItemsCountsTheRestAndSaysSoOnThePage()
    {
        var clock = new SteppedClock();
        var recorder = new LiveTimelineRecorder(clock, itemsMax: 3);
        var client = recorder.Lane("client-1", "client-1", LaneKind.Client);
        var server = recorder.Lane("target", "target", LaneKind.Server);
        clock.Advance(TimeSpan.FromMilliseconds(2));
        var first = recorder.Send(client, server, recorder.Now, "request", 10, new MessageFrame("EchoRequest", 0, 1, 0, 1));
        recorder.Describe(first, new MessageFrame("EchoRequest", 7, 1, 0, 1));
        clock.Advance(TimeSpan.FromMilliseconds(3));
        recorder.Deliver(first, recorder.Now, new MessageFrame("EchoRequest", 7, 1, 0, 1) { Extra = [new("reply", "EchoReply")] });
        recorder.Lose(first, recorder.Now, "timed out");
        var second = recorder.Send(client, server, recorder.Now, "request", 10);
        recorder.Instant(client, recorder.Now, "connect", "connect");
        var third = recorder.Send(client, server, recorder.Now, "request", 10);
        recorder.Instant(client, recorder.Now, "close", "close");
        recorder.Deliver(third, recorder.Now);
        recorder.Violation(recorder.Now, "ExactlyOnceReply", "request 2 timed out", client);

        Assert.NotNull(second);
        Assert.Null(third);
        Assert.Equal(3, recorder.Items);
        Assert.Equal(2, recorder.Dropped);
        var timeline = recorder.Build(new TimelineMeta { Title = "capped" });
        Assert.Equal("wall", timeline.Meta.Clock);
        var delivered = timeline.Messages[0];
        Assert.Equal(2 * TimeSpan.TicksPerMillisecond, delivered.SentTicks);
        Assert.Equal(5 * TimeSpan.TicksPerMillisecond, delivered.DeliveredTicks);
        Assert.Null(delivered.LostReason);
        Assert.Equal(7, delivered.Frame!.MsgSeq);
        Assert.Equal("in flight when the trace ended", timeline.Messages[1].LostReason);
        Assert.Single(timeline.Events);
        Assert.Equal(5 * TimeSpan.TicksPerMillisecond, Assert.Single(timeline.Violations).TimeTicks);
        Assert.Contains(new KeyValuePair<string, string>("recorded", "3 events and messages (at most 3); 2 dropped past the cap"), timeline.Meta.Notes);
        Assert.Contains(new KeyValuePair<string, string>("messages ended twice", "1"), timeline.Meta.Notes);
    }

    private static string Write(Timeline timeline)
    {
        using var stream = new MemoryStream();
        TimelinePage.Write(timeline, stream);
        return System.Text.Encoding.UTF8.GetString(stream.ToArray());
    }

    /// <summary>A clock that moves only when told, at a frequency that is not ticks (as the system clock's is not).</summary>
    private sealed class SteppedClock : TimeProvider
    {
        private long _timestamp = 5_000_000;

        public override long TimestampFrequency => 1_000_000_000;

        public override long GetTimestamp() => _timestamp;

        public void Advance(TimeSpan by) => _timestamp += (long)(by.TotalSeconds * TimestampFrequency);
    }

    private sealed class Collector : ITraceListener
    {
        public List<TraceRecord> Records { get; } = [];

        public void OnRecord(in TraceRecord record) => Records.Add(record);
    }

    /// <summary>Listens to the trace of a run beside its writer.</summary>
    private sealed class RecordingRecorder(ITraceListener listener) : IRunRecorder
    {
        public void OnStart(PlayHouse.Simulation.Cluster.SimCluster cluster) => cluster.World.Trace.Listen(listener);

        public void OnEnd(PlayHouse.Simulation.Cluster.SimCluster cluster, PlayHouse.Simulation.Checkers.CheckerSet checkers) => cluster.World.Trace.Listen(null);
    }
}
