using PlayHouse.Conformance.Flawed;

namespace PlayHouse.Conformance.Tests;

/// <summary>The names <c>CONFORMANCE_FLAW</c> takes: each parses to its flaw alone and reads back the same; others are refused.</summary>
public sealed class ConformanceFlawsTests
{
    [Fact]
    public void Parse_AnswersNoResponse_SetsThatFlawAlone_AndReadsBackTheSameName()
    {
        var flaws = ConformanceFlaws.Parse("answers-no-response");

        Assert.Equal(ConformanceFlaws.None with { AnswersNoResponse = true }, flaws);
        Assert.False(flaws.IsNone);
        Assert.Equal("answers-no-response", flaws.ToString());
    }

    [Theory]
    [InlineData("drop-reply:3")]
    [InlineData("duplicate-reply:4")]
    [InlineData("broadcast-skips-member")]
    [InlineData("answers-no-response")]
    [InlineData("leak-per-connection")]
    [InlineData("drop-reply:50,broadcast-skips-member,answers-no-response")]
    public void Parse_EveryName_ReadsBackAsTheTextItCameFrom(string text)
    {
        var flaws = ConformanceFlaws.Parse(text);

        Assert.Equal(text, flaws.ToString());
        Assert.Equal(flaws, ConformanceFlaws.Parse(flaws.ToString()));
    }

    [Fact]
    public void Names_ListsEveryFlawParseAccepts()
    {
        var names = ConformanceFlaws.Names.Split(", ");

        Assert.Equal(["drop-reply:N", "duplicate-reply:N", "broadcast-skips-member", "answers-no-response", "leak-per-connection"], names);
        Assert.All(names, name => Assert.False(ConformanceFlaws.Parse(name.Replace(":N", ":2", StringComparison.Ordinal)).IsNone));
    }

    [Theory]
    [InlineData("answers-no-response:2")]
    [InlineData("answers-no-reply")]
    [InlineData("broadcast-skips-member,answer-no-response")]
    public void Parse_UnknownName_IsRefusedWithTheListOfNames(string text)
    {
        var error = Assert.Throws<ArgumentException>(() => ConformanceFlaws.Parse(text));

        Assert.StartsWith("Unknown conformance flaw '", error.Message, StringComparison.Ordinal);
        Assert.Contains(ConformanceFlaws.Names, error.Message, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("")]
    [InlineData("none")]
    public void Parse_EmptyOrNone_IsTheStandardProfile(string text)
    {
        var flaws = ConformanceFlaws.Parse(text);

        Assert.True(flaws.IsNone);
        Assert.Equal("none", flaws.ToString());
    }

    [Fact]
    public void FromEnvironment_ConformanceFlaw_CarriesTheFlawIntoTheOptions()
    {
        var options = ConformanceServerOptions.FromEnvironment(name => name == "CONFORMANCE_FLAW" ? "answers-no-response" : null);

        Assert.True(options.Flaws.AnswersNoResponse);
        Assert.False(options.Flaws.BroadcastSkipsMember);
    }
}
