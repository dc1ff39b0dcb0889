using System.Collections.Concurrent;
using PlayHouse.Core.Runtime;
using PlayHouse.Core.Seams;
using PlayHouse.Sim.Tcp;

namespace PlayHouse.Transport.Tcp.Tests;

/// <summary>
/// Over real sockets and the thread pool: the thread that receives a session's requests runs its idle stage's turn
/// itself, and the replies a turn writes to a session leave in one send when the turn ends, on that thread, with no
/// work item for the stage or the send in between. One turn at a time per stage still holds when many sessions of
/// one stage receive at once.
/// </summary>
public sealed class TurnOnReceiveTests
{
    private const int Pipelined = 8;

    [Fact]
    public async Task PipelinedRequests_AreAnsweredByTheReceivingThread_InOneSend_WithNoWorkItem()
    {
        var (replies, costs) = await EchoPipelinedCountingAsync(serverOptions: null);

        Assert.Equal(Enumerable.Range(1, Pipelined).Select(i => (ushort)(100 + i)), replies.Select(r => r.MsgSeq));
        Assert.Equal((0, 0, 1L), costs);
    }

    [Fact]
    public async Task PipelinedRequests_WithTurnsOnTheReceivingThreadOff_RunInAScheduledTurn_AndStillLeaveInOneSend()
    {
        var (replies, costs) = await EchoPipelinedCountingAsync(
            new ServerOptions { DefaultStageType = EchoMsgIds.StageType, RequestTimeout = TimeSpan.FromSeconds(10), RunClientTurnsOnReceiveThread = false });

        Assert.Equal(Enumerable.Range(1, Pipelined).Select(i => (ushort)(100 + i)), replies.Select(r => r.MsgSeq));
        Assert.Equal((1, 0, 1L), costs);
    }

    [Fact]
    public async Task ManySessionsOfOneStage_ReceivingAtOnce_NeverRunTwoTurnsOfItTogether_AndKeepEachSendersOrder()
    {
        const int Clients = 8;
        const int Requests = 300;
        var executor = new CountingExecutor();
        await using var server = TestServer.Start(executor: executor);
        var clients = new List<TcpPlayClient>();
        for (var i = 0; i < Clients; i++)
        {
            clients.Add(await server.ConnectAuthenticatedAsync(accountId: 200 + i, stageId: 1));
        }

        var scheduledBefore = executor.Count("StageHost");
        var runs = clients.Select(async (client, index) =>
        {
            var pending = new List<Task<TcpReply>>();
            for (var r = 0; r < Requests; r++)
            {
                pending.Add(client.RequestAsync(EchoMsgIds.Echo, 1, BitConverter.GetBytes((index * 10_000) + r)));
            }

            var replies = await Task.WhenAll(pending).WaitAsync(TestServer.Patience);
            return replies.Select(reply => reply.IsSuccess ? BitConverter.ToInt32(reply.Payload) : -1).ToArray();
        });
        var all = await Task.WhenAll(runs);

        // A second turn of the stage started while one ran would throw in the receive callback, which counts a fault
        // and closes that session.
        Assert.Equal(0, server.Counters.CallbackFaults);
        Assert.All(clients, c => Assert.True(c.IsConnected));
        for (var index = 0; index < Clients; index++)
        {
            Assert.Equal(Enumerable.Range(index * 10_000, Requests), all[index]);
        }

        // Most receives found the stage busy or ran it themselves; fewer turns were scheduled than requests were sent.
        Assert.InRange(executor.Count("StageHost") - scheduledBefore, 0, (Clients * Requests) - 1);
        foreach (var client in clients)
        {
            client.Dispose();
        }
    }

    /// <summary>
    /// Echoes <see cref="Pipelined"/> requests sent in one write, and counts what answering them cost the server: stage
    /// work items, send work items and send system calls.
    /// </summary>
    private static async Task<(List<RawServerFrame> Replies, (int StageItems, int FlushItems, long SendCalls) Costs)> EchoPipelinedCountingAsync(ServerOptions? serverOptions)
    {
        var executor = new CountingExecutor();
        await using var server = TestServer.Start(serverOptions: serverOptions, executor: executor);
        using var client = await AuthenticatedRawClientAsync(server);
        var before = (Stages: executor.Count("StageHost"), Flushes: executor.Count("SocketSessionConnection"), SendCalls: server.Counters.SendCalls);

        var replies = await EchoPipelinedAsync(client);
        await SendsSettledAsync(server, before.SendCalls);

        var costs = (executor.Count("StageHost") - before.Stages, executor.Count("SocketSessionConnection") - before.Flushes, server.Counters.SendCalls - before.SendCalls);
        return (replies, costs);
    }

    private static async Task<RawClient> AuthenticatedRawClientAsync(TestServer server)
    {
        var client = await RawClient.ConnectAsync(server.EndPoint);
        await client.SendAsync(RawFrames.Client(EchoMsgIds.Authenticate, 1, 1, RawFrames.Account(42)));
        var reply = await client.ReadFrameAsync().WaitAsync(TestServer.Patience);
        Assert.Equal(0, reply.ErrorCode);

        // The authentication's own sends (its reply, the join's pushes) are all out before the measured exchange.
        await TestServer.WaitUntilAsync(() => server.Listener.Sessions.All(s => s.QueuedBytes == 0));
        return client;
    }

    /// <summary>Writes <see cref="Pipelined"/> echo requests in one write, so they arrive in one receive, and reads the replies.</summary>
    private static async Task<List<RawServerFrame>> EchoPipelinedAsync(RawClient client)
    {
        var bytes = new List<byte>();
        for (var i = 1; i <= Pipelined; i++)
        {
            bytes.AddRange(RawFrames.Client(EchoMsgIds.Echo, (ushort)(100 + i), 1, [(byte)i]));
        }

        await client.SendAsync([.. bytes]);
        var replies = new List<RawServerFrame>();
        for (var i = 0; i < Pipelined; i++)
        {
            replies.Add(await client.ReadFrameAsync().WaitAsync(TestServer.Patience));
        }

        return replies;
    }

    /// <summary>
    /// The send counter moves just after the send's system call returns, which may be after the client has read the
    /// bytes: waits for it to move, then a moment for any later send of the same exchange to be counted too.
    /// </summary>
    private static async Task SendsSettledAsync(TestServer server, long sendCallsBefore)
    {
        await TestServer.WaitUntilAsync(() => server.Counters.SendCalls > sendCallsBefore);
        await Task.Delay(50);
    }

    /// <summary>The thread pool, counting the work items scheduled on it by type name.</summary>
    private sealed class CountingExecutor : IExecutor
    {
        private readonly ConcurrentDictionary<string, int> _counts = new();

        public bool CanRunInline => ThreadPoolExecutor.Instance.CanRunInline;

        public int Count(string typeName) => _counts.TryGetValue(typeName, out var count) ? count : 0;

        public void Schedule(IThreadPoolWorkItem workItem)
        {
            _counts.AddOrUpdate(workItem.GetType().Name, 1, (_, count) => count + 1);
            ThreadPoolExecutor.Instance.Schedule(workItem);
        }
    }
}
