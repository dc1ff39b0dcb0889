using PlayHouse.Fixtures.Flawed;
using PlayHouse.Fixtures.Scenarios;
using PlayHouse.Fixtures.Testing;
using PlayHouse.Simulation.Runs;
using Shouldly;

namespace PlayHouse.Properties.Tests.Regressions;

/// <summary>The helper for users' own scenario tests: run over N seeds, report the failing seed and its replay.</summary>
public sealed class SimulationAssertTests
{
    [Fact]
    public void PassesOverSeeds_ACorrectScenario_RunsEverySeedAndReturnsTheReports()
    {
        var sweep = SimulationAssert.PassesOverSeeds("echo", seedCount: 5, ScenarioCatalog.Create("echo").Defaults with { Clients = 2, RequestsPerClient = 5 }, firstSeed: 100);

        sweep.SeedsRun.ShouldBe(5);
        sweep.Reports.Select(r => r.Seed).ShouldBe([100UL, 101UL, 102UL, 103UL, 104UL]);
        sweep.Reports.ShouldAllBe(r => r.Passed);
        sweep.RequestsSucceeded.ShouldBe(5 * 2 * 5);
    }

    [Fact]
    public void PassesOverSeeds_AScenarioThatFailsOnSomeSeed_NamesThatSeedAndItsReplayCommand()
    {
        // Replies with the previous request's body: fails as soon as a client has two requests.
        IScenario Flawed()
        {
            var scenario = (WorkloadScenario)ScenarioCatalog.Create("echo");
            scenario.Hooks = FlawedWorkloads.RepliesWithPreviousRequest;
            return scenario;
        }

        var error = Should.Throw<SimulationFailedException>(() => SimulationAssert.PassesOverSeeds(Flawed, seedCount: 3, new SimOptions { Scenario = "echo", Clients = 1, RequestsPerClient = 2 }, firstSeed: 40));

        error.Report.ShouldNotBeNull().Seed.ShouldBe(40UL);
        error.Message.ShouldSatisfyAllConditions(
            m => m.ShouldContain("failed on seed 40 (seed 1 of 3, from 40)"),
            m => m.ShouldContain("SEED=40 scenario=echo"),
            m => m.ShouldContain($"replay: {SimulationAssert.ReplayCommandPrefix} --scenario echo --seed 40 --set clients=1 --set requestsPerClient=2"),
            m => m.ShouldContain("ExactlyOnceRequest"),
            m => m.ShouldContain("replaced workload parts (flawed: replies with the previous request's body)"));
    }

    [Fact]
    public void PassesOverSeeds_AStandardScenarioThatFails_TellsTheRunnerCommandReplaysIt()
    {
        // An impossible liveness window: the first client cannot complete a request within a millisecond.
        var options = new SimOptions { Scenario = "echo", Clients = 1, RequestsPerClient = 2, LivenessWindowMs = 1 };

        var error = Should.Throw<SimulationFailedException>(() => SimulationAssert.PassesOverSeeds("echo", seedCount: 2, options));

        error.Message.ShouldContain("failed on seed 1 (seed 1 of 2, from 1): liveness-failure");
        error.Message.ShouldContain($"replay: {SimulationAssert.ReplayCommandPrefix} --scenario echo --seed 1 --set clients=1 --set requestsPerClient=2 --set livenessWindowMs=1");
        error.Message.ShouldNotContain("replaced workload parts");
    }
}
