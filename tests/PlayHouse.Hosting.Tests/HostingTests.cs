using System.Buffers.Binary;
using System.Collections.Concurrent;
using System.Net.Sockets;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;
using PlayHouse.Core.Runtime;
using PlayHouse.Sim.Tcp;
using PlayHouse.Transport.Tcp;

namespace PlayHouse.Hosting.Tests;

public sealed class HostingTests
{
    private static readonly TimeSpan Patience = TimeSpan.FromSeconds(20);

    [Fact]
    public async Task AddPlayServer_RegistersAHostedServiceThatServesClientsAfterStart()
    {
        using var host = BuildHost(new Dictionary<string, string?> { ["PlayServer:DefaultStageType"] = EchoMsgIds.StageType });

        var hosted = host.Services.GetServices<IHostedService>().OfType<PlayServerHost>().Single();
        await host.StartAsync().WaitAsync(Patience);
        using var client = await Connect(hosted);
        var reply = await client.RequestAsync(EchoMsgIds.Echo, 1, [4, 2]).WaitAsync(Patience);
        await host.StopAsync().WaitAsync(Patience);

        Assert.True(reply.IsSuccess);
        Assert.Equal(new byte[] { 4, 2 }, reply.Payload);
        Assert.NotNull(hosted.LastShutdownReport);
        Assert.True(hosted.LastShutdownReport!.Drained);
        Assert.False(hosted.LastShutdownReport.DroppedAnything);
    }

    [Fact]
    public async Task Options_AreBoundFromConfiguration()
    {
        using var host = BuildHost(new Dictionary<string, string?>
        {
            ["PlayServer:NodeId"] = "play-7",
            ["PlayServer:DefaultStageType"] = EchoMsgIds.StageType,
            ["PlayServer:MailboxCapacityMax"] = "123",
            ["PlayServer:DrainTimeout"] = "00:00:03",
            ["PlayServer:Peers:api-1"] = "127.0.0.1:6001",
        });

        var options = host.Services.GetRequiredService<IOptions<PlayServerHostOptions>>().Value;
        await host.StartAsync().WaitAsync(Patience);
        var hosted = host.Services.GetRequiredService<PlayServerHost>();

        Assert.Equal(("play-7", 123, TimeSpan.FromSeconds(3)), (options.NodeId, options.MailboxCapacityMax, options.DrainTimeout));
        Assert.Equal("127.0.0.1:6001", options.Peers["api-1"]);
        Assert.Equal("play-7", hosted.Server!.NodeId);
        Assert.Equal(123, hosted.Server.Options.MailboxCapacityMax);
        await host.StopAsync().WaitAsync(Patience);
    }

