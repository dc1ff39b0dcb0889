using System.Collections.Concurrent;
using System.Text;
using PlayHouse.Core.Codec;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;
using PlayHouse.Sim.Tcp;

namespace PlayHouse.Transport.Tcp.Tests;

public sealed class SessionProtocolTests
{
    [Fact]
    public async Task EchoRequest_AfterAuthentication_RepliesWithTheSamePayloadAndSequence()
    {
        await using var server = TestServer.Start();
        using var client = await server.ConnectAuthenticatedAsync(accountId: 7);

        var payload = Encoding.UTF8.GetBytes("hello over loopback");
        var reply = await client.RequestAsync(EchoMsgIds.Echo, 1, payload).WaitAsync(TestServer.Patience);

        Assert.True(reply.IsSuccess);
        Assert.Equal(EchoMsgIds.EchoReply, reply.MsgId);
        Assert.Equal(payload, reply.Payload);
        Assert.Equal(2, reply.MsgSeq);
        Assert.Equal(1, server.Server.SessionCount);
    }

    [Fact]
    public async Task Heartbeat_BeforeAndAfterAuthentication_IsEchoedAndKeepsTheSessionOpen()
    {
        await using var server = TestServer.Start();
        using var client = await server.ConnectAsync();

        // B16: PlayHouse disconnected a heartbeat that came before authentication.
        Assert.True(client.SendHeartbeat());
        await Eventually.True(() => client.Statistics.HeartbeatsReceived == 1, TestServer.Patience);
        var auth = await client.AuthenticateAsync(1, TestServer.Account(3)).WaitAsync(TestServer.Patience);
        Assert.True(client.SendHeartbeat());
        await Eventually.True(() => client.Statistics.HeartbeatsReceived == 2, TestServer.Patience);

        Assert.True(auth.IsSuccess);
        Assert.True(client.IsConnected);
        Assert.Equal(0, server.Server.Counters.SessionsClosedBeforeAuthentication);
    }

    [Fact]
    public async Task SendPush_OneWaySend_IsAnsweredByAPushWithSequenceZero()
    {
        await using var server = TestServer.Start();
        using var client = await server.ConnectAuthenticatedAsync(accountId: 11);
        var pushes = new ConcurrentQueue<(string MsgId, ushort Seq, long Stage, byte[] Payload)>();
        var received = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        client.PushReceived = (TcpPlayClient c, in ServerFrame push) =>
        {
            pushes.Enqueue((push.MsgId, push.MsgSeq, push.StageId, push.Payload.Span.ToArray()));
            received.TrySetResult();
        };

        Assert.True(client.Send(EchoMsgIds.SendPush, 1, [1, 2, 3]));
        await received.Task.WaitAsync(TestServer.Patience);

        var push = Assert.Single(pushes);
        Assert.Equal((EchoMsgIds.Push, (ushort)0, 1L), (push.MsgId, push.Seq, push.Stage));
        Assert.Equal(new byte[] { 1, 2, 3 }, push.Payload);
    }

    [Fact]
    public async Task Broadcast_ReachesEveryActorOfTheStageInSenderOrder()
    {
        await using var server = TestServer.Start();
        using var a = await server.ConnectAuthenticatedAsync(accountId: 1, stageId: 5);
        using var b = await server.ConnectAuthenticatedAsync(accountId: 2, stageId: 5);
        var seenByB = new ConcurrentQueue<byte>();
        var allSeen = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        b.PushReceived = (TcpPlayClient c, in ServerFrame push) =>
        {
            seenByB.Enqueue(push.Payload.Span[0]);
            if (seenByB.Count == 50)
            {
                allSeen.TrySetResult();
            }
        };

        for (var i = 0; i < 50; i++)
        {
            Assert.True(a.Send(EchoMsgIds.Broadcast, 5, [(byte)i]));
        }

        await allSeen.Task.WaitAsync(TestServer.Patience);
        Assert.Equal(Enumerable.Range(0, 50).Select(i => (byte)i), seenByB);
    }

