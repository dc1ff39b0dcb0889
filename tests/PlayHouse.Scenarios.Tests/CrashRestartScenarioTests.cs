using PlayHouse.Fixtures.Scenarios;
using PlayHouse.Simulation.Runs;

namespace PlayHouse.Scenarios.Tests;

/// <summary>A play server crashes mid-run and comes back empty: every scenario recovers and every checker still holds.</summary>
public sealed class CrashRestartScenarioTests
{
    private static readonly FaultPlan CrashThenRestart = FaultPlan.Parse("30ms:crash:play-1;400ms:restart:play-1");

    public static TheoryData<string> ScenarioNames() => [.. ScenarioCatalog.Names];

    [Theory]
    [MemberData(nameof(ScenarioNames))]
    public void Scenario_WithPlayServerCrashAndRestart_RecoversAndPassesEveryChecker(string name)
    {
        foreach (var seed in new ulong[] { 5, 6 })
        {
            var scenario = ScenarioCatalog.Create(name);
            var report = SimRunner.Run(scenario, seed, scenario.Defaults with { Faults = CrashThenRestart });

            Assert.True(report.Passed, $"{name} seed {seed}: {report.Failure}\n{report.ToText("run")}");
            Assert.True(report.VirtualSeconds > 0.4, $"{name} seed {seed} ended at {report.VirtualSeconds} s, before the restart");
            Assert.True(report.RequestsSucceeded > 0, $"{name} seed {seed} completed no request");
        }
    }

    [Fact]
    public void EchoRun_WithPlayServerCrashAndRestart_LosesOnlyTheRequestsInFlightAtTheCrash()
    {
        var scenario = ScenarioCatalog.Create("echo");
        var options = scenario.Defaults with { Faults = CrashThenRestart };

        var report = SimRunner.Run(scenario, 5, options);

        var issued = (long)options.Clients * options.RequestsPerClient;
        var failed = issued - report.RequestsSucceeded;
        Assert.True(report.Passed, report.Failure);
        Assert.InRange(failed, 1, (long)options.Clients * options.InFlight);
    }

    [Fact]
    public void EchoRun_WithACrashThatNeverRestarts_FailsLivenessNamingTheStrandedClients()
    {
        var scenario = ScenarioCatalog.Create("echo");

        var report = SimRunner.Run(scenario, 5, scenario.Defaults with { Faults = FaultPlan.Parse("30ms:crash:play-1"), LivenessWindowMs = 2_000 });

        Assert.Equal(RunExitCodes.LivenessFailure, report.ExitCode);
        Assert.Contains("made no progress", report.Failure, StringComparison.Ordinal);
    }

    [Fact]
    public void CrashRestartRun_SameSeedTwice_GivesTheSameTraceHash()
    {
        var first = SimRunner.Run(ScenarioCatalog.Create("api-create"), 9, ScenarioCatalog.Create("api-create").Defaults with { Faults = CrashThenRestart });
        var second = SimRunner.Run(ScenarioCatalog.Create("api-create"), 9, ScenarioCatalog.Create("api-create").Defaults with { Faults = CrashThenRestart });

        Assert.Equal(first.TraceHash, second.TraceHash);
        Assert.Equal(first.Events, second.Events);
    }
}
