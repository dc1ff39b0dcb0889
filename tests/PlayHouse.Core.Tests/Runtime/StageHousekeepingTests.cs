using PlayHouse.Core.Runtime;

namespace PlayHouse.Core.Tests.Runtime;

/// <summary>
/// A stage's housekeeping on the harness's manual clock: each disconnected actor expires at its own deadline, a stage
/// closes once idle from the moment its last actor left, and the server's list of empty stages holds exactly the
/// stages that are empty, those created empty included.
/// </summary>
public sealed class StageHousekeepingTests
{
    private static readonly TimeSpan Expiry = TimeSpan.FromSeconds(30);
    private static readonly TimeSpan IdleClose = TimeSpan.FromSeconds(10);
    private static readonly TimeSpan OneTick = TimeSpan.FromTicks(1);

    [Fact]
    public void ActorsDisconnectedAtDifferentTimes_EachExpireAtTheirOwnDeadline_NotOneTickSooner()
    {
        using var h = new RuntimeHarness(Options());
        var first = h.Join(1, accountId: 1);
        var second = h.Join(1, accountId: 2);
        first.Disconnect();
        h.Advance(TimeSpan.FromSeconds(10));
        second.Disconnect();
        h.Advance(TimeSpan.FromSeconds(20) - OneTick);
        var beforeFirst = h.Play.ActorCount;
        h.Advance(OneTick);
        var afterFirst = h.Play.ActorCount;
        h.Advance(TimeSpan.FromSeconds(10) - OneTick);
        var beforeSecond = h.Play.ActorCount;
        h.Advance(OneTick);

        Assert.Equal((2, 1, 1), (beforeFirst, afterFirst, beforeSecond));
        Assert.Equal(0, h.Play.ActorCount);
        Assert.Equal(2, h.Play.Counters.DisconnectedActorsExpired);
    }

    [Fact]
    public void StageWhoseLastActorLeaves_ClosesIdleStageCloseAfterLater_NotOneTickSooner()
    {
        using var h = new RuntimeHarness(Options());
        h.Join(1, accountId: 1);
        h.Advance(TimeSpan.FromSeconds(3));
        h.Stages[1].Link.Actors.Single().Link.LeaveStage();
        h.Pump();
        h.Advance(IdleClose - OneTick);
        var openBefore = h.Play.HasStage(1);
        h.Advance(OneTick);

        Assert.True(openBefore);
        Assert.False(h.Play.HasStage(1));
        Assert.Equal(1, h.Play.Counters.IdleStagesClosed);
    }

    [Fact]
    public void StagesCreatedEmpty_CountTowardEmptyStagesMax_SoTheOlderOneClosesAtTheCap()
    {
        using var h = new RuntimeHarness(Options() with { EmptyStagesMax = 1 });
        h.CreateStage(1);
        var listedAlone = h.Play.EmptyStageCount;
        h.CreateStage(2);

        Assert.Equal(1, listedAlone);
        Assert.False(h.Play.HasStage(1));
        Assert.True(h.Play.HasStage(2));
        Assert.Equal(1, h.Play.Counters.EmptyStagesClosedAtCap);
        Assert.Equal(1, h.Play.EmptyStageCount);
    }

    [Fact]
    public void EmptyStageJoinedAgain_LeavesTheListOfEmptyStages()
    {
        using var h = new RuntimeHarness(Options());
        h.Join(1, accountId: 1).Disconnect();
        h.Advance(Expiry);
        var emptyAfterExpiry = h.Play.EmptyStageCount;
        h.Join(1, accountId: 2);

        Assert.Equal(1, emptyAfterExpiry);
        Assert.Equal(0, h.Play.EmptyStageCount);
        Assert.True(h.Play.HasStage(1));
    }

    [Fact]
    public void EmptyStageKeptOpenByATimer_ClosesAFullIdleSpanAfterTheCheckThatFoundItBusy()
    {
        using var h = new RuntimeHarness(Options());
        h.CreateStage(1);
        var timer = h.Stages[1].Link.AddRepeatTimer(TimeSpan.FromSeconds(1), TimeSpan.FromSeconds(1), () => { });
        h.Advance(IdleClose);
        var openAtFirstCheck = h.Play.HasStage(1);
        h.Stages[1].Link.CancelTimer(timer);
        h.Advance(IdleClose - OneTick);
        var openBeforeSecondCheck = h.Play.HasStage(1);
        h.Advance(OneTick);

        Assert.True(openAtFirstCheck);
        Assert.True(openBeforeSecondCheck);
        Assert.False(h.Play.HasStage(1));
    }

    private static ServerOptions Options() => new()
    {
        DefaultStageType = RuntimeHarness.StageType,
        DisconnectedActorExpiry = Expiry,
        IdleStageCloseAfter = IdleClose,
    };
}
