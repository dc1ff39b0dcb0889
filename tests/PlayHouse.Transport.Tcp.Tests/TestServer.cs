using System.Buffers.Binary;
using System.Collections.Concurrent;
using System.Net;
using Microsoft.Extensions.Logging;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;
using PlayHouse.Core.Seams;
using PlayHouse.Sim.Tcp;

namespace PlayHouse.Transport.Tcp.Tests;

/// <summary>
/// A real play server with the echo stage on a loopback listener, a checked pool (ledger on) and a logger that
/// keeps every line. Disposal closes everything and asserts that every buffer came back.
/// </summary>
internal sealed class TestServer : IAsyncDisposable
{
    public static readonly TimeSpan Patience = TimeSpan.FromSeconds(20);

    /// <summary>Waits in real time for another thread to reach a state; cancelled (and the test failed) after <see cref="Patience"/>.</summary>
    public static async Task WaitUntilAsync(Func<bool> condition)
    {
        using var cts = new CancellationTokenSource(Patience);
        while (!condition())
        {
            await Task.Delay(5, cts.Token);
        }
    }

    private readonly ConcurrentQueue<SessionClosedInfo> _closes = new();
    private readonly SemaphoreSlim _closeSignal = new(0);

    private TestServer(TcpTransportOptions? options, ServerOptions? serverOptions, TimeProvider? transportTime, IExecutor? executor)
    {
        Pool = new MessagePool(new MessagePoolOptions { CheckedMode = true, Name = "test-server" });
        var seams = new NodeSeams(TimeProvider.System, executor ?? ThreadPoolExecutor.Instance, EntropyRandomSource.Create(), Pool);
        Server = new PlayServer("play-1", seams, serverOptions ?? new ServerOptions { DefaultStageType = EchoMsgIds.StageType, RequestTimeout = TimeSpan.FromSeconds(10) });
        EchoStage.Register(Server);
        Listener = new TcpClientListener(Server, options, Logger, transportTime);
        Listener.SessionClosed += info =>
        {
            _closes.Enqueue(info);
            _closeSignal.Release();
        };
        EndPoint = Listener.Start(new IPEndPoint(IPAddress.Loopback, 0));
    }

    public MessagePool Pool { get; }

    public PlayServer Server { get; }

    public TcpClientListener Listener { get; }

    public IPEndPoint EndPoint { get; }

    public ListLogger Logger { get; } = new();

    public TcpTransportCounters Counters => Listener.Counters;

    /// <summary>
    /// Starts a server; <paramref name="transportTime"/> is the listener clock (a FakeTimeProvider makes timeouts
    /// deterministic), <paramref name="executor"/> the server's (the thread pool unless given).
    /// </summary>
    public static TestServer Start(TcpTransportOptions? options = null, ServerOptions? serverOptions = null, TimeProvider? transportTime = null, IExecutor? executor = null) => new(options, serverOptions, transportTime, executor);

    public Task<TcpPlayClient> ConnectAsync(TcpPlayClientOptions? options = null) =>
        TcpPlayClient.ConnectAsync(EndPoint, options ?? new TcpPlayClientOptions { RequestTimeout = Patience });

    /// <summary>Connects and authenticates into <paramref name="stageId"/> as <paramref name="accountId"/>.</summary>
    public async Task<TcpPlayClient> ConnectAuthenticatedAsync(long accountId, long stageId = 1, TcpPlayClientOptions? options = null)
    {
        var client = await ConnectAsync(options);
        var reply = await client.AuthenticateAsync(stageId, Account(accountId)).WaitAsync(Patience);
        Assert.True(reply.IsSuccess, $"authentication failed: {ErrorCodes.Describe(reply.ErrorCode)} timedOut={reply.TimedOut} disconnected={reply.Disconnected}");
        return client;
    }

    public static byte[] Account(long accountId)
    {
        var bytes = new byte[8];
        BinaryPrimitives.WriteInt64LittleEndian(bytes, accountId);
        return bytes;
    }

    /// <summary>Waits for the next session close that matches, with a generous timeout.</summary>
    public async Task<SessionClosedInfo> NextCloseAsync(Func<SessionClosedInfo, bool>? match = null)
    {
        using var cts = new CancellationTokenSource(Patience);
        while (true)
        {
            await _closeSignal.WaitAsync(cts.Token);
            if (_closes.TryDequeue(out var info) && (match is null || match(info)))
            {
                return info;
            }
        }
    }

    /// <summary>Closes sessions and stages, waits for every session to finish and every stage to go, and checks the ledger.</summary>
    public async ValueTask DisposeAsync()
    {
        Listener.Dispose();
        await Listener.WhenAllSessionsFinished().WaitAsync(Patience);
        foreach (var stage in Server.GetStageStatistics())
        {
            Server.CloseStage(stage.StageId);
        }

        await Eventually.True(() => Server.StageCount == 0 && Pool.GetStatistics().Outstanding == 0, Patience, () => $"stages {Server.StageCount}, outstanding buffers: {string.Join(", ", Pool.GetOutstanding())}");
        Pool.ThrowIfLeaks();
        Assert.Equal(0, Counters.CallbackFaults);
        Server.Dispose();
    }
}

/// <summary>Waits for a condition the code under test reaches by itself, checking often, failing after a generous timeout.</summary>
internal static class Eventually
{
    public static async Task True(Func<bool> condition, TimeSpan timeout, Func<string>? describe = null)
    {
        var deadline = DateTime.UtcNow + timeout;
        while (!condition())
        {
            if (DateTime.UtcNow > deadline)
            {
                Assert.Fail($"condition not reached within {timeout}: {describe?.Invoke()}");
            }

            await Task.Delay(10);
        }
    }
}

/// <summary>A logger that keeps every line, for asserting that a close reason was logged.</summary>
internal sealed class ListLogger : ILogger
{
    private readonly ConcurrentQueue<string> _lines = new();

    public IReadOnlyList<string> Lines => [.. _lines];

    public IDisposable? BeginScope<TState>(TState state)
        where TState : notnull => null;

    public bool IsEnabled(LogLevel logLevel) => true;

    public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter) =>
        _lines.Enqueue($"{logLevel}: {formatter(state, exception)}");

    public bool Contains(string text) => _lines.Any(l => l.Contains(text, StringComparison.Ordinal));
}
