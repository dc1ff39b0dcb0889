using System.Buffers.Binary;
using PlayHouse.Core.Runtime;
using PlayHouse.Simulation.Cluster;
using PlayHouse.Simulation.Network;

namespace PlayHouse.Scenarios.Tests;

/// <summary>The README's example of testing your own stage, kept compiling and passing here.</summary>
public sealed class ReadmeExampleTests
{
    [Fact]
    public void CounterRoom_OverTwentySeedsWithLossAndReordering_AnswersEveryRequestOnceInOrder()
    {
        for (ulong seed = 1; seed <= 20; seed++)
        {
            using var cluster = new SimClusterBuilder(seed)
                .WithClients(3)
                .WithServerOptions(new ServerOptions { DefaultStageType = "counter" })
                .WithStage("counter", link => new CounterRoom(link), link => new Player(link))
                .WithNetwork(new PathOptions { Latency = LatencyModel.Uniform(TimeSpan.FromMilliseconds(1), TimeSpan.FromMilliseconds(40)), LossProbability = 0.05, SplitProbability = 0.3 })
                .Build();
            var counts = new List<long>();
            var client = cluster.Clients[0];
            client.Connect(cluster.PlayServers.Single().ClientEndpoint);
            client.Request("AuthenticateRequest", 7, BitConverter.GetBytes(42L), TimeSpan.FromSeconds(5), (c, auth) =>
            {
                for (var i = 0; i < 10; i++)
                {
                    c.Request("Count", 7, [], TimeSpan.FromSeconds(30), (_, reply) => counts.Add(BinaryPrimitives.ReadInt64LittleEndian(reply.Payload.Span)));
                }
            });
            cluster.World.RunUntilQuiet(TimeSpan.FromMinutes(1).Ticks);

            // Stream loss is retransmitted, so every request is answered exactly once, in the order it was sent.
            Assert.Equal(Enumerable.Range(1, 10).Select(i => (long)i), counts);
            // A connected session holds its receive buffer; once the client leaves, every buffer is back in its pool.
            client.Disconnect();
            cluster.World.RunUntilQuiet(TimeSpan.FromMinutes(1).Ticks);
            Assert.All(cluster.LivePools(), p => Assert.Equal(0, p.Pool.GetStatistics().Outstanding));
        }
    }

    /// <summary>Your stage: answers each "Count" request with how many the room has had so far.</summary>
    private sealed class CounterRoom(IStageLink link) : IStage
    {
        private long _count;

        public ValueTask OnDispatch(IActor actor, Packet packet)
        {
            // Payloads come from the node's pool and move to the runtime with the reply.
            var body = link.Pool.Rent(8, "counter-reply");
            BinaryPrimitives.WriteInt64LittleEndian(body.WritableSpan, ++_count);
            link.Reply(packet, "Count", body);
            return ValueTask.CompletedTask;
        }

        public ValueTask<CreateResult> OnCreate(Packet packet) => ValueTask.FromResult(CreateResult.Success());

        public ValueTask OnPostCreate() => ValueTask.CompletedTask;

        public ValueTask<bool> OnJoinStage(IActor actor) => ValueTask.FromResult(true);

        public ValueTask OnPostJoinStage(IActor actor) => ValueTask.CompletedTask;

        public ValueTask OnConnectionChanged(IActor actor, bool connected) => ValueTask.CompletedTask;

        public ValueTask OnDispatch(Packet packet) => ValueTask.CompletedTask;

        public ValueTask OnDestroy() => ValueTask.CompletedTask;
    }

    private sealed class Player(IActorLink link) : IActor
    {
        public IActorLink Link { get; } = link;

        public ValueTask<AuthenticateResult> OnAuthenticate(Packet packet) => ValueTask.FromResult(AuthenticateResult.Success(BitConverter.ToInt64(packet.Payload.Span)));

        public ValueTask OnCreate() => ValueTask.CompletedTask;

        public ValueTask OnPostAuthenticate() => ValueTask.CompletedTask;

        public ValueTask OnDestroy() => ValueTask.CompletedTask;
    }
}
