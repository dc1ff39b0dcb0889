using PlayHouse.Core.Runtime;
using PlayHouse.Core.Seams;
using PlayHouse.Sim.Tcp;

namespace PlayHouse.Transport.Tcp.Tests;

/// <summary>Mutated frames sent to a running server over real sockets, and many idle sessions (B5).</summary>
public sealed class LoopbackFuzzTests
{
    [Fact]
    public async Task MutatedFramesOnManyConnections_NeverDisturbAGoodClient()
    {
        const int Connections = 60;
        await using var server = TestServer.Start();
        using var good = await server.ConnectAuthenticatedAsync(accountId: 1);
        var random = new Xoshiro256StarStar(20261122);
        var goodReplies = 0;

        for (var i = 0; i < Connections; i++)
        {
            using var fuzzer = await RawClient.ConnectAsync(server.EndPoint);
            var frames = new List<byte>();
            frames.AddRange(RawFrames.Client(EchoMsgIds.Authenticate, 1, 1 + random.NextInt(3), RawFrames.Account(100 + i)));
            for (var f = 0; f < 1 + random.NextInt(4); f++)
            {
                var payload = new byte[random.NextInt(200)];
                frames.AddRange(RawFrames.Client(random.NextBool(0.5) ? EchoMsgIds.Echo : EchoMsgIds.SendPush, (ushort)random.NextInt(3), 1, payload));
            }

            var bytes = frames.ToArray();
            for (var m = 0; m < 1 + random.NextInt(3); m++)
            {
                bytes[random.NextInt(bytes.Length)] = (byte)random.NextInt(256);
            }

            await fuzzer.SendAsync(bytes[..(1 + random.NextInt(bytes.Length))]);
            if (random.NextBool(0.5))
            {
                fuzzer.Reset();
            }

            var reply = await good.RequestAsync(EchoMsgIds.Echo, 1, BitConverter.GetBytes(i)).WaitAsync(TestServer.Patience);
            Assert.True(reply.IsSuccess);
            Assert.Equal(i, BitConverter.ToInt32(reply.Payload));
            goodReplies++;
        }

        // A good reply proves the good session works, not that the accept loop has reached every fuzzer yet: a
        // fuzzer that sent and reset at once may still wait in the backlog, so the wait covers both counts.
        await Eventually.True(
            () => server.Counters.ConnectionsAccepted == Connections + 1 && server.Listener.SessionCount == 1,
            TestServer.Patience,
            () => $"{server.Counters.ConnectionsAccepted} accepted, {server.Counters.AcceptErrors} accept errors, {server.Listener.SessionCount} sessions open");

        Assert.Equal(Connections, goodReplies);
        Assert.Equal(Connections + 1, server.Counters.ConnectionsAccepted);
        Assert.Equal(0, server.Counters.CallbackFaults);
        Assert.True(good.IsConnected);
    }

    [Fact]
    public async Task IdleSessions_HoldNoThreadAndNoQueuedWork()
    {
        // B5: PlayHouse kept three resident tasks per session. Here an idle session is one receive registered with
        // the OS: threads do not grow with sessions, and nothing waits in the thread pool's queue.
        const int Sessions = 200;
        await using var server = TestServer.Start();
        var threadsBefore = ThreadPool.ThreadCount;
        var clients = new List<RawClient>();
        for (var i = 0; i < Sessions; i++)
        {
            var raw = await RawClient.ConnectAsync(server.EndPoint);
            await raw.SendAsync(RawFrames.Client(EchoMsgIds.Authenticate, 1, 1 + (i % 8), RawFrames.Account(1 + i)));
            Assert.Equal(ErrorCodes.Success, (await raw.ReadFrameAsync()).ErrorCode);
            clients.Add(raw);
        }

        await Eventually.True(() => ThreadPool.PendingWorkItemCount == 0, TestServer.Patience);
        var outstanding = server.Pool.GetStatistics().Outstanding;

        Assert.Equal(Sessions, server.Listener.SessionCount);
        Assert.InRange(ThreadPool.ThreadCount - threadsBefore, int.MinValue, 16);

        // Each idle session holds its receive buffer and at most one spare send buffer; nothing else is rented.
        Assert.InRange(outstanding, Sessions, 2 * Sessions);
        foreach (var raw in clients)
        {
            raw.Dispose();
        }
    }
}
