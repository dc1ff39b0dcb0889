using System.Globalization;
using PlayHouse.Core.Mesh;
using PlayHouse.Core.Mesh.Proto;
using PlayHouse.Core.Pooling;
using PlayHouse.Fixtures.Flawed.Performance;
using PlayHouse.Fixtures.Scenarios;
using PlayHouse.Fixtures.Workload;
using PlayHouse.Simulation.Network;
using PlayHouse.Simulation.Runs;
using Shouldly;

namespace PlayHouse.Properties.Tests.Zoo;

/// <summary>
/// The performance twins' mechanisms on their own, and the measured window's figures: each flawed part does what the
/// seed's code did, the standard part does not, and a flawed run breaks only its own budget.
/// </summary>
public sealed class PerformanceTwinTests
{
    [Fact]
    public void DefaultObjectPoolStore_KeepsTwiceTheSimulatedCores_AndTheRestOfABurstFallsToTheGc()
    {
        var flawed = new MessagePool(new MessagePoolOptions { Store = pool => new DefaultObjectPoolStore(pool) });
        var standard = new MessagePool();

        RentAndReturnBurst(flawed, 100);
        RentAndReturnBurst(standard, 100);
        var flawedStats = flawed.GetStatistics();
        var standardStats = standard.GetStatistics();

        // The second burst of 100: the default pool kept 40 of the first burst's returns, the standard tiers all 100.
        flawedStats.Hits.ShouldBe(40);
        flawedStats.Misses.ShouldBe(160);
        flawedStats.Dropped.ShouldBe(120);
        flawed.RetainedBuffers.ShouldBe(2 * DefaultObjectPoolStore.SimulatedProcessorCount);
        flawed.RetainedMaxPerClassPerThread.ShouldBe(40);
        standardStats.Hits.ShouldBe(100);
        standardStats.Misses.ShouldBe(100);
        standardStats.Dropped.ShouldBe(0);
        standard.RetainedBuffers.ShouldBe(100);
    }

    [Fact]
    public void PoolStore_WithPreWarm_IsRefused()
    {
        var error = Should.Throw<ArgumentException>(() => new MessagePool(new MessagePoolOptions { Store = pool => new DefaultObjectPoolStore(pool), PreWarmCountPerClass = 4 }));
        error.Message.ShouldContain("Pre-warming");
    }

    [Fact]
    public void RentedStreamHeaderWriter_WritesTheExactSizeBytes_ButAllocatesPerHeader()
    {
        var header = new RouteHeader { MsgId = "ApiEcho", From = "play-1", MsgSeq = 42, StageId = 7, IsReply = true };
        var size = header.CalculateSize();
        var exact = new byte[size];
        var flawed = new byte[size];
        var writer = new RentedStreamRouteHeaderWriter();
        RouteHeaderWriter.ExactSize.Write(header, exact);
        writer.Write(header, flawed);

        var exactBytes = AllocatedBy(() => RouteHeaderWriter.ExactSize.Write(header, exact));
        var flawedBytes = AllocatedBy(() => writer.Write(header, flawed));

        flawed.ShouldBe(exact);
        exactBytes.ShouldBe(0);
        flawedBytes.ShouldBeGreaterThan(0);
    }

    [Fact]
    public void BoxedMailbox_BreaksOnlyTheAllocationBudget_EveryOtherCheckerPasses()
    {
        var options = EchoWindow() with { Flaws = "B6" };

        var flawed = SimRunner.Run(ScenarioCatalog.Create("echo"), 3, options);
        var correct = SimRunner.Run(ScenarioCatalog.Create("echo"), 3, options with { Flaws = string.Empty });

        correct.Passed.ShouldBeTrue(correct.Failure);
        Metric(correct, "alloc.judged").ShouldBe("yes");
        double.Parse(Metric(correct, "alloc.bytesPerSuccessfulMessage"), CultureInfo.InvariantCulture).ShouldBeLessThanOrEqualTo(16);
        FailedCheckers(flawed).ShouldBe([AllocationPerMessageChecker.CheckerName]);
        double.Parse(Metric(flawed, "alloc.bytesPerSuccessfulMessage"), CultureInfo.InvariantCulture).ShouldBeGreaterThan(100);
        flawed.RequestsSucceeded.ShouldBe(correct.RequestsSucceeded);
    }

    [Theory]
    [InlineData(0, 0, true)]
    [InlineData(4_096, 4_096, true)]
    [InlineData(4_096, 4_097, false)]
    [InlineData(0, 1, false)]
    [InlineData(2L << 20, 1L << 20, true)]
    [InlineData(4L << 20, (1L << 20) + 1, false)]
    public void Gen2Clause_IsJudgedOnlyWhenTheRestOfTheProcessAllocatedAtMostTheAllowanceAndNoMoreThanTheRun(long runBytes, long otherBytes, bool judged)
    {
        var budgets = new PerformanceBudgets();

        AllocationPerMessageChecker.IsAloneInTheProcess(runBytes, otherBytes, budgets).ShouldBe(judged);
        budgets.OtherThreadsBytesMaxForGen2.ShouldBe(1L << 20);
    }

