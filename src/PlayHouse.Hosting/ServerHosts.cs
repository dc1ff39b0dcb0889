using System.Globalization;
using System.Net;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;
using PlayHouse.Core.Seams;
using PlayHouse.Transport.Tcp;

namespace PlayHouse.Hosting;

/// <summary>What a graceful stop left undone: everything it had to drop when the drain timeout ran out, and what it closed.</summary>
public sealed record ShutdownReport(
    string NodeId,
    bool Drained,
    TimeSpan Elapsed,
    int SessionsClosed,
    int StagesClosed,
    long MailboxMessagesDropped,
    long UnansweredRequests,
    long PendingRequestsAbandoned,
    long SendBytesDropped,
    long RequestsRefusedWhileStopping)
{
    /// <summary>True when the stop dropped any message, request or queued byte.</summary>
    public bool DroppedAnything => MailboxMessagesDropped + UnansweredRequests + PendingRequestsAbandoned + SendBytesDropped > 0;

    public override string ToString() => string.Create(
        CultureInfo.InvariantCulture,
        $"{NodeId} stopped in {Elapsed.TotalMilliseconds:F0} ms, {(Drained ? "drained" : "drain timed out")}: dropped {MailboxMessagesDropped} mailbox message(s), {UnansweredRequests} unanswered request(s), {PendingRequestsAbandoned} pending outgoing request(s), {SendBytesDropped} queued send byte(s); closed {SessionsClosed} session(s) and {StagesClosed} stage(s); refused {RequestsRefusedWhileStopping} client message(s) while stopping");
}

/// <summary>Stage types a hosted play server registers; filled by <see cref="PlayServerBuilder"/>.</summary>
public sealed class PlayServerBuilder
{
    internal List<Action<PlayServer, IServiceProvider>> Registrations { get; } = [];

    /// <summary>Registers a stage type whose stage and actor are made by the container (their constructors take the link).</summary>
    public PlayServerBuilder UseStage<TStage, TActor>(string stageType)
        where TStage : class, IStage
        where TActor : class, IActor
    {
        Registrations.Add((server, services) => server.RegisterStage(
            stageType,
            link => ActivatorUtilities.CreateInstance<TStage>(services, link),
            link => ActivatorUtilities.CreateInstance<TActor>(services, link)));
        return this;
    }

    /// <summary>Registers a stage type with explicit factories.</summary>
    public PlayServerBuilder UseStage(string stageType, Func<IStageLink, IStage> stageFactory, Func<IActorLink, IActor> actorFactory)
    {
        Registrations.Add((server, _) => server.RegisterStage(stageType, stageFactory, actorFactory));
        return this;
    }
}

/// <summary>Handlers a hosted API server registers; filled by <see cref="ApiServerBuilder"/>.</summary>
public sealed class ApiServerBuilder
{
    internal List<Action<ApiServer, IServiceProvider>> Registrations { get; } = [];

    public ApiServerBuilder Handle(string msgId, ApiHandler handler)
    {
        Registrations.Add((server, _) => server.Handle(msgId, handler));
        return this;
    }
}

/// <summary>
/// The shared life of a hosted server: the seams (system clock unless the container has a <see cref="TimeProvider"/>,
/// the thread pool, entropy), the optional TCP mesh, and the graceful stop: stop accepting, refuse new client
/// requests, wait up to the drain timeout for mailboxes, requests and send queues to empty, then close everything
/// and report what was dropped.
/// </summary>
public abstract class ServerHostBase : IHostedService, IDisposable
{
    /// <summary>How often a drain or completion with no event to wait on is checked.</summary>
    private static readonly TimeSpan PollInterval = TimeSpan.FromMilliseconds(5);

    private readonly ILoggerFactory _loggers;
    private readonly IServiceProvider _services;
    private int _started;

    private protected ServerHostBase(ServerHostOptions options, IServiceProvider services, ILoggerFactory loggers)
    {
        OptionsBase = options;
        _services = services;
        _loggers = loggers;
        Logger = loggers.CreateLogger(GetType().FullName ?? nameof(ServerHostBase));
#pragma warning disable RS0030 // Real-mode composition root: a hosted server runs on the system clock unless the container supplies another.
        Time = services.GetService<TimeProvider>() ?? TimeProvider.System;
#pragma warning restore RS0030
    }

