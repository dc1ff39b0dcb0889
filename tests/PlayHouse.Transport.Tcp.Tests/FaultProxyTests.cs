using System.Net;
using System.Net.Sockets;
using Microsoft.Extensions.Time.Testing;
using PlayHouse.Sim.Tcp.Proxy;
using PlayHouse.Simulation.Network;

namespace PlayHouse.Transport.Tcp.Tests;

/// <summary>
/// The fault proxy between two plain sockets: it relays both ways, and each fault it realises shows on the wire and in
/// its counters. Delays run on a fake clock where the test must see the bytes held and then let go; a wait for
/// "nothing arrived" can only make such a test pass late, never fail falsely.
/// </summary>
public sealed class FaultProxyTests
{
    private static readonly TimeSpan Patience = TestServer.Patience;
    private static readonly TimeSpan Quiet = TimeSpan.FromMilliseconds(150);

    [Fact]
    public async Task Relay_WithoutFaults_CarriesBytesBothWaysAndCountsThem()
    {
        await using var pair = await Pair.StartAsync(new FaultProxyOptions { Time = TimeProvider.System });

        await pair.Client.SendAsync(Bytes(1000, 1));
        Assert.Equal(Bytes(1000, 1), await ReceiveExactlyAsync(pair.Server, 1000));
        await pair.Server.SendAsync(Bytes(3000, 2));
        Assert.Equal(Bytes(3000, 2), await ReceiveExactlyAsync(pair.Client, 3000));

        Assert.Equal(1, pair.Proxy.Counters.ConnectionsAccepted);
        Assert.Equal(1001, pair.Proxy.Counters.BytesUpstream);
        Assert.Equal(3000, pair.Proxy.Counters.BytesDownstream);
        Assert.Equal(0, pair.Proxy.Counters.ChunksDelayed);
    }

    [Fact]
    public async Task Relay_WhenOneSideCloses_PassesTheFinOn()
    {
        await using var pair = await Pair.StartAsync(new FaultProxyOptions { Time = TimeProvider.System });

        await pair.Client.SendAsync(Bytes(10, 3));
        pair.Client.Shutdown(SocketShutdown.Send);

        Assert.Equal(Bytes(10, 3), await ReceiveExactlyAsync(pair.Server, 10));
        Assert.Equal(0, await pair.Server.ReceiveAsync(new byte[16]).WaitAsync(Patience));
    }

    [Fact]
    public async Task Latency_OnTheDownstreamOnly_HoldsRepliesUntilTheirTimeAndNotRequests()
    {
        var time = new FakeTimeProvider();
        await using var pair = await Pair.StartAsync(new FaultProxyOptions { Time = time, Downstream = FaultProxyOptions.CleanPath with { Latency = LatencyModel.Fixed(TimeSpan.FromSeconds(1)) } });

        await pair.Client.SendAsync(Bytes(100, 4));
        Assert.Equal(Bytes(100, 4), await ReceiveExactlyAsync(pair.Server, 100));
        await pair.Server.SendAsync(Bytes(50, 5));
        var reply = ReceiveExactlyAsync(pair.Client, 50);

        // The relay stamps a chunk when it reads it, on its own thread: the clock moves only once the reply is stamped.
        await TestServer.WaitUntilAsync(() => pair.Proxy.Counters.ChunksDelayed == 1);
        await Task.Delay(Quiet, TimeProvider.System);
        Assert.False(reply.IsCompleted);
        time.Advance(TimeSpan.FromSeconds(1));
        Assert.Equal(Bytes(50, 5), await reply);
        Assert.Equal(1, pair.Proxy.Counters.ChunksDelayed);
    }

    [Fact]
    public async Task Loss_OnAStream_IsARetransmissionStallThatHoldsTheChunkAndEverythingBehind()
    {
        var time = new FakeTimeProvider();
        var lossy = FaultProxyOptions.CleanPath with { LossProbability = 1, RetransmitDelay = TimeSpan.FromMilliseconds(200) };
        await using var pair = await Pair.StartAsync(new FaultProxyOptions { Time = time });
        pair.Proxy.SetPath(ProxyDirection.Upstream, lossy);

        await pair.Client.SendAsync(Bytes(64, 6));
        var received = ReceiveExactlyAsync(pair.Server, 64);
        await TestServer.WaitUntilAsync(() => pair.Proxy.Counters.RetransmitStalls == 1);
        await Task.Delay(Quiet, TimeProvider.System);
        Assert.False(received.IsCompleted);

        time.Advance(TimeSpan.FromMilliseconds(200));
        Assert.Equal(Bytes(64, 6), await received);
        Assert.Equal(1, pair.Proxy.Counters.LossOpportunities);
        Assert.Equal(1, pair.Proxy.Counters.RetransmitStalls);
    }