    [Theory]
    [InlineData(0)]
    [InlineData(100_000)]
    [InlineData(1_500_000)]
    public async Task Echo_PayloadLargerThanTheReceiveBuffer_ComesBackIntact(int payloadBytes)
    {
        await using var server = TestServer.Start();
        using var client = await server.ConnectAuthenticatedAsync(accountId: 9);
        var payload = new byte[payloadBytes];
        for (var i = 0; i < payload.Length; i++)
        {
            payload[i] = (byte)(i * 31);
        }

        var reply = await client.RequestAsync(EchoMsgIds.Echo, 1, payload).WaitAsync(TestServer.Patience);

        Assert.True(reply.IsSuccess);
        Assert.Equal(payload, reply.Payload);
    }

    [Fact]
    public async Task ManyClients_WithRequestsInFlight_EachGetsExactlyItsOwnRepliesInOrder()
    {
        const int Clients = 16;
        const int Requests = 200;
        await using var server = TestServer.Start();
        var clients = new List<TcpPlayClient>();
        for (var i = 0; i < Clients; i++)
        {
            clients.Add(await server.ConnectAuthenticatedAsync(accountId: 100 + i, stageId: 1 + (i % 4)));
        }

        var runs = clients.Select(async (client, index) =>
        {
            var pending = new List<Task<TcpReply>>();
            for (var r = 0; r < Requests; r++)
            {
                pending.Add(client.RequestAsync(EchoMsgIds.Echo, 1 + (index % 4), BitConverter.GetBytes((index * 10_000) + r)));
            }

            var replies = await Task.WhenAll(pending).WaitAsync(TestServer.Patience);
            for (var r = 0; r < Requests; r++)
            {
                Assert.True(replies[r].IsSuccess);
                Assert.Equal((index * 10_000) + r, BitConverter.ToInt32(replies[r].Payload));
            }
        });
        await Task.WhenAll(runs);

        Assert.All(clients, c => Assert.Equal(Requests + 1, c.Statistics.Replies));
        Assert.All(clients, c => Assert.Equal(0, c.Statistics.LateOrUnknownReplies));
        foreach (var client in clients)
        {
            client.Dispose();
        }
    }

    [Fact]
    public async Task FirstMessageNotAuthentication_ClosesTheSessionWithALoggedReasonAndCounters()
    {
        await using var server = TestServer.Start();
        using var client = await server.ConnectAsync();

        var reply = await client.RequestAsync(EchoMsgIds.Echo, 1, [1]).WaitAsync(TestServer.Patience);
        var closed = await server.NextCloseAsync();

        Assert.True(reply.Disconnected);
        Assert.Equal(SessionCloseReason.ClosedByServer, closed.Reason);
        Assert.Contains("expected 'AuthenticateRequest'", closed.Detail, StringComparison.Ordinal);
        Assert.Equal(1, server.Server.Counters.SessionsClosedBeforeAuthentication);
        Assert.Equal(1, server.Counters.Closed(SessionCloseReason.ClosedByServer));
        Assert.True(server.Logger.Contains("ClosedByServer"));
    }

    [Fact]
    public async Task AuthenticateIntoUnknownStage_RepliesStageNotFoundAndKeepsTheSession()
    {
        await using var server = TestServer.Start(serverOptions: new ServerOptions { DefaultStageType = null });
        using (var created = await server.Server.CreateStage(EchoMsgIds.StageType, 1, "Create", Payload.Empty).WaitAsync(TestServer.Patience))
        {
            Assert.True(created.IsSuccess);
        }

        using var client = await server.ConnectAsync();
        var unknown = await client.AuthenticateAsync(999, TestServer.Account(4)).WaitAsync(TestServer.Patience);
        var known = await client.AuthenticateAsync(1, TestServer.Account(4)).WaitAsync(TestServer.Patience);

        Assert.Equal(ErrorCodes.StageNotFound, unknown.ErrorCode);
        Assert.Equal(1, server.Counters.ErrorReplies(ErrorCodes.StageNotFound));
        Assert.True(known.IsSuccess);
        Assert.True(client.IsConnected);
    }

