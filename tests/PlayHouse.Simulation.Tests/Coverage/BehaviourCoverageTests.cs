using PlayHouse.Fixtures.Scenarios;
using PlayHouse.Simulation.Coverage;
using PlayHouse.Simulation.Runs;

namespace PlayHouse.Simulation.Tests.Coverage;

public sealed class BehaviourCoverageTests
{
    [Fact]
    public void Coverage_OfTheSameSeedAndOptions_IsTheSameFeatures_AndLeavesTheTraceAlone()
    {
        var options = ScenarioCatalog.Create("api-create").Defaults with { Clients = 3, RequestsPerClient = 10, Faults = FaultPlan.Parse("100ms:disconnect:2;400ms:reconnect:2;200ms:lossburst:::20:300ms") };
        var first = new BehaviourCoverage();
        var second = new BehaviourCoverage();

        var watched = SimRunner.Run(ScenarioCatalog.Create("api-create"), 9, options, new RunSettings { Coverage = first });
        var again = SimRunner.Run(ScenarioCatalog.Create("api-create"), 9, options, new RunSettings { Coverage = second });
        var unwatched = SimRunner.Run(ScenarioCatalog.Create("api-create"), 9, options);

        Assert.True(watched.Passed, watched.Failure);
        Assert.NotEmpty(first.Features);
        Assert.Equal(first.Features, second.Features);
        Assert.Equal(unwatched.TraceHash, watched.TraceHash);
        Assert.Equal(unwatched.TraceHash, again.TraceHash);
    }

    [Fact]
    public void Coverage_OfARunWithAClientCutOff_ReachesStatesUnderThatFault_ThatTheCalmRunDoesNot()
    {
        var calmOptions = ScenarioCatalog.Create("reconnect").Defaults with { Clients = 2, RequestsPerClient = 20, Faults = FaultPlan.None };
        var cutOptions = calmOptions with { Faults = FaultPlan.Parse("300ms:disconnect:1;900ms:reconnect:1") };
        var calm = new BehaviourCoverage(keepNames: true);
        var cut = new BehaviourCoverage(keepNames: true);

        SimRunner.Run(ScenarioCatalog.Create("reconnect"), 3, calmOptions, new RunSettings { Coverage = calm });
        SimRunner.Run(ScenarioCatalog.Create("reconnect"), 3, cutOptions, new RunSettings { Coverage = cut });

        var onlyCut = cut.Features.Except(calm.Features).Select(f => cut.NameOf(f)!).ToList();
        Assert.Contains(onlyCut, n => n.EndsWith("faults Disconnect", StringComparison.Ordinal));
        Assert.Contains(onlyCut, n => n.StartsWith("turn play ConnectionChanged", StringComparison.Ordinal) && n.EndsWith("faults Disconnect", StringComparison.Ordinal));
        Assert.DoesNotContain(calm.Features.Select(f => calm.NameOf(f)!), n => n.EndsWith("faults Disconnect", StringComparison.Ordinal));
    }

    [Fact]
    public void Coverage_OfAMailboxFilledToItsCap_TellsItApartFromOneThatStayedBelow()
    {
        var scenario = ScenarioCatalog.Create("slow-consumer");
        var full = new BehaviourCoverage(keepNames: true);
        var light = new BehaviourCoverage(keepNames: true);

        SimRunner.Run(ScenarioCatalog.Create("slow-consumer"), 3, scenario.Defaults with { Clients = 1, InFlight = 8, RequestsPerClient = 16, MailboxCapacity = 4 }, new RunSettings { Coverage = full });
        SimRunner.Run(ScenarioCatalog.Create("slow-consumer"), 3, scenario.Defaults with { Clients = 1, InFlight = 1, RequestsPerClient = 16, MailboxCapacity = 4 }, new RunSettings { Coverage = light });

        // A post that filled the mailbox's messages from outside up to mailboxCapacity, the refusals' threshold.
        static bool AtCap(BehaviourCoverage coverage, ulong feature) => coverage.NameOf(feature)!.StartsWith("post play", StringComparison.Ordinal) && coverage.NameOf(feature)!.Contains(" at its cap ", StringComparison.Ordinal);
        Assert.Contains(full.Features, f => AtCap(full, f));
        Assert.DoesNotContain(light.Features, f => AtCap(light, f));
    }

