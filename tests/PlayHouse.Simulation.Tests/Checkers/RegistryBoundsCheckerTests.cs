using Microsoft.Extensions.Time.Testing;
using PlayHouse.Core.Runtime;
using PlayHouse.Simulation.Checkers;

namespace PlayHouse.Simulation.Tests.Checkers;

/// <summary>The registry-bounds checker fed lifecycle hooks by hand: the cap of waiting actors and stages reused under their id.</summary>
public sealed class RegistryBoundsCheckerTests
{
    private const string Node = "play-1";
    private readonly FakeTimeProvider _clock = CheckerClock.AtZero();

    [Fact]
    public void WaitingActorsOverTheCap_LongerThanTheGrace_AreReportedOnce_ButAnEvictionWithinTheGraceIsNot()
    {
        var checker = NewChecker(new ServerOptions { DisconnectedActorsMax = 1, DisconnectedActorExpiry = null, IdleStageCloseAfter = null });
        Stage(checker, 1);
        Join(checker, 1, actor: 10);
        Join(checker, 1, actor: 11);
        Lifecycle(checker, 1, 10, LifecycleEvent.ActorDisconnected);
        Lifecycle(checker, 1, 11, LifecycleEvent.ActorDisconnected);
        _clock.Advance(TimeSpan.FromMilliseconds(500));
        checker.CheckStep();

        // Evicted within the grace: over the cap for half a second only.
        Lifecycle(checker, 1, 10, LifecycleEvent.ActorDestroy);
        _clock.Advance(TimeSpan.FromSeconds(5));
        checker.CheckStep();
        var afterEviction = checker.ViolationCount;

        Join(checker, 1, actor: 12);
        Lifecycle(checker, 1, 12, LifecycleEvent.ActorDisconnected);
        _clock.Advance(TimeSpan.FromMilliseconds(1001));
        checker.CheckStep();
        checker.CheckStep();

        Assert.Equal(0, afterEviction);
        var violation = Assert.Single(checker.Violations);
        Assert.Contains("node play-1: 2 disconnected actors held at 6.501 s, over DisconnectedActorsMax=1 since 5.5 s", violation.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void ReconnectedActor_LeavesTheWaitingCount()
    {
        var checker = NewChecker(new ServerOptions { DisconnectedActorsMax = 1, DisconnectedActorExpiry = null, IdleStageCloseAfter = null });
        Stage(checker, 1);
        Join(checker, 1, actor: 10);
        Join(checker, 1, actor: 11);
        Lifecycle(checker, 1, 10, LifecycleEvent.ActorDisconnected);
        Lifecycle(checker, 1, 10, LifecycleEvent.ActorConnected);
        Lifecycle(checker, 1, 11, LifecycleEvent.ActorDisconnected);
        _clock.Advance(TimeSpan.FromSeconds(10));
        checker.CheckStep();

        Assert.Equal(0, checker.ViolationCount);
        Assert.Equal(1, checker.DisconnectedActorsHeld);
    }

    [Fact]
    public void StageCreatedAgainUnderItsId_IsJudgedByItsOwnIdleSpan_NotItsPredecessors()
    {
        var checker = NewChecker(new ServerOptions { IdleStageCloseAfter = TimeSpan.FromSeconds(3), DisconnectedActorExpiry = null });

        // The first stage 5 is created (its idle deadline 3 s + grace 1 s away) and closed at once; its successor under
        // the same id is created 2 s later, so the predecessor's deadline passes while the successor is 2 s idle.
        Stage(checker, 5);
        Lifecycle(checker, 5, 0, LifecycleEvent.StageDestroy);
        _clock.Advance(TimeSpan.FromSeconds(2));
        Stage(checker, 5);
        _clock.Advance(TimeSpan.FromSeconds(2.5));
        checker.CheckStep();
        var beforeSuccessorsDeadline = checker.ViolationCount;
        _clock.Advance(TimeSpan.FromSeconds(2));
        checker.CheckStep();

        Assert.Equal(0, beforeSuccessorsDeadline);
        var violation = Assert.Single(checker.Violations);
        Assert.Contains("stage play-1/5: empty and inactive since 2 s", violation.Message, StringComparison.Ordinal);
    }

    private RegistryBoundsChecker NewChecker(ServerOptions options)
    {
        var checker = new RegistryBoundsChecker(new CheckerContext(_clock), TimeSpan.FromSeconds(1));
        checker.Watch(Node, options);
        return checker;
    }

    private static void Stage(RegistryBoundsChecker checker, long stageId) => Lifecycle(checker, stageId, 0, LifecycleEvent.StagePostCreate);

    private static void Join(RegistryBoundsChecker checker, long stageId, long actor) => Lifecycle(checker, stageId, actor, LifecycleEvent.ActorPostJoinStage);

    private static void Lifecycle(RegistryBoundsChecker checker, long stageId, long actor, LifecycleEvent lifecycleEvent) =>
        checker.OnLifecycle(Node, stageId, actor, accountId: actor, lifecycleEvent);
}
