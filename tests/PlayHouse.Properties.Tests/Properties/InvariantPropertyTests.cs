using PlayHouse.Fixtures.Properties;

namespace PlayHouse.Properties.Tests.Properties;

/// <summary>
/// The eight properties of the simulation, each over generated workloads and fault plans, each case a fresh
/// simulation from its own seed. Case counts scale with <see cref="PropertyDepth"/> (PLAYHOUSE_SIM_DEEP=1: 100x).
/// </summary>
[Trait("Category", "Deep")]
public sealed class InvariantPropertyTests
{
    /// <summary>
    /// Cases per property at normal depth. Measured on two cores: all eight properties take about 7 s (the whole
    /// project about 11 s); with PLAYHOUSE_SIM_DEEP=1 (40,000 cases each) the deep set took 331 s.
    /// </summary>
    public const int NormalCases = 400;

    private static int Cases => PropertyDepth.Cases(NormalCases);

    [Fact]
    public void Fifo_OverGeneratedWorkloadsAndFaults_EachSenderIsSeenInOrderByEachStage() =>
        SimProperty.Check("fifo-per-sender", Profiles.Fifo, Invariants.FifoPerSender, Cases);

    [Fact]
    public void Handlers_OverGeneratedWorkloadsAndFaults_AtMostOneHandlerPerStageIsInProgress() =>
        SimProperty.Check("single-active-handler", Profiles.Handlers, Invariants.SingleActiveHandler, Cases);

    [Fact]
    public void Requests_OverGeneratedWorkloadsAndFaults_EachCompletesOnceWithItsOwnReplyOrATimeout() =>
        SimProperty.Check("exactly-once", Profiles.ExactlyOnce, Invariants.ExactlyOnce, Cases);

    [Fact]
    public void Pools_OverGeneratedWorkloadsAndFaults_NothingLeaksAndEverySizeClassBalances() =>
        SimProperty.Check("no-pool-leaks", Profiles.Pools, Invariants.NoPoolLeaks, Cases);

    [Fact]
    public void RttTracking_OverGeneratedWorkloadsAndFaults_StaysWithinTheWindowAndNeverMisPairs() =>
        SimProperty.Check("bounded-rtt-tracking", Profiles.Rtt, Invariants.BoundedRttTracking, Cases);

    [Fact]
    public void Queues_OverGeneratedWorkloadsAndFaults_StayWithinTheirCaps() =>
        SimProperty.Check("queues-within-caps", Profiles.Queues, Invariants.QueuesWithinCaps, Cases);

    [Fact]
    public void Lifecycle_OverGeneratedDisconnectsAndReconnects_CallbacksFireOnceAndInOrder() =>
        SimProperty.Check("lifecycle-in-order", Profiles.Lifecycle, Invariants.LifecycleInOrder, Cases);

    [Fact]
    public void Liveness_AfterGeneratedFaultsHeal_EveryClientCompletesARequestInTheWindow() =>
        SimProperty.Check("liveness-after-heal", Profiles.Liveness, Invariants.Liveness, Cases);
}
