using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Google.Protobuf;
using PlayHouse.Conformance.Flawed;
using PlayHouse.Conformance.Proto;
using PlayHouse.Core.Codec;
using PlayHouse.Transport.Tcp;

namespace PlayHouse.Conformance.Tests;

/// <summary>
/// The contract PlayHouse's connector suites rely on, driven over loopback: the HTTP stage API, then a TCP client that
/// authenticates into the created stage and sends the suites' protobuf messages.
/// </summary>
public sealed class ConformanceServerTests : IAsyncLifetime
{
    private static long _nextStageId = 1000;

    private ConformanceServer _server = null!;
    private HttpClient _http = null!;

    public Task InitializeAsync() => StartAsync(ConformanceFlaws.None);

    public async Task DisposeAsync()
    {
        _http.Dispose();
        await _server.DisposeAsync();
    }

    [Fact]
    public async Task Health_ReportsHealthyAndThePlayServerId()
    {
        using var body = await GetJsonAsync("/api/health");

        Assert.Equal("healthy", body.RootElement.GetProperty("status").GetString());
        Assert.Equal("play-1", body.RootElement.GetProperty("serverId").GetString());
    }

    [Fact]
    public async Task CreateStage_NewId_SucceedsWithTheStageReply_ThenTheSameIdIsRefused()
    {
        var stageId = NextStageId();

        using var first = await PostJsonAsync("/api/stages", new { stageType = "TestStage", stageId });
        using var second = await PostJsonAsync("/api/stages", new { stageType = "TestStage", stageId });

        Assert.True(first.RootElement.GetProperty("success").GetBoolean());
        Assert.Equal(stageId, first.RootElement.GetProperty("stageId").GetInt64());
        Assert.Equal("TestStage:10", first.RootElement.GetProperty("replyPayloadId").GetString());
        Assert.False(second.RootElement.GetProperty("success").GetBoolean());
        Assert.True(_server.Server.HasStage(stageId));
    }

    [Fact]
    public async Task GetOrCreate_CreatesOnce_ThenReturnsTheExistingStage()
    {
        var stageId = NextStageId();

        using var created = await PostJsonAsync("/api/stages/get-or-create", new { stageType = "TestStage", stageId });
        using var existing = await PostJsonAsync("/api/stages/get-or-create", new { stageType = "TestStage", stageId });

        Assert.True(created.RootElement.GetProperty("success").GetBoolean());
        Assert.True(created.RootElement.GetProperty("isCreated").GetBoolean());
        Assert.True(existing.RootElement.GetProperty("success").GetBoolean());
        Assert.False(existing.RootElement.GetProperty("isCreated").GetBoolean());
    }

    [Fact]
    public async Task CreateStage_UnknownStageType_IsABadRequestAndCreatesNothing()
    {
        var stageId = NextStageId();

        using var response = await _http.PostAsJsonAsync("/api/stages", new { stageType = "NoSuchStage", stageId });

        Assert.Equal(HttpStatusCode.BadRequest, response.StatusCode);
        Assert.False(_server.Server.HasStage(stageId));
    }

    [Fact]
    public async Task Authenticate_ValidToken_RepliesWithAccountIdAndEchoedCredentials()
    {
        var stageId = await CreateStageAsync();
        using var client = await ConnectAsync();

        var reply = await client.AuthenticateAsync(stageId, Bytes(new AuthenticateRequest { UserId = "alice", Token = "valid-token" }));

        Assert.True(reply.IsSuccess, $"error {reply.ErrorCode}");
        Assert.Equal(nameof(AuthenticateReply), reply.MsgId);
        var body = AuthenticateReply.Parser.ParseFrom(reply.Payload);
        Assert.True(body.Success);
        Assert.True(long.Parse(body.AccountId, System.Globalization.CultureInfo.InvariantCulture) > 0);
        Assert.Equal("alice", body.ReceivedUserId);
        Assert.Equal("valid-token", body.ReceivedToken);
    }

    [Theory]
    [InlineData("alice", "invalid-token")]
    [InlineData("alice", "")]
    [InlineData("", "valid-token")]
    public async Task Authenticate_BadCredentials_FailsWithPlayHouseAuthenticationFailedCode(string userId, string token)
    {
        var stageId = await CreateStageAsync();
        using var client = await ConnectAsync();

        var reply = await client.AuthenticateAsync(stageId, Bytes(new AuthenticateRequest { UserId = userId, Token = token }));

        Assert.False(reply.IsSuccess);
        Assert.Equal(ConformanceMsgIds.AuthenticationFailed, reply.ErrorCode);
    }

    [Fact]
    public async Task Echo_ReturnsContentAndSequence()
    {
        var stageId = await CreateStageAsync();
        using var client = await AuthenticatedClientAsync(stageId);

        var reply = await client.RequestAsync(nameof(EchoRequest), stageId, Bytes(new EchoRequest { Content = "hello", Sequence = 7 }));

        Assert.True(reply.IsSuccess, $"error {reply.ErrorCode}");
        Assert.Equal(nameof(EchoReply), reply.MsgId);
        var body = EchoReply.Parser.ParseFrom(reply.Payload);
        Assert.Equal("hello", body.Content);
        Assert.Equal(7, body.Sequence);
        Assert.True(body.ProcessedAt > 0);
    }

