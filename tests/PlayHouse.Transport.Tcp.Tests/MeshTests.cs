using System.Buffers.Binary;
using System.Collections.Concurrent;
using System.Net;
using Microsoft.Extensions.Time.Testing;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;
using PlayHouse.Core.Seams;
using PlayHouse.Sim.Tcp;

namespace PlayHouse.Transport.Tcp.Tests;

/// <summary>The server-to-server mesh over TCP: identity-addressed, ordered per peer, reconnecting on loss.</summary>
public sealed class MeshTests
{
    private const long BackendStageId = 100;

    [Fact]
    public async Task StageToApiRequest_OverTheTcpMesh_ReturnsTheApiReply()
    {
        await using var cluster = Build(new ConcurrentQueue<long>());
        using var client = await AuthenticatedClient(cluster, "play-1");

        var reply = await client.RequestAsync("ToApi", 1, [1, 2, 3]).WaitAsync(TestServer.Patience);

        Assert.True(reply.IsSuccess, ErrorCodes.Describe(reply.ErrorCode));
        Assert.Equal(new byte[] { 1, 2, 3 }, reply.Payload);
        Assert.Equal(1, cluster.Node("api-1").Mesh.MessagesReceived);
        await AssertQuiet(cluster);
    }

    [Fact]
    public async Task StageToStageRequest_AcrossPlayServers_ReturnsTheOtherStagesReply()
    {
        await using var cluster = Build(new ConcurrentQueue<long>());
        await CreateBackend(cluster);
        using var client = await AuthenticatedClient(cluster, "play-1");

        var reply = await client.RequestAsync("ToStage", 1, [9, 8]).WaitAsync(TestServer.Patience);

        Assert.True(reply.IsSuccess, ErrorCodes.Describe(reply.ErrorCode));
        Assert.Equal(new byte[] { 9, 8 }, reply.Payload);
        await AssertQuiet(cluster);
    }

    [Fact]
    public async Task OneWaySendsToAPeer_ArriveInSendOrder()
    {
        const int Count = 2000;
        var order = new ConcurrentQueue<long>();
        await using var cluster = Build(order);
        await CreateBackend(cluster);
        using var client = await AuthenticatedClient(cluster, "play-1");

        var reply = await client.RequestAsync("Burst", 1, BitConverter.GetBytes(Count)).WaitAsync(TestServer.Patience);
        await Eventually.True(() => order.Count == Count, TestServer.Patience, () => $"{order.Count} of {Count} arrived");

        Assert.True(reply.IsSuccess);
        Assert.Equal(Enumerable.Range(0, Count).Select(i => (long)i), order);
        await AssertQuiet(cluster);
    }

