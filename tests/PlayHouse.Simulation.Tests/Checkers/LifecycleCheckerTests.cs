using PlayHouse.Core.Runtime;
using PlayHouse.Simulation.Checkers;
using static PlayHouse.Core.Runtime.LifecycleEvent;

namespace PlayHouse.Simulation.Tests.Checkers;

public sealed class LifecycleCheckerTests
{
    private const string Node = "play-1";
    private const long StageId = 5;
    private readonly LifecycleChecker _checker = new(CheckerClock.AtZero());

    [Fact]
    public void Lifecycle_FullStageAndActorLives_Pass()
    {
        CreateStage();

        // Actor 1 joins, disconnects, reconnects, disconnects again.
        Actor(1, 0, ActorCreate, ActorAuthenticate);
        Actor(1, 100, ActorPostAuthenticate, ActorJoinStage, ActorPostJoinStage, ActorDisconnected, ActorConnected, ActorDisconnected);

        // Actor 2 is the probe of account 100's reconnect; actor 3 is refused at authentication; actor 4 is
        // refused by the stage's OnJoinStage.
        Actor(2, 0, ActorCreate, ActorAuthenticate, ActorDestroy);
        Actor(3, 0, ActorCreate, ActorAuthenticate, ActorDestroy);
        Actor(4, 0, ActorCreate, ActorAuthenticate);
        Actor(4, 400, ActorPostAuthenticate, ActorJoinStage, ActorDestroy);
        Actor(5, 0, ActorCreate, ActorAuthenticate);
        Actor(5, 500, ActorPostAuthenticate, ActorJoinStage, ActorPostJoinStage);
        _checker.CheckQuiescent();
        Assert.Equal(2, _checker.LiveActorCount);

        Actor(1, 100, ActorDestroy);
        Actor(5, 500, ActorDestroy);
        Stage(StageDestroy);
        _checker.CheckQuiescent();

        Assert.False(_checker.HasViolations, _checker.FirstViolation?.ToString());
        Assert.Equal(0, _checker.LiveActorCount);
        Assert.Equal(0, _checker.RunningStageCount);
    }

    [Fact]
    public void Lifecycle_FailedCreateThenCreateAgainAndAfterDestroy_Passes()
    {
        Stage(StageCreate);
        _checker.OnMessageCompleted(Node, StageId, StageWorkKind.Create, "create");
        CreateStage();
        Stage(StageDestroy);
        CreateStage();
        _checker.CheckQuiescent();

        Assert.False(_checker.HasViolations, _checker.FirstViolation?.ToString());
        Assert.Equal(1, _checker.RunningStageCount);
    }

    [Fact]
    public void Lifecycle_JoinStageBeforePostAuthenticate_NamesStageActorAndSequence()
    {
        CreateStage();
        Actor(3, 0, ActorCreate, ActorAuthenticate);
        Actor(3, 77, ActorJoinStage);

        var violation = Assert.Single(_checker.Violations);
        Assert.Equal(
            "stage play-1/5, actor #3 (account 77): ActorJoinStage after [ActorCreate, ActorAuthenticate]; expected ActorPostAuthenticate or ActorDestroy",
            violation.Message);
    }

    [Fact]
    public void Lifecycle_EventAfterActorDestroy_IsReported()
    {
        CreateStage();
        Actor(3, 0, ActorCreate, ActorAuthenticate);
        Actor(3, 77, ActorPostAuthenticate, ActorJoinStage, ActorPostJoinStage, ActorDestroy, ActorDisconnected);

        var violation = Assert.Single(_checker.Violations);
        Assert.Equal(
            "stage play-1/5, actor #3 (account 77): ActorDisconnected after ActorDestroy in [ActorCreate, ActorAuthenticate, ActorPostAuthenticate, ActorJoinStage, ActorPostJoinStage, ActorDestroy]; nothing may follow ActorDestroy",
            violation.Message);
    }