    [Theory]
    [InlineData(1000, "Test Error")]
    [InlineData(1004, "Error 1004")]
    public async Task Fail_RepliesFailReplyWithTheRequestedCode(int errorCode, string message)
    {
        var stageId = await CreateStageAsync();
        using var client = await AuthenticatedClientAsync(stageId);

        var reply = await client.RequestAsync(nameof(FailRequest), stageId, Bytes(new FailRequest { ErrorCode = errorCode, ErrorMessage = message }));

        Assert.Equal(nameof(FailReply), reply.MsgId);
        var body = FailReply.Parser.ParseFrom(reply.Payload);
        Assert.Equal(errorCode, body.ErrorCode);
        Assert.Equal(message, body.Message);
    }

    [Fact]
    public async Task NoResponse_TimesOutOnTheClient_AndTheSessionStillAnswers()
    {
        var stageId = await CreateStageAsync();
        using var client = await AuthenticatedClientAsync(stageId, TimeSpan.FromMilliseconds(300));

        var silent = await client.RequestAsync(nameof(NoResponseRequest), stageId, Bytes(new NoResponseRequest { DelayMs = 5000 }));
        var echo = await client.RequestAsync(nameof(EchoRequest), stageId, Bytes(new EchoRequest { Content = "after", Sequence = 1 }));

        Assert.True(silent.TimedOut);
        Assert.True(client.IsConnected);
        Assert.True(echo.IsSuccess, $"error {echo.ErrorCode}");
        Assert.Equal("after", EchoReply.Parser.ParseFrom(echo.Payload).Content);
    }

    [Fact]
    public async Task NoResponse_UnderTheAnswersNoResponseFlaw_IsAnsweredWithTheStagesLatestEcho()
    {
        await DisposeAsync();
        await StartAsync(ConformanceFlaws.Parse("answers-no-response"));
        var stageId = await CreateStageAsync();
        using var client = await AuthenticatedClientAsync(stageId, TimeSpan.FromSeconds(5));

        var beforeAnyEcho = await client.RequestAsync(nameof(NoResponseRequest), stageId, Bytes(new NoResponseRequest()));
        var echo = await client.RequestAsync(nameof(EchoRequest), stageId, Bytes(new EchoRequest { Content = "kept", Sequence = 9 }));
        var afterTheEcho = await client.RequestAsync(nameof(NoResponseRequest), stageId, Bytes(new NoResponseRequest()));

        Assert.True(echo.IsSuccess, $"error {echo.ErrorCode}");
        Assert.True(beforeAnyEcho.IsSuccess, $"timed out {beforeAnyEcho.TimedOut}, error {beforeAnyEcho.ErrorCode}");
        Assert.Equal(nameof(EchoReply), beforeAnyEcho.MsgId);
        Assert.Equal(new EchoReply(), EchoReply.Parser.ParseFrom(beforeAnyEcho.Payload));
        Assert.True(afterTheEcho.IsSuccess, $"timed out {afterTheEcho.TimedOut}, error {afterTheEcho.ErrorCode}");
        var stale = EchoReply.Parser.ParseFrom(afterTheEcho.Payload);
        Assert.Equal(("kept", 9), (stale.Content, stale.Sequence));
    }

    [Fact]
    public async Task LargePayload_RepliesOneMebibyteOfTheSequentialPattern_TwiceInARow()
    {
        var stageId = await CreateStageAsync();
        using var client = await AuthenticatedClientAsync(stageId);

        for (var round = 0; round < 2; round++)
        {
            var reply = await client.RequestAsync(nameof(LargePayloadRequest), stageId, Bytes(new LargePayloadRequest { SizeBytes = ConformanceMsgIds.LargePayloadBytes }));

            Assert.True(reply.IsSuccess, $"error {reply.ErrorCode}");
            Assert.Equal(nameof(BenchmarkReply), reply.MsgId);
            var data = BenchmarkReply.Parser.ParseFrom(reply.Payload).Payload.Span;
            Assert.Equal(ConformanceMsgIds.LargePayloadBytes, data.Length);
            for (var i = 0; i < data.Length; i++)
            {
                if (data[i] != (byte)(i % 256))
                {
                    Assert.Fail($"byte {i} is {data[i]}, expected {(byte)(i % 256)}");
                }
            }
        }
    }

