using PlayHouse.Fixtures.Flawed;
using PlayHouse.Fixtures.Properties;
using PlayHouse.Fixtures.Scenarios;
using PlayHouse.Fixtures.Testing;
using PlayHouse.Fixtures.Workload;
using PlayHouse.Simulation.Checkers;
using Shouldly;
using Xunit.Abstractions;

namespace PlayHouse.Properties.Tests.Properties;

/// <summary>
/// Proof that each property bites: with a deliberately flawed part plugged in (fixtures/Flawed), the property
/// fails from a fixed FsCheck seed, names the right checker, and shrinks to a small counterexample; with the
/// correct parts, the same property passes the very same generated cases. A property that cannot fail is a defect.
/// </summary>
public sealed class PropertiesBiteTests(ITestOutputHelper output)
{
    /// <summary>Cases FsCheck may try before it must have found the flaw (it stops at the first failure).</summary>
    private const int CasesToFindTheFlaw = 300;

    [Fact]
    public void Fifo_WithAStageThatSwapsTwoSends_FailsAndShrinksToOneClient() =>
        AssertBites("fifo", Profiles.Fifo, Invariants.FifoPerSender, _ => FlawedWorkloads.SwapsSends, FifoPerSenderChecker.CheckerName, clientsMax: 1, stepsMax: 0);

    [Fact]
    public void Handlers_WithAStageThatRepliesFromDetachedWork_FailsAndShrinksToOneClient() =>
        AssertBites("handlers", Profiles.Handlers, Invariants.SingleActiveHandler, _ => FlawedWorkloads.DetachedReply, WorkloadHandlerChecker.CheckerName, clientsMax: 1, stepsMax: 0);

    [Fact]
    public void ExactlyOnce_WithAStageThatRepliesWithThePreviousRequest_FailsAndShrinksToOneClient() =>
        AssertBites("exactly-once", Profiles.ExactlyOnce, Invariants.ExactlyOnce, _ => FlawedWorkloads.RepliesWithPreviousRequest, ExactlyOnceRequestChecker.CheckerName, clientsMax: 1, stepsMax: 0);

    [Fact]
    public void Pools_WithAStageThatKeepsPayloads_FailsAndShrinksToOneRequest()
    {
        var run = AssertBites("pools", Profiles.Pools, Invariants.NoPoolLeaks, _ => FlawedWorkloads.LeaksPayload, PoolLedgerChecker.CheckerName, clientsMax: 1, stepsMax: 0);

        // The first message is already kept, so nothing smaller than one request remains.
        run.Shrunk!.Requests.ShouldBe(1);
        run.ShrunkViolation.ShouldNotBeNull().ShouldContain("kept-by-flawed-stage");
    }

    [Fact]
    public void RttTracking_WithTheFifoTrackerOfB1_FailsAndShrinksToOneClient()
    {
        var run = AssertBites("rtt", Profiles.Rtt, Invariants.BoundedRttTracking, _ => FlawedWorkloads.FifoRttTracker, RttTrackerChecker.CheckerName, clientsMax: 1, stepsMax: 2);

        // With a warm-up, B1's phase flaw needs no fault at all: replies are put in the phase they arrive in.
        run.Shrunk!.Episodes.Length.ShouldBeLessThanOrEqualTo(1);
    }

    [Fact]
    public void RttTracking_WithTheFifoTrackerAndNoWarmUp_FailsOnALateReplyAndShrinksToOneFaultEpisode()
    {
        var run = AssertBites("rtt-late", Profiles.RttWithoutWarmUp, Invariants.BoundedRttTracking, _ => FlawedWorkloads.FifoRttTracker, RttTrackerChecker.CheckerName, clientsMax: 1, stepsMax: 2);

        // Without a warm-up only a reply that misses its timeout trips the FIFO tracker: exactly one fault remains,
        // and the tracker is caught holding what no timeout released, or pairing a reply with the wrong request.
        run.Shrunk!.Episodes.ShouldHaveSingleItem();
        run.ShrunkViolation.ShouldNotBeNull().ShouldMatch("still holds|over its in-flight window|wrong request|no longer in flight");
    }

    [Fact]
    public void Queues_WithAStageThatFloodsItsOwnMailbox_FailsAndShrinksToOneClient() =>
        AssertBites("queues", Profiles.Queues, Invariants.QueuesWithinCaps, spec => FlawedWorkloads.FloodsOwnMailbox(spec.ToOptions()), QueueCapChecker.CheckerName, clientsMax: 1, stepsMax: 0);

