using PlayHouse.Core.Runtime;
using PlayHouse.Simulation.Cluster;
using PlayHouse.Simulation.Network;

namespace PlayHouse.Simulation.Tests.Cluster;

/// <summary>
/// The simulated session's ownership and fault handling, as the TCP session's: one receive buffer owned by the
/// receive side and returned once, a close from any side taken once, and no exception escaping a network callback.
/// </summary>
public sealed class SessionConnectionTests
{
    private const string ReceiveBufferOwner = "session-receive-buffer";

    [Fact]
    public void OpenSession_HoldsOnePooledReceiveBuffer_ReturnedWhenItsClientLeaves()
    {
        using var cluster = Build(seed: 3, clients: 2);
        var play = cluster.PlayServers.Single();
        for (var i = 0; i < cluster.Clients.Count; i++)
        {
            cluster.Clients[i].Connect(play.ClientEndpoint);
            cluster.Clients[i].Request("AuthenticateRequest", 1, BitConverter.GetBytes(i + 1L), TimeSpan.FromSeconds(5), (_, reply) => Assert.True(reply.IsSuccess));
        }

        cluster.World.RunUntilQuiet(TimeSpan.FromMinutes(1).Ticks);
        Assert.Equal(2, play.Pool.GetOutstanding().Count(b => b.Owner == ReceiveBufferOwner));

        cluster.Clients[0].Disconnect();
        cluster.World.RunUntilQuiet(TimeSpan.FromMinutes(2).Ticks);
        Assert.Single(play.Pool.GetOutstanding(), b => b.Owner == ReceiveBufferOwner);

        cluster.Clients[1].Disconnect();
        cluster.World.RunUntilQuiet(TimeSpan.FromMinutes(3).Ticks);
        Assert.Empty(play.Pool.GetOutstanding());
    }

    [Fact]
    public void ReplyLostUnderResetOnLoss_SendAndReceiveFailInOneStep_TheSessionClosesOnceAndReturnsItsBufferOnce()
    {
        using var cluster = Build(seed: 4, clients: 1);
        var play = cluster.PlayServers.Single();
        var client = cluster.Clients[0];

        // Only the server's direction loses: its reply breaks the connection during the server's own send, and the
        // reset reaches both ends in the same instant.
        cluster.Network.SetPath(play.ClientEndpoint, client.Endpoint, new PathOptions { LossProbability = 1, StreamLoss = StreamLossMode.Reset });
        client.Connect(play.ClientEndpoint);
        client.Request("AuthenticateRequest", 1, BitConverter.GetBytes(7L), TimeSpan.FromSeconds(1), (_, _) => { });
        cluster.World.RunUntilQuiet(TimeSpan.FromMinutes(1).Ticks);

        Assert.Equal(1, play.Sessions.SendFailures);
        Assert.Equal(0, play.Sessions.CallbackFaults);
        Assert.Equal(0, play.Play!.SessionCount);
        Assert.Empty(play.Pool.GetOutstanding());
        var statistics = play.Pool.GetStatistics();
        Assert.Equal(statistics.Rents, statistics.Returns);
    }

    [Fact]
    public void ExceptionWhileAFrameIsReceived_ClosesThatSessionCounted_AndTheOtherSessionGoesOn()
    {
        var hook = new ThrowOncePerStage(stageId: 1);
        using var cluster = Build(seed: 5, clients: 2, observer: hook);
        var play = cluster.PlayServers.Single();
        var outcomes = new List<(string Client, bool Success)>();
        var disconnected = new List<string>();
        for (var i = 0; i < cluster.Clients.Count; i++)
        {
            var client = cluster.Clients[i];
            var stageId = i + 1L;
            client.Disconnected = (c, _) => disconnected.Add(c.Endpoint);
            client.Connect(play.ClientEndpoint);
            client.Request("AuthenticateRequest", stageId, BitConverter.GetBytes(stageId), TimeSpan.FromSeconds(1), (c, reply) => outcomes.Add((c.Endpoint, reply.IsSuccess)));
        }

        cluster.World.RunUntilQuiet(TimeSpan.FromMinutes(1).Ticks);

        // Stage 1's hook threw on its first post (the create, in client-1's receive callback): that session closed.
        Assert.Equal(1, hook.Thrown);
        Assert.Equal(1, play.Sessions.CallbackFaults);
        Assert.Equal(["client-1"], disconnected);
        Assert.Contains(("client-2", true), outcomes);
        Assert.Equal(1, play.Play!.SessionCount);
    }