    [Fact]
    public async Task Broadcast_ReachesEveryActorOfTheStage_WithTheSenderAccount()
    {
        var stageId = await CreateStageAsync();
        var notifies = new List<(int Client, BroadcastNotify Notify)>();
        var bothArrived = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        void Collect(int index, in ServerFrame push)
        {
            if (push.MsgId != nameof(BroadcastNotify))
            {
                return;
            }

            lock (notifies)
            {
                notifies.Add((index, BroadcastNotify.Parser.ParseFrom(push.Payload.Span)));
                if (notifies.Count == 2)
                {
                    bothArrived.TrySetResult();
                }
            }
        }

        using var sender = await AuthenticatedClientAsync(stageId, onPush: (TcpPlayClient _, in ServerFrame push) => Collect(0, push));
        using var listener = await AuthenticatedClientAsync(stageId, onPush: (TcpPlayClient _, in ServerFrame push) => Collect(1, push));

        Assert.True(sender.Send(nameof(BroadcastRequest), stageId, Bytes(new BroadcastRequest { Content = "to all" })));
        await bothArrived.Task.WaitAsync(TimeSpan.FromSeconds(10));

        Assert.Equal([0, 1], notifies.Select(n => n.Client).Order());
        Assert.All(notifies, n => Assert.Equal("to all", n.Notify.Data));
        Assert.Single(notifies.Select(n => n.Notify.FromAccountId).Distinct());
    }

    [Fact]
    public async Task Heartbeat_BeforeAndAfterAuthentication_IsEchoed()
    {
        using var client = await ConnectAsync();
        var stageId = await CreateStageAsync();

        Assert.True(client.SendHeartbeat());
        await WaitUntilAsync(() => client.Statistics.HeartbeatsReceived >= 1);
        await AuthenticateAsync(client, stageId);
        Assert.True(client.SendHeartbeat());
        await WaitUntilAsync(() => client.Statistics.HeartbeatsReceived >= 2);

        Assert.Equal(2, client.Statistics.HeartbeatsSent);
        Assert.Equal(2, client.Statistics.HeartbeatsReceived);
    }

    [Fact]
    public async Task Disconnect_ThenReconnect_AuthenticatesAgainIntoTheSameStage()
    {
        var stageId = await CreateStageAsync();
        var first = await AuthenticatedClientAsync(stageId);
        first.Disconnect();
        await first.Closed.WaitAsync(TimeSpan.FromSeconds(10));
        first.Dispose();

        using var second = await AuthenticatedClientAsync(stageId);
        var echo = await second.RequestAsync(nameof(EchoRequest), stageId, Bytes(new EchoRequest { Content = "back", Sequence = 2 }));

        Assert.True(echo.IsSuccess, $"error {echo.ErrorCode}");
        Assert.True(_server.Server.HasStage(stageId));
    }

    private static long NextStageId() => Interlocked.Increment(ref _nextStageId);

    private static byte[] Bytes(IMessage message) => message.ToByteArray();

    private static async Task WaitUntilAsync(Func<bool> condition)
    {
        // Bounded: 1000 polls of 10 ms at most.
        for (var i = 0; i < 1000 && !condition(); i++)
        {
            await Task.Delay(TimeSpan.FromMilliseconds(10), TimeProvider.System);
        }

        Assert.True(condition());
    }

    private static async Task AuthenticateAsync(TcpPlayClient client, long stageId)
    {
        var reply = await client.AuthenticateAsync(stageId, Bytes(new AuthenticateRequest { UserId = "user", Token = "valid" }));
        Assert.True(reply.IsSuccess, $"authenticate failed with {reply.ErrorCode}");
    }

    private async Task StartAsync(ConformanceFlaws flaws)
    {
        _server = await ConformanceServer.StartAsync(new ConformanceServerOptions { TcpPort = 0, HttpPort = 0, TcpTlsPort = 0, HttpsPort = 0, Flaws = flaws }, TimeProvider.System);
        _http = new HttpClient { BaseAddress = _server.HttpAddress, Timeout = TimeSpan.FromSeconds(30) };
    }

    private async Task<long> CreateStageAsync()
    {
        var stageId = NextStageId();
        using var body = await PostJsonAsync("/api/stages", new { stageType = "TestStage", stageId });
        Assert.True(body.RootElement.GetProperty("success").GetBoolean());
        return stageId;
    }

    private Task<TcpPlayClient> ConnectAsync(TimeSpan? requestTimeout = null) =>
        TcpPlayClient.ConnectAsync(_server.TcpEndPoint, new TcpPlayClientOptions { Time = TimeProvider.System, RequestTimeout = requestTimeout ?? TimeSpan.FromSeconds(10) });

    private async Task<TcpPlayClient> AuthenticatedClientAsync(long stageId, TimeSpan? requestTimeout = null, ClientPushHandler? onPush = null)
    {
        var client = await ConnectAsync(requestTimeout);
        client.PushReceived = onPush;
        await AuthenticateAsync(client, stageId);
        return client;
    }

    private async Task<JsonDocument> GetJsonAsync(string path)
    {
        using var response = await _http.GetAsync(new Uri(path, UriKind.Relative));
        response.EnsureSuccessStatusCode();
        return JsonDocument.Parse(await response.Content.ReadAsStringAsync());
    }

    private async Task<JsonDocument> PostJsonAsync(string path, object body)
    {
        using var response = await _http.PostAsJsonAsync(path, body);
        response.EnsureSuccessStatusCode();
        return JsonDocument.Parse(await response.Content.ReadAsStringAsync());
    }
}