    [Fact]
    public void Coverage_OfARunWhoseAllocationsAreJudged_AddsNothingTheAllocationCheckerCounts()
    {
        // The shape the allocation checker judges (warm-up, then 10,000 messages of a callback workload, no faults): the
        // coverage's hooks run on the simulation thread inside the measured window, so a hook that allocated would fail it.
        var options = ScenarioCatalog.Create("echo").Defaults with { Clients = 2, Mode = WorkloadMode.RequestCallback, WarmUpPerClient = 2_000, RequestsPerClient = 10_000, InFlight = 16, MessageBytes = 64, LossPercent = 0 };
        var coverage = new BehaviourCoverage(keepNames: true);

        var report = SimRunner.Run(ScenarioCatalog.Create("echo"), 21, options, new RunSettings { Coverage = coverage });

        Assert.True(report.Passed, report.Failure);
        Assert.StartsWith("yes", report.ScenarioMetrics.Single(m => m.Key == "alloc.judged").Value, StringComparison.Ordinal);
        Assert.NotEmpty(coverage.Features);
    }

    [Fact]
    public void FaultPhases_MaskAt_FollowsEachFaultFromItsStepToItsHeal_ThenRecovering()
    {
        var plan = FaultPlan.Parse("100ms:disconnect:2;300ms:reconnect:2;200ms:lossburst:::20:50ms;400ms:partition:play-1:api-1;500ms:latencychange:::90;600ms:heal;700ms:latencychange:::5");
        var phases = new FaultPhases(plan, baselineLatencyMsMean: 5);

        static long Ms(int ms) => TimeSpan.FromMilliseconds(ms).Ticks;
        Assert.Equal(ActiveFaults.None, phases.MaskAt(Ms(50)));
        Assert.Equal(ActiveFaults.Disconnect, phases.MaskAt(Ms(150)));
        Assert.Equal(ActiveFaults.Disconnect | ActiveFaults.Loss, phases.MaskAt(Ms(220)));
        Assert.Equal(ActiveFaults.Disconnect, phases.MaskAt(Ms(260)));
        Assert.Equal(ActiveFaults.Recovering, phases.MaskAt(Ms(350)));
        Assert.Equal(ActiveFaults.Partition, phases.MaskAt(Ms(450)));
        Assert.Equal(ActiveFaults.Partition | ActiveFaults.Latency, phases.MaskAt(Ms(550)));
        Assert.Equal(ActiveFaults.Latency, phases.MaskAt(Ms(650)));
        Assert.Equal(ActiveFaults.Recovering, phases.MaskAt(Ms(800)));
    }

    [Theory]
    [InlineData(0, 0)]
    [InlineData(1, 1)]
    [InlineData(3, 2)]
    [InlineData(4, 3)]
    [InlineData(1_000, 10)]
    public void Log2Bucket_PutsPowersOfTwoTogether(long value, int bucket) => Assert.Equal(bucket, BehaviourCoverage.Log2Bucket(value));

    [Theory]
    [InlineData(0, 8, 0)]
    [InlineData(2, 8, 1)]
    [InlineData(4, 8, 2)]
    [InlineData(7, 8, 3)]
    [InlineData(8, 8, 4)]
    [InlineData(9, 8, 5)]
    [InlineData(9, int.MaxValue, 1)]
    public void CapBucket_SaysWhereALengthStandsAgainstItsCap(long length, long cap, int bucket) => Assert.Equal(bucket, BehaviourCoverage.CapBucket(length, cap));

    [Theory]
    [InlineData(3, 3)]
    [InlineData(7, 4)]
    [InlineData(100, 7)]
    [InlineData(100_000, 8)]
    public void CountBucket_KeepsAflsHitCountBuckets(long value, int bucket) => Assert.Equal(bucket, BehaviourCoverage.CountBucket(value));
}
