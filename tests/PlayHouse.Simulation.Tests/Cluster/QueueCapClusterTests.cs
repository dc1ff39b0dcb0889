using PlayHouse.Core.Runtime;
using PlayHouse.Simulation.Clients;
using PlayHouse.Simulation.Cluster;
using PlayHouse.Simulation.Network;

namespace PlayHouse.Simulation.Tests.Cluster;

/// <summary>
/// The simulated parts that bound a queue (B15): a session's and a mesh link's send queue under a configured cap, and a
/// client's packet queue under a slow application. Each refuses overload with a counted, defined outcome.
/// </summary>
public sealed class QueueCapClusterTests
{
    private static readonly PathOptions FixedLatency = new() { Latency = LatencyModel.Fixed(TimeSpan.FromMilliseconds(5)), SplitProbability = 0 };

    [Fact]
    public void SessionSendQueue_WithAConfiguredCap_RefusesFramesPastItAndTheServerCountsThem()
    {
        using var cluster = new SimClusterBuilder(1)
            .WithClients(1)
            .WithServerOptions(new ServerOptions { DefaultStageType = "room" })
            .WithStage("room", link => new PushingStage(link, pushes: 10, pushBytes: 100), link => new AccountActor(link))
            .WithNetwork(FixedLatency)
            .WithSendQueueCaps(sessionBytesMax: 512, meshBytesMax: null)
            .Build();
        var client = cluster.Clients[0];
        var pushes = 0;
        client.PushReceived = (_, _, _, _) => pushes++;
        ClientReply? reply = null;

        Authenticate(cluster, client, () => client.Request("Flood", 1, [], TimeSpan.FromSeconds(5), (_, r) => reply = r));
        cluster.World.RunUntilQuiet(TimeSpan.FromMinutes(1).Ticks);

        var play = cluster.PlayServers.Single();
        Assert.Equal(512, cluster.SessionSendQueueBytesMax);
        Assert.InRange(play.Sessions.SendQueueHighWaterBytes, 1, 512);
        Assert.True(play.Sessions.SendsRefused > 0);
        Assert.Equal(play.Sessions.SendsRefused, play.Server.Counters.ClientSendsRefused);
        // Every push (and the reply, if it met a full queue and timed out) either reached the client or was refused.
        Assert.NotNull(reply);
        var replyRefused = reply.Value.TimedOut ? 1 : 0;
        Assert.InRange(pushes, 1, 9);
        Assert.Equal(10 + replyRefused, pushes + play.Sessions.SendsRefused);
        client.Disconnect();
        cluster.World.RunUntilQuiet(TimeSpan.FromMinutes(2).Ticks);
        Assert.All(cluster.LivePools(), p => Assert.Equal(0, p.Pool.GetStatistics().Outstanding));
    }

    [Fact]
    public void MeshLink_PastItsConfiguredCapBehindAClog_RefusesSoTheRequestFailsFastWithMeshSendQueueFull()
    {
        using var cluster = new SimClusterBuilder(2)
            .WithPlayServers(0)
            .WithApiServers(2)
            .WithApiHandlers(api => api.Handle("Ask", (link, packet) =>
            {
                link.Reply(packet, "Ask", packet.Payload);
                return ValueTask.CompletedTask;
            }))
            .WithNetwork(FixedLatency)
            .WithSendQueueCaps(sessionBytesMax: null, meshBytesMax: 1024)
            .Build();
        var asker = cluster.Node("api-1");
        cluster.Clog("api-1", "api-2");
        var outcomes = new List<ushort>();

        for (var i = 0; i < 3; i++)
        {
            asker.Api!.RequestToApi("api-2", "Ask", asker.Pool.Copy(new byte[600], "ask"), response =>
            {
                outcomes.Add(response.ErrorCode);
                response.Dispose();
            });
        }

        cluster.World.RunUntilQuiet(cluster.World.NowTicks + TimeSpan.FromMilliseconds(100).Ticks);
        Assert.Equal([ErrorCodes.MeshSendQueueFull, ErrorCodes.MeshSendQueueFull], outcomes);
        Assert.Equal(2, asker.Server.Counters.MeshSendsRefused);
        Assert.Equal(2, asker.Mesh.SendsRefused);
        Assert.InRange(asker.Mesh.SendQueueHighWaterBytes, 600, 1024);

        // The one the queue took goes through once the clog clears.
        cluster.Unclog("api-1", "api-2");
        cluster.World.RunUntilQuiet(TimeSpan.FromMinutes(1).Ticks);
        Assert.Equal([ErrorCodes.MeshSendQueueFull, ErrorCodes.MeshSendQueueFull, ErrorCodes.Success], outcomes);
        Assert.All(cluster.LivePools(), p => Assert.Equal(0, p.Pool.GetStatistics().Outstanding));
    }

