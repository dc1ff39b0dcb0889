using System.Net;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;
using PlayHouse.Core.Seams;

namespace PlayHouse.Transport.Tcp;

/// <summary>A stage type as the cluster registers it on every play server.</summary>
public sealed record TcpStageType(string Name, Func<IStageLink, IStage> StageFactory, Func<IActorLink, IActor> ActorFactory);

public enum TcpNodeKind
{
    Play,
    Api,
}

/// <summary>
/// Builds a real-socket cluster on loopback, mirroring <c>SimClusterBuilder</c>: play servers (each with a client
/// listener) and API servers, all joined by the TCP mesh, on the real seams (system clock, thread pool, entropy).
/// This is the composition root of real mode.
/// </summary>
public sealed class TcpClusterBuilder
{
    private readonly List<TcpStageType> _stageTypes = [];
    private readonly List<Action<ApiServer>> _apiSetups = [];
    private int _playServers = 1;
    private int _apiServers;
    private ServerOptions _serverOptions = new();
    private TcpTransportOptions _transportOptions = new();
    private TcpMeshOptions _meshOptions = new();
    private bool _checkedPools = true;
    private TimeProvider? _time;
    private ILoggerFactory? _loggers;
    private Func<TcpCluster, RuntimeObserver>? _observer;
    private IReadOnlyList<string> _playServerIds = [];
    private IReadOnlyList<string> _apiServerIds = [];
    private Func<string, string, IPEndPoint, IPEndPoint>? _meshRoute;
    private NodeParts _parts = NodeParts.Standard;

    public TcpClusterBuilder WithPlayServers(int count)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(count);
        _playServers = count;
        return this;
    }

    public TcpClusterBuilder WithApiServers(int count)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(count);
        _apiServers = count;
        return this;
    }

    /// <summary>
    /// Names the servers: the first play servers take <paramref name="playServerIds"/> in order, the first API servers
    /// <paramref name="apiServerIds"/>; servers past a list keep the default names (play-N, api-N).
    /// </summary>
    public TcpClusterBuilder WithNodeIds(IReadOnlyList<string> playServerIds, IReadOnlyList<string>? apiServerIds = null)
    {
        ArgumentNullException.ThrowIfNull(playServerIds);
        apiServerIds ??= [];
        var all = playServerIds.Concat(apiServerIds).ToList();
        if (all.Any(string.IsNullOrEmpty) || all.Distinct(StringComparer.Ordinal).Count() != all.Count)
        {
            throw new ArgumentException($"Node ids must be non-empty and distinct: {string.Join(", ", all)}.", nameof(playServerIds));
        }

        _playServerIds = [.. playServerIds];
        _apiServerIds = [.. apiServerIds];
        return this;
    }

    public TcpClusterBuilder WithStage(string name, Func<IStageLink, IStage> stageFactory, Func<IActorLink, IActor> actorFactory)
    {
        _stageTypes.Add(new TcpStageType(name, stageFactory, actorFactory));
        return this;
    }

    public TcpClusterBuilder WithApiHandlers(Action<ApiServer> setup)
    {
        _apiSetups.Add(setup);
        return this;
    }

    public TcpClusterBuilder WithServerOptions(ServerOptions options)
    {
        _serverOptions = options;
        return this;
    }

    public TcpClusterBuilder WithTransportOptions(TcpTransportOptions options)
    {
        _transportOptions = options;
        return this;
    }

    public TcpClusterBuilder WithMeshOptions(TcpMeshOptions options)
    {
        _meshOptions = options;
        return this;
    }

    /// <summary>Checked pools keep a ledger of every buffer (on by default; benchmarks turn it off).</summary>
    public TcpClusterBuilder WithCheckedPools(bool checkedPools)
    {
        _checkedPools = checkedPools;
        return this;
    }

    /// <summary>The clock of the nodes and transports; the system clock by default.</summary>
    public TcpClusterBuilder WithTime(TimeProvider time)
    {
        _time = time;
        return this;
    }

    public TcpClusterBuilder WithLogging(ILoggerFactory loggers)
    {
        _loggers = loggers;
        return this;
    }

    /// <summary>The observer every node reports to (checkers); made once the cluster object exists, before nodes start.</summary>
    public TcpClusterBuilder WithObserver(Func<TcpCluster, RuntimeObserver> observer)
    {
        _observer = observer;
        return this;
    }

    /// <summary>
    /// Routes every mesh link through an address of the caller's choosing (a fault proxy): for the link that node
    /// <c>from</c> opens to node <c>to</c>, whose mesh listens at the given endpoint, the endpoint to connect to
    /// instead. Asked again for a restarted node's links, when it must give the same answer. Null connects directly.
    /// </summary>
    public TcpClusterBuilder WithMeshRoute(Func<string, string, IPEndPoint, IPEndPoint>? route)
    {
        _meshRoute = route;
        return this;
    }

    /// <summary>The parts every node is built with (a flawed twin's, in tests); the standard ones by default.</summary>
    public TcpClusterBuilder WithNodeParts(NodeParts parts)
    {
        _parts = parts ?? throw new ArgumentNullException(nameof(parts));
        return this;
    }

    /// <summary>Starts every node on 127.0.0.1 with OS-chosen ports and joins them into one mesh.</summary>
    public TcpCluster Build()
    {
        var cluster = new TcpCluster(_time ?? RealTime.System, _loggers ?? NullLoggerFactory.Instance, _transportOptions, _meshOptions)
        {
            MeshRoute = _meshRoute,
            StageTypes = [.. _stageTypes],
            ApiSetups = [.. _apiSetups],
            ServerOptions = _serverOptions,
            CheckedPools = _checkedPools,
            Parts = _parts,
        };
        cluster.Observer = _observer?.Invoke(cluster) ?? RuntimeObserver.None;
        try
        {
            for (var i = 1; i <= _playServers; i++)
            {
                cluster.AddNode(i <= _playServerIds.Count ? _playServerIds[i - 1] : $"play-{i}", TcpNodeKind.Play);
            }

            for (var i = 1; i <= _apiServers; i++)
            {
                cluster.AddNode(i <= _apiServerIds.Count ? _apiServerIds[i - 1] : $"api-{i}", TcpNodeKind.Api);
            }

            cluster.JoinMesh();
        }
        catch
        {
            cluster.Stop();
            throw;
        }

        return cluster;
    }
}

