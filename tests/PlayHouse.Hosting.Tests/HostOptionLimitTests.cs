using System.Buffers.Binary;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;
using Microsoft.Extensions.Time.Testing;
using PlayHouse.Sim.Tcp;
using PlayHouse.Transport.Tcp;

namespace PlayHouse.Hosting.Tests;

/// <summary>
/// Every numeric option of the hosted play and API servers at its bound and one past it, as configuration binds them
/// (validated when the options are first read, so nothing listens), each one reaching the server or the listener
/// unchanged, and the drain timeout of a graceful stop met exactly on a fake clock.
/// </summary>
public sealed class HostOptionLimitTests
{
    private static readonly TimeSpan Patience = TimeSpan.FromSeconds(20);

    public static TheoryData<string, string, string, string> PlayServerBounds() => new()
    {
        // Key, the value at its bound (accepted), the value one past it (refused), the text naming the problem.
        { "MeshPort", "-1", "-2", "MeshPort -2 is outside [-1, 65535]." },
        { "MeshPort", "65535", "65536", "MeshPort 65536 is outside [-1, 65535]." },
        { "Port", "0", "-1", "Port -1 is outside [0, 65535]." },
        { "Port", "65535", "65536", "Port 65536 is outside [0, 65535]." },
        { "DrainTimeout", "00:00:00", "-00:00:00.0000001", "DrainTimeout is negative." },
        { "RequestTimeout", "00:00:00.0000001", "00:00:00", "ServerOptions.RequestTimeout is out of range." },
        { "MailboxCapacityMax", "1", "0", "ServerOptions.MailboxCapacityMax is out of range." },
        { "ClientMessageQueueTimeMax", "00:00:00.0000001", "00:00:00", "ServerOptions.ClientMessageQueueTimeMax is out of range." },
        { "SendQueueBytesMax", "1024", "1023", "TcpTransportOptions.SendQueueBytesMax is out of range." },
        { "IdleTimeout", "00:00:00.0000001", "00:00:00", "TcpTransportOptions.IdleTimeout is out of range." },
        { "FrameTimeout", "00:00:00.0000001", "00:00:00", "TcpTransportOptions.FrameTimeout is out of range." },
        { "MaxConnections", "1", "0", "TcpTransportOptions.MaxConnections is out of range." },
    };

    [Theory]
    [MemberData(nameof(PlayServerBounds))]
    public void PlayServerOptions_AcceptEachLimitAtItsBound_AndRefuseOnePastIt_NamingIt(string key, string atBound, string pastBound, string problem)
    {
        using var accepted = PlayHost(new() { [$"PlayServer:{key}"] = atBound });
        using var refused = PlayHost(new() { [$"PlayServer:{key}"] = pastBound });

        _ = accepted.Services.GetRequiredService<IOptions<PlayServerHostOptions>>().Value;
        var error = Assert.Throws<OptionsValidationException>(() => refused.Services.GetRequiredService<IOptions<PlayServerHostOptions>>().Value);

        Assert.Contains(error.Failures, f => f.StartsWith($"PlayServerHostOptions: {problem}", StringComparison.Ordinal));
    }

    [Theory]
    [InlineData("MeshPort", "-1", "-2", "MeshPort -2 is outside [-1, 65535].")]
    [InlineData("MeshPort", "65535", "65536", "MeshPort 65536 is outside [-1, 65535].")]
    [InlineData("DrainTimeout", "00:00:00", "-00:00:00.0000001", "DrainTimeout is negative.")]
    [InlineData("RequestTimeout", "00:00:00.0000001", "00:00:00", "ServerOptions.RequestTimeout is out of range.")]
    [InlineData("MailboxCapacityMax", "1", "0", "ServerOptions.MailboxCapacityMax is out of range.")]
    public void ApiServerOptions_AcceptEachLimitAtItsBound_AndRefuseOnePastIt_NamingIt(string key, string atBound, string pastBound, string problem)
    {
        using var accepted = ApiHost(new() { [$"ApiServer:{key}"] = atBound });
        using var refused = ApiHost(new() { [$"ApiServer:{key}"] = pastBound });

        _ = accepted.Services.GetRequiredService<IOptions<ApiServerHostOptions>>().Value;
        var error = Assert.Throws<OptionsValidationException>(() => refused.Services.GetRequiredService<IOptions<ApiServerHostOptions>>().Value);

        Assert.Contains(error.Failures, f => f.StartsWith($"ApiServerHostOptions: {problem}", StringComparison.Ordinal));
    }

    [Fact]
    public async Task EveryNumericOption_ReachesTheServerOrTheListenerUnchanged()
    {
        using var host = PlayHost(new()
        {
            ["PlayServer:RequestTimeout"] = "00:00:07",
            ["PlayServer:MailboxCapacityMax"] = "77",
            ["PlayServer:ClientMessageQueueTimeMax"] = "00:00:03",
            ["PlayServer:SendQueueBytesMax"] = "4097",
            ["PlayServer:IdleTimeout"] = "00:00:41",
            ["PlayServer:FrameTimeout"] = "00:00:13",
            ["PlayServer:MaxConnections"] = "9",
        });
        await host.StartAsync().WaitAsync(Patience);
        var hosted = host.Services.GetRequiredService<PlayServerHost>();

        var server = hosted.Server!.Options;
        var listener = hosted.Listener!.Options;
        Assert.Equal((TimeSpan.FromSeconds(7), 77, TimeSpan.FromSeconds(3)), (server.RequestTimeout, server.MailboxCapacityMax, server.ClientMessageQueueTimeMax));
        Assert.Equal((4097, TimeSpan.FromSeconds(41), TimeSpan.FromSeconds(13), 9), (listener.SendQueueBytesMax, listener.IdleTimeout, listener.FrameTimeout, listener.MaxConnections));
        Assert.Null(hosted.Mesh);
        await host.StopAsync().WaitAsync(Patience);
    }

