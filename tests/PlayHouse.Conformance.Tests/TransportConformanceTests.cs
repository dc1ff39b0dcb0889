using Google.Protobuf;
using PlayHouse.Conformance.Proto;
using PlayHouse.Core.Codec;
using PlayHouse.Transport.Tcp;

namespace PlayHouse.Conformance.Tests;

/// <summary>
/// The same contract over every client transport the conformance server serves (plain TCP, TCP+TLS, ws:// and
/// wss://): authentication, echo, error codes, timeouts, heartbeats, disconnection, large and compressed payloads; and
/// the hostile-input table (garbage, oversized and split frames, a frame left unfinished, a reader that stops reading),
/// each with the same close reason and counter whatever the transport.
/// </summary>
public sealed class TransportConformanceTests
{
    private static long _nextStageId = 50_000;

    public static TheoryData<ClientKind> SecureAndWebSocketKinds => new() { ClientKind.Tls, ClientKind.WebSocket, ClientKind.SecureWebSocket };

    public static TheoryData<ClientKind> AllKinds => new() { ClientKind.Tcp, ClientKind.Tls, ClientKind.WebSocket, ClientKind.SecureWebSocket };

    [Theory]
    [MemberData(nameof(AllKinds))]
    public async Task AuthenticateThenEcho_OverEachTransport_RepliesAndRefusesBadTokens(ClientKind kind)
    {
        await using var server = await StartAsync();
        var stageId = await CreateStageAsync(server);
        await using var refused = await StreamPlayClient.ConnectAsync(server, kind);
        await using var client = await StreamPlayClient.ConnectAsync(server, kind);

        var bad = await refused.RequestAsync(nameof(AuthenticateRequest), stageId, Bytes(new AuthenticateRequest { UserId = "mallory", Token = "invalid" }));
        var auth = await client.RequestAsync(nameof(AuthenticateRequest), stageId, Bytes(new AuthenticateRequest { UserId = "alice", Token = "valid" }));
        var echo = await client.RequestAsync(nameof(EchoRequest), stageId, Bytes(new EchoRequest { Content = $"over {kind}", Sequence = 3 }));
        var fail = await client.RequestAsync(nameof(FailRequest), stageId, Bytes(new FailRequest { ErrorCode = 1004, ErrorMessage = "Error 1004" }));

        Assert.Equal(ConformanceMsgIds.AuthenticationFailed, bad!.ErrorCode);
        Assert.True(auth!.IsSuccess, $"error {auth.ErrorCode}");
        Assert.Equal("alice", AuthenticateReply.Parser.ParseFrom(auth.Payload).ReceivedUserId);
        Assert.Equal($"over {kind}", EchoReply.Parser.ParseFrom(echo!.Payload).Content);
        Assert.Equal(3, EchoReply.Parser.ParseFrom(echo.Payload).Sequence);
        Assert.Equal(1004, FailReply.Parser.ParseFrom(fail!.Payload).ErrorCode);
        Assert.Equal(nameof(FailReply), fail.MsgId);
    }

    [Theory]
    [MemberData(nameof(SecureAndWebSocketKinds))]
    public async Task HeartbeatAndTimeout_OverEachTransport_HeartbeatIsEchoedAndASilentRequestLeavesTheSessionAnswering(ClientKind kind)
    {
        await using var server = await StartAsync();
        var stageId = await CreateStageAsync(server);
        await using var client = await StreamPlayClient.ConnectAsync(server, kind);

        await client.SendRawAsync(StreamPlayClient.Encode(WireProtocol.HeartbeatMsgId, 0, 0, []));
        var heartbeat = await client.NextPushAsync(TimeSpan.FromSeconds(10));
        await client.RequestAsync(nameof(AuthenticateRequest), stageId, Bytes(new AuthenticateRequest { UserId = "u", Token = "t" }));
        var silent = await client.RequestAsync(nameof(NoResponseRequest), stageId, Bytes(new NoResponseRequest { DelayMs = 5000 }), TimeSpan.FromMilliseconds(300));
        var echo = await client.RequestAsync(nameof(EchoRequest), stageId, Bytes(new EchoRequest { Content = "still here" }));

        Assert.Equal(WireProtocol.HeartbeatMsgId, heartbeat!.MsgId);
        Assert.Null(silent);
        Assert.Equal("still here", EchoReply.Parser.ParseFrom(echo!.Payload).Content);
    }