    [Fact]
    public async Task Loss_InResetMode_ResetsTheConnection()
    {
        var lossy = FaultProxyOptions.CleanPath with { LossProbability = 1, StreamLoss = StreamLossMode.Reset };
        await using var pair = await Pair.StartAsync(new FaultProxyOptions { Time = TimeProvider.System });
        pair.Proxy.SetPath(ProxyDirection.Upstream, lossy);

        await pair.Client.SendAsync(Bytes(64, 6));

        await AssertEndsAsync(pair.Client);
        Assert.Equal(1, pair.Proxy.Counters.LossResets);
        Assert.Equal(1, pair.Proxy.Counters.Resets);
    }

    [Fact]
    public async Task Stall_OfOneDirection_HoldsOnlyThatDirectionForItsWindow()
    {
        var time = new FakeTimeProvider();
        await using var pair = await Pair.StartAsync(new FaultProxyOptions { Time = time });

        pair.Proxy.Stall(ProxyDirection.Downstream, TimeSpan.FromSeconds(2));
        await pair.Client.SendAsync(Bytes(10, 7));
        Assert.Equal(Bytes(10, 7), await ReceiveExactlyAsync(pair.Server, 10));
        await pair.Server.SendAsync(Bytes(10, 8));
        var reply = ReceiveExactlyAsync(pair.Client, 10);
        // The relay reads the reply on its own thread: the window is advanced only once the send is held, or a slow
        // host would let the relay read it after the window and pass it on unheld.
        await TestServer.WaitUntilAsync(() => pair.Proxy.Counters.StallSendsHeld == 1);
        await Task.Delay(Quiet, TimeProvider.System);
        Assert.False(reply.IsCompleted);

        time.Advance(TimeSpan.FromSeconds(2));
        Assert.Equal(Bytes(10, 8), await reply);
        Assert.Equal(1, pair.Proxy.Counters.StallWindows);
        Assert.Equal(1, pair.Proxy.Counters.StallSendsHeld);
    }

    [Fact]
    public async Task Partition_HoldsBothDirectionsUntilHealThenDeliversInOrder()
    {
        await using var pair = await Pair.StartAsync(new FaultProxyOptions { Time = TimeProvider.System });

        pair.Proxy.Partition();
        await pair.Client.SendAsync(Bytes(100, 9));
        await pair.Client.SendAsync(Bytes(100, 10));
        var received = ReceiveExactlyAsync(pair.Server, 200);
        await Task.Delay(Quiet, TimeProvider.System);
        Assert.False(received.IsCompleted);

        pair.Proxy.Heal();
        Assert.Equal(Bytes(100, 9).Concat(Bytes(100, 10)), await received);
        Assert.Equal(1, pair.Proxy.Counters.PartitionWindows);
        Assert.Equal(1, pair.Proxy.Counters.Heals);
        Assert.True(pair.Proxy.Counters.PartitionSendsHeld >= 1);
    }

    [Fact]
    public async Task Partition_HoldsANewConnectionBeforeItReachesTheServer()
    {
        using var listener = Listen();
        await using var proxy = FaultProxy.Start("client-1", (IPEndPoint)listener.LocalEndPoint!, new FaultProxyOptions { Time = TimeProvider.System });
        proxy.Partition();

        using var client = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        await client.ConnectAsync(proxy.EndPoint);
        var accept = listener.AcceptAsync();
        await Task.Delay(Quiet, TimeProvider.System);
        Assert.False(accept.IsCompleted);

        proxy.Heal();
        using var server = await accept.WaitAsync(Patience);
        Assert.Equal(1, proxy.Counters.Snapshot().Single(kv => kv.Key == "connections.heldByPartition").Value);
    }

    [Fact]
    public async Task Reset_MidFrame_DeliversPartOfTheNextChunkThenResetsBothSides()
    {
        await using var pair = await Pair.StartAsync(new FaultProxyOptions { Time = TimeProvider.System, MidFrameWaitMax = TimeSpan.FromSeconds(30) });

        Assert.Equal(1, pair.Proxy.Reset(midFrame: true));
        await pair.Server.SendAsync(Bytes(1000, 11));

        var (received, reset) = await ReadUntilEndAsync(pair.Client);
        Assert.InRange(received, 1, 999);
        Assert.True(reset);
        await AssertEndsAsync(pair.Server);
        Assert.Equal(1, pair.Proxy.Counters.Resets);
        Assert.Equal(1, pair.Proxy.Counters.ResetsMidFrame);
    }