    [Fact]
    public void ClientPacketQueue_PastItsCap_DropsPushesAndCompletesTheReplyOnceWithPacketQueueFull()
    {
        using var cluster = new SimClusterBuilder(3)
            .WithClients(1)
            .WithServerOptions(new ServerOptions { DefaultStageType = "room" })
            .WithStage("room", link => new PushingStage(link, pushes: 3, pushBytes: 16), link => new AccountActor(link))
            .WithNetwork(FixedLatency)
            .WithClientReading(new ClientReadOptions { ReadInterval = TimeSpan.FromMilliseconds(10), PacketsPerRead = 1, PacketQueueMax = 2 })
            .Build();
        var client = cluster.Clients[0];
        var pushes = 0;
        client.PushReceived = (_, _, _, _) => pushes++;
        var replies = new List<ClientReply>();

        Authenticate(cluster, client, () => client.Request("Flood", 1, [], TimeSpan.FromSeconds(5), (_, r) => replies.Add(r)));
        cluster.World.RunUntilQuiet(TimeSpan.FromMinutes(1).Ticks);

        // Two pushes fill the queue; the third push is dropped and the reply behind it refused, which ends the request.
        var reply = Assert.Single(replies);
        Assert.Equal(SimClient.PacketQueueFullErrorCode, reply.ErrorCode);
        Assert.False(reply.TimedOut);
        Assert.Equal(2, pushes);
        Assert.Equal(1, client.Statistics.PushesDropped);
        Assert.Equal(1, client.Statistics.RepliesRefused);
        Assert.Equal(2, client.PacketQueueHighWater);
        Assert.Equal(0, client.PacketsQueued);
        client.Disconnect();
        cluster.World.RunUntilQuiet(TimeSpan.FromMinutes(2).Ticks);
        Assert.All(cluster.LivePools(), p => Assert.Equal(0, p.Pool.GetStatistics().Outstanding));
    }

    private static void Authenticate(SimCluster cluster, SimClient client, Action then)
    {
        client.Connect(cluster.PlayServers.Single().ClientEndpoint);
        client.Request("AuthenticateRequest", 1, BitConverter.GetBytes(7L), TimeSpan.FromSeconds(5), (_, auth) =>
        {
            Assert.True(auth.IsSuccess, ErrorCodes.Describe(auth.ErrorCode));
            then();
        });
    }

    /// <summary>Answers each request with <c>pushes</c> pushes of <c>pushBytes</c>, then the reply.</summary>
    private sealed class PushingStage(IStageLink link, int pushes, int pushBytes) : IStage
    {
        public ValueTask<CreateResult> OnCreate(Packet packet) => ValueTask.FromResult(CreateResult.Success());

        public ValueTask OnPostCreate() => ValueTask.CompletedTask;

        public ValueTask<bool> OnJoinStage(IActor actor) => ValueTask.FromResult(true);

        public ValueTask OnPostJoinStage(IActor actor) => ValueTask.CompletedTask;

        public ValueTask OnConnectionChanged(IActor actor, bool connected) => ValueTask.CompletedTask;

        public ValueTask OnDispatch(IActor actor, Packet packet)
        {
            for (var i = 0; i < pushes; i++)
            {
                actor.Link.SendToClient("Push", link.Pool.Copy(new byte[pushBytes], "push"));
            }

            link.Reply(packet, ErrorCodes.Success);
            return ValueTask.CompletedTask;
        }

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
