using PlayHouse.Fixtures.Scenarios;
using PlayHouse.Simulation.Runs;

namespace PlayHouse.Scenarios.Tests;

public sealed class SimulationScenarioTests
{
    public static TheoryData<string> ScenarioNames() => [.. ScenarioCatalog.Names];

    [Theory]
    [MemberData(nameof(ScenarioNames))]
    public void Scenario_OnSeveralSeeds_PassesEveryChecker(string name)
    {
        foreach (var seed in new ulong[] { 1, 2, 3 })
        {
            var scenario = ScenarioCatalog.Create(name);
            var report = SimRunner.Run(scenario, seed, scenario.Defaults);

            Assert.True(report.Passed, $"{name} seed {seed}: {report.Failure}\n{report.ToText("run")}");
            Assert.True(report.RequestsSucceeded > 0, $"{name} seed {seed} completed no request");
        }
    }

    [Theory]
    [MemberData(nameof(ScenarioNames))]
    public void Scenario_SameSeedTwice_GivesTheSameTraceHash(string name)
    {
        var first = SimRunner.Run(ScenarioCatalog.Create(name), 42, ScenarioCatalog.Create(name).Defaults);
        var second = SimRunner.Run(ScenarioCatalog.Create(name), 42, ScenarioCatalog.Create(name).Defaults);
        var other = SimRunner.Run(ScenarioCatalog.Create(name), 43, ScenarioCatalog.Create(name).Defaults);

        Assert.Equal(first.TraceHash, second.TraceHash);
        Assert.Equal(first.Events, second.Events);
        Assert.NotEqual(first.TraceHash, other.TraceHash);
    }
}