    [Fact]
    public void ResidentLoopSession_ServesEveryRequest_ButIdleSessionsCostTheExecutorWork()
    {
        var scenario = ScenarioCatalog.Create("idle-sessions");
        var options = scenario.Defaults with { Clients = 30 };

        var flawed = SimRunner.Run(ScenarioCatalog.Create("idle-sessions"), 5, options with { Flaws = "B5" });
        var correct = SimRunner.Run(ScenarioCatalog.Create("idle-sessions"), 5, options);

        correct.Passed.ShouldBeTrue(correct.Failure);
        Metric(correct, "idle.sessions").ShouldBe("30");
        Metric(correct, "idle.workItemsPerSessionSecond").ShouldBe("0");
        Metric(correct, "idle.timerFiringsPerSessionSecond").ShouldBe("0");
        FailedCheckers(flawed).ShouldBe([ResidentWorkChecker.CheckerName]);
        Metric(flawed, "idle.timerFiringsPerSessionSecond").ShouldBe("10");
        flawed.RequestsSucceeded.ShouldBe(correct.RequestsSucceeded);

        // Each message also costs the two parked loops a continuation each on the executor.
        var flawedItems = double.Parse(Metric(flawed, "burst.workItemsPerMessage"), CultureInfo.InvariantCulture);
        var correctItems = double.Parse(Metric(correct, "burst.workItemsPerMessage"), CultureInfo.InvariantCulture);
        flawedItems.ShouldBeGreaterThan(correctItems + 1.5);
    }

    [Fact]
    public void DefaultObjectPool_InTheTickBatchScenario_BreaksOnlyThePoolBudget()
    {
        var scenario = ScenarioCatalog.Create("tick-batch");
        var options = scenario.Defaults with { Clients = 2, InFlight = 64, WarmUpPerClient = 256, RequestsPerClient = 1_500 };

        var flawed = SimRunner.Run(ScenarioCatalog.Create("tick-batch"), 4, options with { Flaws = "B2" });
        var correct = SimRunner.Run(ScenarioCatalog.Create("tick-batch"), 4, options);

        correct.Passed.ShouldBeTrue(correct.Failure);
        Metric(correct, "pool.hitRateInWindow").ShouldBe("1");
        Metric(correct, "pool.missesPerMessageInWindow").ShouldBe("0");
        FailedCheckers(flawed).ShouldBe([PoolEfficiencyChecker.CheckerName]);
        double.Parse(Metric(flawed, "pool.hitRateInWindow"), CultureInfo.InvariantCulture).ShouldBeLessThan(0.7);
    }

    [Fact]
    public void InFlightSwingingPastTheStandardBound_CostsTheCorrectPoolOnlyRefillsOfDrops_WhileB2IsStillCaught()
    {
        // The swarm's seed 20269088: 182 clients with 4 requests each in flight on one stage, answered in bursts, so
        // the buffers in flight swing by more than the 16 + 256 per size class a standard pool keeps. It drops the
        // surplus and allocates it again on the next climb (0.82 hits counted plainly); with room for 600 per class the
        // same run hit 0.955 and dropped nothing. Those refills are not held against a pool with the standard bound,
        // and B2's 40-buffer pool on the very same draw gets no such allowance.
        var scenario = ScenarioCatalog.Create("seed-004-10k");
        var options = scenario.Defaults with { Clients = 182, Stages = 1, MessageBytes = 247, InFlight = 4, LatencyShape = LatencyShape.Fixed, LatencyMsMin = 18, LatencyMsMean = 24, LatencyMsMax = 120, ExploreSchedules = true };

        var correct = SimRunner.Run(ScenarioCatalog.Create("seed-004-10k"), 20269088, options);
        var flawed = SimRunner.Run(ScenarioCatalog.Create("seed-004-10k"), 20269088, options with { Flaws = "B2" });

        correct.Passed.ShouldBeTrue(correct.Failure);
        long.Parse(Metric(correct, "pool.refillsOfDropsInWindow"), CultureInfo.InvariantCulture).ShouldBeGreaterThan(0);
        correct.Pools.Single(p => p.Name == "play-1").Dropped.ShouldBeGreaterThan(0);
        FailedCheckers(flawed).ShouldBe([PoolEfficiencyChecker.CheckerName]);
        Metric(flawed, "pool.refillsOfDropsInWindow").ShouldBe("0");
        double.Parse(Metric(flawed, "pool.hitRateInWindow"), CultureInfo.InvariantCulture).ShouldBeLessThan(0.7);
    }