    [Fact]
    public async Task RequestPastThePeersSendQueueCap_FailsFastWithMeshSendQueueFull()
    {
        // A frame larger than the send queue's cap can never be queued: the transport refuses it (before connecting),
        // and the node fails the request at once instead of letting it wait for its timeout.
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = true });
        using var api = new ApiServer("api-1", new NodeSeams(new FakeTimeProvider(), new ManualExecutor(), new Xoshiro256StarStar(1), pool));
        using var mesh = new TcpMeshTransport(api, new TcpMeshOptions { SendQueueBytesMax = 1024 });
        mesh.AddPeer("api-2", new IPEndPoint(IPAddress.Loopback, 9));
        api.Mesh = mesh;

        var request = api.RequestToApi("api-2", "Ask", pool.Copy(new byte[2_000], "ask"));

        Assert.True(request.IsCompleted);
        Assert.Equal(ErrorCodes.MeshSendQueueFull, (await request).ErrorCode);
        Assert.Equal(1, api.Counters.MeshSendsRefused);
        Assert.Equal(1, mesh.MessagesDropped);
        Assert.Equal(0, mesh.Connects);
        pool.ThrowIfLeaks();
    }

    [Fact]
    public async Task BrokenLink_IsReopenedOnTheNextSend()
    {
        await using var cluster = Build(new ConcurrentQueue<long>());
        using var client = await AuthenticatedClient(cluster, "play-1");
        var first = await client.RequestAsync("ToApi", 1, [1]).WaitAsync(TestServer.Patience);

        Assert.True(cluster.BreakMeshLink("play-1", "api-1"));
        var second = await client.RequestAsync("ToApi", 1, [2]).WaitAsync(TestServer.Patience);

        Assert.True(first.IsSuccess);
        Assert.True(second.IsSuccess, ErrorCodes.Describe(second.ErrorCode));
        Assert.Equal(new byte[] { 2 }, second.Payload);
        Assert.Equal(2, cluster.Node("play-1").Mesh.Connects);
        await AssertQuiet(cluster);
    }

    [Fact]
    public async Task UnreachablePeer_DropsTheMessage_AndTheRequestTimesOut()
    {
        await using var cluster = Build(new ConcurrentQueue<long>(), requestTimeout: TimeSpan.FromMilliseconds(500));
        using var client = await AuthenticatedClient(cluster, "play-1");

        // Point api-1 at a port nobody listens on.
        using (var probe = new System.Net.Sockets.Socket(System.Net.Sockets.SocketType.Stream, System.Net.Sockets.ProtocolType.Tcp))
        {
            probe.Bind(new IPEndPoint(IPAddress.Loopback, 0));
            cluster.Node("play-1").Mesh.AddPeer("api-1", (IPEndPoint)probe.LocalEndPoint!);
        }

        var reply = await client.RequestAsync("ToApi", 1, [1]).WaitAsync(TestServer.Patience);

        Assert.Equal(ErrorCodes.RequestTimeout, reply.ErrorCode);
        Assert.Equal(1, cluster.Node("play-1").Mesh.ConnectFailures);
        Assert.Equal(1, cluster.Node("play-1").Mesh.MessagesDropped);
        Assert.Equal(1, cluster.Node("play-1").Server.Counters.RequestTimeouts);
        await AssertQuiet(cluster);
    }

    [Fact]
    public async Task MalformedMeshFrame_ClosesOnlyThatLink_AndTheMeshKeepsWorking()
    {
        await using var cluster = Build(new ConcurrentQueue<long>());
        using var client = await AuthenticatedClient(cluster, "play-1");
        var api = cluster.Node("api-1").Mesh;
        using var intruder = await RawClient.ConnectAsync(api.LocalEndPoint!);

        // FrameLen 8, HeaderLen -1: a negative header length.
        await intruder.SendAsync([8, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0]);
        await intruder.WaitClosedAsync();
        var reply = await client.RequestAsync("ToApi", 1, [5]).WaitAsync(TestServer.Patience);

        Assert.Equal(1, api.Counters.Malformed(PlayHouse.Core.Codec.FrameError.NegativeHeaderLength));
        Assert.Equal(1, api.Counters.Closed(SessionCloseReason.MalformedFrame));
        Assert.True(reply.IsSuccess);
        await AssertQuiet(cluster);
    }

    private static TcpCluster Build(ConcurrentQueue<long> order, TimeSpan? requestTimeout = null) =>
        new TcpClusterBuilder()
            .WithPlayServers(2)
            .WithApiServers(1)
            .WithServerOptions(new ServerOptions { DefaultStageType = "mesh", RequestTimeout = requestTimeout ?? TimeSpan.FromSeconds(10) })
            .WithStage("mesh", link => new MeshStage(link, order), link => new EchoActor(link))
            .WithApiHandlers(api => api.Handle("ApiEcho", (link, packet) =>
            {
                link.Reply(packet, "ApiEcho", packet.Payload);
                return ValueTask.CompletedTask;
            }))
            .Build();

    private static async Task CreateBackend(TcpCluster cluster)
    {
        using var created = await cluster.Node("play-2").Play!.CreateStage("mesh", BackendStageId, "Create", Payload.Empty).WaitAsync(TestServer.Patience);
        Assert.True(created.IsSuccess);
    }

    private static async Task<TcpPlayClient> AuthenticatedClient(TcpCluster cluster, string node)
    {
        var client = await cluster.ConnectClientAsync(node, new TcpPlayClientOptions { RequestTimeout = TestServer.Patience });
        var auth = await client.AuthenticateAsync(1, TestServer.Account(1)).WaitAsync(TestServer.Patience);
        Assert.True(auth.IsSuccess);
        return client;
    }

    private static async Task AssertQuiet(TcpCluster cluster)
    {
        Assert.True(await cluster.QuiesceAsync(TestServer.Patience), "the cluster did not go quiet");
        foreach (var (name, pool) in cluster.LivePools())
        {
            await Eventually.True(() => pool.GetStatistics().Outstanding == 0, TestServer.Patience, () => $"{name}: {string.Join(", ", pool.GetOutstanding())}");
        }

        Assert.All(cluster.Nodes, n => Assert.Equal(0, n.Mesh.Counters.CallbackFaults));
    }

    /// <summary>Relays client requests over the mesh and records the order of one-way messages it receives.</summary>
    private sealed class MeshStage(IStageLink link, ConcurrentQueue<long> order) : IStage
    {
        public ValueTask<CreateResult> OnCreate(Packet packet) => ValueTask.FromResult(CreateResult.Success());

        public ValueTask OnPostCreate() => ValueTask.CompletedTask;

        public ValueTask<bool> OnJoinStage(IActor actor) => ValueTask.FromResult(true);

        public ValueTask OnPostJoinStage(IActor actor) => ValueTask.CompletedTask;

        public ValueTask OnConnectionChanged(IActor actor, bool connected) => ValueTask.CompletedTask;

        public async ValueTask OnDispatch(IActor actor, Packet packet)
        {
            switch (packet.MsgId)
            {
                case "ToApi":
                    using (var response = await link.RequestToApi("api-1", "ApiEcho", link.Pool.Copy(packet.Payload.Span, "to-api")))
                    {
                        Reply(packet, response);
                    }

                    break;
                case "ToStage":
                    using (var response = await link.RequestToStage("play-2", BackendStageId, "StageEcho", link.Pool.Copy(packet.Payload.Span, "to-stage")))
                    {
                        Reply(packet, response);
                    }

                    break;
                case "Burst":
                    var count = BitConverter.ToInt32(packet.Payload.Span);
                    for (var i = 0; i < count; i++)
                    {
                        var body = link.Pool.Rent(8, "ordered");
                        BinaryPrimitives.WriteInt64LittleEndian(body.WritableSpan, i);
                        link.SendToStage("play-2", BackendStageId, "Ordered", body);
                    }

                    link.Reply(packet, "BurstSent", Payload.Empty);
                    break;
                default:
                    link.Reply(packet, ErrorCodes.HandlerNotFound);
                    break;
            }
        }

        public ValueTask OnDispatch(Packet packet)
        {
            if (packet.MsgId == "Ordered")
            {
                order.Enqueue(BinaryPrimitives.ReadInt64LittleEndian(packet.Payload.Span));
            }
            else if (packet.IsRequest)
            {
                link.Reply(packet, "StageEcho", packet.Payload);
            }

            return ValueTask.CompletedTask;
        }

        public ValueTask OnDestroy() => ValueTask.CompletedTask;

        private void Reply(in Packet packet, in Response response)
        {
            if (response.IsSuccess)
            {
                link.Reply(packet, response.MsgId, response.Payload);
            }
            else
            {
                link.Reply(packet, response.ErrorCode);
            }
        }
    }
}
