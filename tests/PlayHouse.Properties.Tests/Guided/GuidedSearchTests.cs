using PlayHouse.Core.Seams;
using PlayHouse.Fixtures.Guided;
using PlayHouse.Fixtures.Zoo;
using PlayHouse.Simulation.Runs;
using Shouldly;

namespace PlayHouse.Properties.Tests.Guided;

/// <summary>The guided search: deterministic from its seed, its failures replay as plain runs, and the correct core stays clean.</summary>
public sealed class GuidedSearchTests
{
    private const int Budget = 30;

    [Fact]
    public void GuidedSearch_FromTheSameSearchSeed_KeepsTheSameCorpusAndFindsTheSameFailure()
    {
        var twin = FlawRegistry.Find("B12a").ShouldNotBeNull();

        var first = Search(twin, searchSeed: 11, twin.Id);
        var second = Search(twin, searchSeed: 11, twin.Id);
        var other = Search(twin, searchSeed: 12, twin.Id);

        first.Findings.ShouldNotBeEmpty();
        second.CorpusHash.ShouldBe(first.CorpusHash);
        second.CasesToFirstFailure.ShouldBe(first.CasesToFirstFailure);
        second.Corpus.Select(e => e.Input.ToString()).ShouldBe(first.Corpus.Select(e => e.Input.ToString()));
        second.Findings[0].Report.TraceHash.ShouldBe(first.Findings[0].Report.TraceHash);
        other.CorpusHash.ShouldNotBe(first.CorpusHash);
    }

    [Fact]
    public void GuidedSearch_KeepsOnlyCasesThatReachedSomethingNew_AndMostCasesAreMutantsOfThem()
    {
        var twin = FlawRegistry.Find("B12a").ShouldNotBeNull();
        var cases = new List<GuidedCase<PlayHouse.Fixtures.Properties.WorkloadSpec>>();

        var result = GuidedProperty.Run("guided corpus", twin.Profile, twin.Invariant, Budget, searchSeed: 3, onCase: cases.Add).Search;

        result.Findings.ShouldBeEmpty();
        cases.Count.ShouldBe(Budget);
        result.Corpus.ShouldAllBe(e => e.FirstReached.Count > 0);
        result.Corpus.Select(e => e.Index).ShouldBe(cases.Where(c => c.NewFeatures > 0).Select(c => c.Index));
        cases.Count(c => c.Origin.StartsWith("mutant of case ", StringComparison.Ordinal)).ShouldBeGreaterThan(Budget / 4);
        cases.Where(c => c.Origin != "fresh").ShouldAllBe(c => result.Corpus.Any(e => c.Origin.StartsWith($"mutant of case {e.Index + 1}:", StringComparison.Ordinal)));
    }

    [Fact]
    public void GuidedSearch_AFailure_ShrinksAndReplaysFromItsPlainRunnerCommand()
    {
        var twin = FlawRegistry.Find("B4").ShouldNotBeNull();

        var run = GuidedProperty.Run(ZooRunner.PropertyName(twin.Id), twin.Profile, twin.Invariant, Budget, searchSeed: 5, twin.Id).Run;

        run.Passed.ShouldBeFalse();
        var shrunk = run.ShrunkReport.ShouldNotBeNull();
        run.Shrunk.ShouldNotBeNull().Clients.ShouldBeLessThanOrEqualTo(twin.ShrunkClientsMax);
        var again = ZooRunner.Replay(shrunk);
        again.TraceHash.ShouldBe(shrunk.TraceHash);
        again.ExitCode.ShouldBe(RunExitCodes.InvariantViolation);
        shrunk.ReplayArguments.ShouldStartWith("--scenario mesh-ids --seed ");
        shrunk.ReplayArguments.ShouldEndWith("--flaw B4");
    }

    [Fact]
    public void GuidedSearch_OverTheCorrectCore_FindsNothingWithinTheSameBudget()
    {
        foreach (var id in new[] { "B4", "B12a" })
        {
            var twin = FlawRegistry.Find(id).ShouldNotBeNull();

            var result = Search(twin, searchSeed: 1, flaws: string.Empty);

            result.Findings.ShouldBeEmpty($"the correct core failed under the guided search of {id}: {result.Findings.FirstOrDefault()?.Violation}");
            result.CasesRun.ShouldBe(Budget);
        }
    }

    [Fact]
    public void FaultGroups_SplitPairsEachFaultWithItsHeal_AndAMovedFaultStillHeals()
    {
        var plan = FaultPlan.Parse("100ms:disconnect:2;150ms:latencychange:::90;300ms:disconnect:1;400ms:reconnect:1;500ms:reconnect:2;600ms:latencychange:::5;700ms:clog:play-1:api-1:0:100ms");

        var groups = FaultGroups.Split(plan, baselineLatencyMsMean: 5);

        groups.Select(g => string.Join(';', g)).ShouldBe(
        [
            "100ms:disconnect:2::0:0ms;500ms:reconnect:2::0:0ms",
            "150ms:latencychange:::90:0ms;600ms:latencychange:::5:0ms",
            "300ms:disconnect:1::0:0ms;400ms:reconnect:1::0:0ms",
            "700ms:clog:play-1:api-1:0:100ms",
        ]);
        var random = new Xoshiro256StarStar(7);
        for (var i = 0; i < 200; i++)
        {
            var moved = FaultGroups.Move(groups[i % groups.Count], random);
            moved.Count.ShouldBe(groups[i % groups.Count].Count);
            moved[0].At.ShouldBeGreaterThanOrEqualTo(TimeSpan.Zero);
            if (moved.Count == 2)
            {
                moved[1].At.ShouldBeGreaterThan(moved[0].At);
            }
        }
    }

    private static GuidedSearchResult<PlayHouse.Fixtures.Properties.WorkloadSpec> Search(FlawedTwin twin, ulong searchSeed, string flaws) =>
        GuidedProperty.Run(ZooRunner.PropertyName(twin.Id), twin.Profile, twin.Invariant, Budget, searchSeed, flaws, shrink: false).Search;
}
