using PlayHouse.Fixtures.Properties;
using PlayHouse.Fixtures.Scenarios;
using PlayHouse.Simulation.Network;
using PlayHouse.Simulation.Runs;
using Shouldly;

namespace PlayHouse.Properties.Tests.Zoo;

/// <summary>
/// The reply path's flawed twins (B9a, B9b, B10, B12a-c) each in one small run from a fixed seed: the flaw does what
/// the catalogue says and its invariant names it, while the correct core passes the very same run.
/// </summary>
public sealed class ReplyPathTwinTests
{
    // A latency spike of 1.5 s a hop against a 1 s timeout: requests sent in it time out and their replies come late.
    private static readonly FaultPlan Spike = FaultPlan.Parse("50ms:latencychange:::1500:0ms;650ms:latencychange:::5:0ms");

    [Fact]
    public void AmbientStageCallbacks_RunAReplyCallbackOutsideItsStage_WhileTheMailboxRunsItInATurn()
    {
        var options = Options("api-create") with { Clients = 1, Stages = 1, RequestsPerClient = 4, InFlight = 1 };

        var (flawed, correct) = RunBoth(options, "B9a");

        Invariants.SingleActiveHandler.Violation(flawed).ShouldNotBeNull().ShouldContain("reply callback ApiEcho ran outside any turn of its stage");
        Invariants.SingleActiveHandler.Violation(correct).ShouldBeNull();
        correct.Passed.ShouldBeTrue(correct.Failure);
    }

    [Fact]
    public void QueuingCycleGuard_LetsASelfRequestWaitForItsTimeout_WhereTheCoreRefusesItAtOnce()
    {
        // One stage: every relayed request goes to the stage itself.
        var options = Options("stage-peers") with { PlayServers = 1, Clients = 1, Stages = 1, RequestsPerClient = 3, InFlight = 1 };

        var (flawed, correct) = RunBoth(options, "B9b");

        RequestInvariants.FailFastCycles.Violation(flawed).ShouldNotBeNull().ShouldContain("stage play-1/1: its request to itself waited for its timeout instead of failing fast");
        RequestInvariants.FailFastCycles.Violation(correct).ShouldBeNull();
        correct.Passed.ShouldBeTrue(correct.Failure);
        Counter(correct, "SelfRequestsRefused").ShouldBe(3);
        correct.RequestsSucceeded.ShouldBe(3);
    }

    [Fact]
    public void QueuingCycleGuard_LetsTwoStagesAwaitEachOtherUntilTheTimeout_WhereTheCoreFailsTheCycleFast()
    {
        // Two stages on one server, a client on each: each first request goes to the other stage at the same moment.
        var options = Options("stage-peers") with { PlayServers = 1, Clients = 2, Stages = 2, RequestsPerClient = 1, InFlight = 1, LatencyShape = LatencyShape.Fixed };

        var (flawed, correct) = RunBoth(options, "B9b");

        RequestInvariants.FailFastCycles.Violation(flawed).ShouldNotBeNull().ShouldContain("awaited a request back to it: a cycle that must fail fast");
        RequestInvariants.FailFastCycles.Violation(correct).ShouldBeNull();
        correct.Passed.ShouldBeTrue(correct.Failure);
        Counter(correct, "CycleRequestsRefused").ShouldBe(1);
        correct.RequestsSucceeded.ShouldBe(2);
    }

    [Fact]
    public void QueuingCycleGuard_LetsARingOfThreeStagesAwaitOneAnotherUntilTheTimeout_WhereTheCoreFailsTheRingFast()
    {
        // Three stages on one server, a client on each: each first request goes to the next stage at the same moment.
        var options = Options("stage-peers") with { PlayServers = 1, Clients = 3, Stages = 3, RequestsPerClient = 1, InFlight = 1, LatencyShape = LatencyShape.Fixed };

        var (flawed, correct) = RunBoth(options, "B9b");

        RequestInvariants.FailFastCycles.Violation(flawed).ShouldNotBeNull().ShouldContain("awaited one another in a ring back to it: a cycle that must fail fast");
        RequestInvariants.FailFastCycles.Violation(correct).ShouldBeNull();
        correct.Passed.ShouldBeTrue(correct.Failure);
        Counter(correct, "CycleRequestsRefused").ShouldBe(1);
        correct.RequestsSucceeded.ShouldBe(3);
    }

