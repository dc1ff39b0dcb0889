using PlayHouse.Fixtures.Scenarios;
using PlayHouse.Simulation.Network;
using PlayHouse.Simulation.Runs;
using Shouldly;

namespace PlayHouse.Properties.Tests.Zoo;

/// <summary>
/// The flawed twins of the identity entries (B4, B11, B13, B14, B16d-f), each on its smallest scenario: the twin's
/// mechanism breaks the invariant the catalogue names, and the correct core passes the same run.
/// </summary>
public sealed class IdTwinTests
{
    [Fact]
    public void Timers_TwoStagesWithTimerOneInANodeWideTable_TheDroppedTimerOutrunsItsCount()
    {
        var options = new SimOptions { Scenario = "timers", Clients = 2, Stages = 2, RequestsPerClient = 1, LossPercent = 0 };

        var correct = Run(options);
        var flawed = Run(options with { Flaws = "B13" });

        correct.Passed.ShouldBeTrue(correct.Failure);
        flawed.ExitCode.ShouldBe(RunExitCodes.InvariantViolation);
        flawed.Failure.ShouldNotBeNull().ShouldContain("fired a shot more");
    }

    [Fact]
    public void Reconnect_WithTheRebindingRejoin_JoinsTheAccountTwiceAndRoutesToADestroyedActor()
    {
        var options = new ScenarioCatalogDefaults("reconnect").Options with { Clients = 1, RequestsPerClient = 40 };

        var correct = Run(options);
        var flawed = Run(options with { Flaws = "B11" });

        correct.Passed.ShouldBeTrue(correct.Failure);
        flawed.ExitCode.ShouldBe(RunExitCodes.InvariantViolation);
        var lifecycle = flawed.Verdicts.Single(v => v.CheckerName == "Lifecycle");
        lifecycle.FirstViolationMessage.ShouldNotBeNull().ShouldContain("the account's join ran a second time");
        var workload = flawed.Verdicts.Single(v => v.CheckerName == "Lifecycle(workload)");
        workload.Passed.ShouldBeFalse();
    }

    [Fact]
    public void StageCreate_RegistryThatRecordsStagesWhenCreated_CreatesTheStageOncePerConcurrentFirstJoin()
    {
        var options = new ScenarioCatalogDefaults("stage-create").Options with { Clients = 2, Stages = 1, RequestsPerClient = 2 };

        var correct = Run(options);
        var flawed = Run(options with { Flaws = "B16d" });

        correct.Passed.ShouldBeTrue(correct.Failure);
        flawed.ExitCode.ShouldBe(RunExitCodes.InvariantViolation);
        flawed.Verdicts.Single(v => v.CheckerName == "Lifecycle").FirstViolationMessage.ShouldNotBeNull().ShouldContain("StageCreate after [StageCreate]");
    }

    [Fact]
    public void StageCreate_RegistryThatKeepsFailedStages_LeavesAZombieThatTheCheckerNames()
    {
        var options = new ScenarioCatalogDefaults("stage-create").Options with { Clients = 1, Stages = 1, RequestsPerClient = 2 };

        var correct = Run(options);
        var flawed = Run(options with { Flaws = "B16e" });

        correct.Passed.ShouldBeTrue(correct.Failure);
        correct.RequestsSucceeded.ShouldBe(2);
        flawed.ExitCode.ShouldBe(RunExitCodes.InvariantViolation);
        flawed.Verdicts.Single(v => v.CheckerName == "Lifecycle").FirstViolationMessage.ShouldNotBeNull().ShouldContain("its create failed but the stage is still registered");
    }

    [Fact]
    public void ApiAllocate_MillisecondClockIds_TwoCreatesInOneMillisecondCollide()
    {
        var options = new ScenarioCatalogDefaults("api-allocate").Options with { Clients = 2, Stages = 2, RequestsPerClient = 2, LatencyShape = LatencyShape.Fixed };

        var correct = Run(options);
        var flawed = Run(options with { Flaws = "B16f" });

        correct.Passed.ShouldBeTrue(correct.Failure);
        correct.ScenarioMetrics.ShouldContain(new KeyValuePair<string, string>("stages", "2"));
        flawed.ExitCode.ShouldBe(RunExitCodes.InvariantViolation);
        flawed.Failure.ShouldNotBeNull().ShouldContain("StageAlreadyExists");
    }

    private static SimReport Run(SimOptions options, ulong seed = 1) =>
        SimRunner.Run(ScenarioCatalog.Create(options.Scenario), seed, options);

    /// <summary>A catalogue scenario's default options.</summary>
    private sealed record ScenarioCatalogDefaults(string Name)
    {
        public SimOptions Options => ScenarioCatalog.Create(Name).Defaults;
    }
}