    [Fact]
    public async Task MessageForAStageTheActorIsNotIn_RepliesNotInStageAndIsCounted()
    {
        await using var server = TestServer.Start();
        using var client = await server.ConnectAuthenticatedAsync(accountId: 21, stageId: 1);

        var reply = await client.RequestAsync(EchoMsgIds.Echo, 2, [1]).WaitAsync(TestServer.Patience);

        Assert.Equal(ErrorCodes.NotInStage, reply.ErrorCode);
        Assert.Equal(1, server.Counters.ErrorReplies(ErrorCodes.NotInStage));
    }

    [Fact]
    public async Task Draining_RefusesRequestsWithServerStoppingButStillEchoesHeartbeats()
    {
        await using var server = TestServer.Start();
        using var client = await server.ConnectAuthenticatedAsync(accountId: 5);

        server.Listener.BeginDrain();
        var refused = await client.RequestAsync(EchoMsgIds.Echo, 1, [1]).WaitAsync(TestServer.Patience);
        Assert.True(client.Send(EchoMsgIds.SendPush, 1, [2]));
        Assert.True(client.SendHeartbeat());
        await Eventually.True(() => client.Statistics.HeartbeatsReceived == 1, TestServer.Patience);

        Assert.Equal(ErrorCodes.ServerStopping, refused.ErrorCode);
        Assert.Equal(2, server.Counters.RefusedWhileStopping);
        Assert.False(server.Listener.IsAccepting);
        Assert.Equal(0, client.Statistics.Pushes);
    }

    [Fact]
    public async Task ConnectionsBeyondTheLimit_AreClosedAtOnceAndCounted()
    {
        await using var server = TestServer.Start(new TcpTransportOptions { MaxConnections = 2 });
        using var a = await server.ConnectAuthenticatedAsync(accountId: 1);
        using var b = await server.ConnectAuthenticatedAsync(accountId: 2);

        // The refused connection is reset at once: the connect itself may already see the reset.
        try
        {
            using var third = await RawClient.ConnectAsync(server.EndPoint);
            await third.WaitClosedAsync();
        }
        catch (System.Net.Sockets.SocketException)
        {
        }

        await Eventually.True(() => server.Counters.ConnectionsRefusedAtLimit == 1, TestServer.Patience);
        var stillServed = await a.RequestAsync(EchoMsgIds.Echo, 1, [9]).WaitAsync(TestServer.Patience);

        Assert.Equal(1, server.Counters.ConnectionsRefusedAtLimit);
        Assert.Equal(2, server.Listener.SessionCount);
        Assert.True(stillServed.IsSuccess);
    }

    [Fact]
    public async Task SessionIds_AreUniqueAcrossListenersOfOneServer()
    {
        // B14: PlayHouse numbered sessions per transport, so two transports both had a session 1.
        await using var server = TestServer.Start();
        using var second = new TcpClientListener(server.Server);
        var secondEndPoint = second.Start(new System.Net.IPEndPoint(System.Net.IPAddress.Loopback, 0));
        using var a = await server.ConnectAuthenticatedAsync(accountId: 1);
        using var b = await TcpPlayClient.ConnectAsync(secondEndPoint, new TcpPlayClientOptions { RequestTimeout = TestServer.Patience });
        var auth = await b.AuthenticateAsync(1, TestServer.Account(2)).WaitAsync(TestServer.Patience);

        var replyA = await a.RequestAsync(EchoMsgIds.Echo, 1, [1]).WaitAsync(TestServer.Patience);
        var replyB = await b.RequestAsync(EchoMsgIds.Echo, 1, [2]).WaitAsync(TestServer.Patience);

        Assert.True(auth.IsSuccess);
        Assert.Equal(new byte[] { 1 }, replyA.Payload);
        Assert.Equal(new byte[] { 2 }, replyB.Payload);
        Assert.NotEqual(server.Listener.Sessions.Single().SessionId, second.Sessions.Single().SessionId);
        b.Dispose();
        second.Dispose();
        await second.WhenAllSessionsFinished().WaitAsync(TestServer.Patience);
    }
}
