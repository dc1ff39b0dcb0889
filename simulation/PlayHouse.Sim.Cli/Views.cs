using System.Globalization;
using System.Text.RegularExpressions;
using PlayHouse.Simulation.Runs;
using Spectre.Console;

namespace PlayHouse.Sim.Cli;

/// <summary>How the runner shows runs: plain lines when output goes to a file or pipe, Spectre widgets on a terminal.</summary>
internal interface IRunView
{
    /// <summary>Writes one line as is (banners, summaries, key=value results).</summary>
    void Line(string text);

    /// <summary>Runs <paramref name="run"/>, which takes the progress callback to hand to the runner, showing its progress.</summary>
    SimReport Run(string title, Func<Action<RunProgress>, SimReport> run);

    /// <summary>The closing report of a run, ending with the replay line when it failed.</summary>
    void Report(SimReport report);

    void Table(IReadOnlyList<string> headers, IReadOnlyList<IReadOnlyList<string>> rows);
}

/// <summary>Plain lines: a progress line every few wall seconds, the report as key=value lines.</summary>
/// <remarks>Not thread-safe; used from the thread that runs the simulation.</remarks>
internal sealed class PlainView(TextWriter output, IWallClock clock) : IRunView
{
    private static readonly TimeSpan ProgressInterval = TimeSpan.FromSeconds(2);

    public void Line(string text) => output.WriteLine(text);

    public SimReport Run(string title, Func<Action<RunProgress>, SimReport> run)
    {
        var started = clock.Elapsed;
        var last = started;
        return run(progress =>
        {
            var now = clock.Elapsed;
            if (now - last < ProgressInterval)
            {
                return;
            }

            last = now;
            output.WriteLine(ProgressText.Describe(title, progress, now - started));
        });
    }

    public void Report(SimReport report) => output.Write(report.ToText(SimCli.ReplayPrefix));

    public void Table(IReadOnlyList<string> headers, IReadOnlyList<IReadOnlyList<string>> rows)
    {
        var widths = headers.Select((h, i) => Math.Max(h.Length, rows.Count == 0 ? 0 : rows.Max(r => i < r.Count - 1 ? r[i].Length : 0))).ToArray();
        output.WriteLine(Format(headers, widths));
        foreach (var row in rows)
        {
            output.WriteLine(Format(row, widths));
        }
    }

    private static string Format(IReadOnlyList<string> cells, int[] widths) =>
        string.Join("  ", cells.Select((c, i) => i < cells.Count - 1 ? c.PadRight(widths[i]) : c)).TrimEnd();
}

/// <summary>Spectre.Console on a terminal: a live progress bar during runs and tables for reports and lists.</summary>
/// <remarks>Spectre refreshes the progress display on its own thread; the simulation itself stays on the calling thread.</remarks>
internal sealed class SpectreView(IAnsiConsole console, TextWriter output, IWallClock clock) : IRunView
{
    // Straight to the writer: Spectre would wrap long lines (banners, replay commands) at the console width.
    public void Line(string text) => output.WriteLine(text);

    public SimReport Run(string title, Func<Action<RunProgress>, SimReport> run)
    {
        SimReport? report = null;
        var started = clock.Elapsed;
        console.Progress()
            .AutoClear(true)
            .Columns(new SpinnerColumn(), new TaskDescriptionColumn { Alignment = Justify.Left }, new ProgressBarColumn(), new PercentageColumn(), new ElapsedTimeColumn())
            .Start(context =>
            {
                var task = context.AddTask(Markup.Escape(title), autoStart: true, maxValue: 1);
                task.IsIndeterminate = true;
                report = run(progress =>
                {
                    task.Description = Markup.Escape(ProgressText.Describe(title, progress, clock.Elapsed - started));
                    if (ProgressText.TryFraction(progress.Workload, out var done, out var total))
                    {
                        task.IsIndeterminate = false;
                        task.MaxValue = total;
                        task.Value = done;
                    }
                });
                task.Value = task.MaxValue;
                task.StopTask();
            });
        return report ?? throw new InvalidOperationException("The progress display ended without running the simulation.");
    }

    public void Report(SimReport report)
    {
        var table = new Table().Border(TableBorder.Rounded).AddColumn("report").AddColumn("value");
        string? replay = null;
        foreach (var line in report.ToText(SimCli.ReplayPrefix).Split('\n', StringSplitOptions.RemoveEmptyEntries))
        {
            var eq = line.IndexOf('=', StringComparison.Ordinal);
            var (key, value) = eq < 0 ? (line, string.Empty) : (line[..eq], line[(eq + 1)..]);
            if (key == "replay")
            {
                // Printed below the table, unwrapped, so it can be copied whole.
                replay = value;
                continue;
            }

            var style = key == "outcome" || value.StartsWith("FAIL", StringComparison.Ordinal) ? (report.Passed ? Color.Green : Color.Red) : Color.Default;
            table.AddRow(new Text(key), new Text(value, new Style(style)));
        }

        console.Write(table);
        if (replay is not null)
        {
            Line("replay=" + replay);
        }
    }

    public void Table(IReadOnlyList<string> headers, IReadOnlyList<IReadOnlyList<string>> rows)
    {
        var table = new Table().Border(TableBorder.Rounded);
        foreach (var header in headers)
        {
            table.AddColumn(Markup.Escape(header));
        }

        foreach (var row in rows)
        {
            table.AddRow([.. row.Select(cell => new Text(cell))]);
        }

        console.Write(table);
    }
}

/// <summary>The words of a progress update, shared by both views.</summary>
internal static partial class ProgressText
{
    public static string Describe(string title, RunProgress progress, TimeSpan wall) => string.Create(
        CultureInfo.InvariantCulture,
        $"progress {title} events={progress.Events} virtual-seconds={progress.VirtualTime.TotalSeconds:0.###} wall-seconds={wall.TotalSeconds:0.0} {progress.Workload}");

    /// <summary>Reads "done/total" from a workload's progress text (e.g. "issued 120/500 ..."), for a progress bar.</summary>
    public static bool TryFraction(string workload, out double done, out double total)
    {
        var match = FractionPattern().Match(workload ?? string.Empty);
        done = match.Success ? double.Parse(match.Groups[1].Value, CultureInfo.InvariantCulture) : 0;
        total = match.Success ? double.Parse(match.Groups[2].Value, CultureInfo.InvariantCulture) : 0;
        return match.Success && total > 0;
    }

    [GeneratedRegex(@"(\d+)/(\d+)")]
    private static partial Regex FractionPattern();
}
