using System.Text;
using PlayHouse.Fixtures.Scenarios;
using PlayHouse.Simulation.Runs;
using Shouldly;

namespace PlayHouse.Properties.Tests.Snapshots;

/// <summary>
/// Canonical traces of small fixed-seed scenarios, committed next to this file as <c>*.approved.txt</c>. Any change
/// in behaviour (an event added, reordered or retimed) shows up as a reviewable diff. Verify.Xunit is not on the
/// package mirror, so these use Shouldly's approval files: on a mismatch Shouldly writes <c>*.received.txt</c>
/// beside the approved file (ignored by git) and fails; review the difference and, if it is intended, copy the
/// received file over the approved one. Nothing is scrubbed: every line is deterministic, and times stay in
/// virtual ticks of 100 ns.
/// </summary>
public sealed class TraceSnapshotTests
{
    [Fact]
    public void Trace_OfEchoWithThreeClientsFromSeed7_MatchesTheApprovedTrace() =>
        TraceOf("echo", 7, new SimOptions { Scenario = "echo", Clients = 3, RequestsPerClient = 6, InFlight = 2 })
            .ShouldMatchApproved(c => c.NoDiff().WithDiscriminator("echo-seed7"));

    [Fact]
    public void Trace_OfReconnectFromSeed11_MatchesTheApprovedTrace() =>
        TraceOf("reconnect", 11, ScenarioCatalog.Create("reconnect").Defaults with { Clients = 2, RequestsPerClient = 8, InFlight = 2 })
            .ShouldMatchApproved(c => c.NoDiff().WithDiscriminator("reconnect-seed11"));

    [Fact]
    public void Trace_OfApiCreateFromSeed3_MatchesTheApprovedTrace() =>
        TraceOf("api-create", 3, ScenarioCatalog.Create("api-create").Defaults with { Clients = 2, Stages = 1, RequestsPerClient = 6, InFlight = 1 })
            .ShouldMatchApproved(c => c.NoDiff().WithDiscriminator("api-create-seed3"));

    [Fact]
    public void Trace_OfTheSameRunTwice_IsTheSameText()
    {
        var options = new SimOptions { Scenario = "echo", Clients = 3, RequestsPerClient = 6, InFlight = 2 };

        var first = TraceOf("echo", 7, options);
        var second = TraceOf("echo", 7, options);

        second.ShouldBe(first);
        first.Split('\n').Length.ShouldBeGreaterThan(100);
    }

    [Fact]
    public void TraceHash_OfACrowdedRun_IsTheSameTwice()
    {
        // 4,000 clients keep thousands of events queued, so the event wheel hints coming events' objects, their
        // receivers and the drivers behind them into the cache: reading ahead must not change the run.
        var options = new SimOptions { Scenario = "echo", Clients = 4_000, RequestsPerClient = 3, InFlight = 4 };

        var first = SimRunner.Run(ScenarioCatalog.Create("echo"), 1, options);
        var second = SimRunner.Run(ScenarioCatalog.Create("echo"), 1, options);

        first.Passed.ShouldBeTrue(first.Failure);
        second.TraceHash.ShouldBe(first.TraceHash);
        first.RequestsSucceeded.ShouldBe(12_000);
    }

    /// <summary>The banner, every trace line in order, then the outcome and the trace hash.</summary>
    private static string TraceOf(string scenario, ulong seed, SimOptions options)
    {
        var trace = new StringWriter { NewLine = "\n" };
        var report = SimRunner.Run(ScenarioCatalog.Create(scenario), seed, options, new RunSettings { TraceWriter = trace });
        report.Passed.ShouldBeTrue(report.Failure);
        return new StringBuilder()
            .Append(report.Banner).Append('\n')
            .Append(trace)
            .Append("outcome=").Append(report.Outcome).Append('\n')
            .Append("trace-hash=").Append(report.TraceHash).Append('\n')
            .ToString();
    }
}
