namespace PlayHouse.Campaign.Tests;

public sealed class ScheduleTests
{
    private static readonly ScheduleShape Shape = new()
    {
        ClientsMax = 8,
        Transports = [CampaignTransport.Tcp, CampaignTransport.Tls, CampaignTransport.Ws],
        Faults = FaultMix.Mixed,
        DurationMs = 3000,
    };

    [Fact]
    public void Draw_SameSeedAndShape_GivesTheSameScheduleAndAnotherSeedAnother()
    {
        var first = ScheduleGenerator.Draw(42, Shape).ToJson();
        var again = ScheduleGenerator.Draw(42, Shape).ToJson();
        var other = ScheduleGenerator.Draw(43, Shape).ToJson();

        Assert.Equal(first, again);
        Assert.NotEqual(first, other);
    }

    [Fact]
    public void Draw_OverManySeeds_GivesValidSchedulesWithFaultsInsideTheRun()
    {
        for (ulong seed = 1; seed <= 200; seed++)
        {
            var schedule = ScheduleGenerator.Draw(seed, Shape);

            schedule.Validate();
            Assert.InRange(schedule.Clients.Count, 2, Shape.ClientsMax);
            Assert.NotEmpty(schedule.Faults);
            Assert.All(schedule.Faults, f => Assert.True(f.AtMs < schedule.DurationMs, f.ToString()));
            Assert.All(Enumerable.Range(0, schedule.Stages), stage => Assert.Contains(schedule.Clients, c => c.Stage == stage));
        }
    }

    [Fact]
    public void Json_WrittenAndRead_IsTheSameSchedule()
    {
        var schedule = ScheduleGenerator.Draw(7, Shape);

        var read = CampaignSchedule.FromJson(schedule.ToJson());

        Assert.Equal(schedule.ToJson(), read.ToJson());
        Assert.Equal(schedule.Describe(), read.Describe());
    }

    [Theory]
    [InlineData("\"stage\": 0", "\"stage\": 99", "stage 99")]
    [InlineData("\"profile\": \"playhouse-test-stage\"", "\"profile\": \"other\"", "profile")]
    [InlineData("\"kind\": \"echo\"", "\"kind\": \"dance\"", "not a campaign schedule")]
    public void FromJson_AFieldOutOfRange_IsRefusedNamingIt(string from, string to, string named)
    {
        var schedule = new CampaignSchedule(CampaignSchedule.TestStageProfile, 1, 500, 2000, 1, 1, [new CampaignClientPlan(0, CampaignTransport.Tcp, 0, 0, [new CampaignOperation(OperationKind.Echo, 5)])], []);
        var json = schedule.ToJson();
        Assert.Contains(from, json, StringComparison.Ordinal);

        var error = Assert.Throws<ArgumentException>(() => CampaignSchedule.FromJson(json.Replace(from, to, StringComparison.Ordinal)));

        Assert.Contains(named, error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void ShrinkCandidates_EachIsSmallerThanItsParentAndValid()
    {
        var schedule = ScheduleGenerator.Draw(11, Shape);
        var finding = new Finding(Checkers.Broadcast, schedule.Clients[^1].Id, 0.5, "missing");

        var candidates = ScheduleShrinker.Candidates(schedule, finding).ToList();

        Assert.NotEmpty(candidates);
        Assert.All(candidates, c =>
        {
            c.Validate();
            var smaller = c.Clients.Count < schedule.Clients.Count || c.Faults.Count < schedule.Faults.Count || c.DurationMs < schedule.DurationMs
                || c.OperationCount < schedule.OperationCount || c.Clients.Sum(p => p.Operations.Sum(o => o.Count)) < schedule.Clients.Sum(p => p.Operations.Sum(o => o.Count));
            Assert.True(smaller, c.Size);
        });
        Assert.Equal([schedule.Clients[^1].Id], candidates[0].Clients.Select(c => c.Id));
    }

    [Fact]
    public void ShrinkCandidates_OfTheSmallestSchedule_AreNone()
    {
        var smallest = new CampaignSchedule(CampaignSchedule.TestStageProfile, 1, ScheduleShrinker.DurationMsMin, 2000, 1, 1, [new CampaignClientPlan(0, CampaignTransport.Tcp, 0, 0, [new CampaignOperation(OperationKind.Echo)])], []);

        Assert.Empty(ScheduleShrinker.Candidates(smallest, null));
    }
}
