using System.Globalization;
using FsCheck;
using FsCheck.Fluent;
using PlayHouse.Fixtures.Properties;
using PlayHouse.Fixtures.Scenarios;
using PlayHouse.Fixtures.Testing;
using PlayHouse.Properties.Tests.Infrastructure;
using PlayHouse.Simulation.Cluster;
using PlayHouse.Simulation.Network;
using PlayHouse.Simulation.Runs;
using Shouldly;
using Xunit.Abstractions;

namespace PlayHouse.Properties.Tests.Machinery;

/// <summary>
/// Every fault the options ask for is realized (<see cref="FaultLedger"/>): over generated runs with every random
/// fault setting and a plan of loss bursts, partitions, disconnects and crashes, each random kind's injections lie
/// within six standard deviations (plus three) of what its opportunities and the requested probabilities make
/// expected, and every partition, disconnect and crash step takes effect. Every simulated run checks this
/// (<c>faults-realized</c> in its report); the property makes sure the generated runs reach every kind in force. Flawed parts
/// that ignore a setting are caught: a network whose paths in use never see new defaults (loss bursts inject
/// nothing), and an options mapping that drops the duplication setting.
/// </summary>
public sealed class FaultRealizationTests(ITestOutputHelper output)
{
    [Fact]
    [Trait("Category", "Deep")]
    public void Faults_AskedForByOptionsAndFaultPlans_AreRealizedWithinBinomialBounds()
    {
        var strong = new Dictionary<string, int>(StringComparer.Ordinal);
        var runner = Check(FaultCase.Arbitrary(), PropertyDepth.Cases(120), "fault-realization", scenario => scenario, report =>
        {
            foreach (var fault in report.Faults)
            {
                // A kind counts as reached when a network that ignored it could not hide: its expected count is clear of the bound.
                if ((fault.IsRandom && fault.Expected > fault.Allowed) || (!fault.IsRandom && fault.Requested > 0))
                {
                    strong[fault.Kind] = strong.GetValueOrDefault(fault.Kind) + 1;
                }
            }
        });

        output.WriteLine("runs in which a kind was strong enough to catch a network ignoring it: " + string.Join(", ", strong.OrderBy(k => k.Key, StringComparer.Ordinal)));
        runner.ThrowIfFailed();
        foreach (var kind in new[] { "stream-loss", "datagram-loss", "duplicate", "reorder", "split", "partition", "disconnect", "crash" })
        {
            strong.GetValueOrDefault(kind).ShouldBeGreaterThanOrEqualTo(PropertyDepth.Cases(120) / 20, $"{kind}: too few runs could tell a network that ignores it");
        }
    }

    [Fact]
    public void FaultLedger_WithANetworkWhosePathsInUseKeepTheirOptions_CatchesTheLossBurstThatInjectsNothing()
    {
        static IScenario Flawed(IScenario scenario) => new ReplacedPartScenario(scenario, "flawed: paths in use keep their options", (builder, _) =>
            builder.WithNetwork((world, random, defaults) => new PathsKeepTheirOptionsNetwork(world, random, defaults)));

        var runner = Check(FaultCase.Arbitrary(burstsAlways: true), 100, "fault-realization-stale-paths", Flawed);

        var shrunk = Shrunk(runner);
        var report = Run(shrunk, Flawed);
        output.WriteLine($"{shrunk}\n{SimulationAssert.Describe(report, "the shrunk case")}");
        report.ExitCode.ShouldBe(RunExitCodes.Crash);
        report.Failure.ShouldNotBeNull().ShouldMatch("^faults-realized: (stream|datagram)-loss asked .* the test bed did not inject the faults this run asked for");
        report.ToText(SimulationAssert.ReplayCommandPrefix).ShouldContain("faults-realized=FAIL (");
        shrunk.Episodes.ShouldHaveSingleItem().Kind.ShouldBe(EpisodeKind.LossBurst);

        // The standard network realizes the same case.
        var correct = Run(shrunk, scenario => scenario);
        correct.Faults.ShouldAllBe(f => f.Passed);
        correct.Faults.Single(f => f.Kind == report.Failure!.Split(' ')[1]).Realized.ShouldBeGreaterThan(0);
        correct.FaultsRealized.ShouldBeTrue();
    }