    [Fact]
    public void Lifecycle_WithAStageThatRejoinsOnReconnect_FailsAndShrinksToOneDisconnect()
    {
        var run = AssertBites("lifecycle", Profiles.Lifecycle, Invariants.LifecycleInOrder, _ => FlawedWorkloads.RejoinsOnReconnect, WorkloadLifecycleChecker.CheckerName, clientsMax: 1, stepsMax: 2);

        // Only a reconnect triggers the flaw, so the shrunk plan is exactly one disconnect and its reconnect.
        run.Shrunk!.Episodes.ShouldHaveSingleItem().Kind.ShouldBe(EpisodeKind.DisconnectClient);
    }

    [Fact]
    public void Liveness_WithAStageDeafToReconnectedActors_FailsAndShrinksToOneDisconnect()
    {
        var run = AssertBites("liveness", Profiles.Liveness, Invariants.Liveness, _ => FlawedWorkloads.DeafAfterReconnect, LivenessChecker.CheckerName, clientsMax: 1, stepsMax: 2);

        run.Shrunk!.Episodes.ShouldHaveSingleItem().Kind.ShouldBe(EpisodeKind.DisconnectClient);
    }

    [Fact]
    public void FailureMessage_OfAFlawedRun_CarriesSeedReplayStringOptionsFaultsAndRunnerCommand()
    {
        var run = SimProperty.Run("bite:message", Profiles.Lifecycle, Invariants.LifecycleInOrder, CasesToFindTheFlaw, _ => FlawedWorkloads.RejoinsOnReconnect, fixedSeed: true);

        run.Passed.ShouldBeFalse();
        var shrunk = run.Shrunk!;
        run.Message.ShouldSatisfyAllConditions(
            m => m.ShouldContain($"FsCheck replay: {PropertyDepth.ReplayVariable}=\"{run.ReplaySeed},{run.ReplayGamma}\""),
            m => m.ShouldContain(shrunk.ToOptions().ToBanner(shrunk.Seed)),
            m => m.ShouldContain($"faults: {shrunk.Faults}"),
            m => m.ShouldContain($"replay the run: {SimulationAssert.ReplayCommandPrefix} --scenario {shrunk.Scenario} --seed {shrunk.Seed}"),
            m => m.ShouldContain("note: the run used replaced workload parts (flawed: re-runs the join on reconnect)"));
    }

    [Fact]
    public void ShrunkCounterexample_RunTwice_FailsTheSameWayWithTheSameTrace()
    {
        var run = SimProperty.Run("bite:replay", Profiles.ExactlyOnce, Invariants.ExactlyOnce, CasesToFindTheFlaw, _ => FlawedWorkloads.RepliesWithPreviousRequest, fixedSeed: true);
        run.Passed.ShouldBeFalse();

        var again = SimProperty.Evaluate(run.Shrunk!, Invariants.ExactlyOnce, _ => FlawedWorkloads.RepliesWithPreviousRequest);

        again.Violation.ShouldBe(run.ShrunkViolation);
        again.Report.TraceHash.ShouldBe(run.ShrunkReport!.TraceHash);
    }

    /// <summary>
    /// Runs the property with the flawed part and then with the correct parts over the same generated cases: the
    /// first must fail on the named checker with a counterexample within the bounds, the second must pass.
    /// </summary>
    private PropertyRun AssertBites(string name, WorkloadProfile profile, SimInvariant invariant, Func<WorkloadSpec, WorkloadHooks?> flawed, string checkerName, int clientsMax, int stepsMax)
    {
        var property = "bite:" + name;
        var broken = SimProperty.Run(property, profile, invariant, CasesToFindTheFlaw, flawed, fixedSeed: true);

        // The failure as a user would see it, kept in the test's output for review.
        output.WriteLine(broken.Message);

        broken.Passed.ShouldBeFalse($"the flawed part was not caught in {CasesToFindTheFlaw} cases");
        broken.ShrunkViolation.ShouldNotBeNull().ShouldStartWith(checkerName);
        var shrunk = broken.Shrunk.ShouldNotBeNull();
        shrunk.Clients.ShouldBeLessThanOrEqualTo(clientsMax, broken.Message);
        shrunk.FaultStepCount.ShouldBeLessThanOrEqualTo(stepsMax, broken.Message);
        shrunk.Requests.ShouldBeLessThanOrEqualTo(broken.Original!.Requests);

        // The same FsCheck seed generates the same cases, up to and including the one that failed.
        var correct = SimProperty.Run(property, profile, invariant, broken.Tests, hooks: null, fixedSeed: true);
        correct.Passed.ShouldBeTrue(correct.Message);
        correct.Tests.ShouldBe(broken.Tests);
        return broken;
    }
}