    [Theory]
    [MemberData(nameof(SecureAndWebSocketKinds))]
    public async Task LargePayload_OverEachTransport_ArrivesWholeInMessagesTheConnectorCanBuffer(ClientKind kind)
    {
        await using var server = await StartAsync();
        var stageId = await CreateStageAsync(server);
        await using var client = await AuthenticatedAsync(server, kind, stageId);

        var reply = await client.RequestAsync(nameof(LargePayloadRequest), stageId, Bytes(new LargePayloadRequest { SizeBytes = ConformanceMsgIds.LargePayloadBytes }));

        AssertPattern(BenchmarkReply.Parser.ParseFrom(reply!.Payload).Payload.Span);
        Assert.Equal(0, reply.OriginalSize);

        // PlayHouse's C# connector gathers each WebSocket message into a fixed 64 KiB ring before parsing.
        Assert.InRange(client.LargestMessageBytes, 0, server.Options.Transport.WebSocketMessageBytesMax);
    }

    [Theory]
    [MemberData(nameof(AllKinds))]
    public async Task CompressedReply_OverEachTransport_IsAnLz4PicklerPayloadTheConnectorUnpickles(ClientKind kind)
    {
        await using var server = await StartAsync(t => t with { CompressAboveBytes = 1024 });
        var stageId = await CreateStageAsync(server);
        await using var client = await AuthenticatedAsync(server, kind, stageId);

        var large = await client.RequestAsync(nameof(LargePayloadRequest), stageId, Bytes(new LargePayloadRequest { SizeBytes = ConformanceMsgIds.LargePayloadBytes }));
        var small = await client.RequestAsync(nameof(EchoRequest), stageId, Bytes(new EchoRequest { Content = "tiny" }));

        Assert.True(large!.OriginalSize > 0, "the large reply was sent uncompressed");
        Assert.Equal(large.OriginalSize, large.Payload.Length);
        AssertPattern(BenchmarkReply.Parser.ParseFrom(large.Payload).Payload.Span);
        Assert.Equal(0, small!.OriginalSize);
        Assert.Equal("tiny", EchoReply.Parser.ParseFrom(small.Payload).Content);
        Assert.Equal(1, CountersOf(server, kind).FramesCompressed);
    }

    [Fact]
    public async Task SessionsOfEveryTransport_ShareOneSessionTable_WithDistinctIds_AndBroadcastReachesAll()
    {
        await using var server = await StartAsync();
        var stageId = await CreateStageAsync(server);
        var kinds = new[] { ClientKind.Tcp, ClientKind.Tls, ClientKind.WebSocket, ClientKind.SecureWebSocket };
        var clients = new List<StreamPlayClient>();
        try
        {
            foreach (var kind in kinds)
            {
                clients.Add(await AuthenticatedAsync(server, kind, stageId));
            }

            await clients[0].SendRawAsync(StreamPlayClient.Encode(nameof(BroadcastRequest), 0, stageId, Bytes(new BroadcastRequest { Content = "everyone" })));
            var notifies = await Task.WhenAll(clients.Select(c => NextNotifyAsync(c)));
            var sessions = server.Sessions;

            Assert.Equal(4, sessions.Count);
            Assert.Equal(4, sessions.Select(s => s.SessionId).Distinct().Count());
            Assert.Equal([ClientTransportKind.Tcp, ClientTransportKind.Tls, ClientTransportKind.WebSocket, ClientTransportKind.WebSocket], sessions.Select(s => s.Transport).Order());
            Assert.All(notifies, n => Assert.Equal("everyone", BroadcastNotify.Parser.ParseFrom(n!.Payload).Data));
        }
        finally
        {
            foreach (var client in clients)
            {
                await client.DisposeAsync();
            }
        }
    }

    [Theory]
    [MemberData(nameof(SecureAndWebSocketKinds))]
    public async Task ClientDisconnect_OverEachTransport_ClosesTheSessionAsPeerClosed_AndReconnectWorks(ClientKind kind)
    {
        await using var server = await StartAsync();
        var stageId = await CreateStageAsync(server);
        var first = await AuthenticatedAsync(server, kind, stageId);

        await first.DisposeAsync();
        await WaitUntilAsync(() => server.Sessions.Count == 0);
        await using var second = await AuthenticatedAsync(server, kind, stageId);
        var echo = await second.RequestAsync(nameof(EchoRequest), stageId, Bytes(new EchoRequest { Content = "back" }));

        Assert.Equal(1, CountersOf(server, kind).Closed(SessionCloseReason.PeerClosed));
        Assert.Equal(0, CountersOf(server, kind).CallbackFaults);
        Assert.Equal("back", EchoReply.Parser.ParseFrom(echo!.Payload).Content);
    }