    [Fact]
    public void FaultLedger_WithAnOptionsMappingThatDropsDuplication_CatchesTheMissingDuplicates()
    {
        // The path options a run gets from its options, with the duplication setting lost on the way (as a mapping
        // that forgets a new field does): the network honours what it was given, and that is not what was asked.
        static IScenario Flawed(IScenario scenario) => new ReplacedPartScenario(scenario, "flawed: options mapping without duplication", (builder, options) =>
            builder.WithNetwork(options.ToPathOptions() with { DuplicateProbability = 0 }));

        var report = Run(new FaultCase(5, "api-create", 3, 40, 4, 0, 30, 0, 10, MeshSemantics.Datagram, StreamLossMode.Retransmit, false, []), Flawed);
        output.WriteLine(report.ToText(SimulationAssert.ReplayCommandPrefix));

        report.ExitCode.ShouldBe(RunExitCodes.Crash);
        report.Failure.ShouldNotBeNull().ShouldStartWith("faults-realized: duplicate asked ");
        var duplicate = report.Faults.Single(f => f.Kind == "duplicate");
        duplicate.Realized.ShouldBe(0);
        duplicate.Expected.ShouldBeGreaterThan(duplicate.Allowed);
    }

    [Fact]
    public void FaultLedger_OfAPlainRun_ReportsEachKindInForce()
    {
        var options = new FaultCase(7, "api-create", 2, 30, 4, 5, 10, 10, 50, MeshSemantics.Datagram, StreamLossMode.Retransmit, false,
            [new FaultEpisode(EpisodeKind.PartitionMesh, 300, 400, 1, 0), new FaultEpisode(EpisodeKind.DisconnectClient, 200, 300, 2, 0)]).ToOptions();
        var report = SimRunner.Run(ScenarioCatalog.Create("api-create"), 7, options);
        var text = report.ToText(SimulationAssert.ReplayCommandPrefix);
        output.WriteLine(text);

        report.Faults.ShouldAllBe(f => f.Passed);
        text.ShouldContain("faults-realized=pass");
        foreach (var kind in new[] { "stream-loss", "datagram-loss", "duplicate", "reorder", "split", "partition", "disconnect" })
        {
            text.ShouldContain($"fault.{kind}=asked ");
        }

        text.ShouldContain("fault.partition=asked 2, took effect 2");
        text.ShouldContain("fault.disconnect=asked 1, took effect 1");
        text.ShouldNotContain("fault.crash=");
        report.ToJson().ShouldContain("\"Kind\": \"duplicate\"");
    }

    private static ModelRunner Check(Arbitrary<FaultCase> cases, int count, string name, Func<IScenario, IScenario> scenario, Action<SimReport>? observe = null)
    {
        var runner = new ModelRunner();
        var property = Prop.ForAll(cases, c =>
        {
            var report = Run(c, scenario);
            observe?.Invoke(report);
            if (report.Faults.Count == 0)
            {
                throw new PropertyViolationException($"the run crashed before its faults could be judged: {report.Failure}");
            }

            if (report.Faults.FirstOrDefault(f => !f.Passed) is { } unrealized)
            {
                throw new PropertyViolationException(string.Create(CultureInfo.InvariantCulture, $"{unrealized.Kind}: {unrealized}"));
            }
        });
        FsCheck.Check.One(ModelRunner.Config(runner, count, name), property);
        return runner;
    }

    private static SimReport Run(FaultCase c, Func<IScenario, IScenario> scenario) =>
        SimRunner.Run(scenario(ScenarioCatalog.Create(c.Scenario)), (ulong)c.Seed, c.ToOptions());

    private static FaultCase Shrunk(ModelRunner runner) =>
        runner.Result is TestResult.Failed failed ? (FaultCase)failed.Item3.Head : throw new ShouldAssertException("the property did not fail");
}
