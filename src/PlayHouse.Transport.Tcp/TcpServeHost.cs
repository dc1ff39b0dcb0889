using System.Globalization;
using System.Net;
using System.Runtime.InteropServices;
using Microsoft.Extensions.Logging;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;
using PlayHouse.Core.Seams;

namespace PlayHouse.Transport.Tcp;

/// <summary>Options of a <c>serve</c> run.</summary>
public sealed record TcpServeOptions
{
    /// <summary>The client port on 127.0.0.1; 0 lets the OS pick one (the log line and the handle say which).</summary>
    public int Port { get; init; }

    /// <summary>One of <see cref="TcpServeHost.Scenarios"/>.</summary>
    public string Scenario { get; init; } = "echo";

    public TcpTransportOptions Transport { get; init; } = new();

    /// <summary>How long a graceful stop waits for mailboxes and send queues to drain.</summary>
    public TimeSpan DrainTimeout { get; init; } = TimeSpan.FromSeconds(5);

    /// <summary>Keeps a ledger of every pooled buffer; the stop report then says whether any leaked.</summary>
    public bool CheckedPool { get; init; } = true;
}

/// <summary>What a <c>serve</c> run did, reported when it stops.</summary>
public sealed record TcpServeReport(
    IPEndPoint EndPoint,
    bool Drained,
    long ConnectionsAccepted,
    long FramesReceived,
    long FramesSent,
    long MailboxMessagesDropped,
    long SendBytesDropped,
    int SessionsClosedAtStop,
    long BuffersOutstanding,
    IReadOnlyList<KeyValuePair<string, long>> TransportCounters,
    IReadOnlyList<KeyValuePair<string, long>> ServerCounters)
{
    public override string ToString() => string.Create(
        CultureInfo.InvariantCulture,
        $"served {EndPoint}: {ConnectionsAccepted} connection(s), {FramesReceived} frame(s) in, {FramesSent} out; stop {(Drained ? "drained" : "timed out")}, dropped {MailboxMessagesDropped} mailbox message(s) and {SendBytesDropped} queued byte(s), closed {SessionsClosedAtStop} session(s), {BuffersOutstanding} buffer(s) outstanding");
}

/// <summary>
/// Hosts a real play server on 127.0.0.1 for any PlayHouse-protocol client: the <c>serve</c> command's engine. The
/// served scenarios all use the <see cref="EchoStage"/> (see <see cref="Describe"/> for the stage types and message
/// ids); any stage id is created on first authentication. Stop it with <see cref="TcpServeSession.StopAsync"/>, a
/// cancellation token, or (through <see cref="RunUntilSignalAsync"/>) Ctrl+C / SIGTERM: it stops accepting, refuses
/// new requests with ServerStopping, drains within <see cref="TcpServeOptions.DrainTimeout"/> and reports.
/// </summary>
public static class TcpServeHost
{
    /// <summary>The scenarios <c>serve</c> accepts.</summary>
    public static IReadOnlyList<string> Scenarios { get; } = ["broadcast", "echo", "send-push"];

    /// <summary>What a client may send to a served scenario, as text for the console and the README.</summary>
    public static string Describe(string scenario)
    {
        Check(scenario);
        return $"""
            scenario '{scenario}': stage type '{EchoMsgIds.StageType}', created on first authentication into any stage id
              {EchoMsgIds.Authenticate} (request, first message): payload = 8-byte little-endian account id (not 0), or fewer bytes for an anonymous account; reply {EchoMsgIds.AuthenticateReply} with the account id
              {EchoMsgIds.Echo} (request): any payload; reply {EchoMsgIds.EchoReply} with the same payload and MsgSeq
              {EchoMsgIds.SendPush} (one-way, MsgSeq 0): any payload; answered by a push {EchoMsgIds.Push} (MsgSeq 0) with the same payload
              {EchoMsgIds.Broadcast} (one-way): any payload; pushed as {EchoMsgIds.Broadcast} to every actor of the stage, the sender included
              @Heart@Beat@ (any time, before authentication too): echoed
              anything else: a request is answered with error {ErrorCodes.HandlerNotFound} (HandlerNotFound); a one-way send is dropped
            """;
    }

