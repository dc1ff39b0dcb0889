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

    [Fact]
    public void CreateWhoseOnCreateThrows_ReportsTheFailure_AndRepliesCreateStageFailed()
    {
        using var h = new RuntimeHarness();
        h.ConfigureStage = s => s.OnCreateScript = _ => throw new InvalidOperationException("config store down");

        var created = h.CreateStage(4, msgId: "make");

        var failure = Assert.Single(h.Events.Failures);
        Assert.Equal((4L, StageWorkKind.Create, "make"), (failure.StageId, failure.Kind, failure.MsgId));
        Assert.Equal("config store down", failure.Error.Message);
        Assert.Equal(ErrorCodes.CreateStageFailed, created.ErrorCode);
        Assert.False(h.Play.HasStage(4));
    }

    [Fact]
    public void CreateReply_CarriesTheStagesPayload_OwnedUnderTheReplyRoute()
    {
        using var h = new RuntimeHarness();
        var kept = Payload.Empty;
        h.ConfigureStage = s => s.OnCreateScript = _ =>
        {
            kept = h.Bytes(4, 2);
            return ValueTask.FromResult(CreateResult.Success("Created", kept));
        };

        var reason = "";
        byte[] carried;
        using (var created = h.CreateStage(4))
        {
            reason = ApiServerTests.StaleReason(kept);
            carried = created.Payload.Span.ToArray();
        }

        Assert.Equal([(byte)4, 2], carried);
        Assert.Contains("ownership moved to 'reply'", reason);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void RefusedCreate_ReleasesTheReplyPayloadItCarried()
    {
        using var h = new RuntimeHarness();
        h.ConfigureStage = s => s.OnCreateScript = _ => ValueTask.FromResult(new CreateResult(false, ErrorCodes.StageFull, "Refused", h.Bytes(1, 2, 3)));

        var created = h.CreateStage(4);

        Assert.Equal(ErrorCodes.StageFull, created.ErrorCode);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void StageCreatedForAJoin_ReleasesTheReplyPayloadOfItsCreate_WhichNoOneAwaits()
    {
        using var h = new RuntimeHarness();
        h.ConfigureStage = s => s.OnCreateScript = _ => ValueTask.FromResult(CreateResult.Success("Created", h.Bytes(1, 2, 3)));

        var client = h.Join(9, accountId: 1);

        Assert.Equal(ErrorCodes.Success, client.Received.Single().ErrorCode);
        Assert.True(h.Play.HasStage(9));
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void SuccessfulCreate_TellsTheRegistryOnce_AndARefusedOneNever()
    {
        var registry = new RecordingRegistry();
        using var h = new RuntimeHarness(parts: NodeParts.Standard with { StageRegistry = _ => registry });
        h.ConfigureStage = s => s.OnCreateScript = packet => ValueTask.FromResult(packet.MsgId == "refuse" ? CreateResult.Refuse() : CreateResult.Success());

        h.CreateStage(1);
        h.CreateStage(2, msgId: "refuse");

        Assert.Equal([1L], registry.Created);
        Assert.Equal([2L], registry.Removed);
    }

    [Fact]
    public void StageWhoseCreateFails_FailsEachMessageQueuedBehindItOnce_WithoutAHandlerFailure()
    {
        using var h = new RuntimeHarness();
        h.ConfigureStage = s => s.OnCreateScript = _ => ValueTask.FromResult(CreateResult.Refuse());
        var created = h.Api.CreateStage(RuntimeHarness.PlayNode, RuntimeHarness.StageType, 4, "create", Payload.Empty);
        var queued = Enumerable.Range(0, 2).Select(i => h.Api.RequestToStage(RuntimeHarness.PlayNode, 4, "After", h.Bytes((byte)i))).ToList();
        h.Pump();

        Assert.Equal(ErrorCodes.CreateStageFailed, RuntimeHarness.Completed(created).ErrorCode);
        Assert.All(queued, task => Assert.Equal(ErrorCodes.CreateStageFailed, RuntimeHarness.Completed(task).ErrorCode));
        Assert.Empty(h.Events.Failures);
        Assert.Empty(h.Stages[4].Dispatched);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void EmptyStageThatCloses_LeavesTheServersListOfEmptyStages()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var listedWhileOpen = h.Play.EmptyStageCount;
        h.Stages[1].Link.CloseStage();
        h.Pump();

        Assert.Equal(1, listedWhileOpen);
        Assert.Equal(0, h.Play.EmptyStageCount);
    }

    /// <summary>The standard registry, noting which stages it heard were created and which were removed.</summary>
    private sealed class RecordingRegistry : IStageRegistry
    {
        private readonly StageRegistry _inner = new();

        public List<long> Created { get; } = [];

        public List<long> Removed { get; } = [];

        public int Count => _inner.Count;

        public IEnumerable<StageHost> Stages => _inner.Stages;

        public bool TryGet(long stageId, [System.Diagnostics.CodeAnalysis.NotNullWhen(true)] out StageHost? stage) => _inner.TryGet(stageId, out stage);

        public void Add(StageHost stage) => _inner.Add(stage);

        public void OnCreated(StageHost stage)
        {
            Created.Add(stage.StageId);
            _inner.OnCreated(stage);
        }

        public void Remove(StageHost stage, StageRemoval why)
        {
            Removed.Add(stage.StageId);
            _inner.Remove(stage, why);
        }
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