/// <summary>One server process of a <see cref="TcpCluster"/>.</summary>
public sealed class TcpNode
{
    internal TcpNode(string nodeId, TcpNodeKind kind, ServerNode server, MessagePool pool, TcpMeshTransport mesh, TcpClientListener? listener, IncarnationObserver observer, IncarnationExecutor executor, int incarnation)
    {
        Observer = observer;
        Executor = executor;
        Incarnation = incarnation;
        NodeId = nodeId;
        Kind = kind;
        Server = server;
        Pool = pool;
        Mesh = mesh;
        Listener = listener;
    }

    public string NodeId { get; }

    public TcpNodeKind Kind { get; }

    /// <summary>1 for the node as built, one more for each restart.</summary>
    public int Incarnation { get; }

    /// <summary>False once this incarnation crashed (<see cref="TcpCluster.Crash"/>); the cluster then holds it until a restart replaces it.</summary>
    public bool IsUp { get; internal set; } = true;

    internal IncarnationObserver Observer { get; }

    internal IncarnationExecutor Executor { get; }

    public ServerNode Server { get; }

    public PlayServer? Play => Server as PlayServer;

    public ApiServer? Api => Server as ApiServer;

    public MessagePool Pool { get; }

    public TcpMeshTransport Mesh { get; }

    /// <summary>The client listener (play servers only).</summary>
    public TcpClientListener? Listener { get; }

    /// <summary>Where clients connect (play servers only).</summary>
    public IPEndPoint? ClientEndPoint => Listener?.LocalEndPoint;

    public override string ToString() => $"{NodeId} (clients {ClientEndPoint}, mesh {Mesh.LocalEndPoint})";
}

/// <summary>
/// A running real-socket cluster on loopback: its nodes, their client listeners and mesh, and helpers to connect
/// clients and to wind everything down to quiescence so the pool ledgers can be checked.
/// </summary>
/// <remarks>Thread-safe for the verbs; build and stop from one thread.</remarks>
public sealed class TcpCluster : IAsyncDisposable
{
    /// <summary>How often a drain or completion with no event to wait on is checked.</summary>
    private static readonly TimeSpan PollInterval = TimeSpan.FromMilliseconds(5);