    public TimeProvider Time { get; }

    /// <summary>The running node (null before start).</summary>
    public ServerNode? Node { get; private set; }

    public TcpMeshTransport? Mesh { get; private set; }

    /// <summary>Where the mesh listens (null without a mesh or before start).</summary>
    public IPEndPoint? MeshEndPoint => Mesh?.LocalEndPoint;

    /// <summary>The report of the last graceful stop (null until one ran).</summary>
    public ShutdownReport? LastShutdownReport { get; private set; }

    /// <summary>Completes with the report when a graceful stop finishes.</summary>
    public Task<ShutdownReport> Stopped => _stopped.Task;

    protected ILogger Logger { get; }

    private protected ServerHostOptions OptionsBase { get; }

    private readonly TaskCompletionSource<ShutdownReport> _stopped = new(TaskCreationOptions.RunContinuationsAsynchronously);

    public Task StartAsync(CancellationToken cancellationToken)
    {
        if (Interlocked.Exchange(ref _started, 1) != 0)
        {
            throw new InvalidOperationException($"{OptionsBase.NodeId} was already started.");
        }

        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = OptionsBase.CheckedPool, Name = OptionsBase.NodeId });
        var seams = new NodeSeams(Time, ThreadPoolExecutor.Instance, EntropyRandomSource.Create(), pool);
        var node = CreateNode(seams, _services);
        Node = node;
        if (OptionsBase.MeshPort >= 0)
        {
            var mesh = new TcpMeshTransport(node, logger: _loggers.CreateLogger("PlayHouse.Transport.Tcp.Mesh"), time: Time);
            mesh.Start(new IPEndPoint(OptionsBase.ParseBindAddress(), OptionsBase.MeshPort));
            foreach (var (peerId, endPoint) in OptionsBase.ParsePeers())
            {
                mesh.AddPeer(peerId, endPoint);
            }

            node.Mesh = mesh;
            Mesh = mesh;
            Logger.LogInformation("{NodeId} mesh listening on {EndPoint} with {Peers} peer(s)", node.NodeId, mesh.LocalEndPoint, OptionsBase.Peers.Count);
        }

        StartListening();
        return Task.CompletedTask;
    }

    public async Task StopAsync(CancellationToken cancellationToken)
    {
        var node = Node;
        if (node is null || LastShutdownReport is not null)
        {
            return;
        }

        var started = Time.GetTimestamp();
        BeginDrain();
        var drained = await DrainAsync(node, cancellationToken).ConfigureAwait(false);

        // What is still queued now is what the stop drops.
        var mailboxes = MailboxMessages();
        var unanswered = node.UnansweredRequestCount;
        var pending = node.PendingRequestCount;
        var queuedBytes = QueuedSendBytes();
        var (sessions, stages, refused) = CloseEverything();
        Mesh?.Dispose();
        node.Dispose();

        var report = new ShutdownReport(node.NodeId, drained, Time.GetElapsedTime(started), sessions, stages, mailboxes, unanswered, pending, queuedBytes, refused);
        LastShutdownReport = report;
        if (report.DroppedAnything)
        {
            Logger.LogWarning("{Report}", report.ToString());
        }
        else
        {
            Logger.LogInformation("{Report}", report.ToString());
        }

        _stopped.TrySetResult(report);
    }

    /// <summary>Releases sockets and the node without draining (a host disposed without being stopped).</summary>
    public void Dispose()
    {
        DisposeListeners();
        Mesh?.Dispose();
        Node?.Dispose();
        GC.SuppressFinalize(this);
    }

    private protected virtual void DisposeListeners()
    {
    }

    private protected abstract ServerNode CreateNode(NodeSeams seams, IServiceProvider services);

    private protected virtual void StartListening()
    {
    }

    private protected virtual void BeginDrain()
    {
    }

    private protected virtual long MailboxMessages() => 0;

    private protected virtual long QueuedSendBytes() => 0;

    private protected virtual (int Sessions, int Stages, long Refused) CloseEverything() => (0, 0, 0);

    private protected virtual bool IsDrained(ServerNode node) =>
        node.UnansweredRequestCount == 0 && node.PendingRequestCount == 0 && (node is not PlayServer play || play.HandlersInProgress == 0);

    private async Task<bool> DrainAsync(ServerNode node, CancellationToken cancellationToken)
    {
        var deadline = Time.GetTimestamp() + (long)(OptionsBase.DrainTimeout.Ticks * (double)Time.TimestampFrequency / TimeSpan.TicksPerSecond);
        try
        {
            // Stage turns end on the thread pool with no event to wait on, so the drain is checked every few ms.
            while (!(IsDrained(node) && MailboxMessages() == 0 && QueuedSendBytes() == 0))
            {
                if (Time.GetTimestamp() >= deadline)
                {
                    return false;
                }

                await Task.Delay(PollInterval, Time, cancellationToken).ConfigureAwait(false);
            }

            return true;
        }
        catch (OperationCanceledException)
        {
            // The host's own shutdown timeout ran out first: stop now and report what is left.
            return false;
        }
    }
}