    [Theory]
    [MemberData(nameof(SecureAndWebSocketKinds))]
    public async Task RequestBeforeAuthentication_OverEachTransport_TheServerClosesTheSessionAndTheClientSeesIt(ClientKind kind)
    {
        await using var server = await StartAsync();
        var stageId = await CreateStageAsync(server);
        await using var client = await StreamPlayClient.ConnectAsync(server, kind);

        await client.SendRawAsync(StreamPlayClient.Encode(nameof(EchoRequest), 1, stageId, Bytes(new EchoRequest { Content = "too early" })));
        await client.Closed.WaitAsync(TimeSpan.FromSeconds(10));
        await WaitUntilAsync(() => server.Sessions.Count == 0);

        Assert.Equal(1, CountersOf(server, kind).Closed(SessionCloseReason.ClosedByServer));
        Assert.Equal(0, CountersOf(server, kind).CallbackFaults);
    }

    [Theory]
    [MemberData(nameof(SecureAndWebSocketKinds))]
    public async Task GarbageFrame_OverEachTransport_ClosesOnlyThatSessionAsMalformed(ClientKind kind)
    {
        await using var server = await StartAsync();
        var stageId = await CreateStageAsync(server);
        await using var bystander = await AuthenticatedAsync(server, kind, stageId);
        await using var hostile = await StreamPlayClient.ConnectAsync(server, kind);

        await hostile.SendRawAsync(new byte[] { 0xFF, 0xFF, 0xFF, 0xFF, 0x01, 0x02 });
        await hostile.Closed.WaitAsync(TimeSpan.FromSeconds(10));
        var echo = await bystander.RequestAsync(nameof(EchoRequest), stageId, Bytes(new EchoRequest { Content = "unaffected" }));

        Assert.Equal(1, CountersOf(server, kind).Malformed(FrameError.NegativeLength));
        Assert.Equal(1, CountersOf(server, kind).Closed(SessionCloseReason.MalformedFrame));
        Assert.Equal("unaffected", EchoReply.Parser.ParseFrom(echo!.Payload).Content);
    }

    [Theory]
    [MemberData(nameof(SecureAndWebSocketKinds))]
    public async Task OversizedFrame_OverEachTransport_IsRefusedFromItsLengthPrefix(ClientKind kind)
    {
        await using var server = await StartAsync();
        await using var hostile = await StreamPlayClient.ConnectAsync(server, kind);

        await hostile.SendRawAsync(StreamPlayClient.LengthPrefix(server.Options.Transport.MaxBodyBytes + 1));
        await hostile.Closed.WaitAsync(TimeSpan.FromSeconds(10));

        Assert.Equal(1, CountersOf(server, kind).Malformed(FrameError.LengthTooLarge));
        Assert.Equal(1, CountersOf(server, kind).Closed(SessionCloseReason.MalformedFrame));
    }

    [Theory]
    [MemberData(nameof(SecureAndWebSocketKinds))]
    public async Task SplitFrame_OverEachTransport_OneByteWritesStillDecodeToOneRequest(ClientKind kind)
    {
        await using var server = await StartAsync();
        var stageId = await CreateStageAsync(server);
        await using var client = await AuthenticatedAsync(server, kind, stageId);

        var echo = await client.RequestInPiecesAsync(nameof(EchoRequest), stageId, Bytes(new EchoRequest { Content = "in pieces", Sequence = 9 }), pieceBytes: 1);

        Assert.Equal("in pieces", EchoReply.Parser.ParseFrom(echo!.Payload).Content);
        Assert.Equal(0, CountersOf(server, kind).Closed(SessionCloseReason.MalformedFrame));
    }

    [Theory]
    [MemberData(nameof(SecureAndWebSocketKinds))]
    public async Task UnfinishedFrame_OverEachTransport_ClosesWithFrameTimeout(ClientKind kind)
    {
        await using var server = await StartAsync(t => t with { FrameTimeout = TimeSpan.FromMilliseconds(200), SweepInterval = TimeSpan.FromMilliseconds(50) });
        await using var hostile = await StreamPlayClient.ConnectAsync(server, kind);

        await hostile.SendRawAsync(StreamPlayClient.LengthPrefix(100));
        await hostile.Closed.WaitAsync(TimeSpan.FromSeconds(10));

        Assert.Equal(1, CountersOf(server, kind).Closed(SessionCloseReason.FrameTimeout));
    }