    // Copied on write: a restart replaces a node while other threads enumerate the nodes.
    private readonly Lock _nodesGate = new();
    private volatile TcpNode[] _nodes = [];
    private readonly System.Collections.Concurrent.ConcurrentDictionary<string, TcpNode> _byId = new(StringComparer.Ordinal);
    private readonly ILoggerFactory _loggers;
    private readonly TcpTransportOptions _transportOptions;
    private readonly TcpMeshOptions _meshOptions;
    private bool _stopped;

    internal TcpCluster(TimeProvider time, ILoggerFactory loggers, TcpTransportOptions transportOptions, TcpMeshOptions meshOptions)
    {
        Time = time;
        _loggers = loggers;
        _transportOptions = transportOptions;
        _meshOptions = meshOptions;
    }

    public TimeProvider Time { get; }

    public RuntimeObserver Observer { get; internal set; } = RuntimeObserver.None;

    internal Func<string, string, IPEndPoint, IPEndPoint>? MeshRoute { get; init; }

    internal IReadOnlyList<TcpStageType> StageTypes { get; init; } = [];

    internal IReadOnlyList<Action<ApiServer>> ApiSetups { get; init; } = [];

    internal ServerOptions ServerOptions { get; init; } = new();

    internal bool CheckedPools { get; init; } = true;

    internal NodeParts Parts { get; init; } = NodeParts.Standard;

    public IReadOnlyList<TcpNode> Nodes => _nodes;

    public IEnumerable<TcpNode> PlayServers => _nodes.Where(n => n.Kind == TcpNodeKind.Play);

    /// <summary>The play servers that are up (not crashed).</summary>
    public IEnumerable<TcpNode> LivePlayServers => PlayServers.Where(n => n.IsUp);

    public IEnumerable<TcpNode> ApiServers => _nodes.Where(n => n.Kind == TcpNodeKind.Api);

    /// <summary>The pool client connectors made by <see cref="ConnectClientAsync"/> decode into (checked).</summary>
    public MessagePool ClientPool { get; } = new(new MessagePoolOptions { CheckedMode = true, Name = "tcp-clients" });

    public TcpNode Node(string nodeId) => _byId.TryGetValue(nodeId, out var node) ? node : throw new ArgumentException($"No node '{nodeId}' in this cluster.", nameof(nodeId));

    /// <summary>Pools whose ledgers must be empty at quiescence: every node's and the clients'.</summary>
    public IEnumerable<(string Name, MessagePool Pool)> LivePools()
    {
        foreach (var node in _nodes.Where(n => n.IsUp))
        {
            yield return (node.NodeId, node.Pool);
        }

        yield return ("clients", ClientPool);
    }

    /// <summary>Connects a client connector to a play server (the first one by default).</summary>
    public Task<TcpPlayClient> ConnectClientAsync(string? playNodeId = null, TcpPlayClientOptions? options = null, CancellationToken cancellationToken = default)
    {
        var node = playNodeId is null ? PlayServers.First() : Node(playNodeId);
        var endPoint = node.ClientEndPoint ?? throw new InvalidOperationException($"{node.NodeId} takes no clients.");
        return TcpPlayClient.ConnectAsync(endPoint, (options ?? new TcpPlayClientOptions()) with { Pool = options?.Pool ?? ClientPool, Time = options?.Time ?? Time }, cancellationToken);
    }

    /// <summary>Resets the mesh link from <paramref name="fromNodeId"/> to <paramref name="toNodeId"/>; the next send reconnects.</summary>
    public bool BreakMeshLink(string fromNodeId, string toNodeId) => Node(fromNodeId).Mesh.BreakLink(toNodeId);

    /// <summary>
    /// Crashes a node as a killed process: its client sessions are reset with nothing drained or sent, it stops
    /// accepting, its mesh links close, and its server is gone with what it held (stages, mailboxes, requests). Its
    /// incarnation reports nothing more to the observer. The node stays in <see cref="Nodes"/>, down, until
    /// <see cref="Restart"/>; its pool leaves <see cref="LivePools"/>, as the process's memory would.
    /// </summary>
    /// <returns>False when the node was already down (nothing happened).</returns>
    public bool Crash(string nodeId)
    {
        TcpNode node;
        lock (_nodesGate)
        {
            node = Node(nodeId);
            if (!node.IsUp)
            {
                return false;
            }

            node.IsUp = false;
        }

        // Silence first, then stop: what the abort sets off (disconnects, failed requests) must not run or report.
        node.Observer.Mute();
        node.Executor.Kill();
        node.Listener?.Abort($"{nodeId} crashed");
        node.Mesh.Dispose();
        node.Server.Dispose();
        return true;
    }