    [Theory]
    [InlineData(-1, true)]
    [InlineData(0, true)]
    [InlineData(1, false)]
    public async Task GracefulStop_GivesUpDrainingOnceDrainTimeoutHasPassed_NotOneTickSooner(int timeoutOffsetTicks, bool stoppedAtTheFirstCheck)
    {
        // The drain is checked every 5 ms of the host's clock; the first check after the start falls at 5 ms.
        var time = new FakeTimeProvider();
        var poll = TimeSpan.FromMilliseconds(5);
        using var backlog = await StartBacklogAsync(time, poll + TimeSpan.FromTicks(timeoutOffsetTicks));
        var context = SynchronizationContext.Current;
        SynchronizationContext.SetSynchronizationContext(null);
        try
        {
            var stopping = backlog.Hosted.StopAsync(CancellationToken.None);
            var stoppedAtOnce = stopping.IsCompleted;

            // Without the test framework's context the drain's next check runs inside the advance.
            time.Advance(poll);
            var stoppedAtFirstCheck = stopping.IsCompleted;
            time.Advance(poll);
            await stopping.WaitAsync(Patience);

            Assert.False(stoppedAtOnce);
            Assert.Equal(stoppedAtTheFirstCheck, stoppedAtFirstCheck);
            Assert.False(backlog.Hosted.LastShutdownReport!.Drained);
            Assert.Equal(stoppedAtTheFirstCheck ? poll : poll * 2, backlog.Hosted.LastShutdownReport.Elapsed);
        }
        finally
        {
            SynchronizationContext.SetSynchronizationContext(context);
            backlog.Gate.Open();
        }
    }

    [Fact]
    public async Task GracefulStop_WithADrainTimeoutOfZero_GivesUpAtOnce_WithoutWaitingForTheClock()
    {
        var time = new FakeTimeProvider();
        using var backlog = await StartBacklogAsync(time, TimeSpan.Zero);

        var stopping = backlog.Hosted.StopAsync(CancellationToken.None);
        var stoppedAtOnce = stopping.IsCompleted;
        await stopping.WaitAsync(Patience);
        backlog.Gate.Open();

        Assert.True(stoppedAtOnce);
        Assert.False(backlog.Hosted.LastShutdownReport!.Drained);
        Assert.Equal(TimeSpan.Zero, backlog.Hosted.LastShutdownReport.Elapsed);
        Assert.Equal(2, backlog.Hosted.LastShutdownReport.MailboxMessagesDropped);
    }

    /// <summary>A started play host on <paramref name="time"/> whose slow stage holds one request and queues two.</summary>
    private static async Task<Backlog> StartBacklogAsync(FakeTimeProvider time, TimeSpan drainTimeout)
    {
        var gate = new SlowGate();
        var host = PlayHost(
            new()
            {
                ["PlayServer:DefaultStageType"] = "slow",
                ["PlayServer:DrainTimeout"] = drainTimeout.ToString("c", System.Globalization.CultureInfo.InvariantCulture),
            },
            services => services.AddSingleton(gate).AddSingleton<TimeProvider>(time));
        await host.StartAsync().WaitAsync(Patience);
        var hosted = host.Services.GetRequiredService<PlayServerHost>();
        var client = await TcpPlayClient.ConnectAsync(hosted.ClientEndPoint!, new TcpPlayClientOptions { RequestTimeout = Patience });
        var account = new byte[8];
        BinaryPrimitives.WriteInt64LittleEndian(account, 1);
        Assert.True((await client.AuthenticateAsync(1, account).WaitAsync(Patience)).IsSuccess);
        var replies = Enumerable.Range(0, 3).Select(i => client.RequestAsync("Slow", 1, [(byte)i])).ToList();
        await gate.Entered.WaitAsync(Patience);
        var deadline = DateTime.UtcNow + Patience;
        while (hosted.Server!.GetStageStatistics().Single().MailboxLength < 2)
        {
            Assert.True(DateTime.UtcNow < deadline, "the backlog did not form");
            await Task.Delay(5);
        }

        return new Backlog(host, hosted, client, gate);
    }

    private static IHost PlayHost(Dictionary<string, string?> settings, Action<IServiceCollection>? services = null)
    {
        var builder = Host.CreateApplicationBuilder();
        builder.Configuration.AddInMemoryCollection(settings);
        builder.Logging.ClearProviders();
        services?.Invoke(builder.Services);
        builder.Services.AddPlayServer(builder.Configuration.GetSection("PlayServer"), play =>
        {
            play.UseStage(EchoMsgIds.StageType, link => new EchoStage(link), link => new EchoActor(link));
            play.UseStage<SlowStage, EchoActor>("slow");
        });
        return builder.Build();
    }

    private static IHost ApiHost(Dictionary<string, string?> settings)
    {
        var builder = Host.CreateApplicationBuilder();
        builder.Configuration.AddInMemoryCollection(settings);
        builder.Logging.ClearProviders();
        builder.Services.AddApiServer(builder.Configuration.GetSection("ApiServer"), _ => { });
        return builder.Build();
    }

    private sealed record Backlog(IHost Host, PlayServerHost Hosted, TcpPlayClient Client, SlowGate Gate) : IDisposable
    {
        public void Dispose()
        {
            Client.Dispose();
            Host.Dispose();
        }
    }
}
