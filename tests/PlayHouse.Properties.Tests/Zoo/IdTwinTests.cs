using PlayHouse.Core.Mesh;
using PlayHouse.Fixtures.Flawed.Mesh;
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

    [Theory]
    [InlineData("costarring", "liquid")]
    [InlineData("play-8638", "play-754906")]
    public void Fnv1a32_OfTheCataloguesPairs_Collides_AndTheTwinReturnsTheFirstIdForTheSecond(string first, string second)
    {
        var firstBytes = System.Text.Encoding.UTF8.GetBytes(first);
        var secondBytes = System.Text.Encoding.UTF8.GetBytes(second);
        Fnv1aSenderIdCache.Fnv1a32(firstBytes).ShouldBe(Fnv1aSenderIdCache.Fnv1a32(secondBytes));

        var flawed = new Fnv1aSenderIdCache();
        flawed.TryGetString(firstBytes, out var a).ShouldBeTrue();
        flawed.TryGetString(secondBytes, out var b).ShouldBeTrue();
        a.ShouldBe(first);
        b.ShouldBe(first);

        var correct = new Utf8SenderIdCache(singleThreaded: true);
        correct.TryGetString(firstBytes, out var c).ShouldBeTrue();
        correct.TryGetString(secondBytes, out var d).ShouldBeTrue();
        c.ShouldBe(first);
        d.ShouldBe(second);
    }

    [Fact]
    public void SenderIdCaches_UnderTenThousandDistinctIds_TheFlawedOneNeverShrinksWhileTheCorrectOneStaysWithinItsCapacity()
    {
        var flawed = new Fnv1aSenderIdCache();
        var correct = new Utf8SenderIdCache(capacity: 64, singleThreaded: true);
        for (var i = 0; i < 10_000; i++)
        {
            var id = System.Text.Encoding.UTF8.GetBytes($"play-{i}");
            flawed.TryGetString(id, out _).ShouldBeTrue();
            correct.TryGetString(id, out var value).ShouldBeTrue();
            value.ShouldBe($"play-{i}");
        }

        flawed.Count.ShouldBeGreaterThan(9_900);
        correct.Count.ShouldBe(64);
    }

    [Fact]
    public void MeshIds_FnvKeyedSenderCache_RecordsTheSecondPeerAsTheFirstAndItsRepliesGoAstray()
    {
        var options = new ScenarioCatalogDefaults("mesh-ids").Options with { Clients = 2, Stages = 1, RequestsPerClient = 3 };

        var correct = Run(options);
        var flawed = Run(options with { Flaws = "B4" });

        correct.Passed.ShouldBeTrue(correct.Failure);
        correct.Verdicts.Single(v => v.CheckerName == "MeshSender").Passed.ShouldBeTrue();
        flawed.ExitCode.ShouldBe(RunExitCodes.InvariantViolation);
        flawed.Verdicts.Single(v => v.CheckerName == "MeshSender").FirstViolationMessage.ShouldNotBeNull()
            .ShouldBeOneOf(
                "node api-1 recorded a mesh frame from play-754906 as sent by play-8638; its reply would go to play-8638",
                "node api-1 recorded a mesh frame from play-8638 as sent by play-754906; its reply would go to play-754906");
    }

    [Fact]
    public void MixedTransports_SessionIdsPerTransportInOneTable_AClientsFramesReachTheOtherClientsSession()
    {
        var options = new ScenarioCatalogDefaults("mixed-transports").Options with { Clients = 2, RequestsPerClient = 5 };

        var correct = Run(options);
        var flawed = Run(options with { Flaws = "B14" });

        correct.Passed.ShouldBeTrue(correct.Failure);
        correct.RequestsSucceeded.ShouldBe(10);
        flawed.ExitCode.ShouldBe(RunExitCodes.InvariantViolation);
        flawed.Failure.ShouldNotBeNull().ShouldMatch("ClientRouting|ExactlyOnceRequest");
    }

    private static SimReport Run(SimOptions options, ulong seed = 1) =>
        SimRunner.Run(ScenarioCatalog.Create(options.Scenario), seed, options);

    /// <summary>A catalogue scenario's default options.</summary>
    private sealed record ScenarioCatalogDefaults(string Name)
    {
        public SimOptions Options => ScenarioCatalog.Create(Name).Defaults;
    }
}
