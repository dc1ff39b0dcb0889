using PlayHouse.Simulation.Runs;

namespace PlayHouse.Simulation.Tests.Runs;

public sealed class FaultPlanTests
{
    [Fact]
    public void Parse_StepsWithTrailingFieldsLeftOut_FillDefaults()
    {
        var plan = FaultPlan.Parse("900ms:restart:play-1;200ms:crash:play-1;300ms:partition:play-1:api-1;400ms:lossburst:::25");

        Assert.Equal(
            [
                new FaultStep(TimeSpan.FromMilliseconds(200), FaultKind.Crash, "play-1"),
                new FaultStep(TimeSpan.FromMilliseconds(300), FaultKind.Partition, "play-1", "api-1"),
                new FaultStep(TimeSpan.FromMilliseconds(400), FaultKind.LossBurst, Value: 25),
                new FaultStep(TimeSpan.FromMilliseconds(900), FaultKind.Restart, "play-1"),
            ],
            plan.Steps);
    }

    [Fact]
    public void Parse_OfTheCanonicalText_GivesTheSamePlan()
    {
        var plan = FaultPlan.Parse("150ms:disconnect:all::0:0ms;600ms:reconnect:all;700ms:clog:play-1:api-1:0:250ms");

        var again = FaultPlan.Parse(plan.ToString());

        Assert.Equal(plan.Steps, again.Steps);
        Assert.Equal(TimeSpan.FromMilliseconds(950), again.HealedAt);
    }

    [Theory]
    [InlineData("200ms", "must be 'at:kind'")]
    [InlineData("200ms:crash:a:b:1:2ms:extra", "must be 'at:kind'")]
    [InlineData("200ms:explode", "Unknown fault kind 'explode'")]
    [InlineData("soon:crash:play-1", "Bad time 'soon'")]
    [InlineData("200ms:lossburst:::lots", "Bad value 'lots'")]
    public void Parse_AMalformedStep_ThrowsNamingTheProblem(string text, string expected)
    {
        var error = Assert.Throws<FormatException>(() => FaultPlan.Parse(text));

        Assert.Contains(expected, error.Message, StringComparison.Ordinal);
    }
}