    [Fact]
    public void Lifecycle_ConnectedWhileAlreadyConnected_IsReported()
    {
        CreateStage();
        Actor(3, 0, ActorCreate, ActorAuthenticate);
        Actor(3, 77, ActorPostAuthenticate, ActorJoinStage, ActorPostJoinStage, ActorConnected);

        var violation = Assert.Single(_checker.Violations);
        Assert.Contains("actor #3 (account 77): ActorConnected after [", violation.Message, StringComparison.Ordinal);
        Assert.EndsWith("ActorPostJoinStage]; expected ActorDisconnected or ActorDestroy", violation.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void Lifecycle_ActorCreatedTwice_IsReported()
    {
        CreateStage();
        Actor(3, 0, ActorCreate, ActorCreate);

        Assert.Equal("stage play-1/5, actor #3 (account 0): ActorCreate after [ActorCreate]; expected ActorAuthenticate", Assert.Single(_checker.Violations).Message);
    }

    [Fact]
    public void Lifecycle_ActorEventBeforeActorCreate_IsReported()
    {
        CreateStage();
        Actor(3, 0, ActorAuthenticate);

        Assert.Equal("stage play-1/5, actor #3 (account 0): ActorAuthenticate before ActorCreate", Assert.Single(_checker.Violations).Message);
    }

    [Fact]
    public void Lifecycle_StageCreatedTwiceWithoutFailing_IsReported()
    {
        CreateStage();
        Stage(StageCreate);

        Assert.Equal("stage play-1/5: StageCreate after [StageCreate, StagePostCreate]; expected StageDestroy", Assert.Single(_checker.Violations).Message);
    }

    [Fact]
    public void Lifecycle_SecondCreateWhileFirstStillRunning_IsReported()
    {
        Stage(StageCreate);
        Stage(StageCreate);

        Assert.Equal("stage play-1/5: StageCreate after [StageCreate]; expected StagePostCreate", Assert.Single(_checker.Violations).Message);
    }

    [Fact]
    public void Lifecycle_StageDestroyedWithLiveActors_NamesTheActors()
    {
        CreateStage();
        Actor(3, 0, ActorCreate, ActorAuthenticate);
        Actor(3, 77, ActorPostAuthenticate, ActorJoinStage, ActorPostJoinStage);
        Actor(4, 0, ActorCreate, ActorAuthenticate);
        Actor(4, 78, ActorPostAuthenticate, ActorJoinStage, ActorPostJoinStage);
        Actor(4, 78, ActorDestroy);
        Stage(StageDestroy);

        Assert.Equal(
            "stage play-1/5: StageDestroy while 1 actor(s) were not destroyed (#3); every actor's ActorDestroy must come first",
            Assert.Single(_checker.Violations).Message);
    }

    [Fact]
    public void Lifecycle_ActorEventOnAStageThatIsNotRunning_IsReported()
    {
        Stage(StageCreate);
        Actor(3, 0, ActorCreate);

        Assert.Equal(
            "stage play-1/5, actor #3 (account 0): ActorCreate while the stage is still creating (stage history [StageCreate])",
            Assert.Single(_checker.Violations).Message);
    }

    [Fact]
    public void Lifecycle_ActorStuckMidJoinAtQuiescence_IsReportedOnce()
    {
        CreateStage();
        Actor(3, 0, ActorCreate, ActorAuthenticate);
        _checker.CheckQuiescent();
        _checker.CheckQuiescent();

        Assert.Equal(
            "stage play-1/5, actor #3 (account 0): stuck at quiescence after [ActorCreate, ActorAuthenticate]; expected ActorPostAuthenticate or ActorDestroy (OnCreate ran, but the actor neither joined nor was destroyed)",
            Assert.Single(_checker.Violations).Message);
    }

    [Fact]
    public void Lifecycle_StageStillCreatingAtQuiescence_IsReported()
    {
        Stage(StageCreate);
        _checker.CheckQuiescent();

        Assert.Equal(
            "stage play-1/5: still creating at quiescence after [StageCreate]; expected StagePostCreate or a failed create",
            Assert.Single(_checker.Violations).Message);
    }

    [Fact]
    public void Lifecycle_LongHistory_ShowsOnlyTheLastEvents()
    {
        CreateStage();
        Actor(3, 0, ActorCreate, ActorAuthenticate);
        Actor(3, 77, ActorPostAuthenticate, ActorJoinStage, ActorPostJoinStage);
        for (var i = 0; i < 10; i++)
        {
            Actor(3, 77, ActorDisconnected, ActorConnected);
        }

        Actor(3, 77, ActorConnected);

        var message = Assert.Single(_checker.Violations).Message;
        Assert.StartsWith("stage play-1/5, actor #3 (account 77): ActorConnected after [..., ActorDisconnected, ActorConnected,", message, StringComparison.Ordinal);
        Assert.DoesNotContain("ActorCreate", message, StringComparison.Ordinal);
    }

    [Fact]
    public void Lifecycle_SecondActorOfAnAccountJoinsWhileTheFirstLives_IsReportedAsASecondJoin()
    {
        CreateStage();
        Actor(1, 0, ActorCreate, ActorAuthenticate);
        Actor(1, 100, ActorPostAuthenticate, ActorJoinStage, ActorPostJoinStage, ActorDisconnected);
        Actor(2, 0, ActorCreate, ActorAuthenticate);
        Actor(2, 100, ActorPostAuthenticate, ActorJoinStage);

        var violation = Assert.Single(_checker.Violations);
        Assert.Equal(
            "stage play-1/5, actor #2 (account 100): ActorJoinStage while actor #1 of the same account is joined and disconnected in the stage; the account's join ran a second time (a reconnect must keep its one actor)",
            violation.Message);
    }

    [Fact]
    public void Lifecycle_AccountJoinsAgainAfterItsActorLeft_Passes()
    {
        CreateStage();
        Actor(1, 0, ActorCreate, ActorAuthenticate);
        Actor(1, 100, ActorPostAuthenticate, ActorJoinStage, ActorPostJoinStage, ActorDestroy);
        Actor(2, 0, ActorCreate, ActorAuthenticate);
        Actor(2, 100, ActorPostAuthenticate, ActorJoinStage, ActorPostJoinStage);
        _checker.OnActorMessage(Node, StageId, 2, 100);

        Assert.False(_checker.HasViolations, _checker.FirstViolation?.ToString());
    }

    [Fact]
    public void OnActorMessage_ToADestroyedActor_IsReported()
    {
        CreateStage();
        Actor(1, 0, ActorCreate, ActorAuthenticate);
        Actor(1, 100, ActorPostAuthenticate, ActorJoinStage, ActorPostJoinStage, ActorDisconnected);
        _checker.OnActorMessage(Node, StageId, 1, 100);
        Actor(1, 100, ActorDestroy);
        _checker.OnActorMessage(Node, StageId, 1, 100);

        var violation = Assert.Single(_checker.Violations);
        Assert.Equal(
            "stage play-1/5, actor #1 (account 100): a message was handed to the actor while it is destroyed; messages go to the live actor registered for the account",
            violation.Message);
    }

    [Fact]
    public void OnActorMessage_ToAnActorThatIsNotTheAccountsRegisteredOne_IsReported()
    {
        CreateStage();
        Actor(1, 0, ActorCreate, ActorAuthenticate);
        Actor(1, 100, ActorPostAuthenticate, ActorJoinStage, ActorPostJoinStage);
        Actor(2, 0, ActorCreate, ActorAuthenticate);
        Actor(2, 100, ActorPostAuthenticate, ActorJoinStage, ActorPostJoinStage);
        _checker.OnActorMessage(Node, StageId, 1, 100);

        Assert.Equal(2, _checker.Violations.Count);
        Assert.Equal("stage play-1/5, actor #1 (account 100): a message was handed to the actor while actor #2 is registered for the account", _checker.Violations[1].Message);
    }

    private void CreateStage()
    {
        Stage(StageCreate, StagePostCreate);
        _checker.OnMessageCompleted(Node, StageId, StageWorkKind.Create, "create");
    }

    private void Stage(params LifecycleEvent[] events)
    {
        foreach (var lifecycleEvent in events)
        {
            _checker.OnLifecycle(Node, StageId, 0, 0, lifecycleEvent);
        }
    }

    private void Actor(long instance, long accountId, params LifecycleEvent[] events)
    {
        foreach (var lifecycleEvent in events)
        {
            _checker.OnLifecycle(Node, StageId, instance, accountId, lifecycleEvent);
        }
    }
}