    [Fact]
    public void ExceptionWhileTheServerHearsOfABrokenSend_IsACountedCallbackFault_AndNeverUnwindsTheHandlerThatSent()
    {
        // The join's reply breaks the connection during the server's send (every server segment lost, reset on loss),
        // so the session closes inside the join handler; the hook throws on that close's mailbox post (stage 1's third:
        // create, join, then the disconnect). A socket reports a broken send on its own completion, so the join goes on.
        var hook = new ThrowOnPost(stageId: 1, postNumber: 3);
        using var cluster = Build(seed: 4, clients: 1, observer: hook);
        var play = cluster.PlayServers.Single();
        var client = cluster.Clients[0];
        cluster.Network.SetPath(play.ClientEndpoint, client.Endpoint, new PathOptions { LossProbability = 1, StreamLoss = StreamLossMode.Reset });
        client.Connect(play.ClientEndpoint);
        client.Request("AuthenticateRequest", 1, BitConverter.GetBytes(7L), TimeSpan.FromSeconds(1), (_, _) => { });
        cluster.World.RunUntilQuiet(TimeSpan.FromMinutes(1).Ticks);

        Assert.Equal(1, hook.Thrown);
        Assert.Equal((1L, 1L), (play.Sessions.SendFailures, play.Sessions.CallbackFaults));
        Assert.Empty(hook.HandlerFailures);
        Assert.Equal(
            [LifecycleEvent.ActorCreate, LifecycleEvent.ActorAuthenticate, LifecycleEvent.ActorPostAuthenticate, LifecycleEvent.ActorJoinStage, LifecycleEvent.ActorPostJoinStage, LifecycleEvent.ActorDisconnected],
            hook.ActorEvents);
    }

    private static SimCluster Build(ulong seed, int clients, RuntimeObserver? observer = null)
    {
        var builder = new SimClusterBuilder(seed)
            .WithPlayServers(1)
            .WithApiServers(0)
            .WithClients(clients)
            .WithServerOptions(new ServerOptions { DefaultStageType = "room" })
            .WithStage("room", link => new Room(), link => new AccountActor(link))
            .WithNetwork(new PathOptions { Latency = LatencyModel.Fixed(TimeSpan.FromMilliseconds(2)) });
        if (observer is not null)
        {
            builder.WithObserver(_ => observer);
        }

        return builder.Build();
    }

    /// <summary>A diagnostics hook with a bug: its first call for one stage throws.</summary>
    private sealed class ThrowOncePerStage(long stageId) : RuntimeObserver
    {
        public int Thrown { get; private set; }

        public override void OnMailboxPosted(string nodeId, long postedStageId, int mailboxLength, int externalLength)
        {
            if (postedStageId == stageId && Thrown == 0)
            {
                Thrown++;
                throw new InvalidOperationException("hook fault");
            }
        }
    }

    /// <summary>A diagnostics hook with a bug: it throws on one mailbox post of a stage. Records actor lifecycle and handler failures.</summary>
    private sealed class ThrowOnPost(long stageId, int postNumber) : RuntimeObserver
    {
        private int _posts;

        public int Thrown { get; private set; }

        public List<LifecycleEvent> ActorEvents { get; } = [];

        public List<Exception> HandlerFailures { get; } = [];

        public override void OnMailboxPosted(string nodeId, long postedStageId, int mailboxLength, int externalLength)
        {
            if (postedStageId == stageId && ++_posts == postNumber)
            {
                Thrown++;
                throw new InvalidOperationException("hook fault");
            }
        }

        public override void OnLifecycle(string nodeId, long lifecycleStageId, long actorInstance, long accountId, LifecycleEvent lifecycleEvent)
        {
            if (actorInstance != 0)
            {
                ActorEvents.Add(lifecycleEvent);
            }
        }

        public override void OnHandlerFailed(string nodeId, long failedStageId, StageWorkKind kind, string? msgId, Exception error) => HandlerFailures.Add(error);
    }

    private sealed class Room : IStage
    {
        public ValueTask<CreateResult> OnCreate(Packet packet) => ValueTask.FromResult(CreateResult.Success());

        public ValueTask OnPostCreate() => ValueTask.CompletedTask;

        public ValueTask<bool> OnJoinStage(IActor actor) => ValueTask.FromResult(true);

        public ValueTask OnPostJoinStage(IActor actor) => ValueTask.CompletedTask;

        public ValueTask OnConnectionChanged(IActor actor, bool connected) => ValueTask.CompletedTask;

        public ValueTask OnDispatch(IActor actor, Packet packet) => ValueTask.CompletedTask;

        public ValueTask OnDispatch(Packet packet) => ValueTask.CompletedTask;

        public ValueTask OnDestroy() => ValueTask.CompletedTask;
    }

    private sealed class AccountActor(IActorLink link) : IActor
    {
        public IActorLink Link { get; } = link;

        public ValueTask OnCreate() => ValueTask.CompletedTask;

        public ValueTask<AuthenticateResult> OnAuthenticate(Packet packet) =>
            ValueTask.FromResult(AuthenticateResult.Success(BitConverter.ToInt64(packet.Payload.Span)));

        public ValueTask OnPostAuthenticate() => ValueTask.CompletedTask;

        public ValueTask OnDestroy() => ValueTask.CompletedTask;
    }
}