    /// <summary>
    /// Starts a fresh, empty incarnation of a crashed node on the same ports (client listener and mesh), so clients
    /// and peers reach it again at the addresses they know; its links to its peers take the same routes.
    /// </summary>
    /// <returns>False when the node was up (nothing happened).</returns>
    public bool Restart(string nodeId)
    {
        lock (_nodesGate)
        {
            var old = Node(nodeId);
            if (old.IsUp || _stopped)
            {
                return false;
            }

            var node = CreateNode(nodeId, old.Kind, old.Incarnation + 1, old.Mesh.LocalEndPoint!, old.ClientEndPoint);
            var nodes = (TcpNode[])_nodes.Clone();
            nodes[Array.IndexOf(nodes, old)] = node;
            _nodes = nodes;
            _byId[nodeId] = node;
            foreach (var peer in _nodes.Where(p => !ReferenceEquals(p, node)))
            {
                node.Mesh.AddPeer(peer.NodeId, RouteOf(nodeId, peer));
            }

            return true;
        }
    }

    /// <summary>
    /// Winds down to quiescence: closes client sessions, waits for every session to return its buffers, closes
    /// every stage and waits until stages are gone and nothing is in flight, then stops the mesh and waits for its
    /// links to return their buffers, or until <paramref name="timeout"/> passes. Returns true when everything went
    /// quiet in time; the cluster takes no more traffic after it.
    /// </summary>
    public async Task<bool> QuiesceAsync(TimeSpan timeout, CancellationToken cancellationToken = default)
    {
        var deadline = Time.GetTimestamp() + (long)(timeout.Ticks * (double)Time.TimestampFrequency / TimeSpan.TicksPerSecond);
        foreach (var node in LivePlayServers)
        {
            node.Listener!.CloseAll(SessionCloseReason.ServerStopping, "cluster winding down");
        }

        foreach (var node in LivePlayServers)
        {
            if (!await WaitAsync(node.Listener!.WhenAllSessionsFinished(), deadline, cancellationToken).ConfigureAwait(false))
            {
                return false;
            }
        }

        foreach (var node in LivePlayServers)
        {
            foreach (var stage in node.Play!.GetStageStatistics())
            {
                node.Play.CloseStage(stage.StageId);
            }
        }

        if (!await PollAsync(IsQuiet, deadline, cancellationToken).ConfigureAwait(false))
        {
            return false;
        }

        // Mesh links hold buffers while open; stopping the mesh returns them, so the ledgers can be checked.
        foreach (var node in _nodes.Where(n => n.IsUp))
        {
            node.Mesh.Dispose();
        }

        foreach (var node in _nodes.Where(n => n.IsUp))
        {
            if (!await WaitAsync(node.Mesh.WhenAllLinksFinished(), deadline, cancellationToken).ConfigureAwait(false))
            {
                return false;
            }
        }

        return true;
    }

    /// <summary>True when no stage, no pending or unanswered request, and no session is left on any node.</summary>
    public bool IsQuiet() =>
        _nodes.Where(n => n.IsUp).All(n => n.Server.PendingRequestCount == 0 && n.Server.UnansweredRequestCount == 0
            && (n.Play is null || (n.Play.StageCount == 0 && n.Play.SessionCount == 0 && n.Listener!.UnfinishedSessionCount == 0)));

    public async ValueTask DisposeAsync()
    {
        Stop();
        foreach (var node in LivePlayServers)
        {
            await WaitAsync(node.Listener!.WhenAllSessionsFinished(), Time.GetTimestamp() + Time.TimestampFrequency * 10, CancellationToken.None).ConfigureAwait(false);
        }
    }

    internal void Stop()
    {
        if (_stopped)
        {
            return;
        }

        _stopped = true;
        foreach (var node in _nodes.Where(n => n.IsUp))
        {
            node.Listener?.Dispose();
            node.Mesh.Dispose();
            node.Server.Dispose();
        }
    }

