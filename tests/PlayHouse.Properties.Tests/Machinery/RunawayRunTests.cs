using PlayHouse.Fixtures.Scenarios;
using PlayHouse.Fixtures.Testing;
using PlayHouse.Simulation.Runs;
using Shouldly;
using Xunit.Abstractions;

namespace PlayHouse.Properties.Tests.Machinery;

/// <summary>
/// A runaway run fails, never hangs: the runner holds every run to its event budget (<see cref="SimOptions.EventsMax"/>,
/// automatic by default) from outside the world, and a run that spends it is a liveness failure whose report names the
/// budget and ends with the seed's replay line. The runaway is a scenario whose work item reschedules itself at the
/// same instant forever (<see cref="RunawayScenario"/>), so virtual time never moves and no time limit could end it.
/// </summary>
public sealed class RunawayRunTests(ITestOutputHelper output)
{
    [Theory]
    [InlineData(RunawayPhase.Workload, "without finishing the workload")]
    [InlineData(RunawayPhase.WindDown, "winding down after the workload ended")]
    public void RunawayRun_WithAnEventLoopThatNeverLetsTimeMove_FailsForLivenessAtItsBudgetWithItsReplayLine(RunawayPhase phase, string where)
    {
        var scenario = new RunawayScenario(ScenarioCatalog.Create("echo"), phase);
        var options = scenario.Defaults with { Clients = 2, RequestsPerClient = 5, EventsMax = 60_000 };

        var report = SimRunner.Run(scenario, 9, options);
        var text = report.ToText(SimulationAssert.ReplayCommandPrefix);
        output.WriteLine(text);

        report.ExitCode.ShouldBe(RunExitCodes.LivenessFailure);
        report.Failure.ShouldNotBeNull().ShouldStartWith("runaway: the run spent its event budget (60000 events, eventsMax=60000)");
        report.Failure.ShouldContain(where);
        report.Events.ShouldBe(60_000);
        scenario.Spins.ShouldBeGreaterThan(phase == RunawayPhase.Workload ? 50_000 : 1_000);
        report.Banner.ShouldStartWith("SEED=9 ");
        report.Banner.ShouldContain(" eventsMax=60000 ");
        // The replay line names the catalogue scenario the options came from (the loop itself lives in this test
        // double, which SimulationAssert.Describe points out for scenarios outside the catalogue) and the budget.
        text.ShouldContain($"replay={SimulationAssert.ReplayCommandPrefix} --scenario echo --seed 9 --set clients=2 --set requestsPerClient=5 --set eventsMax=60000");
        SimulationAssert.Describe(report, "seed 9", scenario).ShouldContain("is not in the runner's catalogue");

        // The same seed runs away the same way.
        var again = SimRunner.Run(new RunawayScenario(ScenarioCatalog.Create("echo"), phase), 9, options);
        again.TraceHash.ShouldBe(report.TraceHash);
        again.Failure.ShouldBe(report.Failure);
    }

    [Fact]
    public void RunawayRun_WithTheAutomaticBudget_FailsAtTenMillionEventsPlusTenThousandPerRequest()
    {
        // The default options set no budget; one client with one request gets 10,000,000 + 10,000 events.
        var scenario = new RunawayScenario(ScenarioCatalog.Create("echo"), RunawayPhase.Workload);
        var options = scenario.Defaults with { Clients = 1, RequestsPerClient = 1 };
        options.EventsMax.ShouldBe(0);
        options.EventBudget.ShouldBe(10_010_000);

        var report = SimRunner.Run(scenario, 3, options);
        output.WriteLine(report.ToText(SimulationAssert.ReplayCommandPrefix));

        report.ExitCode.ShouldBe(RunExitCodes.LivenessFailure);
        report.Events.ShouldBe(10_010_000);
        report.Failure.ShouldNotBeNull().ShouldStartWith("runaway: the run spent its event budget (10010000 events, eventsMax=10010000, automatic)");
        report.Banner.ShouldContain(" eventsMax=0 ");
        report.ReplayArguments.ShouldBe("--scenario echo --seed 3 --set clients=1 --set requestsPerClient=1");
    }

    [Fact]
    public void EventBudget_OfACorrectRun_IsFarFromReached_AndExactlyEnoughStillPasses()
    {
        var scenario = ScenarioCatalog.Create("echo");
        var report = SimRunner.Run(scenario, 4, scenario.Defaults);

        report.Passed.ShouldBeTrue(report.Failure);
        report.Events.ShouldBeLessThan(scenario.Defaults.EventBudget / 100);
        report.Banner.ShouldContain(" eventsMax=0 ");

        // A budget the run needs all of passes; one event fewer is a runaway.
        var exact = SimRunner.Run(ScenarioCatalog.Create("echo"), 4, scenario.Defaults with { EventsMax = report.Events });
        exact.Passed.ShouldBeTrue(exact.Failure);
        exact.TraceHash.ShouldBe(report.TraceHash);
        var short1 = SimRunner.Run(ScenarioCatalog.Create("echo"), 4, scenario.Defaults with { EventsMax = report.Events - 1 });
        short1.ExitCode.ShouldBe(RunExitCodes.LivenessFailure);
        short1.Failure.ShouldNotBeNull().ShouldStartWith("runaway:");
    }

    [Fact]
    public void EventsMax_AsAnOption_ParsesValidatesAndReplays()
    {
        var defaults = ScenarioCatalog.Create("echo").Defaults;
        var set = defaults.With([new("eventsMax", "1234")]);
        set.EventsMax.ShouldBe(1234);
        set.EventBudget.ShouldBe(1234);
        set.ToArguments(5, defaults).ShouldBe("--scenario echo --seed 5 --set eventsMax=1234");
        Should.Throw<ArgumentException>(() => defaults.With([new("eventsMax", "-1")])).Message.ShouldContain("eventsMax must not be negative");
    }
}