    [Fact]
    public void CurrentRequestReplies_AnswerTheLatestRequestInsteadOfTheirOwn_AndTheNonceShowsIt()
    {
        // Two API calls in flight: the first reply callback runs after the second request arrived.
        var options = Options("api-create") with { Clients = 1, Stages = 1, RequestsPerClient = 4, InFlight = 2 };

        var (flawed, correct) = RunBoth(options, "B10");

        Invariants.ExactlyOnce.Violation(flawed).ShouldNotBeNull().ShouldContain("(mis-paired reply)");
        Invariants.ExactlyOnce.Violation(correct).ShouldBeNull();
        correct.Passed.ShouldBeTrue(correct.Failure);
    }

    [Fact]
    public void StrayRepliesDispatched_DeliverALateReplyToTheRequestingStagesHandler()
    {
        // The mesh between the two play servers holds everything for 1.5 s: requests between twins time out, and their
        // replies arrive after that, naming the requesting stage.
        var clog = FaultPlan.Parse("100ms:clog:play-1:play-2:0:1500ms");
        var options = Options("stage-peers") with { Clients = 2, Stages = 2, RequestsPerClient = 40, InFlight = 2, LatencyShape = LatencyShape.Fixed, Faults = clog };

        var (flawed, correct) = RunBoth(options, "B12a");

        RequestInvariants.RepliesEndTheirRequests.Violation(flawed).ShouldNotBeNull().ShouldContain("its handler received a one-way 'StageEcho', which nobody sends one-way");
        RequestInvariants.RepliesEndTheirRequests.Violation(correct).ShouldBeNull();
        correct.Passed.ShouldBeTrue(correct.Failure);
        Counter(correct, "LateReplies").ShouldBeGreaterThan(0);
    }

    [Fact]
    public void StrayRepliesAnswered_BounceALateReplyBetweenTwoServers()
    {
        var options = Options("api-create") with { Clients = 2, Stages = 1, RequestsPerClient = 40, InFlight = 2, LatencyShape = LatencyShape.Fixed, Faults = Spike };

        var (flawed, correct) = RunBoth(options, "B12b");

        RequestInvariants.RepliesEndTheirRequests.Violation(flawed).ShouldNotBeNull().ShouldContain("a reply produced another message");

        // Each server answers the other's answer: the violations go on long after the workload ended.
        flawed.Verdicts.Single(v => v.CheckerName == "StrayReply").ViolationCount.ShouldBeGreaterThan(100);
        RequestInvariants.RepliesEndTheirRequests.Violation(correct).ShouldBeNull();
        correct.Passed.ShouldBeTrue(correct.Failure);
        Counter(correct, "LateReplies").ShouldBeGreaterThan(0);
    }

    [Fact]
    public void GhostPushClient_TurnsAReplyThatCameAfterItsTimeoutIntoAPush()
    {
        var options = Options("echo") with { Clients = 1, Stages = 1, RequestsPerClient = 40, InFlight = 2, LatencyShape = LatencyShape.Fixed, Faults = Spike };

        var (flawed, correct) = RunBoth(options, "B12c");

        RequestInvariants.RepliesEndTheirRequests.Violation(flawed).ShouldNotBeNull().ShouldContain("a reply turned into a push (a ghost push)");
        RequestInvariants.RepliesEndTheirRequests.Violation(correct).ShouldBeNull();
        correct.Passed.ShouldBeTrue(correct.Failure);
    }

    private static SimOptions Options(string scenario) => ScenarioCatalog.Create(scenario).Defaults with
    {
        RequestTimeoutMs = 1_000,
        LatencyMsMin = 5,
        LatencyMsMean = 5,
        LatencyMsMax = 10,
    };

    private static (SimReport Flawed, SimReport Correct) RunBoth(SimOptions options, string flaw)
    {
        var flawed = SimRunner.Run(ScenarioCatalog.Create(options.Scenario), 3, options with { Flaws = flaw });
        var correct = SimRunner.Run(ScenarioCatalog.Create(options.Scenario), 3, options);
        return (flawed, correct);
    }

    private static long Counter(SimReport report, string name) => report.ServerCounters.Where(c => c.Key == name).Sum(c => c.Value);
}
