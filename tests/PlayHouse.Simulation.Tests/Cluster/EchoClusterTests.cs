using PlayHouse.Core.Runtime;
using PlayHouse.Simulation.Cluster;
using PlayHouse.Simulation.Network;

namespace PlayHouse.Simulation.Tests.Cluster;

public sealed class EchoClusterTests
{
    [Fact]
    public void EchoOverTheSimulatedNetwork_EveryRequestGetsItsOwnReply()
    {
        using var cluster = Build(seed: 1, new PathOptions { Latency = LatencyModel.Uniform(TimeSpan.FromMilliseconds(1), TimeSpan.FromMilliseconds(20)), SplitProbability = 0.5 });
        var replies = RunEcho(cluster, requestsPerClient: 20);

        Assert.Equal(10 * 20, replies.Count);
        Assert.All(replies, r => Assert.True(r.Matched, $"client {r.Client} seq {r.Seq} got someone else's reply"));
        Assert.All(cluster.LivePools(), p => Assert.Equal(0, p.Pool.GetStatistics().Outstanding));
        Assert.Equal(0, cluster.Clients.Sum(c => c.Statistics.Timeouts));
    }

    [Fact]
    public void SameSeedTwice_GivesTheSameTraceHash_AndAnotherSeedDoesNot()
    {
        var options = new PathOptions { Latency = LatencyModel.Exponential(TimeSpan.FromMilliseconds(1), TimeSpan.FromMilliseconds(10), TimeSpan.FromMilliseconds(200)), SplitProbability = 0.3 };
        string Hash(ulong seed)
        {
            using var cluster = Build(seed, options);
            RunEcho(cluster, requestsPerClient: 10);
            return cluster.World.Trace.HashHex;
        }

        var first = Hash(7);
        var second = Hash(7);
        var other = Hash(8);

        Assert.Equal(first, second);
        Assert.NotEqual(first, other);
    }

    private static SimCluster Build(ulong seed, PathOptions network) =>
        new SimClusterBuilder(seed)
            .WithPlayServers(1)
            .WithClients(10)
            .WithServerOptions(new ServerOptions { DefaultStageType = "echo" })
            .WithStage("echo", link => new EchoStage(link), link => new AccountActor(link))
            .WithNetwork(network)
            .Build();

    private static List<(string Client, ushort Seq, bool Matched)> RunEcho(SimCluster cluster, int requestsPerClient)
    {
        var results = new List<(string, ushort, bool)>();
        var play = cluster.PlayServers.Single();
        for (var i = 0; i < cluster.Clients.Count; i++)
        {
            var client = cluster.Clients[i];
            var account = i + 1L;
            client.Connect(play.ClientEndpoint);
            client.Request("AuthenticateRequest", 1, BitConverter.GetBytes(account), TimeSpan.FromSeconds(5), (c, auth) =>
            {
                Assert.True(auth.IsSuccess, $"authenticate failed: {ErrorCodes.Describe(auth.ErrorCode)}");
                for (var r = 0; r < requestsPerClient; r++)
                {
                    var body = BitConverter.GetBytes((account * 1000) + r);
                    var expected = body.ToArray();
                    c.Request("Echo", 1, body, TimeSpan.FromSeconds(5), (c2, reply) =>
                        results.Add((c2.Endpoint, reply.MsgSeq, reply.IsSuccess && reply.Payload.Span.SequenceEqual(expected))));
                }
            });
        }

        cluster.World.RunUntilQuiet(TimeSpan.FromMinutes(1).Ticks);
        foreach (var client in cluster.Clients)
        {
            client.Disconnect();
        }

        cluster.World.RunUntilQuiet(TimeSpan.FromMinutes(2).Ticks);
        return results;
    }

    private sealed class EchoStage(IStageLink link) : IStage
    {
        public ValueTask<CreateResult> OnCreate(Packet packet) => ValueTask.FromResult(CreateResult.Success());

        public ValueTask OnPostCreate() => ValueTask.CompletedTask;

        public ValueTask<bool> OnJoinStage(IActor actor) => ValueTask.FromResult(true);

        public ValueTask OnPostJoinStage(IActor actor) => ValueTask.CompletedTask;

        public ValueTask OnConnectionChanged(IActor actor, bool connected) => ValueTask.CompletedTask;

        public ValueTask OnDispatch(IActor actor, Packet packet)
        {
            if (packet.IsRequest)
            {
                link.Reply(packet, packet.MsgId, packet.Payload);
            }

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
