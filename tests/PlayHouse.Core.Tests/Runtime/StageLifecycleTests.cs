using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;

namespace PlayHouse.Core.Tests.Runtime;

public sealed class StageLifecycleTests
{
    [Fact]
    public void CreateJoinClose_RunsEveryCallbackOnceInOrder()
    {
        using var h = new RuntimeHarness();
        var created = h.CreateStage(7);
        var client = h.Join(7, accountId: 100);
        h.Stages[7].Link.CloseStage();
        h.Pump();

        Assert.Equal(ErrorCodes.Success, created.ErrorCode);
        Assert.Equal(SystemMsgIds.StageCreated, created.MsgId);
        Assert.Equal(
            [
                LifecycleEvent.StageCreate, LifecycleEvent.StagePostCreate,
                LifecycleEvent.ActorCreate, LifecycleEvent.ActorAuthenticate, LifecycleEvent.ActorPostAuthenticate,
                LifecycleEvent.ActorJoinStage, LifecycleEvent.ActorPostJoinStage,
                LifecycleEvent.ActorDestroy, LifecycleEvent.StageDestroy,
            ],
            h.Events.EventsOf(7));
        Assert.Equal(0, h.Play.StageCount);
        Assert.Equal(ErrorCodes.Success, client.Received.Single().ErrorCode);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void CreatedStage_RunsItsOwnOnPostCreateOnce_AndItsOwnOnDestroyOnceWhenClosed()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(7);
        var stage = h.Stages[7];
        var afterCreate = stage.StageCallbacks;
        stage.Link.CloseStage();
        h.Pump();

        Assert.Equal((1, 0), afterCreate);
        Assert.Equal((1, 1), stage.StageCallbacks);
    }

    [Theory]
    [InlineData(ErrorCodes.StageFull, ErrorCodes.StageFull)]
    [InlineData(ErrorCodes.Success, ErrorCodes.CreateStageFailed)]
    public void RefusedCreate_RepliesTheStagesOwnCode_OrCreateStageFailedWhenItNamesSuccess(ushort refusedWith, ushort replied)
    {
        using var h = new RuntimeHarness();
        h.ConfigureStage = s => s.OnCreateScript = _ => ValueTask.FromResult(CreateResult.Refuse(refusedWith));

        var created = h.CreateStage(4);

        Assert.Equal(replied, created.ErrorCode);
        Assert.Equal((0, 0), h.Stages[4].StageCallbacks);
        Assert.False(h.Play.HasStage(4));
    }

