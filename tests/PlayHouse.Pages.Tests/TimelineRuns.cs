using PlayHouse.Fixtures.Scenarios;
using PlayHouse.Simulation.Pages;
using PlayHouse.Simulation.Runs;

namespace PlayHouse.Pages.Tests;

/// <summary>A simulated run recorded into a timeline, with its text trace and report, for the page tests.</summary>
internal sealed record RecordedRun(SimReport Report, Timeline Timeline, IReadOnlyList<string> TraceLines)
{
    public int Count(string kind) => TraceLines.Count(l => l.Split(' ')[1] == kind);

    /// <summary>Runs a scenario from a seed with <c>--set</c> style overrides, recording its timeline and its trace.</summary>
    public static RecordedRun Of(string scenario, ulong seed, params string[] sets)
    {
        var instance = ScenarioCatalog.Create(scenario);
        var options = instance.Defaults.With(sets.Select(s => new KeyValuePair<string, string>(s[..s.IndexOf('=', StringComparison.Ordinal)], s[(s.IndexOf('=', StringComparison.Ordinal) + 1)..])));
        var trace = new StringWriter { NewLine = "\n" };
        using var recorder = new SimTimelineRecorder();
        var report = SimRunner.Run(instance, seed, options, new RunSettings { TraceWriter = trace, Recorder = recorder });
        var timeline = recorder.ToTimeline(SimTimelineRecorder.MetaOf(report, $"{scenario} seed {seed}", "replay " + report.ReplayArguments));
        return new RecordedRun(report, timeline, trace.ToString().Split('\n', StringSplitOptions.RemoveEmptyEntries));
    }

    public string WritePage(string name)
    {
        var path = Path.Combine(HeadlessChromium.ArtifactsFolder, name + ".html");
        Directory.CreateDirectory(HeadlessChromium.ArtifactsFolder);
        TimelinePage.Write(Timeline, path);
        return path;
    }
}
