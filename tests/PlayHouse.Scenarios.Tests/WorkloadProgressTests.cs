using PlayHouse.Fixtures.Scenarios;
using PlayHouse.Simulation.Runs;

namespace PlayHouse.Scenarios.Tests;

public sealed class WorkloadProgressTests
{
    [Theory]
    [InlineData(5_000)]
    [InlineData(8)]
    public void Progress_ReportedAfterTheLastEvent_CountsWhatTheDriversCounted(int requestTimeoutMs)
    {
        // The progress text is kept as the drivers count rather than summed over them: after the last event of the
        // workload it must say what the drivers' own counts (the report's metrics) say, timeouts included when the
        // timeout is shorter than the latency.
        var scenario = ScenarioCatalog.Create("echo");
        var options = scenario.Defaults with { Clients = 3, RequestsPerClient = 20, LossPercent = 5, RequestTimeoutMs = requestTimeoutMs };
        string? last = null;

        var report = SimRunner.Run(scenario, 11, options, new RunSettings { Progress = p => last = p.Workload, ProgressEvents = 1 });

        var metrics = report.ScenarioMetrics.ToDictionary(m => m.Key, m => m.Value);
        Assert.Equal($"issued {metrics["requests.issued"]}/60 ok {metrics["requests.succeeded"]} failed {metrics["requests.failed"]}", last);

        // Both paths are covered: every request issued and answered, or timeouts (which end the run early) counted.
        Assert.Equal(requestTimeoutMs < 20, metrics["requests.failed"] != "0");
        Assert.True(requestTimeoutMs < 20 ? !report.Passed : metrics["requests.succeeded"] == "60", report.Failure);
    }
}