    [Theory]
    [InlineData("PlayServer:MailboxCapacityMax", "0", "MailboxCapacityMax")]
    [InlineData("PlayServer:Port", "70000", "Port 70000")]
    [InlineData("PlayServer:BindAddress", "not-an-ip", "BindAddress")]
    [InlineData("PlayServer:Peers:api-1", "nowhere", "Peers:api-1")]
    [InlineData("PlayServer:IdleTimeout", "00:00:00", "IdleTimeout")]
    [InlineData("PlayServer:NodeId", " ", "NodeId is empty.")]
    public async Task InvalidOptions_FailTheHostAtStart_NamingTheProblem(string key, string value, string expected)
    {
        using var host = BuildHost(new Dictionary<string, string?> { [key] = value });

        var error = await Assert.ThrowsAsync<OptionsValidationException>(() => host.StartAsync().WaitAsync(Patience));

        Assert.Contains(expected, error.Message, StringComparison.Ordinal);
        Assert.StartsWith("PlayServerHostOptions: ", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task GracefulStop_StopsAccepting_AndDrainsQueuedRequestsBeforeClosing()
    {
        using var backlog = await SlowBacklog.StartAsync(new() { ["PlayServer:DrainTimeout"] = "00:00:20" });
        var (host, hosted, gate, replies) = (backlog.Host, backlog.Hosted, backlog.Gate, backlog.Replies);
        var stopping = host.StopAsync();
        await Eventually(() => !hosted.Listener!.IsAccepting);
        var refusedConnect = await TryConnect(hosted);
        gate.Open();
        await stopping.WaitAsync(Patience);
        var report = hosted.LastShutdownReport!;

        Assert.False(refusedConnect);
        Assert.All(await Task.WhenAll(replies).WaitAsync(Patience), r => Assert.True(r.IsSuccess));
        Assert.True(report.Drained);
        Assert.Equal((0L, 0L, 0L), (report.MailboxMessagesDropped, report.UnansweredRequests, report.SendBytesDropped));
        Assert.Equal(1, report.SessionsClosed);
        Assert.Equal(1, report.StagesClosed);
    }

    [Fact]
    public async Task GracefulStop_WhenTheDrainTimesOut_ReportsAndLogsWhatItDropped()
    {
        var logs = new ConcurrentQueue<string>();
        using var backlog = await SlowBacklog.StartAsync(new() { ["PlayServer:DrainTimeout"] = "00:00:00.200" }, logs);
        var (host, hosted, gate, replies) = (backlog.Host, backlog.Hosted, backlog.Gate, backlog.Replies);

        await host.StopAsync().WaitAsync(Patience);
        var report = hosted.LastShutdownReport!;
        gate.Open();
        var outcomes = await Task.WhenAll(replies).WaitAsync(Patience);

        Assert.False(report.Drained);
        Assert.Equal(2, report.MailboxMessagesDropped);
        Assert.Equal(3, report.UnansweredRequests);
        Assert.True(report.DroppedAnything);
        Assert.Contains(logs, l => l.Contains("drain timed out", StringComparison.Ordinal) && l.StartsWith("Warning", StringComparison.Ordinal));
        Assert.All(outcomes, r => Assert.True(r.Disconnected));
    }

    [Fact]
    public async Task ClientMessageQueueTimeMax_FromConfiguration_ShedsRequestsThatWaitedPastIt_WithRequestExpiredOverTcp()
    {
        using var backlog = await SlowBacklog.StartAsync(new() { ["PlayServer:ClientMessageQueueTimeMax"] = "00:00:00.050" });
        var (host, hosted, gate, replies) = (backlog.Host, backlog.Hosted, backlog.Gate, backlog.Replies);

        // The two queued requests wait at least this long, four times the limit, before the stage comes to them.
        await Task.Delay(TimeSpan.FromMilliseconds(200));
        gate.Open();
        var outcomes = await Task.WhenAll(replies).WaitAsync(Patience);
        await host.StopAsync().WaitAsync(Patience);

        Assert.Equal([ErrorCodes.Success, ErrorCodes.RequestExpired, ErrorCodes.RequestExpired], outcomes.Select(r => r.ErrorCode));
        Assert.Equal(2, hosted.Server!.Counters.RequestsExpiredInMailbox);
    }

    [Theory]
    [InlineData(null, true)]
    [InlineData("false", false)]
    public async Task RunClientTurnsOnReceiveThread_FromConfiguration_ReachesTheServer_AndEitherWayAnswersRequests(string? setting, bool expected)
    {
        var settings = new Dictionary<string, string?> { ["PlayServer:DefaultStageType"] = EchoMsgIds.StageType };
        if (setting is not null)
        {
            settings["PlayServer:RunClientTurnsOnReceiveThread"] = setting;
        }

        using var host = BuildHost(settings);
        await host.StartAsync().WaitAsync(Patience);
        var hosted = host.Services.GetRequiredService<PlayServerHost>();
        using var client = await Connect(hosted);

        var reply = await client.RequestAsync(EchoMsgIds.Echo, 1, [3, 4]).WaitAsync(Patience);
        await host.StopAsync().WaitAsync(Patience);

        Assert.Equal(expected, hosted.Server!.Options.RunClientTurnsOnReceiveThread);
        Assert.True(reply.IsSuccess, ErrorCodes.Describe(reply.ErrorCode));
        Assert.Equal(new byte[] { 3, 4 }, reply.Payload);
    }

    [Fact]
    public async Task ApiServerAndPlayServer_HostedSeparately_TalkOverTheTcpMesh()
    {
        using var apiHost = Host.CreateApplicationBuilder().Also(b => b.Services.AddApiServer(
            o => o.NodeId = "api-1",
            api => api.Handle("ApiEcho", (link, packet) =>
            {
                link.Reply(packet, "ApiEcho", packet.Payload);
                return ValueTask.CompletedTask;
            }))).Build();
        await apiHost.StartAsync().WaitAsync(Patience);
        var api = apiHost.Services.GetRequiredService<ApiServerHost>();
        var playBuilder = Host.CreateApplicationBuilder();
        playBuilder.Services.AddPlayServer(
            o =>
            {
                o.DefaultStageType = "api-caller";
                o.MeshPort = 0;
                o.Peers["api-1"] = api.MeshEndPoint!.ToString();
            },
            play => play.UseStage<ApiCallerStage, EchoActor>("api-caller"));
        using var playHost = playBuilder.Build();
        await playHost.StartAsync().WaitAsync(Patience);
        var play = playHost.Services.GetRequiredService<PlayServerHost>();
        using var client = await Connect(play);

        var reply = await client.RequestAsync("CallApi", 1, [7, 7]).WaitAsync(Patience);
        await playHost.StopAsync().WaitAsync(Patience);
        await apiHost.StopAsync().WaitAsync(Patience);

        Assert.True(reply.IsSuccess, ErrorCodes.Describe(reply.ErrorCode));
        Assert.Equal(new byte[] { 7, 7 }, reply.Payload);
        Assert.True(api.LastShutdownReport!.Drained);
    }

    [Fact]
    public async Task StartingAStartedServerAgain_IsRefusedNamingTheNode_AndTheFirstStartStillServes()
    {
        using var host = BuildHost(new Dictionary<string, string?> { ["PlayServer:DefaultStageType"] = EchoMsgIds.StageType });
        var hosted = host.Services.GetRequiredService<PlayServerHost>();
        await host.StartAsync().WaitAsync(Patience);

        var error = await Assert.ThrowsAsync<InvalidOperationException>(() => hosted.StartAsync(CancellationToken.None).WaitAsync(Patience));
        using var client = await Connect(hosted);
        var reply = await client.RequestAsync(EchoMsgIds.Echo, 1, [7]).WaitAsync(Patience);
        await host.StopAsync().WaitAsync(Patience);

        Assert.Equal("play-1 was already started.", error.Message);
        Assert.True(reply.IsSuccess);
    }

    [Fact]
    public void AddPlayServer_Twice_IsRefused()
    {
        var services = new ServiceCollection();
        services.AddPlayServer(_ => { }, _ => { });

        Assert.Throws<InvalidOperationException>(() => services.AddPlayServer(_ => { }, _ => { }));
    }

    /// <summary>
    /// A started host whose slow stage holds the first of three client requests until the gate opens, with the other two
    /// waiting in its mailbox: the backlog every graceful-stop and shedding test starts from.
    /// </summary>
    private sealed class SlowBacklog : IDisposable
    {
        private SlowBacklog(IHost host, PlayServerHost hosted, TcpPlayClient client, SlowGate gate)
        {
            Host = host;
            Hosted = hosted;
            Client = client;
            Gate = gate;
        }

        public IHost Host { get; }

        public PlayServerHost Hosted { get; }

        public TcpPlayClient Client { get; }

        public SlowGate Gate { get; }

        public List<Task<TcpReply>> Replies { get; } = [];

        public static async Task<SlowBacklog> StartAsync(Dictionary<string, string?> settings, ConcurrentQueue<string>? logs = null)
        {
            settings["PlayServer:DefaultStageType"] = "slow";
            var gate = new SlowGate();
            var host = BuildHost(settings, gate, logs);
            await host.StartAsync().WaitAsync(Patience);
            var hosted = host.Services.GetRequiredService<PlayServerHost>();
            var backlog = new SlowBacklog(host, hosted, await Connect(hosted), gate);
            backlog.Replies.AddRange(Enumerable.Range(0, 3).Select(i => backlog.Client.RequestAsync("Slow", 1, [(byte)i])));
            await gate.Entered.WaitAsync(Patience);
            await Eventually(() => hosted.Server!.GetStageStatistics().Single().MailboxLength == 2);
            return backlog;
        }

        public void Dispose()
        {
            Client.Dispose();
            Host.Dispose();
        }
    }

    private static IHost BuildHost(Dictionary<string, string?> settings, SlowGate? gate = null, ConcurrentQueue<string>? logs = null)
    {
        var builder = Host.CreateApplicationBuilder();
        builder.Configuration.AddInMemoryCollection(settings);
        builder.Logging.ClearProviders();
        if (logs is not null)
        {
            builder.Logging.AddProvider(new QueueLoggerProvider(logs));
        }

        builder.Services.AddSingleton(gate ?? new SlowGate());
        builder.Services.AddPlayServer(builder.Configuration.GetSection("PlayServer"), play =>
        {
            play.UseStage(EchoMsgIds.StageType, link => new EchoStage(link), link => new EchoActor(link));
            play.UseStage<SlowStage, EchoActor>("slow");
        });
        return builder.Build();
    }

    private static async Task<TcpPlayClient> Connect(PlayServerHost host)
    {
        var client = await TcpPlayClient.ConnectAsync(host.ClientEndPoint!, new TcpPlayClientOptions { RequestTimeout = Patience });
        var account = new byte[8];
        BinaryPrimitives.WriteInt64LittleEndian(account, 1);
        var auth = await client.AuthenticateAsync(1, account).WaitAsync(Patience);
        Assert.True(auth.IsSuccess);
        return client;
    }

    private static async Task<bool> TryConnect(PlayServerHost host)
    {
        try
        {
            using var socket = new Socket(SocketType.Stream, ProtocolType.Tcp);
            await socket.ConnectAsync(host.ClientEndPoint!).WaitAsync(Patience);
            return true;
        }
        catch (SocketException)
        {
            return false;
        }
    }

    private static async Task Eventually(Func<bool> condition)
    {
        var deadline = DateTime.UtcNow + Patience;
        while (!condition())
        {
            Assert.True(DateTime.UtcNow < deadline, "condition not reached");
            await Task.Delay(5);
        }
    }
}

/// <summary>Holds the slow stage's first handler until the test opens it.</summary>
public sealed class SlowGate
{
    private readonly TaskCompletionSource _open = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly TaskCompletionSource _entered = new(TaskCreationOptions.RunContinuationsAsynchronously);

    public Task Entered => _entered.Task;

    public Task WhenOpen => _open.Task;

    public void Open() => _open.TrySetResult();

    public void NoteEntered() => _entered.TrySetResult();
}

/// <summary>A stage whose handler awaits the gate before echoing, so requests queue behind it.</summary>
public sealed class SlowStage(IStageLink link, SlowGate gate) : IStage
{
    public ValueTask<CreateResult> OnCreate(Packet packet) => ValueTask.FromResult(CreateResult.Success());

    public ValueTask OnPostCreate() => ValueTask.CompletedTask;

    public ValueTask<bool> OnJoinStage(IActor actor) => ValueTask.FromResult(true);

    public ValueTask OnPostJoinStage(IActor actor) => ValueTask.CompletedTask;

    public ValueTask OnConnectionChanged(IActor actor, bool connected) => ValueTask.CompletedTask;

    public async ValueTask OnDispatch(IActor actor, Packet packet)
    {
        gate.NoteEntered();
        await gate.WhenOpen;
        link.Reply(packet, "SlowReply", packet.Payload);
    }

    public ValueTask OnDispatch(Packet packet) => ValueTask.CompletedTask;

    public ValueTask OnDestroy() => ValueTask.CompletedTask;
}

/// <summary>A stage that forwards each client request to the API server over the mesh.</summary>
public sealed class ApiCallerStage(IStageLink link) : IStage
{
    public ValueTask<CreateResult> OnCreate(Packet packet) => ValueTask.FromResult(CreateResult.Success());

    public ValueTask OnPostCreate() => ValueTask.CompletedTask;

    public ValueTask<bool> OnJoinStage(IActor actor) => ValueTask.FromResult(true);

    public ValueTask OnPostJoinStage(IActor actor) => ValueTask.CompletedTask;

    public ValueTask OnConnectionChanged(IActor actor, bool connected) => ValueTask.CompletedTask;

    public async ValueTask OnDispatch(IActor actor, Packet packet)
    {
        using var response = await link.RequestToApi("api-1", "ApiEcho", link.Pool.Copy(packet.Payload.Span, "api"));
        if (response.IsSuccess)
        {
            link.Reply(packet, response.MsgId, response.Payload);
        }
        else
        {
            link.Reply(packet, response.ErrorCode);
        }
    }

    public ValueTask OnDispatch(Packet packet) => ValueTask.CompletedTask;

    public ValueTask OnDestroy() => ValueTask.CompletedTask;
}

internal sealed class QueueLoggerProvider(ConcurrentQueue<string> lines) : ILoggerProvider
{
    public ILogger CreateLogger(string categoryName) => new QueueLogger(lines);

    public void Dispose()
    {
    }

    private sealed class QueueLogger(ConcurrentQueue<string> lines) : ILogger
    {
        public IDisposable? BeginScope<TState>(TState state)
            where TState : notnull => null;

        public bool IsEnabled(LogLevel logLevel) => true;

        public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter) =>
            lines.Enqueue($"{logLevel}: {formatter(state, exception)}");
    }
}

internal static class BuilderExtensions
{
    public static HostApplicationBuilder Also(this HostApplicationBuilder builder, Action<HostApplicationBuilder> configure)
    {
        configure(builder);
        return builder;
    }
}