    [Fact]
    public async Task Reset_WithNoChunkToCut_ResetsBetweenChunksAfterTheWait()
    {
        var time = new FakeTimeProvider();
        await using var pair = await Pair.StartAsync(new FaultProxyOptions { Time = time, MidFrameWaitMax = TimeSpan.FromMilliseconds(100) });

        pair.Proxy.Reset(midFrame: true);
        time.Advance(TimeSpan.FromMilliseconds(100));

        await AssertEndsAsync(pair.Client);
        Assert.Equal(1, pair.Proxy.Counters.Resets);
        Assert.Equal(0, pair.Proxy.Counters.ResetsMidFrame);
    }

    [Fact]
    public async Task HalfOpen_DeliversNothingAndPassesNoFinWhenTheOtherSideCloses()
    {
        await using var pair = await Pair.StartAsync(new FaultProxyOptions { Time = TimeProvider.System });

        Assert.Equal(1, pair.Proxy.HalfOpen());
        await pair.Client.SendAsync(Bytes(100, 12));
        pair.Server.Close();
        var clientRead = pair.Client.ReceiveAsync(new byte[16]);
        await Task.Delay(Quiet * 2, TimeProvider.System);

        Assert.False(clientRead.IsCompleted);
        Assert.Equal(1, pair.Proxy.Counters.HalfOpens);
        Assert.Equal(100, pair.Proxy.Counters.HalfOpenBytesDropped);
        Assert.Equal(1, pair.Proxy.Counters.BytesUpstream);
    }

    [Fact]
    public async Task Split_AtProbabilityOne_DeliversAChunkInSeveralPieces()
    {
        var split = FaultProxyOptions.CleanPath with { SplitProbability = 1 };
        await using var pair = await Pair.StartAsync(new FaultProxyOptions { Time = TimeProvider.System, Downstream = split, SplitGap = TimeSpan.FromMilliseconds(300) });

        await pair.Server.SendAsync(Bytes(1000, 13));
        var buffer = new byte[2000];
        var first = await pair.Client.ReceiveAsync(buffer).WaitAsync(Patience);
        Assert.InRange(first, 1, 999);
        Assert.Equal(Bytes(1000, 13).Skip(first), await ReceiveExactlyAsync(pair.Client, 1000 - first));
        Assert.Equal(1, pair.Proxy.Counters.ChunksSplit);
        Assert.InRange(pair.Proxy.Counters.Snapshot().Single(kv => kv.Key == "split.pieces").Value, 2, 4);
    }

    [Fact]
    public async Task Bandwidth_Cap_HoldsTheNextChunkUntilTheBudgetAllowsIt()
    {
        var time = new FakeTimeProvider();
        var capped = FaultProxyOptions.CleanPath with { BandwidthBytesPerSecond = 10_000 };
        await using var pair = await Pair.StartAsync(new FaultProxyOptions { Time = time });
        pair.Proxy.SetPath(ProxyDirection.Upstream, capped);

        await pair.Client.SendAsync(Bytes(2000, 14));
        Assert.Equal(Bytes(2000, 14), await ReceiveExactlyAsync(pair.Server, 2000));
        await pair.Client.SendAsync(Bytes(10, 15));
        var next = ReceiveExactlyAsync(pair.Server, 10);
        await TestServer.WaitUntilAsync(() => pair.Proxy.Counters.BandwidthWaits == 1);
        await Task.Delay(Quiet, TimeProvider.System);
        Assert.False(next.IsCompleted);

        time.Advance(TimeSpan.FromMilliseconds(200));
        Assert.Equal(Bytes(10, 15), await next);
        Assert.Equal(1, pair.Proxy.Counters.BandwidthWaits);
    }

    [Fact]
    public async Task Connect_WhenTheServerIsDown_ResetsTheClientAndCountsIt()
    {
        IPEndPoint dead;
        using (var listener = Listen())
        {
            dead = (IPEndPoint)listener.LocalEndPoint!;
        }

        await using var proxy = FaultProxy.Start("client-1", dead, new FaultProxyOptions { Time = TimeProvider.System });
        using var client = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        try
        {
            await client.ConnectAsync(proxy.EndPoint);
            await AssertEndsAsync(client);
        }
        catch (SocketException e) when (e.SocketErrorCode == SocketError.ConnectionReset)
        {
            // The reset can reach the client while its connect completes.
        }

        Assert.Equal(1, proxy.Counters.UpstreamRefused);
    }

