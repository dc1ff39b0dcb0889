using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;

namespace PlayHouse.Core.Tests.Runtime;

/// <summary>
/// A stage's actors as its directory keeps them: the callbacks each join, disconnect, leave and close runs, the codes a
/// refused join answers with, what is left of an actor that was refused or whose client left while it joined, and the
/// actors destroyed past a failing one.
/// </summary>
public sealed class ActorDirectoryTests
{
    private const ushort GameRefusal = 4_321;
    private static readonly TimeSpan Expiry = TimeSpan.FromSeconds(30);

    [Fact]
    public void JoinDisconnectAndExpiry_RunEveryActorAndStageCallbackOnce_InOrder()
    {
        var script = new ActorScript();
        using var h = Harness(script, Options());
        var client = h.Join(1, 5);
        client.Disconnect();
        h.Pump();
        h.Advance(Expiry);

        Assert.Equal(["OnCreate", "OnAuthenticate 5", "OnPostAuthenticate 5", "OnDestroy 5"], script.Log);
        Assert.Equal(["OnJoinStage 5", "OnPostJoinStage 5", "OnConnectionChanged 5 False"], h.Stages[1].Callbacks);
        Assert.Equal(0, h.Play.ActorCount);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void JoinReply_WithoutAReplyMsgIdFromAuthentication_CarriesTheRequestsMsgId_AndItsPayload()
    {
        var script = new ActorScript();
        using var h = Harness(script, Options());
        script.Pool = h.Pool;
        var client = new FakeClient(h);
        var seq = client.Authenticate(1, 5);
        h.Pump();

        var reply = client.ReplyTo(seq);
        Assert.Equal(h.Play.Options.AuthenticateMsgId, reply.MsgId);
        Assert.Equal(ActorScript.ReplyBytes, reply.Payload);
        Assert.Equal(ErrorCodes.Success, reply.ErrorCode);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void LeaveThenStageClose_DestroyTheLeaverOnce_ThenTheRestInTheOrderTheyWereMade()
    {
        var script = new ActorScript();
        using var h = Harness(script, Options());
        h.Join(1, 3);
        h.Join(1, 1);
        h.Join(1, 2);
        var leaver = h.Stages[1].Link.Actors.Single(a => a.Link.AccountId == 1);
        leaver.Link.LeaveStage();
        h.Pump();
        leaver.Link.LeaveStage();
        h.Pump();
        var afterLeave = h.Play.ActorCount;
        h.Play.CloseStage(1);
        h.Pump();

        Assert.Equal(2, afterLeave);
        Assert.Equal(["OnDestroy 1", "OnDestroy 3", "OnDestroy 2"], script.Log.Where(l => l.StartsWith("OnDestroy", StringComparison.Ordinal)));
        Assert.Equal(0, h.Play.ActorCount);
        Assert.False(h.Play.HasStage(1));
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void AccountTakenOverByANewSession_StaysConnected_WhenTheOldSessionsDisconnectArrivesAfterTheTakeover()
    {
        using var h = new RuntimeHarness(Options());
        var first = h.Join(1, 5);

        // The new session's join is queued before the old session's disconnect: the stage rebinds the actor first, so
        // the disconnect that follows is stale news.
        var second = new FakeClient(h);
        second.Authenticate(1, 5);
        first.Disconnect();
        h.Pump();
        var seq = second.Request("Echo", 1, [4]);
        h.Pump();

        var actor = h.Stages[1].Link.Actors.Single();
        Assert.True(actor.Link.IsConnected);
        Assert.Equal(second.SessionId, actor.Link.SessionId);
        Assert.Equal([4], second.ReplyTo(seq).Payload);
        Assert.DoesNotContain("OnConnectionChanged 5 False", h.Stages[1].Callbacks);
        Assert.Equal(0, h.Play.DisconnectedActorCount);
    }

    [Fact]
    public void SessionWhoseActorLeft_MayAuthenticateIntoAnotherStage()
    {
        using var h = new RuntimeHarness(Options());
        var client = h.Join(1, 5);
        h.Stages[1].Link.Actors.Single().Link.LeaveStage();
        h.Pump();
        var seq = client.Authenticate(2, 5);
        h.Pump();

        Assert.Equal(ErrorCodes.Success, client.ReplyTo(seq).ErrorCode);
        Assert.Single(h.Stages[2].Link.Actors);
        Assert.Empty(h.Stages[1].Link.Actors);
    }

    [Fact]
    public void RefusedAuthentication_AnswersTheActorsOwnCode_AndSuccessAsACodeBecomesAuthenticationFailed()
    {
        var script = new ActorScript();
        using var h = Harness(script, Options());
        script.Pool = h.Pool;
        var client = new FakeClient(h);
        var ownCode = client.Authenticate(1, ActorScript.RefuseWithOwnCode);
        h.Pump();
        var successCode = client.Authenticate(1, ActorScript.RefuseWithSuccessCode);
        h.Pump();

        Assert.Equal(GameRefusal, client.ReplyTo(ownCode).ErrorCode);
        Assert.Equal(ErrorCodes.AuthenticationFailed, client.ReplyTo(successCode).ErrorCode);
        Assert.Equal(0, h.Play.ActorCount);
        Assert.Equal(2, script.Log.Count(l => l.StartsWith("OnDestroy", StringComparison.Ordinal)));
        Assert.Equal(2, h.Events.EventsOf(1).Count(e => e == LifecycleEvent.ActorDestroy));
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void JoinTheStageRejects_AnswersJoinStageRejected_DestroysTheActor_AndTheSessionMayTryAgain()
    {
        var admit = false;
        var script = new ActorScript();
        using var h = Harness(script, Options());
        script.Pool = h.Pool;
        h.ConfigureStage = s => s.AdmitJoin = _ => admit;
        var client = new FakeClient(h);
        var rejected = client.Authenticate(1, 7);
        h.Pump();
        var rejectedLog = script.Log.ToList();
        admit = true;
        var admitted = client.Authenticate(1, 7);
        h.Pump();

        Assert.Equal(ErrorCodes.JoinStageRejected, client.ReplyTo(rejected).ErrorCode);
        Assert.Equal("OnDestroy 7", rejectedLog[^1]);
        Assert.DoesNotContain(LifecycleEvent.ActorPostJoinStage, h.Events.EventsOf(1).Take(6));
        Assert.Equal(ErrorCodes.Success, client.ReplyTo(admitted).ErrorCode);
        Assert.Equal(1, h.Play.ActorCount);
        Assert.Single(h.Stages[1].Link.Actors);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void NewAccountAtActorsPerStageMax_IsDestroyed_ItsReplyPayloadReleased_AndItsSessionMayJoinElsewhere()
    {
        var script = new ActorScript();
        using var h = Harness(script, Options() with { ActorsPerStageMax = 1 });
        script.Pool = h.Pool;
        h.Join(1, 1);
        var client = new FakeClient(h);
        var refused = client.Authenticate(1, 2);
        h.Pump();
        var elsewhere = client.Authenticate(2, 2);
        h.Pump();

        Assert.Equal(ErrorCodes.StageFull, client.ReplyTo(refused).ErrorCode);
        Assert.Equal(["OnDestroy 2"], script.Log.Where(l => l.StartsWith("OnDestroy", StringComparison.Ordinal)));
        Assert.Equal(ErrorCodes.Success, client.ReplyTo(elsewhere).ErrorCode);
        Assert.Equal(2, h.Play.ActorCount);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void RefusedJoinWhoseOnDestroyThrows_DestroysTheActorOnce_AndReportsTheFailureOnce()
    {
        var script = new ActorScript();
        script.ThrowOnDestroy.Add(ActorScript.RefuseWithOwnCode);
        using var h = Harness(script, Options());
        var client = new FakeClient(h);
        var seq = client.Authenticate(1, ActorScript.RefuseWithOwnCode);
        h.Pump();

        Assert.Equal(GameRefusal, client.ReplyTo(seq).ErrorCode);
        Assert.Single(script.Log, l => l.StartsWith("OnDestroy", StringComparison.Ordinal));
        var failure = Assert.Single(h.Events.Failures);
        Assert.Equal(StageWorkKind.Join, failure.Kind);
        Assert.Equal(0, h.Play.ActorCount);
    }

    [Fact]
    public void AuthenticationThatThrows_DestroysTheActorOnce_AndAFailingOnDestroyIsReportedToo()
    {
        var script = new ActorScript();
        script.ThrowOnDestroy.Add(ActorScript.ThrowOnAuthenticate);
        using var h = Harness(script, Options());
        var client = new FakeClient(h);
        var seq = client.Authenticate(1, ActorScript.ThrowOnAuthenticate);
        h.Pump();

        Assert.Equal(ErrorCodes.HandlerFailed, client.ReplyTo(seq).ErrorCode);
        Assert.Single(script.Log, l => l.StartsWith("OnDestroy", StringComparison.Ordinal));
        Assert.Equal(["auth store down", "save failed"], h.Events.Failures.Select(f => f.Error.Message));
        Assert.All(h.Events.Failures, f => Assert.Equal(StageWorkKind.Join, f.Kind));
    }

    [Fact]
    public void ClientThatLeavesWhileItsActorJoins_LeavesTheActorDisconnected_UntilItsExpiry()
    {
        var script = new ActorScript { PostAuthenticateGate = new TaskCompletionSource() };
        using var h = Harness(script, Options());
        script.Pool = h.Pool;
        var client = new FakeClient(h);
        client.Authenticate(1, 5);
        h.Pump();
        client.Disconnect();
        h.Pump();
        script.PostAuthenticateGate.SetResult();
        h.Pump();
        var waiting = h.Play.ActorCount;

        Assert.Equal(1, waiting);
        Assert.Equal(["OnJoinStage 5", "OnPostJoinStage 5", "OnConnectionChanged 5 False"], h.Stages[1].Callbacks);
        Assert.Contains(LifecycleEvent.ActorDisconnected, h.Events.EventsOf(1));
        Assert.Empty(client.Received);
        h.Pool.ThrowIfLeaks();

        h.Advance(Expiry);
        Assert.Equal(0, h.Play.ActorCount);
        Assert.Equal(1, h.Play.Counters.DisconnectedActorsExpired);
    }

    [Fact]
    public void ExpiringActorsWhoseFirstOnDestroyThrows_AreAllDestroyed_AndTheFailureIsReportedAsHousekeeping()
    {
        var script = new ActorScript();
        script.ThrowOnDestroy.Add(99);
        using var h = Harness(script, Options());
        var failing = h.Join(1, 99);
        var plain = h.Join(1, 8);
        failing.Disconnect();
        plain.Disconnect();
        h.Pump();
        h.Advance(Expiry);

        Assert.Equal(0, h.Play.ActorCount);
        Assert.Empty(h.Stages[1].Link.Actors);
        Assert.Equal(2, h.Play.Counters.DisconnectedActorsExpired);
        Assert.Equal(2, script.Log.Count(l => l.StartsWith("OnDestroy", StringComparison.Ordinal)));
        var failure = Assert.Single(h.Events.Failures);
        Assert.Equal(StageWorkKind.Housekeeping, failure.Kind);
        Assert.Equal(1, h.Play.Counters.HandlerFailures);
        h.Pool.ThrowIfLeaks();
    }

    private static ServerOptions Options() => new() { DefaultStageType = RuntimeHarness.StageType, DisconnectedActorExpiry = Expiry };

    private static RuntimeHarness Harness(ActorScript script, ServerOptions options) =>
        new(options, actorFactory: link => new RecordingActor(link, script));

    /// <summary>What the actors of one test do and the log of what ran; a few accounts script a refusal or a failure.</summary>
    private sealed class ActorScript
    {
        public const long RefuseWithOwnCode = -1;
        public const long RefuseWithSuccessCode = -2;
        public const long ThrowOnAuthenticate = -3;

        public static readonly byte[] ReplyBytes = [1, 2, 3];

        public List<string> Log { get; } = [];

        public HashSet<long> ThrowOnDestroy { get; } = [];

        /// <summary>When set, the authenticate reply and refusal carry a payload from this pool.</summary>
        public MessagePool? Pool { get; set; }

        /// <summary>When set, OnPostAuthenticate waits for it.</summary>
        public TaskCompletionSource? PostAuthenticateGate { get; init; }

        public Payload ReplyPayload() => Pool?.Copy(ReplyBytes, "auth-reply") ?? Payload.Empty;
    }

    private sealed class RecordingActor(IActorLink link, ActorScript script) : IActor
    {
        private long _account;

        public IActorLink Link { get; } = link;

        public ValueTask OnCreate()
        {
            script.Log.Add("OnCreate");
            return ValueTask.CompletedTask;
        }

        public ValueTask<AuthenticateResult> OnAuthenticate(Packet packet)
        {
            _account = BitConverter.ToInt64(packet.Payload.Span);
            script.Log.Add($"OnAuthenticate {_account}");
            return _account switch
            {
                ActorScript.ThrowOnAuthenticate => throw new InvalidOperationException("auth store down"),
                ActorScript.RefuseWithOwnCode => ValueTask.FromResult(new AuthenticateResult(false, 0, GameRefusal, string.Empty, script.ReplyPayload())),
                ActorScript.RefuseWithSuccessCode => ValueTask.FromResult(AuthenticateResult.Refuse(ErrorCodes.Success)),
                _ => ValueTask.FromResult(AuthenticateResult.Success(_account, string.Empty, script.ReplyPayload())),
            };
        }

        public async ValueTask OnPostAuthenticate()
        {
            script.Log.Add($"OnPostAuthenticate {_account}");
            if (script.PostAuthenticateGate is { } gate)
            {
                await gate.Task;
            }
        }

        public ValueTask OnDestroy()
        {
            script.Log.Add($"OnDestroy {_account}");
            return script.ThrowOnDestroy.Contains(_account) ? throw new InvalidOperationException("save failed") : ValueTask.CompletedTask;
        }
    }
}
