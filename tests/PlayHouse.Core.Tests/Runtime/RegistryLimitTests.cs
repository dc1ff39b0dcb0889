using PlayHouse.Core.Runtime;

namespace PlayHouse.Core.Tests.Runtime;

/// <summary>
/// The play server's registries stay bounded: stages per server and actors per stage have caps that refuse with a code
/// and a counter, disconnected actors expire unless their account reconnects, and idle empty stages close, all on the
/// harness's manual clock.
/// </summary>
public sealed class RegistryLimitTests
{
    private static readonly TimeSpan Expiry = TimeSpan.FromSeconds(30);
    private static readonly TimeSpan IdleClose = TimeSpan.FromSeconds(10);
    private static readonly TimeSpan OneTick = TimeSpan.FromTicks(1);

    [Fact]
    public void JoinIntoANewStageId_AtStagesMax_IsRefusedWithTooManyStagesAndCounted()
    {
        using var h = new RuntimeHarness(Options() with { StagesMax = 2 });
        h.Join(1, accountId: 1);
        h.Join(2, accountId: 2);
        var refused = new FakeClient(h);
        var refusedSeq = refused.Authenticate(3, accountId: 3);
        h.Pump();
        var intoExisting = new FakeClient(h);
        var existingSeq = intoExisting.Authenticate(1, accountId: 4);
        h.Pump();

        Assert.Equal(ErrorCodes.TooManyStages, refused.ReplyTo(refusedSeq).ErrorCode);
        Assert.Equal(1, h.Play.Counters.StagesRefusedAtCap);
        Assert.False(h.Play.HasStage(3));
        Assert.Equal(2, h.Play.StageCount);
        Assert.Equal(ErrorCodes.Success, intoExisting.ReplyTo(existingSeq).ErrorCode);
        Assert.Equal(3, h.Play.ActorCount);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void CreateRequest_AtStagesMax_RepliesTooManyStages_AndAClosedStageFreesItsPlace()
    {
        using var h = new RuntimeHarness(Options() with { StagesMax = 1 });
        Assert.Equal(ErrorCodes.Success, h.CreateStage(1).ErrorCode);

        var refused = h.CreateStage(2);
        h.Play.CloseStage(1);
        h.Pump();
        var afterClose = h.CreateStage(2);

        Assert.Equal(ErrorCodes.TooManyStages, refused.ErrorCode);
        Assert.Equal(1, h.Play.Counters.StagesRefusedAtCap);
        Assert.Equal(ErrorCodes.Success, afterClose.ErrorCode);
        Assert.True(h.Play.HasStage(2));
    }

    [Fact]
    public void Join_AtActorsPerStageMax_RefusesANewAccountWithStageFull_ButLetsAReconnectIn()
    {
        using var h = new RuntimeHarness(Options() with { ActorsPerStageMax = 2 });
        var first = h.Join(1, accountId: 1);
        h.Join(1, accountId: 2);
        var third = new FakeClient(h);
        var thirdSeq = third.Authenticate(1, accountId: 3);
        h.Pump();
        first.Disconnect();
        h.Pump();
        var back = new FakeClient(h);
        var backSeq = back.Authenticate(1, accountId: 1);
        h.Pump();

        Assert.Equal(ErrorCodes.StageFull, third.ReplyTo(thirdSeq).ErrorCode);
        Assert.Equal(1, h.Play.Counters.JoinsRefusedAtCap);
        Assert.Equal(ErrorCodes.Success, back.ReplyTo(backSeq).ErrorCode);
        Assert.Equal(2, h.Stages[1].Link.Actors.Count);
        Assert.Equal(2, h.Play.ActorCount);

        // The refused join's actor was made and authenticated, then destroyed before any join callback ran.
        var events = h.Events.EventsOf(1).ToList();
        Assert.Equal(2, events.Count(e => e == LifecycleEvent.ActorJoinStage));
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void DisconnectedActor_ExpiresAtExactlyTheConfiguredTime()
    {
        using var h = new RuntimeHarness(Options());
        var client = h.Join(1, accountId: 7);
        client.Disconnect();
        h.Pump();

        h.Advance(Expiry - OneTick);
        var heldJustBefore = h.Stages[1].Link.Actors.Count;
        var destroysJustBefore = DestroysOf(h, 1);
        h.Advance(OneTick);

        Assert.Equal(1, heldJustBefore);
        Assert.Equal(0, destroysJustBefore);
        Assert.Empty(h.Stages[1].Link.Actors);
        Assert.Equal(1, DestroysOf(h, 1));
        Assert.Equal(1, h.Play.Counters.DisconnectedActorsExpired);
        Assert.Equal(0, h.Play.ActorCount);
    }

    [Fact]
    public void DisconnectedActor_ThatReconnectsBeforeExpiry_IsKept_AndALaterDisconnectStartsItsOwnExpiry()
    {
        using var h = new RuntimeHarness(Options());
        var first = h.Join(1, accountId: 7);
        first.Disconnect();
        h.Pump();
        h.Advance(Expiry - TimeSpan.FromSeconds(5));
        var second = h.Join(1, accountId: 7);

        // Well past the first disconnect's deadline: the reconnected actor stays.
        h.Advance(Expiry);
        var keptWhileConnected = h.Stages[1].Link.Actors.Count;
        second.Disconnect();
        h.Pump();
        h.Advance(Expiry - OneTick);
        var keptBeforeSecondDeadline = h.Stages[1].Link.Actors.Count;
        h.Advance(OneTick);

        Assert.Equal(1, keptWhileConnected);
        Assert.Equal(1, keptBeforeSecondDeadline);
        Assert.Empty(h.Stages[1].Link.Actors);
        Assert.Equal(1, h.Play.Counters.DisconnectedActorsExpired);

        // The probe actor of the reconnect and, at the end, the expired actor.
        Assert.Equal(2, DestroysOf(h, 1));
    }

    [Fact]
    public void DisconnectedActor_WithoutAnExpiry_StaysUntilItsStageCloses()
    {
        using var h = new RuntimeHarness(Options() with { DisconnectedActorExpiry = null, IdleStageCloseAfter = null });
        h.Join(1, accountId: 7).Disconnect();
        h.Pump();
        h.Advance(TimeSpan.FromHours(2));

        Assert.Single(h.Stages[1].Link.Actors);
        Assert.Equal(0, h.Play.Counters.DisconnectedActorsExpired);
        Assert.True(h.Play.HasStage(1));
    }

    [Fact]
    public void DisconnectPastDisconnectedActorsMax_EvictsTheLongestWaitingActorOfTheServer_InItsOwnStage()
    {
        using var h = new RuntimeHarness(Options() with { DisconnectedActorsMax = 2 });
        h.Join(1, accountId: 1).Disconnect();
        h.Pump();
        h.Join(2, accountId: 2).Disconnect();
        h.Pump();
        var heldAtTheCap = h.Play.DisconnectedActorCount;
        h.Join(2, accountId: 3).Disconnect();
        h.Pump();

        Assert.Equal(2, heldAtTheCap);
        Assert.Empty(h.Stages[1].Link.Actors);
        Assert.Equal(2, h.Stages[2].Link.Actors.Count);
        Assert.Equal(1, DestroysOf(h, 1));
        Assert.Equal(0, DestroysOf(h, 2));
        Assert.Equal(1, h.Play.Counters.DisconnectedActorsEvictedAtCap);
        Assert.Equal(0, h.Play.Counters.DisconnectedActorsExpired);
        Assert.Equal(2, h.Play.DisconnectedActorCount);
        Assert.Equal(2, h.Play.DisconnectedActorsHighWater);
        Assert.Equal(2, h.Play.ActorCount);
    }

    [Fact]
    public void DisconnectedActorsMax_CountsOnlyActorsStillWaiting_SoReconnectedAndExpiredOnesFreeTheirPlace()
    {
        using var h = new RuntimeHarness(Options() with { DisconnectedActorsMax = 2 });
        h.Join(1, accountId: 1).Disconnect();
        h.Pump();
        h.Join(1, accountId: 2).Disconnect();
        h.Pump();
        h.Join(1, accountId: 1);
        h.Advance(Expiry);
        h.Join(1, accountId: 3).Disconnect();
        h.Pump();
        h.Join(1, accountId: 4).Disconnect();
        h.Pump();

        // Account 1 reconnected and account 2 expired, so accounts 3 and 4 wait within the cap.
        Assert.Equal(0, h.Play.Counters.DisconnectedActorsEvictedAtCap);
        Assert.Equal(1, h.Play.Counters.DisconnectedActorsExpired);
        Assert.Equal(2, h.Play.DisconnectedActorCount);
        Assert.Equal(3, h.Stages[1].Link.Actors.Count);
    }

    [Fact]
    public void DisconnectedActorsMax_HoldsWithoutAnExpiry_AndZeroDestroysAtTheDisconnect()
    {
        using var uncapped = new RuntimeHarness(Options() with { DisconnectedActorExpiry = null, DisconnectedActorsMax = 3 });
        for (var account = 1; account <= 10; account++)
        {
            uncapped.Join(1, accountId: account).Disconnect();
            uncapped.Pump();
        }

        using var zero = new RuntimeHarness(Options() with { DisconnectedActorsMax = 0 });
        zero.Join(1, accountId: 1).Disconnect();
        zero.Pump();

        Assert.Equal(3, uncapped.Stages[1].Link.Actors.Count);
        Assert.Equal(7, uncapped.Play.Counters.DisconnectedActorsEvictedAtCap);
        Assert.Equal(3, uncapped.Play.DisconnectedActorCount);
        Assert.Empty(zero.Stages[1].Link.Actors);
        Assert.Equal(1, zero.Play.Counters.DisconnectedActorsEvictedAtCap);
        Assert.Equal(0, zero.Play.DisconnectedActorCount);
    }

    [Fact]
    public void EvictedActor_IsNotKeptAliveByItsStageUntilItsOldDeadline()
    {
        using var h = new RuntimeHarness(Options() with { DisconnectedActorsMax = 1 });
        var evicted = DisconnectAndTrack(h, stageId: 1, accountId: 1);
        h.Join(2, accountId: 2).Disconnect();
        h.Pump();
        GC.Collect();
        GC.WaitForPendingFinalizers();
        GC.Collect();

        // Well before the 30 s expiry: only the stage's expiry queue could still reach it, and it must not.
        Assert.Equal(1, h.Play.Counters.DisconnectedActorsEvictedAtCap);
        Assert.False(evicted.IsAlive, "the evicted actor is still reachable");
    }

    // Not inlined, so no local of the caller's frame keeps the actor reachable.
    [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
    private static WeakReference DisconnectAndTrack(RuntimeHarness h, long stageId, long accountId)
    {
        h.Join(stageId, accountId).Disconnect();
        h.Pump();
        return new WeakReference(Assert.Single(h.Stages[stageId].Link.Actors));
    }

    [Fact]
    public void EvictedActor_WhoseAccountReconnectsBeforeTheEvictionComesUp_IsKept()
    {
        using var h = new RuntimeHarness(Options() with { DisconnectedActorsMax = 1 });
        h.Join(1, accountId: 1).Disconnect();
        h.Pump();

        // The second disconnect and the first account's reconnect reach stage 1 in one batch: the eviction of account 1
        // is queued behind its join.
        h.Join(2, accountId: 2).Disconnect();
        var back = new FakeClient(h);
        var seq = back.Authenticate(1, accountId: 1);
        h.Pump();

        Assert.Equal(ErrorCodes.Success, back.ReplyTo(seq).ErrorCode);
        Assert.Single(h.Stages[1].Link.Actors);
        Assert.Equal(0, h.Play.Counters.DisconnectedActorsEvictedAtCap);
        Assert.Equal(1, h.Play.DisconnectedActorCount);

        // The eviction that came up after the reconnect found its wait ended and did nothing, without failing.
        Assert.Empty(h.Events.Failures);
    }

    [Fact]
    public void EmptyStage_ClosesAfterItsIdleTime_CountedFromItsLastActorLeaving()
    {
        using var h = new RuntimeHarness(Options());
        h.Join(1, accountId: 7).Disconnect();
        h.Pump();
        h.Advance(Expiry);
        var actorsAfterExpiry = h.Stages[1].Link.Actors.Count;

        h.Advance(IdleClose - OneTick);
        var openJustBefore = h.Play.HasStage(1);
        h.Advance(OneTick);

        Assert.Equal(0, actorsAfterExpiry);
        Assert.True(openJustBefore);
        Assert.False(h.Play.HasStage(1));
        Assert.Equal(1, h.Play.Counters.IdleStagesClosed);
        Assert.Equal(1, h.Events.EventsOf(1).Count(e => e == LifecycleEvent.StageDestroy));
    }

    [Fact]
    public void StageBecomingEmptyPastEmptyStagesMax_ClosesTheStageEmptyLongest_BeforeItsIdleTime()
    {
        // No actor waits after its disconnect, so each stage is empty as soon as its client goes.
        using var h = new RuntimeHarness(Options() with { DisconnectedActorsMax = 0, EmptyStagesMax = 1 });
        h.Join(1, accountId: 1).Disconnect();
        h.Pump();
        var firstOpenAlone = h.Play.HasStage(1);
        h.Join(2, accountId: 2).Disconnect();
        h.Pump();

        Assert.True(firstOpenAlone);
        Assert.False(h.Play.HasStage(1));
        Assert.True(h.Play.HasStage(2));
        Assert.Equal(1, h.Play.Counters.EmptyStagesClosedAtCap);
        Assert.Equal(0, h.Play.Counters.IdleStagesClosed);
        Assert.Equal(1, h.Play.EmptyStageCount);
        Assert.Equal(1, h.Events.EventsOf(1).Count(e => e == LifecycleEvent.StageDestroy));
    }

    [Fact]
    public void EmptyStagesMax_SparesAStageJoinedAgain_AndOneWithARunningTimer()
    {
        using var h = new RuntimeHarness(Options() with { DisconnectedActorsMax = 0, EmptyStagesMax = 1 });
        h.CreateStage(1);
        h.Stages[1].Link.AddRepeatTimer(TimeSpan.FromSeconds(1), TimeSpan.FromSeconds(1), () => { });
        h.Join(2, accountId: 2).Disconnect();
        h.Pump();
        var timedStageOpen = h.Play.HasStage(1);

        // Stage 2 is the oldest empty one now; an account joins it before a third stage empties.
        h.Join(2, accountId: 3);
        h.Join(3, accountId: 4).Disconnect();
        h.Pump();

        Assert.True(timedStageOpen);
        Assert.True(h.Play.HasStage(1));
        Assert.True(h.Play.HasStage(2));
        Assert.True(h.Play.HasStage(3));
        Assert.Equal(0, h.Play.Counters.EmptyStagesClosedAtCap);
    }

    [Fact]
    public void EmptyStagesMax_Zero_ClosesAStageAsSoonAsItIsEmpty_EvenWithoutAnIdleClose()
    {
        using var h = new RuntimeHarness(Options() with { DisconnectedActorsMax = 0, EmptyStagesMax = 0, IdleStageCloseAfter = null });
        h.Join(1, accountId: 1).Disconnect();
        h.Pump();

        Assert.False(h.Play.HasStage(1));
        Assert.Equal(1, h.Play.Counters.EmptyStagesClosedAtCap);
        Assert.Equal(0, h.Play.EmptyStageCount);
    }

    [Fact]
    public void IdleStage_ClosedThenJoinedAgain_IsCreatedAnewUnderTheSameId()
    {
        using var h = new RuntimeHarness(Options());
        h.CreateStage(1);
        h.Advance(IdleClose);
        var closed = !h.Play.HasStage(1);
        var client = h.Join(1, accountId: 9);
        var seq = client.Request("Echo", 1, [5]);
        h.Pump();

        Assert.True(closed);
        Assert.True(h.Play.HasStage(1));
        Assert.Equal([5], client.ReplyTo(seq).Payload);
        Assert.Equal(2, h.Events.EventsOf(1).Count(e => e == LifecycleEvent.StageCreate));
    }

    [Fact]
    public void StageCreatedForAJoin_ArmsNoIdleTimer_ButOneCreatedEmptyDoes()
    {
        using var h = new RuntimeHarness(Options());
        h.CreateStage(2);
        var afterEmptyCreate = h.Clock.ArmedTimerCount;
        h.Join(1, accountId: 7);
        var afterJoinCreate = h.Clock.ArmedTimerCount;
        h.Advance(IdleClose);

        // The join queued behind its stage's create filled the stage before the queue drained: no idle wake-up was armed.
        Assert.Equal(afterEmptyCreate, afterJoinCreate);
        Assert.False(h.Play.HasStage(2));
        Assert.True(h.Play.HasStage(1));
    }

    [Fact]
    public void EmptyStage_WithARunningTimer_IsNotIdle()
    {
        using var h = new RuntimeHarness(Options());
        h.CreateStage(1);
        var ticks = 0;
        h.Stages[1].Link.AddRepeatTimer(TimeSpan.FromSeconds(1), TimeSpan.FromSeconds(1), () => ticks++);
        h.Advance(IdleClose * 5);

        Assert.True(h.Play.HasStage(1));
        Assert.Equal(0, h.Play.Counters.IdleStagesClosed);
        Assert.Equal(50, ticks);
    }

    [Theory]
    [InlineData(nameof(ServerOptions.StagesMax))]
    [InlineData(nameof(ServerOptions.ActorsPerStageMax))]
    [InlineData(nameof(ServerOptions.DisconnectedActorExpiry))]
    [InlineData(nameof(ServerOptions.DisconnectedActorsMax))]
    [InlineData(nameof(ServerOptions.EmptyStagesMax))]
    [InlineData(nameof(ServerOptions.IdleStageCloseAfter))]
    public void Options_OutOfRange_AreRefusedByName(string name)
    {
        var options = name switch
        {
            nameof(ServerOptions.StagesMax) => new ServerOptions { StagesMax = 0 },
            nameof(ServerOptions.ActorsPerStageMax) => new ServerOptions { ActorsPerStageMax = 0 },
            nameof(ServerOptions.DisconnectedActorExpiry) => new ServerOptions { DisconnectedActorExpiry = TimeSpan.Zero },
            nameof(ServerOptions.DisconnectedActorsMax) => new ServerOptions { DisconnectedActorsMax = -1 },
            nameof(ServerOptions.EmptyStagesMax) => new ServerOptions { EmptyStagesMax = -1 },
            _ => new ServerOptions { IdleStageCloseAfter = TimeSpan.FromSeconds(-1) },
        };

        var error = Assert.Throws<ArgumentException>(options.Validate);
        Assert.Equal(name, error.ParamName);
    }

    private static ServerOptions Options() => new()
    {
        DefaultStageType = RuntimeHarness.StageType,
        DisconnectedActorExpiry = Expiry,
        IdleStageCloseAfter = IdleClose,
    };

    private static int DestroysOf(RuntimeHarness h, long stageId) => h.Events.EventsOf(stageId).Count(e => e == LifecycleEvent.ActorDestroy);
}
