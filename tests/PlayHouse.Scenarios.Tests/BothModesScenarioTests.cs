using PlayHouse.Fixtures.Scenarios;
using PlayHouse.Fixtures.Workload;
using PlayHouse.Sim.Tcp;
using PlayHouse.Simulation.Runs;

namespace PlayHouse.Scenarios.Tests;

/// <summary>Every scenario with a TCP shape runs on both substrates, simulation and loopback TCP, judged by the same checkers.</summary>
public sealed class BothModesScenarioTests
{
    // The overload scenarios (slow consumer, clogged peer, slow reader, push flood) shape the simulated network and
    // clients in ways loopback TCP cannot, so they run in simulation only.
    public static TheoryData<string> ScenarioNames() => [.. ScenarioCatalog.Names.Where(n => TcpScenarioRunner.Supports(ScenarioCatalog.Create(n)))];

    [Theory]
    [MemberData(nameof(ScenarioNames))]
    public async Task Scenario_InSimulationAndOverTcp_PassesEveryChecker(string name)
    {
        var simScenario = ScenarioCatalog.Create(name);
        var sim = SimRunner.Run(simScenario, 7, simScenario.Defaults);

        var tcpScenario = ScenarioCatalog.Create(name);
        var tcp = await TcpScenarioRunner.RunAsync(tcpScenario, tcpScenario.Defaults, new TcpRunSettings { Time = TimeProvider.System, TimeLimit = TimeSpan.FromSeconds(40) });

        Assert.True(sim.Passed, $"{name} (sim): {sim.Failure}");
        Assert.True(tcp.Passed, $"{name} (tcp): {tcp.Failure}\n{tcp.ToText()}");
        Assert.True(tcp.RequestsSucceeded > 0, $"{name} (tcp) completed no request");
        Assert.All(tcp.Pools, p => Assert.Equal(0, p.Outstanding));

        // The performance checkers measure the simulation thread and its virtual time; TCP runs do not run them.
        Assert.Equal(sim.Verdicts.Select(v => v.CheckerName).Except(PerformanceCheckers.SimulationOnlyCheckerNames).Order(), tcp.Verdicts.Select(v => v.CheckerName).Order());
    }

    // Send mode is the send-push and broadcast scenarios' own (the echo stage answers requests only).
    [Theory]
    [InlineData(WorkloadMode.RequestAsync)]
    [InlineData(WorkloadMode.RequestCallback)]
    public async Task EchoOverTcp_InBothRequestModes_PassesEveryChecker(WorkloadMode mode)
    {
        var scenario = ScenarioCatalog.Create("echo");
        var options = scenario.Defaults with { Mode = mode, InFlight = 8, WarmUpPerClient = 5 };

        var report = await TcpScenarioRunner.RunAsync(scenario, options, new TcpRunSettings { Time = TimeProvider.System, TimeLimit = TimeSpan.FromSeconds(40) });

        Assert.True(report.Passed, $"{mode}: {report.Failure}\n{report.ToText()}");
        Assert.Equal(options.Clients * (options.WarmUpPerClient + options.RequestsPerClient), report.RequestsSucceeded);

        // Every reply went through the RTT tracker and was judged; only the measured phase fills the histogram.
        Assert.Equal(report.RequestsSucceeded, report.RttRepliesJudged);
        Assert.Equal(options.Clients * options.RequestsPerClient, report.RttSamples);
    }

    [Fact]
    public async Task TcpRun_WithRefusedRequests_FailsWithTheReason()
    {
        // A mailbox of one under sixteen requests in flight per client refuses most of them: the run must not pass.
        var scenario = ScenarioCatalog.Create("echo");
        var options = scenario.Defaults with { MailboxCapacity = 1, InFlight = 16, Stages = 1 };

        var report = await TcpScenarioRunner.RunAsync(scenario, options, new TcpRunSettings { Time = TimeProvider.System, TimeLimit = TimeSpan.FromSeconds(40) });

        Assert.False(report.Passed);
        Assert.Contains("failed on a loopback run without faults", report.Failure, StringComparison.Ordinal);
        Assert.Contains(report.ServerCounters, c => c.Key == "MailboxRefused" && c.Value > 0);
    }
}