    [Fact]
    public async Task Network_NamesMeshLinksAndSumsCounters()
    {
        using var listener = Listen();
        var upstream = (IPEndPoint)listener.LocalEndPoint!;
        await using var network = new ProxyNetwork(new FaultProxyOptions { Time = TimeProvider.System, Seed = 5 });
        var ab = network.Add(ProxyNetwork.MeshLinkName("a", "b"), upstream);
        var ba = network.Add(ProxyNetwork.MeshLinkName("b", "a"), upstream);
        network.Add("client-1", upstream);

        Assert.Equal([ab, ba], network.MeshLinksBetween("b", "a").OrderBy(p => p.Name, StringComparer.Ordinal));
        ab.Partition();
        ba.Clog(TimeSpan.FromSeconds(1));
        network.Heal();

        var totals = network.Totals();
        Assert.Equal(1, totals.PartitionWindows);
        Assert.Equal(1, totals.ClogWindows);
        Assert.Equal(3, totals.Heals);
        Assert.False(ab.IsPartitioned);
        Assert.Throws<ArgumentException>(() => network.Add("client-1", upstream));
        Assert.Contains("client-1", Assert.Throws<ArgumentException>(() => network["client-9"]).Message, StringComparison.Ordinal);
    }

    [Fact]
    public void Start_OffLoopback_IsRefused()
    {
        Assert.Throws<ArgumentException>(() => FaultProxy.Start("x", new IPEndPoint(IPAddress.Parse("10.1.2.3"), 80), new FaultProxyOptions { Time = TimeProvider.System }));
    }

    private static byte[] Bytes(int count, int seed) => [.. Enumerable.Range(0, count).Select(i => (byte)((i * 31) + seed))];

    private static Socket Listen()
    {
        var listener = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        listener.Bind(new IPEndPoint(IPAddress.Loopback, 0));
        listener.Listen(16);
        return listener;
    }

    private static async Task<byte[]> ReceiveExactlyAsync(Socket socket, int count)
    {
        var buffer = new byte[count];
        var read = 0;
        while (read < count)
        {
            var n = await socket.ReceiveAsync(buffer.AsMemory(read)).AsTask().WaitAsync(Patience);
            Assert.NotEqual(0, n);
            read += n;
        }

        return buffer;
    }

    /// <summary>Reads until the stream ends; returns the bytes read and whether it ended with a reset.</summary>
    private static async Task<(int Received, bool Reset)> ReadUntilEndAsync(Socket socket)
    {
        var buffer = new byte[4096];
        var total = 0;
        try
        {
            while (true)
            {
                var n = await socket.ReceiveAsync(buffer).WaitAsync(Patience);
                if (n == 0)
                {
                    return (total, false);
                }

                total += n;
            }
        }
        catch (SocketException e) when (e.SocketErrorCode == SocketError.ConnectionReset)
        {
            return (total, true);
        }
    }

    private static async Task AssertEndsAsync(Socket socket)
    {
        var (_, reset) = await ReadUntilEndAsync(socket);
        Assert.True(reset, "the connection ended with a FIN, not a reset");
    }

    /// <summary>A client socket, the proxy, and the server's accepted socket.</summary>
    private sealed class Pair : IAsyncDisposable
    {
        private readonly Socket _listener;

        private Pair(Socket listener, FaultProxy proxy, Socket client, Socket server)
        {
            _listener = listener;
            Proxy = proxy;
            Client = client;
            Server = server;
        }

        public FaultProxy Proxy { get; }

        public Socket Client { get; }

        public Socket Server { get; }

        public static async Task<Pair> StartAsync(FaultProxyOptions options)
        {
            var listener = Listen();
            var proxy = FaultProxy.Start("client-1", (IPEndPoint)listener.LocalEndPoint!, options);
            var client = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp) { NoDelay = true };
            await client.ConnectAsync(proxy.EndPoint).WaitAsync(Patience);
            var server = await listener.AcceptAsync().WaitAsync(Patience);

            // One byte through proves the relay runs (its connection is registered), so a verb reaches it.
            await client.SendAsync(new byte[] { 0xFF });
            await ReceiveExactlyAsync(server, 1);
            return new Pair(listener, proxy, client, server);
        }

        public async ValueTask DisposeAsync()
        {
            Client.Dispose();
            Server.Dispose();
            await Proxy.DisposeAsync();
            _listener.Dispose();
        }
    }
}