/// <summary>A play server as a hosted service: stages, the TCP client listener, and the optional mesh.</summary>
public sealed class PlayServerHost : ServerHostBase
{
    private readonly PlayServerHostOptions _options;
    private readonly PlayServerBuilder _builder;

    public PlayServerHost(IOptions<PlayServerHostOptions> options, PlayServerBuilder builder, IServiceProvider services, ILoggerFactory loggers)
        : base(options.Value, services, loggers)
    {
        _options = options.Value;
        _builder = builder;
    }

    public PlayServer? Server => Node as PlayServer;

    public TcpClientListener? Listener { get; private set; }

    /// <summary>Where clients connect (null before start).</summary>
    public IPEndPoint? ClientEndPoint => Listener?.LocalEndPoint;

    private protected override ServerNode CreateNode(NodeSeams seams, IServiceProvider services)
    {
        var server = new PlayServer(_options.NodeId, seams, _options.ToServerOptions());
        foreach (var register in _builder.Registrations)
        {
            register(server, services);
        }

        return server;
    }

    private protected override void StartListening()
    {
        Listener = new TcpClientListener(Server!, _options.ToTransportOptions(), Logger, Time);
        Listener.Start(new IPEndPoint(_options.ParseBindAddress(), _options.Port));
    }

    private protected override void BeginDrain() => Listener?.BeginDrain();

    private protected override void DisposeListeners() => Listener?.Dispose();

    private protected override long MailboxMessages() => Server?.GetStageStatistics().Sum(s => (long)s.MailboxLength) ?? 0;

    private protected override long QueuedSendBytes() => Listener?.QueuedBytes ?? 0;

    private protected override (int Sessions, int Stages, long Refused) CloseEverything()
    {
        var sessions = Listener?.CloseAll(SessionCloseReason.ServerStopping, "the server is stopping") ?? 0;
        var stages = 0;
        foreach (var stage in Server!.GetStageStatistics())
        {
            if (Server.CloseStage(stage.StageId))
            {
                stages++;
            }
        }

        Listener?.Dispose();
        return (sessions, stages, Listener?.Counters.RefusedWhileStopping ?? 0);
    }
}

/// <summary>An API server as a hosted service, reachable over the TCP mesh.</summary>
public sealed class ApiServerHost : ServerHostBase
{
    private readonly ApiServerHostOptions _options;
    private readonly ApiServerBuilder _builder;

    public ApiServerHost(IOptions<ApiServerHostOptions> options, ApiServerBuilder builder, IServiceProvider services, ILoggerFactory loggers)
        : base(options.Value, services, loggers)
    {
        _options = options.Value;
        _builder = builder;
    }

    public ApiServer? Server => Node as ApiServer;

    private protected override ServerNode CreateNode(NodeSeams seams, IServiceProvider services)
    {
        var server = new ApiServer(_options.NodeId, seams, _options.ToServerOptions());
        foreach (var register in _builder.Registrations)
        {
            register(server, services);
        }

        return server;
    }
}