    [Fact]
    public void AllocationBudget_WithoutWarmUpOrWithFaults_IsNotJudgedAndSaysWhy()
    {
        var noWarmUp = SimRunner.Run(ScenarioCatalog.Create("echo"), 1, EchoWindow() with { WarmUpPerClient = 0 });
        var faults = SimRunner.Run(ScenarioCatalog.Create("echo"), 1, EchoWindow() with { Faults = FaultPlan.Parse("100ms:disconnect:1::0:0ms;300ms:reconnect:1::0:0ms") });
        var async = SimRunner.Run(ScenarioCatalog.Create("echo"), 1, EchoWindow() with { Mode = WorkloadMode.RequestAsync });

        Metric(noWarmUp, "alloc.judged").ShouldBe("no: no warm-up requests (set warmUpPerClient)");
        Metric(faults, "alloc.judged").ShouldStartWith("no: a fault plan");
        Metric(async, "alloc.judged").ShouldStartWith("no: RequestAsync clients");
        noWarmUp.Passed.ShouldBeTrue(noWarmUp.Failure);
        faults.Passed.ShouldBeTrue(faults.Failure);
        async.Passed.ShouldBeTrue(async.Failure);
    }

    [Fact]
    public void MeasuredWindow_LeavesTheWarmUpOut_SoTheFigureIsPerSuccessfulSteadyMessage()
    {
        // Seed 001's lesson: totals that include the warm-up (setup, logins, first growth) overstate the steady cost.
        var report = SimRunner.Run(ScenarioCatalog.Create("echo"), 2, EchoWindow());

        var window = double.Parse(Metric(report, "alloc.bytesPerSuccessfulMessage"), CultureInfo.InvariantCulture);
        var warmUp = double.Parse(Metric(report, "alloc.warmUpBytesPerSuccessfulMessage"), CultureInfo.InvariantCulture);
        var wholeRun = double.Parse(Metric(report, "alloc.wholeRunBytesPerSuccessfulMessage"), CultureInfo.InvariantCulture);
        report.Passed.ShouldBeTrue(report.Failure);
        warmUp.ShouldBeGreaterThan(10 * window);
        wholeRun.ShouldBeGreaterThan(window);
        var measured = (long)report.Options.Clients * report.Options.RequestsPerClient;
        long.Parse(Metric(report, "window.messages"), CultureInfo.InvariantCulture).ShouldBeInRange(measured - (report.Options.Clients * report.Options.InFlight), measured);
    }

    [Theory]
    [InlineData("seed-000-send")]
    [InlineData("seed-002-echo")]
    [InlineData("seed-004-echo")]
    [InlineData("seed-004-api")]
    [InlineData("seed-004-10k")]
    public void SeedShape_RunsSmallAndReportsTheSeedsFiguresBesideOurs(string name)
    {
        var scenario = (SeedShapeScenario)ScenarioCatalog.Create(name);

        var report = SimRunner.Run(scenario, 11, scenario.Defaults);

        report.Passed.ShouldBeTrue(report.Failure);
        Metric(report, "seed").ShouldBe(scenario.Shape.Seed);
        foreach (var (key, value) in scenario.Shape.SeedFigures)
        {
            Metric(report, "seed." + key).ShouldBe(value);
        }

        Metric(report, "ours.size").ShouldContain(scenario.Shape.FullSize);
        Metric(report, "ours.messagesPerVirtualSecond").ShouldNotBe("n/a");
        Metric(report, "ours.allocBytesPerSuccessfulMessage").ShouldNotBe("n/a");
        Metric(report, "ours.note").ShouldContain("scaled");
    }

    private static SimOptions EchoWindow() => ScenarioCatalog.Create("echo").Defaults with
    {
        Clients = 2,
        Mode = WorkloadMode.RequestCallback,
        InFlight = 8,
        WarmUpPerClient = 1_000,
        RequestsPerClient = 6_000,
    };

    private static void RentAndReturnBurst(MessagePool pool, int count)
    {
        for (var round = 0; round < 2; round++)
        {
            var rented = new List<Payload>();
            for (var i = 0; i < count; i++)
            {
                rented.Add(pool.Rent(64, "test"));
            }

            foreach (var payload in rented)
            {
                payload.Dispose();
            }
        }
    }

    private static long AllocatedBy(Action action)
    {
        var before = GC.GetAllocatedBytesForCurrentThread();
        action();
        return GC.GetAllocatedBytesForCurrentThread() - before;
    }

    private static string Metric(SimReport report, string key) =>
        report.ScenarioMetrics.FirstOrDefault(m => m.Key == key).Value ?? throw new ShouldAssertException($"no metric '{key}' in the report");

    private static List<string> FailedCheckers(SimReport report) => [.. report.Verdicts.Where(v => !v.Passed).Select(v => v.CheckerName)];
}