    [Fact]
    public void ConcurrentFirstJoins_CreateTheStageExactlyOnce()
    {
        using var h = new RuntimeHarness();
        var first = new FakeClient(h);
        var second = new FakeClient(h);
        first.Authenticate(9, 1);
        second.Authenticate(9, 2);
        h.Pump();

        Assert.Single(h.Events.EventsOf(9), e => e == LifecycleEvent.StageCreate);
        Assert.Equal(2, h.Events.EventsOf(9).Count(e => e == LifecycleEvent.ActorPostJoinStage));
        Assert.Equal(ErrorCodes.Success, first.Received.Single().ErrorCode);
        Assert.Equal(ErrorCodes.Success, second.Received.Single().ErrorCode);
        Assert.Equal(2, h.Stages[9].Link.Actors.Count);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void FailedCreate_RemovesTheStageAndFailsQueuedJoins()
    {
        using var h = new RuntimeHarness();
        h.ConfigureStage = s => s.OnCreateScript = _ => ValueTask.FromResult(CreateResult.Refuse());
        var client = new FakeClient(h);
        var seq = client.Authenticate(5, 1);
        h.Pump();

        Assert.Equal(0, h.Play.StageCount);
        Assert.False(h.Play.HasStage(5));
        Assert.Equal(ErrorCodes.CreateStageFailed, client.ReplyTo(seq).ErrorCode);

        // The id is free again: a later create succeeds instead of finding a zombie.
        h.ConfigureStage = null;
        var retry = client.Authenticate(5, 1);
        h.Pump();
        Assert.Equal(ErrorCodes.Success, client.ReplyTo(retry).ErrorCode);
        Assert.True(h.Play.HasStage(5));
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void CreateStage_WithTakenId_RepliesStageAlreadyExists()
    {
        using var h = new RuntimeHarness();
        var first = h.CreateStage(3);
        var second = h.CreateStage(3);

        Assert.Equal(ErrorCodes.Success, first.ErrorCode);
        Assert.Equal(ErrorCodes.StageAlreadyExists, second.ErrorCode);
        Assert.Single(h.Events.EventsOf(3), e => e == LifecycleEvent.StageCreate);
    }

    [Fact]
    public void CreateStage_WithoutAnId_GivesEachCreateOfOneInstantItsOwnNewIdSkippingTakenOnes()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(2);

        // Three creates sent at the same instant, naming no id: the play server picks one for each.
        var creates = Enumerable.Range(0, 3).Select(_ => h.Api.CreateStage(RuntimeHarness.PlayNode, RuntimeHarness.StageType, "create", Payload.Empty)).ToList();
        h.Pump();
        var responses = creates.Select(RuntimeHarness.Completed).ToList();

        Assert.All(responses, r => Assert.Equal(ErrorCodes.Success, r.ErrorCode));
        Assert.Equal([1L, 3L, 4L], responses.Select(r => r.StageId));
        Assert.Equal(4, h.Play.StageCount);
        Assert.All(new long[] { 1, 3, 4 }, id => Assert.Single(h.Events.EventsOf(id), e => e == LifecycleEvent.StageCreate));
    }

    [Fact]
    public void GetOrCreate_OnExistingStage_RepliesStageExisted()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(3);
        var task = h.Api.GetOrCreateStage(RuntimeHarness.PlayNode, RuntimeHarness.StageType, 3, "create", Payload.Empty);
        h.Pump();

        var response = RuntimeHarness.Completed(task);
        Assert.Equal(ErrorCodes.Success, response.ErrorCode);
        Assert.Equal(SystemMsgIds.StageExisted, response.MsgId);
    }

    [Fact]
    public void CreateStage_OfUnknownType_RepliesUnknownStageType()
    {
        using var h = new RuntimeHarness();
        var task = h.Api.CreateStage(RuntimeHarness.PlayNode, "no-such-type", 3, "create", Payload.Empty);
        h.Pump();

        Assert.Equal(ErrorCodes.UnknownStageType, RuntimeHarness.Completed(task).ErrorCode);
        Assert.Equal(0, h.Play.StageCount);
    }

