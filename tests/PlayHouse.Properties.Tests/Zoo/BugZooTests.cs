using PlayHouse.Fixtures.Zoo;
using Shouldly;
using Xunit.Abstractions;

namespace PlayHouse.Properties.Tests.Zoo;

/// <summary>
/// The bug zoo's proof, one case per catalogue entry: the flawed twin is caught within its case budget by the
/// invariant the catalogue names, the counterexample shrinks small, the printed replay line reproduces it with the
/// same trace hash, and the correct core passes the very same cases.
/// </summary>
public sealed class BugZooTests(ITestOutputHelper output)
{
    public static TheoryData<string> TwinIds()
    {
        var data = new TheoryData<string>();
        foreach (var twin in FlawRegistry.All)
        {
            data.Add(twin.Id);
        }

        return data;
    }

    [Theory]
    [MemberData(nameof(TwinIds))]
    public void FlawedTwin_IsCaughtShrunkAndReplayed_WhileTheCorrectCorePassesTheSameCases(string id)
    {
        var twin = FlawRegistry.Find(id).ShouldNotBeNull();
        var result = ZooRunner.Run(twin);
        output.WriteLine(ZooRunner.Describe(result));
        output.WriteLine(result.Flawed.Message);

        result.Problem.ShouldBeNull();
        result.Caught.ShouldBeTrue();
        result.CasesToFirstFailure.ShouldBeInRange(1, twin.CasesMax);
        result.Core.Passed.ShouldBeTrue();
        result.Core.Tests.ShouldBe(twin.CasesMax);
        result.ReplayMatches.ShouldBeTrue();
        result.ShrunkClients.ShouldBeLessThanOrEqualTo(twin.ShrunkClientsMax);
        result.ShrunkFaultSteps.ShouldBeLessThanOrEqualTo(twin.ShrunkFaultStepsMax);
        result.ReplayCommand.ShouldContain("--flaw " + id);
    }

    [Fact]
    public void Catalogue_EveryTwinNamesAnEntry_AndIdsAreUnique()
    {
        var ids = ZooCatalogue.Entries.Select(e => e.Id).ToList();
        ids.Count.ShouldBe(ids.Distinct(StringComparer.OrdinalIgnoreCase).Count());
        FlawRegistry.All.ShouldAllBe(t => ids.Contains(t.Id));
        ZooCatalogue.Entries.Select(e => e.Group).Distinct().Count().ShouldBe(16);
    }

    [Fact]
    public void Resolve_AGroupId_NamesEverySubItemAndAnUnknownIdListsTheKnownOnes()
    {
        ZooCatalogue.Resolve("B7").Select(e => e.Id).ShouldBe(["B7a", "B7b", "B7c", "B7d", "B7e"]);
        ZooCatalogue.Resolve("b8").ShouldHaveSingleItem().Id.ShouldBe("B8");
        var error = Should.Throw<ArgumentException>(() => ZooCatalogue.Resolve("B99"));
        error.Message.ShouldContain("B99");
        error.Message.ShouldContain("B1, B2");
    }
}