    /// <summary>Starts serving; the returned session says where and stops it.</summary>
    public static TcpServeSession Start(TcpServeOptions options, TimeProvider time, ILogger? logger = null)
    {
        ArgumentNullException.ThrowIfNull(options);
        ArgumentNullException.ThrowIfNull(time);
        Check(options.Scenario);
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = options.CheckedPool, Name = "serve" });
        var server = new PlayServer("play-1", new NodeSeams(time, ThreadPoolExecutor.Instance, EntropyRandomSource.Create(), pool), new ServerOptions { DefaultStageType = EchoMsgIds.StageType });
        EchoStage.Register(server);
        var listener = new TcpClientListener(server, options.Transport, logger, time);
        listener.Start(new IPEndPoint(IPAddress.Loopback, options.Port));
        return new TcpServeSession(server, listener, pool, options, time);
    }

    /// <summary>Serves until <paramref name="cancellationToken"/> is cancelled, then stops gracefully.</summary>
    public static async Task<TcpServeReport> RunAsync(TcpServeOptions options, TimeProvider time, TextWriter output, CancellationToken cancellationToken, ILogger? logger = null)
    {
        ArgumentNullException.ThrowIfNull(output);
        await using var session = Start(options, time, logger);
        await output.WriteLineAsync($"listening on {session.EndPoint} (scenario '{options.Scenario}'); Ctrl+C or SIGTERM stops").ConfigureAwait(false);
        await output.WriteLineAsync(Describe(options.Scenario)).ConfigureAwait(false);
        try
        {
            await Task.Delay(Timeout.InfiniteTimeSpan, time, cancellationToken).ConfigureAwait(false);
        }
        catch (OperationCanceledException)
        {
            // The stop signal.
        }

        var report = await session.StopAsync().ConfigureAwait(false);
        await output.WriteLineAsync(report.ToString()).ConfigureAwait(false);
        return report;
    }

    /// <summary>Serves until Ctrl+C (SIGINT) or SIGTERM, then stops gracefully.</summary>
    public static async Task<TcpServeReport> RunUntilSignalAsync(TcpServeOptions options, TimeProvider time, TextWriter output, ILogger? logger = null)
    {
        using var stop = new CancellationTokenSource();
        void OnSignal(PosixSignalContext context)
        {
            // Keep the process alive for the graceful stop; RunAsync returns once it is done.
            context.Cancel = true;
            stop.Cancel();
        }

        using var interrupt = PosixSignalRegistration.Create(PosixSignal.SIGINT, OnSignal);
        using var terminate = PosixSignalRegistration.Create(PosixSignal.SIGTERM, OnSignal);
        return await RunAsync(options, time, output, stop.Token, logger).ConfigureAwait(false);
    }

    private static void Check(string scenario)
    {
        if (!Scenarios.Contains(scenario, StringComparer.Ordinal))
        {
            throw new ArgumentException($"serve hosts the scenarios {string.Join(", ", Scenarios)}; '{scenario}' needs its workload clients (use run --mode tcp).", nameof(scenario));
        }
    }
}

/// <summary>A running <c>serve</c>: where it listens, and its graceful stop.</summary>
public sealed class TcpServeSession : IAsyncDisposable
{
    /// <summary>How often a drain or completion with no event to wait on is checked.</summary>
    private static readonly TimeSpan PollInterval = TimeSpan.FromMilliseconds(5);

    private readonly PlayServer _server;
    private readonly TcpClientListener _listener;
    private readonly MessagePool _pool;
    private readonly TcpServeOptions _options;
    private readonly TimeProvider _time;
    private TcpServeReport? _report;

    internal TcpServeSession(PlayServer server, TcpClientListener listener, MessagePool pool, TcpServeOptions options, TimeProvider time)
    {
        _server = server;
        _listener = listener;
        _pool = pool;
        _options = options;
        _time = time;
    }

    public IPEndPoint EndPoint => _listener.LocalEndPoint!;

    public PlayServer Server => _server;

    public TcpClientListener Listener => _listener;

    /// <summary>Stops accepting, refuses new requests, drains within the timeout, closes everything and reports.</summary>
    public async Task<TcpServeReport> StopAsync()
    {
        if (_report is not null)
        {
            return _report;
        }

        _listener.BeginDrain();
        var deadline = _time.GetTimestamp() + (long)(_options.DrainTimeout.Ticks * (double)_time.TimestampFrequency / TimeSpan.TicksPerSecond);
        bool Quiet() => _server.GetStageStatistics().All(s => s.MailboxLength == 0) && _server.HandlersInProgress == 0 && _server.UnansweredRequestCount == 0 && _listener.QueuedBytes == 0;

        // Stage turns end on the thread pool with no event to wait on, so the drain is checked every few ms.
        while (!Quiet() && _time.GetTimestamp() < deadline)
        {
            await Task.Delay(PollInterval, _time).ConfigureAwait(false);
        }

        var drained = Quiet();
        var mailboxes = _server.GetStageStatistics().Sum(s => (long)s.MailboxLength);
        var queued = _listener.QueuedBytes;
        var sessions = _listener.CloseAll(SessionCloseReason.ServerStopping, "serve is stopping");
        foreach (var stage in _server.GetStageStatistics())
        {
            _server.CloseStage(stage.StageId);
        }

        _listener.Dispose();
        await _listener.WhenAllSessionsFinished().WaitAsync(_options.DrainTimeout + TimeSpan.FromSeconds(1), _time).ConfigureAwait(false);
        while (_server.StageCount > 0 && _time.GetTimestamp() < deadline + _time.TimestampFrequency)
        {
            await Task.Delay(PollInterval, _time).ConfigureAwait(false);
        }

        var counters = _listener.Counters;
        _report = new TcpServeReport(EndPoint, drained, counters.ConnectionsAccepted, counters.FramesReceived, counters.FramesSent, mailboxes, queued, sessions, _pool.GetStatistics().Outstanding, counters.Snapshot(), _server.Counters.Snapshot().Where(c => c.Value != 0).ToList());
        _server.Dispose();
        return _report;
    }

    public async ValueTask DisposeAsync() => await StopAsync().ConfigureAwait(false);
}
