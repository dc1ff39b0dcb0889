using System.Runtime.CompilerServices;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;
using PlayHouse.Simulation.Cluster;

namespace PlayHouse.Simulation.Tests.Cluster;

/// <summary>
/// Request cycles across two simulated play servers: the await chain crosses the simulated network as real mesh
/// frames (encoded and decoded), and the request that closes the cycle fails fast with RequestCycle.
/// </summary>
public sealed class RequestCycleClusterTests
{
    private static readonly TimeSpan Timeout = TimeSpan.FromSeconds(30);

    [Fact]
    public void ThreeStageCycleAcrossTwoNodes_FailsFastWithRequestCycle_LongBeforeTheTimeout()
    {
        var outcomes = RunRing(seed: 5, [("play-1", 1), ("play-2", 2), ("play-2", 3)], closeTheRing: true, out var cluster, out var ringSpan);
        using (cluster)
        {
            Assert.Equal([(3L, ErrorCodes.RequestCycle), (2L, ErrorCodes.RequestCycle), (1L, ErrorCodes.RequestCycle)], outcomes);
            Assert.Equal(1, cluster.Nodes.Sum(n => n.Server.Counters.CycleRequestsRefused));
            Assert.Equal(0, cluster.Nodes.Sum(n => n.Server.Counters.RequestTimeouts));
            Assert.True(ringSpan.Value < TimeSpan.FromSeconds(1), $"the ring took {ringSpan.Value} of virtual time; the timeout is {Timeout}");
            Assert.All(cluster.LivePools(), p => Assert.Equal(0, p.Pool.GetStatistics().Outstanding));
        }
    }

    [Fact]
    public void ChainAcrossTwoNodesThatIsNotACycle_RunsToTheEnd()
    {
        var outcomes = RunRing(seed: 5, [("play-1", 1), ("play-2", 2), ("play-1", 3)], closeTheRing: false, out var cluster, out _);
        using (cluster)
        {
            Assert.Equal([(2L, ErrorCodes.Success), (1L, ErrorCodes.Success)], outcomes);
            Assert.Equal(0, cluster.Nodes.Sum(n => n.Server.Counters.CycleRequestsRefused));
        }
    }

    /// <summary>Each stage of the ring awaits a request to the next; the last one asks the first again only when the ring is closed.</summary>
    private static List<(long StageId, ushort ErrorCode)> RunRing(ulong seed, (string Node, long StageId)[] ring, bool closeTheRing, out SimCluster cluster, out StrongBox<TimeSpan> ringSpan)
    {
        var outcomes = new List<(long, ushort)>();
        var span = ringSpan = new StrongBox<TimeSpan>();
        var next = new Dictionary<(string, long), (string Node, long StageId)?>();
        for (var i = 0; i < ring.Length; i++)
        {
            var last = i == ring.Length - 1;
            next[ring[i]] = last ? (closeTheRing ? ring[0] : null) : ring[i + 1];
        }

        // The ring's stages hold no actors and wait for each other across minutes of quiet virtual time: none may close as idle.
        cluster = new SimClusterBuilder(seed)
            .WithPlayServers(2)
            .WithServerOptions(new ServerOptions { IdleStageCloseAfter = null })
            .WithStage("ring", link => new RingStage(link, next[(link.NodeId, link.StageId)], link.StageId == ring[0].StageId, outcomes, span), link => new NoActor(link))
            .Build();

        // The first stage starts the ring from OnPostCreate, so it is created last.
        foreach (var (node, stageId) in ring.Reverse())
        {
            _ = cluster.Node(node).Play!.CreateStage("ring", stageId, "create", Payload.Empty);
            cluster.World.RunUntilQuiet(cluster.World.NowTicks + TimeSpan.FromMinutes(1).Ticks);
        }

        return outcomes;
    }

    private sealed class RingStage(IStageLink link, (string Node, long StageId)? next, bool starts, List<(long, ushort)> outcomes, StrongBox<TimeSpan> ringSpan) : IStage
    {
        public ValueTask<CreateResult> OnCreate(Packet packet) => ValueTask.FromResult(CreateResult.Success());

        public async ValueTask OnPostCreate()
        {
            if (starts)
            {
                await AskNext();
            }
        }

        public ValueTask<bool> OnJoinStage(IActor actor) => ValueTask.FromResult(false);

        public ValueTask OnPostJoinStage(IActor actor) => ValueTask.CompletedTask;

        public ValueTask OnConnectionChanged(IActor actor, bool connected) => ValueTask.CompletedTask;

        public ValueTask OnDispatch(IActor actor, Packet packet) => ValueTask.CompletedTask;

        public async ValueTask OnDispatch(Packet packet)
        {
            var errorCode = next is null ? ErrorCodes.Success : await AskNext();
            link.Reply(packet, errorCode);
        }

        public ValueTask OnDestroy() => ValueTask.CompletedTask;

        private async Task<ushort> AskNext()
        {
            var (node, stageId) = next!.Value;
            var startedTicks = link.Time.GetTimestamp();
            using var response = await link.RequestToStage(node, stageId, "Ask", Payload.Empty, Timeout);
            outcomes.Add((link.StageId, response.ErrorCode));
            if (starts)
            {
                // Virtual time from the first request of the ring to its outcome.
                ringSpan.Value = link.Time.GetElapsedTime(startedTicks);
            }

            return response.ErrorCode;
        }
    }

    private sealed class NoActor(IActorLink link) : IActor
    {
        public IActorLink Link { get; } = link;

        public ValueTask OnCreate() => ValueTask.CompletedTask;

        public ValueTask<AuthenticateResult> OnAuthenticate(Packet packet) => ValueTask.FromResult(AuthenticateResult.Refuse());

        public ValueTask OnPostAuthenticate() => ValueTask.CompletedTask;

        public ValueTask OnDestroy() => ValueTask.CompletedTask;
    }
}