    internal void AddNode(string nodeId, TcpNodeKind kind)
    {
        var node = CreateNode(nodeId, kind, incarnation: 1, new IPEndPoint(IPAddress.Loopback, 0), kind == TcpNodeKind.Play ? new IPEndPoint(IPAddress.Loopback, 0) : null);
        lock (_nodesGate)
        {
            _nodes = [.. _nodes, node];
            _byId.TryAdd(nodeId, node);
        }
    }

    private TcpNode CreateNode(string nodeId, TcpNodeKind kind, int incarnation, IPEndPoint meshBindTo, IPEndPoint? clientBindTo)
    {
        if (ServerOptions.SingleThreaded)
        {
            // Each incarnation's executor wraps the ThreadPool's, which the node's own check would no longer see.
            throw new ArgumentException($"Node {nodeId}: ServerOptions.SingleThreaded needs a single-threaded executor, not the ThreadPool executor.");
        }

        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = CheckedPools, Name = nodeId });
        var observer = new IncarnationObserver(Observer);
        var executor = new IncarnationExecutor(ThreadPoolExecutor.Instance);
        var seams = new NodeSeams(Time, executor, EntropyRandomSource.Create(), pool) { Observer = observer, Parts = Parts };
        ServerNode server;
        TcpClientListener? listener = null;
        if (kind == TcpNodeKind.Play)
        {
            var play = new PlayServer(nodeId, seams, ServerOptions);
            foreach (var type in StageTypes)
            {
                play.RegisterStage(type.Name, type.StageFactory, type.ActorFactory);
            }

            server = play;
            listener = new TcpClientListener(play, _transportOptions, _loggers.CreateLogger("PlayHouse.Transport.Tcp." + nodeId), Time);
        }
        else
        {
            var api = new ApiServer(nodeId, seams, ServerOptions);
            foreach (var setup in ApiSetups)
            {
                setup(api);
            }

            server = api;
        }

        var mesh = new TcpMeshTransport(server, _meshOptions, _loggers.CreateLogger("PlayHouse.Transport.Tcp.Mesh." + nodeId), Time);
        server.Mesh = mesh;
        var node = new TcpNode(nodeId, kind, server, pool, mesh, listener, observer, executor, incarnation);
        try
        {
            mesh.Start(meshBindTo);
            if (clientBindTo is not null)
            {
                listener!.Start(clientBindTo);
            }
        }
        catch
        {
            listener?.Dispose();
            mesh.Dispose();
            server.Dispose();
            throw;
        }

        return node;
    }

    /// <summary>Where node <paramref name="fromNodeId"/> connects to reach <paramref name="peer"/>'s mesh: its own endpoint, or the route's.</summary>
    private IPEndPoint RouteOf(string fromNodeId, TcpNode peer)
    {
        var endPoint = peer.Mesh.LocalEndPoint!;
        return MeshRoute?.Invoke(fromNodeId, peer.NodeId, endPoint) ?? endPoint;
    }

    internal void JoinMesh()
    {
        foreach (var node in _nodes)
        {
            foreach (var peer in _nodes)
            {
                if (!ReferenceEquals(node, peer))
                {
                    node.Mesh.AddPeer(peer.NodeId, RouteOf(node.NodeId, peer));
                }
            }
        }
    }

    private async Task<bool> WaitAsync(Task task, long deadlineTimestamp, CancellationToken cancellationToken)
    {
        var remaining = Time.GetElapsedTime(Time.GetTimestamp(), deadlineTimestamp);
        if (remaining <= TimeSpan.Zero)
        {
            return task.IsCompleted;
        }

        try
        {
            await task.WaitAsync(remaining, Time, cancellationToken).ConfigureAwait(false);
            return true;
        }
        catch (TimeoutException)
        {
            return false;
        }
    }

    private async Task<bool> PollAsync(Func<bool> condition, long deadlineTimestamp, CancellationToken cancellationToken)
    {
        // Quiescence has no event to wait on (stage turns end on the thread pool), so it is checked every few ms.
        while (!condition())
        {
            if (Time.GetTimestamp() >= deadlineTimestamp)
            {
                return false;
            }

            await Task.Delay(PollInterval, Time, cancellationToken).ConfigureAwait(false);
        }

        return true;
    }
}