    [Fact]
    public void Reconnect_WithSameAccount_ReusesTheLiveActorAndJoinsOnce()
    {
        using var h = new RuntimeHarness();
        var first = h.Join(4, accountId: 77);
        var actorBefore = h.Stages[4].Link.Actors.Single();
        first.Disconnect();
        h.Pump();
        var second = h.Join(4, accountId: 77);
        var seq = second.Request("Echo", 4, [1, 2, 3]);
        h.Pump();

        var actorAfter = h.Stages[4].Link.Actors.Single();
        Assert.Same(actorBefore, actorAfter);
        Assert.True(actorAfter.Link.IsConnected);
        Assert.Equal(second.SessionId, actorAfter.Link.SessionId);
        Assert.Equal([1, 2, 3], second.ReplyTo(seq).Payload);
        var events = h.Events.EventsOf(4).ToList();
        Assert.Equal(1, events.Count(e => e == LifecycleEvent.ActorJoinStage));
        Assert.Equal(1, events.Count(e => e == LifecycleEvent.ActorDisconnected));
        Assert.Equal(1, events.Count(e => e == LifecycleEvent.ActorConnected));

        // The probe actor that authenticated the reconnect is destroyed; the live one is not.
        Assert.Equal(1, events.Count(e => e == LifecycleEvent.ActorDestroy));
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void AuthenticateRefused_RepliesAuthenticationFailedAndAllowsRetry()
    {
        using var h = new RuntimeHarness();
        var client = new FakeClient(h);
        var refused = client.Authenticate(2, accountId: 0);
        h.Pump();
        var accepted = client.Authenticate(2, accountId: 5);
        h.Pump();

        Assert.Equal(ErrorCodes.AuthenticationFailed, client.ReplyTo(refused).ErrorCode);
        Assert.Equal(ErrorCodes.Success, client.ReplyTo(accepted).ErrorCode);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void FirstMessageNotAuthenticate_ClosesTheSessionAndCountsIt()
    {
        using var h = new RuntimeHarness();
        var client = new FakeClient(h);
        client.Request("Echo", 1, [1]);
        h.Pump();

        Assert.NotNull(client.ClosedReason);
        Assert.Contains("AuthenticateRequest", client.ClosedReason, StringComparison.Ordinal);
        Assert.Equal(1, h.Play.Counters.SessionsClosedBeforeAuthentication);
        Assert.Empty(client.Received);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void HeartbeatBeforeAuthentication_IsEchoedAndKeepsTheSession()
    {
        using var h = new RuntimeHarness();
        var client = new FakeClient(h);
        client.Send(PlayServer.HeartbeatMsgId, 0, []);
        var seq = client.Authenticate(1, 9);
        h.Pump();

        Assert.Null(client.ClosedReason);
        Assert.Equal(PlayServer.HeartbeatMsgId, client.Received[0].MsgId);
        Assert.Equal(ErrorCodes.Success, client.ReplyTo(seq).ErrorCode);
    }

    [Fact]
    public void ClientMessageForAnotherStage_RepliesNotInStage()
    {
        using var h = new RuntimeHarness();
        var client = h.Join(1, 9);
        var seq = client.Request("Echo", 2, [1]);
        h.Pump();

        Assert.Equal(ErrorCodes.NotInStage, client.ReplyTo(seq).ErrorCode);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void LeaveStage_DestroysTheActorOnceAndStopsRouting()
    {
        using var h = new RuntimeHarness();
        var client = h.Join(1, 9);
        h.Stages[1].Link.Actors.Single().Link.LeaveStage();
        h.Pump();
        var seq = client.Request("Echo", 1, [1]);
        h.Pump();

        Assert.Empty(h.Stages[1].Link.Actors);
        Assert.Equal(1, h.Events.EventsOf(1).Count(e => e == LifecycleEvent.ActorDestroy));
        Assert.Equal(ErrorCodes.NotInStage, client.ReplyTo(seq).ErrorCode);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void ClientRequestQueuedBehindItsActorsLeave_IsAnsweredNotInStage_WithoutReachingTheStage()
    {
        using var h = new RuntimeHarness();
        var client = h.Join(1, 9);
        h.Stages[1].Link.Actors.Single().Link.LeaveStage();
        var seq = client.Request("Echo", 1, [1]);
        h.Pump();

        Assert.Equal(ErrorCodes.NotInStage, client.ReplyTo(seq).ErrorCode);
        Assert.Empty(h.Stages[1].Dispatched);
        Assert.Empty(h.Events.Failures);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void AuthenticateThrowing_RepliesHandlerFailedDestroysTheActorAndAllowsRetry()
    {
        var throwOnce = true;
        using var h = new RuntimeHarness(actorFactory: link => new ThrowingActor(link, () => throwOnce));
        var client = new FakeClient(h);
        var failed = client.Authenticate(3, 5);
        h.Pump();
        throwOnce = false;
        var retried = client.Authenticate(3, 5);
        h.Pump();

        Assert.Equal(ErrorCodes.HandlerFailed, client.ReplyTo(failed).ErrorCode);
        Assert.Equal(ErrorCodes.Success, client.ReplyTo(retried).ErrorCode);
        var events = h.Events.EventsOf(3).ToList();
        Assert.Equal(2, events.Count(e => e == LifecycleEvent.ActorCreate));
        Assert.Equal(1, events.Count(e => e == LifecycleEvent.ActorDestroy));
        Assert.Equal(1, h.Play.Counters.HandlerFailures);
        h.Pool.ThrowIfLeaks();
    }

    private sealed class ThrowingActor(IActorLink link, Func<bool> shouldThrow) : IActor
    {
        public IActorLink Link { get; } = link;

        public ValueTask OnCreate() => ValueTask.CompletedTask;

        public ValueTask<AuthenticateResult> OnAuthenticate(Packet packet) =>
            shouldThrow() ? throw new InvalidOperationException("auth store down") : ValueTask.FromResult(AuthenticateResult.Success(5));

        public ValueTask OnPostAuthenticate() => ValueTask.CompletedTask;

        public ValueTask OnDestroy() => ValueTask.CompletedTask;
    }
}
