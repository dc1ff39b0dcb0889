using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;

namespace PlayHouse.Core.Tests.Runtime;

/// <summary>
/// An actor's pushes and the parts around them: a push the connection refuses is counted, a pushed payload is owned
/// under the push's name (connected or not), a reconnect's probe actor runs its own OnDestroy, an actor names itself,
/// and a stage's context refuses a synchronous Send.
/// </summary>
public sealed class ActorPushTests
{
    [Fact]
    public void PushTheConnectionRefuses_IsCounted_AndOneItTakesIsNot()
    {
        using var h = PushingHarness(out var client);

        PushFromStage(h, "Taken");
        var refusedAfterTaken = h.Play.Counters.ClientSendsRefused;
        client.RefuseSends = true;
        PushFromStage(h, "Refused");

        Assert.Equal(0, refusedAfterTaken);
        Assert.Equal(1, h.Play.Counters.ClientSendsRefused);
        Assert.Single(client.Received, f => f.MsgId == "Taken");
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void PushedPayload_IsOwnedUnderTheClientPushName_ToAConnectedOrADisconnectedActor()
    {
        using var h = PushingHarness(out var client);

        var toConnected = PushFromStage(h, "Push");
        client.Disconnect();
        h.Pump();
        var toDisconnected = PushFromStage(h, "Push");

        Assert.Contains("(last owner 'client-push')", toConnected);
        Assert.Contains("(last owner 'client-push')", toDisconnected);
        Assert.Equal(1, h.Play.Counters.ClientPushesToDisconnected);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void Reconnect_DestroysItsProbeActorThroughTheActorsOwnOnDestroy_Once()
    {
        var destroyed = new List<long>();
        using var h = new RuntimeHarness(actorFactory: link => new DestroyCountingActor(link, destroyed));
        h.CreateStage(1);
        h.Join(1, accountId: 100);

        var again = h.Join(1, accountId: 100);

        Assert.Equal(ErrorCodes.Success, again.Received.Single().ErrorCode);
        Assert.Single(h.Stages[1].Link.Actors);
        Assert.Single(destroyed);
        Assert.Equal(1, h.Events.EventsOf(1).Count(e => e == LifecycleEvent.ActorDestroy));
    }

    [Fact]
    public void Reconnect_RepliesWithItsAuthenticatePayload_OwnedUnderTheReplyRoute()
    {
        var replies = new List<Payload>();
        using var h = new RuntimeHarness(actorFactory: link => new PayloadReplyingActor(link, replies));
        h.CreateStage(1);
        h.Join(1, accountId: 100);

        var again = h.Join(1, accountId: 100);

        Assert.Equal([(byte)9], again.Received.Single().Payload);
        Assert.Equal(2, replies.Count);
        Assert.Contains("(last owner 'reply')", ApiServerTests.StaleReason(replies[1]));
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void ReconnectFromASessionThatClosedBeforeItsTurn_AnswersNothing_AndReleasesItsAuthenticatePayload()
    {
        var replies = new List<Payload>();
        using var h = new RuntimeHarness(actorFactory: link => new PayloadReplyingActor(link, replies));
        h.CreateStage(1);
        var first = h.Join(1, accountId: 100);
        var second = new FakeClient(h);
        second.Authenticate(1, 100);
        second.Disconnect();
        h.Pump();

        Assert.Empty(second.Received);
        Assert.Equal(2, replies.Count);
        Assert.True(h.Stages[1].Link.Actors.Single().Link.IsConnected);
        Assert.Null(first.ClosedReason);
        Assert.DoesNotContain("OnConnectionChanged 100 True", h.Stages[1].Callbacks);
        Assert.Empty(h.Events.Failures);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void Actor_NamesItsInstanceAccountAndStage()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(7);
        h.Join(7, accountId: 100);

        var actor = h.Stages[7].Link.Actors.Single().Link;

        Assert.Matches(@"^Actor\(#\d+, account 100, stage 7\)$", actor.ToString());
    }

    [Fact]
    public void SynchronousSendIntoAStage_IsRefusedNamingTheStage()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(3);
        NotSupportedException? refusal = null;
        h.Stages[3].OnServer = (_, _) =>
        {
            refusal = Assert.Throws<NotSupportedException>(() => SynchronizationContext.Current!.Send(_ => { }, null));
            return ValueTask.CompletedTask;
        };
        h.Api.SendToStage(RuntimeHarness.PlayNode, 3, "Go", default);
        h.Pump();

        Assert.NotNull(refusal);
        Assert.StartsWith("Synchronous Send into stage 3 would block", refusal.Message);
    }

    private static RuntimeHarness PushingHarness(out FakeClient client)
    {
        var h = new RuntimeHarness();
        h.CreateStage(1);
        client = h.Join(1, accountId: 100);
        return h;
    }

    /// <summary>Has stage 1 push a pooled payload to its one actor; returns why the stage's handle to it is stale afterwards.</summary>
    private static string PushFromStage(RuntimeHarness h, string msgId)
    {
        var reason = "";
        h.Stages[1].OnServer = (stage, _) =>
        {
            var payload = stage.Link.Pool.Copy([1, 2, 3], "stage");
            stage.Link.Actors.Single().Link.SendToClient(msgId, payload);
            reason = ApiServerTests.StaleReason(payload);
            return ValueTask.CompletedTask;
        };
        h.Api.SendToStage(RuntimeHarness.PlayNode, 1, "Go", default);
        h.Pump();
        return reason;
    }

    /// <summary>Authenticates the account its payload names and replies with a pooled payload, which it notes.</summary>
    private sealed class PayloadReplyingActor(IActorLink link, List<Payload> replies) : IActor
    {
        public IActorLink Link { get; } = link;

        public ValueTask OnCreate() => ValueTask.CompletedTask;

        public ValueTask<AuthenticateResult> OnAuthenticate(Packet packet)
        {
            var reply = Link.Stage.Pool.Copy([9], "auth-reply");
            replies.Add(reply);
            return ValueTask.FromResult(AuthenticateResult.Success(BitConverter.ToInt64(packet.Payload.Span), "AuthenticateReply", reply));
        }

        public ValueTask OnPostAuthenticate() => ValueTask.CompletedTask;

        public ValueTask OnDestroy() => ValueTask.CompletedTask;
    }

    private sealed class DestroyCountingActor(IActorLink link, List<long> destroyed) : IActor
    {
        public IActorLink Link { get; } = link;

        public ValueTask OnCreate() => ValueTask.CompletedTask;

        public ValueTask<AuthenticateResult> OnAuthenticate(Packet packet) =>
            ValueTask.FromResult(AuthenticateResult.Success(BitConverter.ToInt64(packet.Payload.Span), "AuthenticateReply", Payload.Empty));

        public ValueTask OnPostAuthenticate() => ValueTask.CompletedTask;

        public ValueTask OnDestroy()
        {
            destroyed.Add(Link.AccountId);
            return ValueTask.CompletedTask;
        }
    }
}