    [Theory]
    [MemberData(nameof(SecureAndWebSocketKinds))]
    public async Task ReaderThatStopsReading_OverEachTransport_IsRefusedAtTheCapThenClosedAsSlow(ClientKind kind)
    {
        await using var server = await StartAsync(t => t with
        {
            SendQueueBytesMax = 64 * 1024,
            SlowReaderTimeout = TimeSpan.FromMilliseconds(200),
            SweepInterval = TimeSpan.FromMilliseconds(50),
            SocketSendBufferBytes = 4096,
        });
        var stageId = await CreateStageAsync(server);
        await using var client = await AuthenticatedAsync(server, kind, stageId);
        var request = Bytes(new LargePayloadRequest { SizeBytes = ConformanceMsgIds.LargePayloadBytes });

        // A client that reads nothing while it keeps asking for 1 MiB replies: the kernel and Kestrel buffers between
        // the server's queue and it fill up, the write in flight stalls, and every later reply is refused at the cap.
        // Replies refused while a write is still draining are dropped without a stall, so the pressure must go on.
        client.PauseReading();
        var counters = CountersOf(server, kind);
        for (var sent = 1; sent <= 400 && counters.Closed(SessionCloseReason.SlowReader) == 0 && !client.Closed.IsCompleted; sent++)
        {
            try
            {
                await client.SendRawAsync(StreamPlayClient.Encode(nameof(LargePayloadRequest), (ushort)sent, stageId, request));
            }
            catch (Exception e) when (e is IOException or System.Net.WebSockets.WebSocketException or ObjectDisposedException)
            {
                // The server closed the session between the check and the send.
                break;
            }

            await Task.Delay(TimeSpan.FromMilliseconds(10), TimeProvider.System);
        }

        await WaitUntilAsync(
            () => counters.Closed(SessionCloseReason.SlowReader) == 1 || server.Sessions.Count == 0,
            () => $"sessions {string.Join(", ", server.Sessions.Select(x => $"{x} queued {x.QueuedBytes} refusals {x.SendRefusals}"))}; counters {string.Join(", ", counters.Snapshot())}");

        Assert.True(CountersOf(server, kind).SendQueueRefusals > 0);
        Assert.Equal(1, CountersOf(server, kind).Closed(SessionCloseReason.SlowReader));
    }

    [Theory]
    [MemberData(nameof(SecureAndWebSocketKinds))]
    public async Task ConnectionPastTheCap_OverEachTransport_IsRefusedAndCounted_WhileTheOpenSessionKeepsWorking(ClientKind kind)
    {
        await using var server = await StartAsync(t => t with { MaxConnections = 1 });
        var stageId = await CreateStageAsync(server);
        await using var admitted = await AuthenticatedAsync(server, kind, stageId);

        var refusedClosed = await ConnectsThenIsCutOffAsync(server, kind);
        var echo = await admitted.RequestAsync(nameof(EchoRequest), stageId, Bytes(new EchoRequest { Content = "still in" }));

        Assert.True(refusedClosed, "the connection past the cap was kept open");
        Assert.Equal(1, CountersOf(server, kind).ConnectionsRefusedAtLimit);
        Assert.Equal(1, CountersOf(server, kind).ConnectionsAccepted);
        Assert.Equal("still in", EchoReply.Parser.ParseFrom(echo!.Payload).Content);
    }

    [Theory]
    [InlineData(ClientKind.WebSocket)]
    [InlineData(ClientKind.SecureWebSocket)]
    public async Task TextMessage_OverWebSocket_ClosesTheSessionAsMalformed(ClientKind kind)
    {
        await using var server = await StartAsync();
        await using var hostile = await StreamPlayClient.ConnectAsync(server, kind);

        await hostile.SendTextAsync("{\"hello\":1}");
        await hostile.Closed.WaitAsync(TimeSpan.FromSeconds(10));

        Assert.Equal(1, server.WebSocketCounters!.WebSocketTextMessages);
        Assert.Equal(1, server.WebSocketCounters.Closed(SessionCloseReason.MalformedFrame));
    }

    [Fact]
    public async Task PlainBytesOnTheTlsPort_FailTheHandshake_AndMakeNoSession()
    {
        await using var server = await StartAsync();
        using var raw = new System.Net.Sockets.TcpClient();
        await raw.ConnectAsync(server.TcpTlsEndPoint!.Address, server.TcpTlsEndPoint.Port);
        var stream = raw.GetStream();

        await stream.WriteAsync(StreamPlayClient.Encode(nameof(EchoRequest), 1, 1, []));
        var cutOff = await ReadsToTheEndAsync(stream);
        await using var tls = await StreamPlayClient.ConnectAsync(server, ClientKind.Tls);
        await WaitUntilAsync(() => server.Sessions.Count == 1);

        Assert.True(cutOff, "the server kept the connection open");
        Assert.Equal(1, server.TlsCounters!.TlsHandshakeFailures);
        Assert.Equal(1, server.TlsCounters.ConnectionsAccepted);
    }

