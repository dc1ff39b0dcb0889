using System.Buffers;
using System.Text.Json;
using HdrHistogram;
using PlayHouse.Simulation.Metrics;

namespace PlayHouse.Simulation.Pages;

/// <summary>How the runs of one scenario (or one zoo entry, one campaign workload) ended: counts per outcome.</summary>
public sealed record SummaryOutcome(string Scenario, int Runs, int Passed, IReadOnlyList<KeyValuePair<string, int>> Failed);

/// <summary>
/// One failure of a summary: what failed, how, the command that replays it, and the page of its timeline (a path or
/// address relative to the summary page), when one was written.
/// </summary>
public sealed record SummaryFailure(string Name, string Scenario, string Outcome, string Failure, string ReplayCommand)
{
    public string? TimelineLink { get; init; }

    /// <summary>Where no timeline was written: the command that writes one (shown instead of the link), or null.</summary>
    public string? TimelineCommand { get; init; }
}

/// <summary>One point of a latency distribution: the value at a percentile.</summary>
public readonly record struct LatencyPoint(double Percentile, double ValueMs);

/// <summary>
/// A latency distribution as HdrHistogram's percentile iteration gives it (the classic percentile plot: value against
/// 1/(1-p) on a log axis), with the count and the exact maximum.
/// </summary>
public sealed record LatencySeries(string Name, long Count, double MaxMs, IReadOnlyList<LatencyPoint> Points)
{
    /// <summary>Percentile steps per halving of the distance to 100%: HdrHistogram's own plots use 5.</summary>
    public const int TicksPerHalfDistance = 5;

    /// <summary>The distribution of a histogram of ticks (100 ns), in milliseconds.</summary>
    public static LatencySeries From(string name, LatencyHistogram histogram)
    {
        ArgumentNullException.ThrowIfNull(histogram);
        var points = new List<LatencyPoint>();
        if (histogram.Count > 0)
        {
            foreach (var step in histogram.Histogram.Percentiles(TicksPerHalfDistance))
            {
                // The exact maximum caps each value, as LatencyHistogram's percentiles do.
                var ticks = Math.Min(step.ValueIteratedTo, histogram.Max);
                points.Add(new LatencyPoint(step.PercentileLevelIteratedTo, ticks / (double)TimeSpan.TicksPerMillisecond));
                if (step.PercentileLevelIteratedTo >= 100)
                {
                    break;
                }
            }
        }

        return new LatencySeries(name, histogram.Count, histogram.Max / (double)TimeSpan.TicksPerMillisecond, points);
    }
}

/// <summary>A summary page's content: outcomes per scenario, each failure with its replay command and timeline, latency distributions.</summary>
public sealed record Summary(string Title, IReadOnlyList<SummaryOutcome> Outcomes, IReadOnlyList<SummaryFailure> Failures, IReadOnlyList<LatencySeries> Latencies)
{
    /// <summary>Lines under the title (the command, the seed range, the machine ...).</summary>
    public IReadOnlyList<KeyValuePair<string, string>> Notes { get; init; } = [];
}

/// <summary>Writes a <see cref="Summary"/> as one self-contained HTML page (<c>swarm</c>, <c>zoo run</c>, a campaign).</summary>
/// <remarks>Stateless; safe from any thread.</remarks>
public static class SummaryPage
{
    public static void Write(Summary summary, string path)
    {
        ArgumentNullException.ThrowIfNull(summary);
        PageDocument.WriteFile(path, stream => Write(summary, stream));
    }

    public static void Write(Summary summary, Stream output)
    {
        ArgumentNullException.ThrowIfNull(summary);
        ArgumentNullException.ThrowIfNull(output);
        var buffer = new ArrayBufferWriter<byte>(1 << 14);
        using (var json = new Utf8JsonWriter(buffer))
        {
            JsonSerializer.Serialize(json, summary, SummaryJson.Options);
        }

        PageDocument.Write(output, summary.Title, "summary", buffer.WrittenSpan, "summary.js");
    }

    private static class SummaryJson
    {
        public static readonly JsonSerializerOptions Options = new() { PropertyNamingPolicy = JsonNamingPolicy.CamelCase };
    }
}
