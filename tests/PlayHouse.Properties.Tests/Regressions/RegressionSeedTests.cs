using PlayHouse.Fixtures.Scenarios;
using PlayHouse.Fixtures.Testing;
using PlayHouse.Properties.Tests.Infrastructure;
using Shouldly;

namespace PlayHouse.Properties.Tests.Regressions;

/// <summary>
/// Every run in <c>fixtures/seeds/regressions.txt</c> once failed; each is replayed on every test run and must pass.
/// A failure prints the line, the banner and the runner command that replays it.
/// </summary>
public sealed class RegressionSeedTests
{
    public static TheoryData<string> Lines()
    {
        var data = new TheoryData<string>();
        foreach (var regression in RegressionSeeds.Parse(System.IO.File.ReadAllText(RepositoryRoot.File(RegressionSeeds.RelativePath))))
        {
            data.Add(regression.Line);
        }

        return data;
    }

    [Theory]
    [MemberData(nameof(Lines))]
    public void RegressionSeed_ReplayedToday_Passes(string line)
    {
        var regression = RegressionSeeds.Parse(line).ShouldHaveSingleItem();

        var report = RegressionSeeds.Replay(regression);

        report.Passed.ShouldBeTrue(SimulationAssert.Describe(report, $"regression {regression}"));
    }

    [Fact]
    public void RegressionFile_HasEntriesThatAllNameKnownScenariosAndValidOptions()
    {
        var cases = RegressionSeeds.Parse(System.IO.File.ReadAllText(RepositoryRoot.File(RegressionSeeds.RelativePath)));

        cases.Count.ShouldBeGreaterThanOrEqualTo(5);
        cases.ShouldAllBe(c => ScenarioCatalog.Names.Contains(c.Scenario));
        foreach (var regression in cases)
        {
            Should.NotThrow(() => regression.Options(ScenarioCatalog.Create(regression.Scenario)), regression.ToString());
        }
    }

    [Fact]
    public void Parse_CommentsBlankLinesAndQuotes_AreHandled()
    {
        var cases = RegressionSeeds.Parse("# a comment\n\necho 5 clients=2 # trailing comment\nreconnect 6 \"faults=10ms:heal\" requestsPerClient=3\n");

        cases.Count.ShouldBe(2);
        cases[0].ShouldSatisfyAllConditions(
            c => c.Scenario.ShouldBe("echo"),
            c => c.Seed.ShouldBe(5UL),
            c => c.Overrides.ShouldBe([new("clients", "2")]),
            c => c.LineNumber.ShouldBe(3));
        cases[1].Overrides.ShouldBe([new("faults", "10ms:heal"), new("requestsPerClient", "3")]);
    }

    [Theory]
    [InlineData("echo", "line 1: expected 'scenario seed")]
    [InlineData("echo seven", "the seed 'seven'")]
    [InlineData("echo 7 clients", "'clients' is not key=value")]
    [InlineData("echo 7 \"faults=x", "a double quote is not closed")]
    public void Parse_AMalformedLine_ThrowsNamingTheLine(string text, string expected)
    {
        var error = Should.Throw<FormatException>(() => RegressionSeeds.Parse(text));

        error.Message.ShouldContain(expected);
        error.Message.ShouldContain(RegressionSeeds.RelativePath);
    }

    [Fact]
    public void Format_OfAReport_ParsesBackToTheSameRun()
    {
        var scenario = ScenarioCatalog.Create("echo");
        var report = SimulationAssert.Passes(scenario, 9, scenario.Defaults with { Clients = 2, RequestsPerClient = 3, Faults = PlayHouse.Simulation.Runs.FaultPlan.Parse("100ms:disconnect:1::0:0ms;300ms:reconnect:1::0:0ms") });

        var line = RegressionSeeds.Format(report);
        var replayed = RegressionSeeds.Replay(RegressionSeeds.Parse(line).ShouldHaveSingleItem());

        line.ShouldStartWith("echo 9 clients=2 requestsPerClient=3 faults=");
        replayed.TraceHash.ShouldBe(report.TraceHash);
    }
}