    /// <summary>
    /// True when a connection over <paramref name="kind"/> is cut off by the server within 10 s: a TLS connection past
    /// the cap is reset before its handshake ends, a WebSocket is aborted right after its upgrade.
    /// </summary>
    private static async Task<bool> ConnectsThenIsCutOffAsync(ConformanceServer server, ClientKind kind)
    {
        StreamPlayClient client;
        try
        {
            client = await StreamPlayClient.ConnectAsync(server, kind);
        }
        catch (Exception e) when (e is IOException or System.Net.Sockets.SocketException or System.Net.WebSockets.WebSocketException or System.Security.Authentication.AuthenticationException)
        {
            return true;
        }

        await using (client)
        {
            try
            {
                await client.Closed.WaitAsync(TimeSpan.FromSeconds(10));
                return true;
            }
            catch (TimeoutException)
            {
                return false;
            }
        }
    }

    /// <summary>True when the server ends the stream (EOF or reset) within 10 s, whatever it sent before.</summary>
    private static async Task<bool> ReadsToTheEndAsync(Stream stream)
    {
        var buffer = new byte[256];
        try
        {
            while (await stream.ReadAsync(buffer).AsTask().WaitAsync(TimeSpan.FromSeconds(10)) > 0)
            {
            }

            return true;
        }
        catch (IOException)
        {
            return true;
        }
        catch (TimeoutException)
        {
            return false;
        }
    }

    private static TcpTransportCounters CountersOf(ConformanceServer server, ClientKind kind) => kind switch
    {
        ClientKind.Tcp => server.TransportCounters,
        ClientKind.Tls => server.TlsCounters!,
        _ => server.WebSocketCounters!,
    };

    private static async Task<ConformanceServer> StartAsync(Func<TcpTransportOptions, TcpTransportOptions>? transport = null)
    {
        var defaults = new ConformanceServerOptions();
        var options = defaults with
        {
            TcpPort = 0,
            HttpPort = 0,
            TcpTlsPort = 0,
            HttpsPort = 0,
            Transport = transport is null ? defaults.Transport : transport(defaults.Transport),
        };
        return await ConformanceServer.StartAsync(options, TimeProvider.System);
    }

    private static async Task<long> CreateStageAsync(ConformanceServer server)
    {
        var stageId = Interlocked.Increment(ref _nextStageId);
        using var http = new HttpClient { BaseAddress = server.HttpAddress };
        using var response = await System.Net.Http.Json.HttpClientJsonExtensions.PostAsJsonAsync(http, "/api/stages", new { stageType = "TestStage", stageId });
        response.EnsureSuccessStatusCode();
        return stageId;
    }

    private static async Task<StreamPlayClient> AuthenticatedAsync(ConformanceServer server, ClientKind kind, long stageId)
    {
        var client = await StreamPlayClient.ConnectAsync(server, kind);
        var reply = await client.RequestAsync(nameof(AuthenticateRequest), stageId, Bytes(new AuthenticateRequest { UserId = $"user-{kind}", Token = "valid" }));
        Assert.True(reply is { IsSuccess: true }, $"authenticate over {kind} failed: {reply?.ErrorCode}");
        return client;
    }

    private static async Task<ReceivedFrame?> NextNotifyAsync(StreamPlayClient client)
    {
        while (await client.NextPushAsync(TimeSpan.FromSeconds(10)) is { } push)
        {
            if (push.MsgId == nameof(BroadcastNotify))
            {
                return push;
            }
        }

        return null;
    }

    private static void AssertPattern(ReadOnlySpan<byte> data)
    {
        Assert.Equal(ConformanceMsgIds.LargePayloadBytes, data.Length);
        for (var i = 0; i < data.Length; i++)
        {
            if (data[i] != (byte)(i % 256))
            {
                Assert.Fail($"byte {i} is {data[i]}, expected {(byte)(i % 256)}");
            }
        }
    }

    private static async Task WaitUntilAsync(Func<bool> condition, Func<string>? describe = null)
    {
        // Bounded: 1000 polls of 10 ms at most.
        for (var i = 0; i < 1000 && !condition(); i++)
        {
            await Task.Delay(TimeSpan.FromMilliseconds(10), TimeProvider.System);
        }

        Assert.True(condition(), describe?.Invoke());
    }

    private static byte[] Bytes(IMessage message) => message.ToByteArray();
}
