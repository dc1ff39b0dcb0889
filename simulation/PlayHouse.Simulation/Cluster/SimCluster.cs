using System.Buffers;
using PlayHouse.Core.Codec;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;
using PlayHouse.Core.Seams;
using PlayHouse.Simulation.Checkers;
using PlayHouse.Simulation.Clients;
using PlayHouse.Simulation.Network;

namespace PlayHouse.Simulation.Cluster;

/// <summary>
/// Makes the server side of one accepted client connection on a play server: it must take the connection as its
/// receiver and connect a session to <paramref name="server"/>. The standard is <see cref="SimSessionConnection"/>.
/// </summary>
public delegate void SimSessionFactory(SimConnection connection, PlayServer server, Utf8StringCache msgIds, SimSessionStatistics statistics, IStreamSendQueue sendQueue, SimClientTransport transport);

/// <summary>A stage type as a cluster registers it on every play server (and again after a restart).</summary>
public sealed record SimStageType(string Name, Func<IStageLink, IStage> StageFactory, Func<IActorLink, IActor> ActorFactory);

/// <summary>
/// Builds a simulated cluster: play servers, API servers, stage types, clients, the network and its faults,
/// all from one seed. Child seeds are drawn once, in a fixed order: network, then each node, then each client,
/// then the workload.
/// </summary>
public sealed class SimClusterBuilder(ulong seed)
{
    private readonly List<SimStageType> _stageTypes = [];
    private readonly List<Action<ApiServer>> _apiSetups = [];
    private int _playServers = 1;
    private int _apiServers;
    private int _clients;
    private int _clientInFlightMax = 1024;
    private IReadOnlyList<SimClientTransport> _clientTransports = [SimClientTransport.Tcp];
    private ServerOptions _serverOptions = new();
    private PathOptions _network = new();
    private Func<SimWorld, Xoshiro256StarStar, PathOptions, SimNetwork>? _networkFactory;
    private ArrayPool<byte>? _streamStores;
    private MeshSemantics _meshSemantics = MeshSemantics.Stream;
    private SimWorldOptions _worldOptions = new();
    private Func<SimCluster, RuntimeObserver>? _observer;
    private NodeParts _nodeParts = NodeParts.Standard;
    private StreamSendQueueFactory _sessionSendQueues = ConnectionSendQueue.Factory;
    private StreamSendQueueFactory _meshSendQueues = ConnectionSendQueue.Factory;
    private int? _sessionSendQueueBytesMax;
    private int? _meshSendQueueBytesMax;
    private ClientReadOptions _clientReading = new();
    private Func<int, IClientPacketQueue>? _clientPacketQueues;
    private IUnmatchedReplyPolicy? _clientReplyPolicy;
    private IReadOnlyList<string> _playServerIds = [];
    private IReadOnlyList<string> _apiServerIds = [];
    private SimSessionFactory? _sessions;

    public ulong Seed { get; } = seed;

    public SimClusterBuilder WithPlayServers(int count)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(count);
        _playServers = count;
        return this;
    }

    public SimClusterBuilder WithApiServers(int count)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(count);
        _apiServers = count;
        return this;
    }

    /// <summary>
    /// Names the servers: the first play servers take <paramref name="playServerIds"/> in order, the first API servers
    /// <paramref name="apiServerIds"/>; servers past a list keep the default names (play-N, api-N). Fault plans and
    /// options name nodes by these ids.
    /// </summary>
    public SimClusterBuilder WithNodeIds(IReadOnlyList<string> playServerIds, IReadOnlyList<string>? apiServerIds = null)
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

    public SimClusterBuilder WithClients(int count, int inFlightMax = 1024)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(count);
        _clients = count;
        _clientInFlightMax = inFlightMax;
        return this;
    }

    /// <summary>How every client's application reads what arrives (by default each packet as it arrives, no queue).</summary>
    public SimClusterBuilder WithClientReading(ClientReadOptions reading)
    {
        ArgumentNullException.ThrowIfNull(reading);
        reading.Validate();
        _clientReading = reading;
        return this;
    }

    /// <summary>The client read options set so far.</summary>
    public ClientReadOptions ClientReading => _clientReading;

    /// <summary>
    /// Makes every client's packet queue from the cap in <see cref="ClientReadOptions.PacketQueueMax"/> when packets
    /// queue; the standard one is <see cref="ClientPacketQueue"/> (the bug zoo plugs flawed twins in here).
    /// </summary>
    public SimClusterBuilder WithClientPacketQueue(Func<int, IClientPacketQueue> factory)
    {
        ArgumentNullException.ThrowIfNull(factory);
        _clientPacketQueues = factory;
        return this;
    }

    /// <summary>
    /// How the clients reach their play servers: client i takes <c>transports[i % transports.Length]</c>, so
    /// <c>WithClientTransports(Tcp, WebSocket)</c> alternates them. Every play server serves both transports at once
    /// (two endpoints into one server). The default is every client over TCP.
    /// </summary>
    public SimClusterBuilder WithClientTransports(params SimClientTransport[] transports)
    {
        ArgumentNullException.ThrowIfNull(transports);
        ArgumentOutOfRangeException.ThrowIfZero(transports.Length);
        _clientTransports = [.. transports];
        return this;
    }

    public SimClusterBuilder WithStage(string name, Func<IStageLink, IStage> stageFactory, Func<IActorLink, IActor> actorFactory)
    {
        _stageTypes.Add(new SimStageType(name, stageFactory, actorFactory));
        return this;
    }

    public SimClusterBuilder WithApiHandlers(Action<ApiServer> setup)
    {
        _apiSetups.Add(setup);
        return this;
    }

    public SimClusterBuilder WithServerOptions(ServerOptions options)
    {
        _serverOptions = options;
        return this;
    }

    public SimClusterBuilder WithNetwork(PathOptions options)
    {
        _network = options;
        return this;
    }

    /// <summary>The network options set so far (every path's defaults), so a scenario can adjust them (<c>builder.Network with { ... }</c>).</summary>
    public PathOptions Network => _network;

    /// <summary>
    /// Caps the send queue of every client session and of every mesh link (bytes); null leaves only the path's own
    /// <see cref="PathOptions.QueueCapacityBytes"/>, as real sockets have their buffers.
    /// </summary>
    public SimClusterBuilder WithSendQueueCaps(int? sessionBytesMax, int? meshBytesMax)
    {
        if (sessionBytesMax <= 0 || meshBytesMax <= 0)
        {
            throw new ArgumentOutOfRangeException(nameof(sessionBytesMax), "Send queue caps must be positive.");
        }

        _sessionSendQueueBytesMax = sessionBytesMax;
        _meshSendQueueBytesMax = meshBytesMax;
        return this;
    }

    /// <summary>
    /// The send queue of every client session on the play servers: the standard one is the connection's own, refusing
    /// bytes past its cap (the bug zoo plugs flawed twins in here).
    /// </summary>
    public SimClusterBuilder WithSessionSendQueue(StreamSendQueueFactory factory)
    {
        ArgumentNullException.ThrowIfNull(factory);
        _sessionSendQueues = factory;
        return this;
    }

    /// <summary>The send queue of every outbound mesh link; standard as for sessions (see <see cref="WithSessionSendQueue"/>).</summary>
    public SimClusterBuilder WithMeshSendQueue(StreamSendQueueFactory factory)
    {
        ArgumentNullException.ThrowIfNull(factory);
        _meshSendQueues = factory;
        return this;
    }

    /// <summary>
    /// Builds the network with <paramref name="factory"/> (world, the network's random source, the path defaults set with
    /// <see cref="WithNetwork(PathOptions)"/>) instead of a standard <see cref="SimNetwork"/>: a deliberately flawed one.
    /// </summary>
    public SimClusterBuilder WithNetwork(Func<SimWorld, Xoshiro256StarStar, PathOptions, SimNetwork> factory)
    {
        ArgumentNullException.ThrowIfNull(factory);
        _networkFactory = factory;
        return this;
    }

    /// <summary>
    /// The pool the standard network takes its stream stores from (see <see cref="Runs.RunScratch"/>); null, the default,
    /// gives the network a pool of its own. A network made by a <see cref="WithNetwork(Func{SimWorld, Xoshiro256StarStar, PathOptions, SimNetwork})"/>
    /// factory chooses its own.
    /// </summary>
    public SimClusterBuilder WithStreamStores(ArrayPool<byte>? pool)
    {
        _streamStores = pool;
        return this;
    }

    public SimClusterBuilder WithMeshSemantics(MeshSemantics semantics)
    {
        _meshSemantics = semantics;
        return this;
    }

    public SimClusterBuilder WithWorldOptions(SimWorldOptions options)
    {
        _worldOptions = options;
        return this;
    }

    /// <summary>The observer every node reports to (checkers, tracing); made once the cluster exists.</summary>
    public SimClusterBuilder WithObserver(Func<SimCluster, RuntimeObserver> observer)
    {
        _observer = observer;
        return this;
    }

    /// <summary>The components every node builds itself from (the bug zoo plugs flawed twins in here).</summary>
    public SimClusterBuilder WithNodeParts(NodeParts parts)
    {
        ArgumentNullException.ThrowIfNull(parts);
        _nodeParts = parts;
        return this;
    }

    /// <summary>
    /// How play servers serve accepted client connections (the bug zoo plugs a flawed session in here); the standard
    /// is <see cref="SimSessionConnection"/>.
    /// </summary>
    public SimClusterBuilder WithSessionConnections(SimSessionFactory factory)
    {
        ArgumentNullException.ThrowIfNull(factory);
        _sessions = factory;
        return this;
    }

    /// <summary>The node parts set so far, so that several variants can be combined (<c>builder.NodeParts with { ... }</c>).</summary>
    public NodeParts NodeParts => _nodeParts;

    /// <summary>What every client does with a reply that answers no pending request; null keeps the standard (count and drop).</summary>
    public SimClusterBuilder WithClientReplyPolicy(IUnmatchedReplyPolicy? policy)
    {
        _clientReplyPolicy = policy;
        return this;
    }

    private static void StandardSessions(SimConnection connection, PlayServer server, Utf8StringCache msgIds, SimSessionStatistics statistics, IStreamSendQueue sendQueue, SimClientTransport transport) =>
        _ = new SimSessionConnection(connection, server, msgIds, statistics, sendQueue, transport);

    public SimCluster Build()
    {
        var world = new SimWorld(Seed, _worldOptions);
        var networkRandom = world.CreateRandom();
        var network = _networkFactory is null ? new SimNetwork(world, networkRandom, _network, _streamStores) : _networkFactory(world, networkRandom, _network);
        var cluster = new SimCluster(world, network, _serverOptions, _stageTypes, _apiSetups, _meshSemantics)
        {
            NodeParts = _nodeParts,
            SessionSendQueues = _sessionSendQueues,
            MeshSendQueues = _meshSendQueues,
            ConfiguredSessionSendQueueBytesMax = _sessionSendQueueBytesMax,
            ConfiguredMeshSendQueueBytesMax = _meshSendQueueBytesMax,
            ClientReplyPolicy = _clientReplyPolicy,
            SessionFactory = _sessions ?? StandardSessions,
        };
        cluster.Observer = _observer?.Invoke(cluster) ?? new TraceObserver(world);
        for (var i = 1; i <= _playServers; i++)
        {
            cluster.AddNode(i <= _playServerIds.Count ? _playServerIds[i - 1] : $"play-{i}", SimNodeKind.Play);
        }

        for (var i = 1; i <= _apiServers; i++)
        {
            cluster.AddNode(i <= _apiServerIds.Count ? _apiServerIds[i - 1] : $"api-{i}", SimNodeKind.Api);
        }

        for (var i = 1; i <= _clients; i++)
        {
            cluster.AddClient($"client-{i}", _clientInFlightMax, _clientReading, _clientPacketQueues, _clientTransports[(i - 1) % _clientTransports.Count]);
        }

        cluster.WorkloadSeed = world.NextChildSeed();
        return cluster;
    }
}

public enum SimNodeKind
{
    Play,
    Api,
}

/// <summary>
/// One simulated server process. A crash drops its state (stages, pending requests, memory) and resets its
/// connections; a restart brings up a fresh incarnation with the same id.
/// </summary>
public sealed class SimNode
{
    internal SimNode(string nodeId, SimNodeKind kind, ulong seed)
    {
        NodeId = nodeId;
        Kind = kind;
        Seed = seed;
    }

    public string NodeId { get; }

    public SimNodeKind Kind { get; }

    public ulong Seed { get; }

    public bool IsUp { get; internal set; }

    /// <summary>1 for the first start, +1 per restart.</summary>
    public int Incarnation { get; internal set; }

    public ServerNode Server { get; internal set; } = null!;

    public PlayServer? Play => Server as PlayServer;

    public ApiServer? Api => Server as ApiServer;

    public MessagePool Pool { get; internal set; } = null!;

    public SimMeshTransport Mesh { get; internal set; } = null!;

    public SimSessionStatistics Sessions { get; internal set; } = new();

    /// <summary>The endpoint clients connect to (play servers only).</summary>
    public string ClientEndpoint => "play:" + NodeId;

    /// <summary>The endpoint WebSocket clients connect to (play servers only): the server's second transport.</summary>
    public string WebSocketEndpoint => "ws:" + NodeId;

    /// <summary>The endpoint a client of <paramref name="transport"/> connects to.</summary>
    public string EndpointFor(SimClientTransport transport) => transport == SimClientTransport.WebSocket ? WebSocketEndpoint : ClientEndpoint;

    /// <summary>Work items this incarnation's executor was handed (stage turns, continuations, posted callbacks).</summary>
    public long ExecutorWorkItems => Executor.WorkItems;

    /// <summary>Timer callbacks this incarnation's time provider ran (timers, delays, game loops).</summary>
    public long TimerFirings => Time.Firings;

    internal NodeExecutor Executor { get; set; } = null!;

    internal NodeTimeProvider Time { get; set; } = null!;

    public override string ToString() => $"{NodeId}#{Incarnation}{(IsUp ? string.Empty : " (down)")}";
}

/// <summary>A simulated cluster: its world, network, nodes and clients, and the fault verbs.</summary>
public sealed class SimCluster : IDisposable
{
    private readonly ServerOptions _serverOptions;
    private readonly IReadOnlyList<SimStageType> _stageTypes;
    private readonly IReadOnlyList<Action<ApiServer>> _apiSetups;
    private readonly MeshSemantics _meshSemantics;
    private readonly List<SimNode> _nodes = [];
    private readonly Dictionary<string, SimNode> _byId = new(StringComparer.Ordinal);
    private readonly List<SimClient> _clients = [];

    internal SimCluster(SimWorld world, SimNetwork network, ServerOptions serverOptions, IReadOnlyList<SimStageType> stageTypes, IReadOnlyList<Action<ApiServer>> apiSetups, MeshSemantics meshSemantics)
    {
        World = world;
        Network = network;
        // Every node of the cluster runs on the world's one thread (work from any other thread is an escape that
        // fails the run), so the nodes skip their internal locks.
        _serverOptions = serverOptions with { SingleThreaded = true };
        _stageTypes = stageTypes;
        _apiSetups = apiSetups;
        _meshSemantics = meshSemantics;
        ClientPool = new MessagePool(new MessagePoolOptions { CheckedMode = true, SingleThreaded = true, OnOwnershipFault = f => OnPoolFault("clients", f) });
    }

    public SimWorld World { get; }

    public SimNetwork Network { get; }

    public RuntimeObserver Observer { get; internal set; } = RuntimeObserver.None;

    /// <summary>Shared msg-id strings: bounded, keyed by bytes with an equality check.</summary>
    public Utf8StringCache MsgIds { get; } = new(singleThreaded: true);

    /// <summary>The pool the simulated clients' receive buffers come from.</summary>
    public MessagePool ClientPool { get; }

    public ulong WorkloadSeed { get; internal set; }

    public IReadOnlyList<SimNode> Nodes => _nodes;

    public IEnumerable<SimNode> PlayServers => _nodes.Where(n => n.Kind == SimNodeKind.Play);

    public IEnumerable<SimNode> ApiServers => _nodes.Where(n => n.Kind == SimNodeKind.Api);

    public IReadOnlyList<SimClient> Clients => _clients;

    public ServerOptions ServerOptions => _serverOptions;

    /// <summary>The components every node is built from (set by <see cref="SimClusterBuilder.WithNodeParts"/>).</summary>
    public NodeParts NodeParts { get; internal init; } = NodeParts.Standard;

    /// <summary>Makes each client session's send queue (<see cref="SimClusterBuilder.WithSessionSendQueue"/>).</summary>
    public StreamSendQueueFactory SessionSendQueues { get; internal init; } = ConnectionSendQueue.Factory;

    /// <summary>Makes each outbound mesh link's send queue (<see cref="SimClusterBuilder.WithMeshSendQueue"/>).</summary>
    public StreamSendQueueFactory MeshSendQueues { get; internal init; } = ConnectionSendQueue.Factory;

    /// <summary>The cap of every client session's send queue in bytes: the configured one, else the network's default path cap.</summary>
    public int SessionSendQueueBytesMax => ConfiguredSessionSendQueueBytesMax ?? Network.Defaults.QueueCapacityBytes;

    /// <summary>The cap of every mesh link's send queue in bytes: the configured one, else the network's default path cap.</summary>
    public int MeshSendQueueBytesMax => ConfiguredMeshSendQueueBytesMax ?? Network.Defaults.QueueCapacityBytes;

    internal int? ConfiguredSessionSendQueueBytesMax { get; init; }

    internal int? ConfiguredMeshSendQueueBytesMax { get; init; }
    /// <summary>What every simulated client does with a reply that answers no pending request (null: count and drop it).</summary>
    public IUnmatchedReplyPolicy? ClientReplyPolicy { get; internal init; }

    /// <summary>Hears every message of the simulated mesh, on every node and every later incarnation; null hears none.</summary>
    public IMeshTrafficObserver? MeshTraffic
    {
        get => _meshTraffic;
        set
        {
            _meshTraffic = value;
            foreach (var node in _nodes)
            {
                node.Mesh.Traffic = value;
            }
        }
    }

    private IMeshTrafficObserver? _meshTraffic;

    /// <summary>How play servers serve accepted client connections (set by <see cref="SimClusterBuilder.WithSessionConnections"/>).</summary>
    internal SimSessionFactory SessionFactory { get; init; } = null!;

    public SimNode Node(string nodeId) => _byId.TryGetValue(nodeId, out var node) ? node : throw new ArgumentException($"No node '{nodeId}' in this cluster.", nameof(nodeId));

    /// <summary>
    /// Hears every mesh frame whose recorded sender (as the receiving node's decoder resolved it) is not the node that
    /// sent it: receiving node, true sender, recorded sender. Set it before the run starts.
    /// </summary>
    public Action<string, string, string>? WrongMeshSender { get; set; }

    /// <summary>The play servers' stage registries, as the lifecycle checker reads them.</summary>
    public IStageRegistryView StageRegistries => new RegistryView(this);

    /// <summary>Pools whose ledgers must be empty at quiescence: live nodes, clients, and the network's in-flight buffers.</summary>
    public IEnumerable<(string Name, MessagePool Pool)> LivePools()
    {
        foreach (var node in _nodes.Where(n => n.IsUp))
        {
            yield return (node.NodeId, node.Pool);
        }

        yield return ("clients", ClientPool);
        yield return ("network", Network.Buffers);
    }

    // ---- Verbs ----

    /// <summary>Cuts the mesh (and client) paths between two nodes, both ways.</summary>
    public void Partition(string nodeA, string nodeB)
    {
        Network.Partition(SimMeshTransport.EndpointOf(nodeA), SimMeshTransport.EndpointOf(nodeB));
    }

    /// <summary>Cuts every path between a client and its server.</summary>
    public void PartitionClient(SimClient client, string nodeId) => Network.Partition(client.Endpoint, Node(nodeId).ClientEndpoint);

    /// <summary>Heals every partition and clog.</summary>
    public void Heal() => Network.HealAll();

    public void Clog(string nodeA, string nodeB) => Network.Clog(SimMeshTransport.EndpointOf(nodeA), SimMeshTransport.EndpointOf(nodeB));

    public void Unclog(string nodeA, string nodeB) => Network.Unclog(SimMeshTransport.EndpointOf(nodeA), SimMeshTransport.EndpointOf(nodeB));

    /// <summary>Breaks a client's connection abruptly.</summary>
    public void Disconnect(SimClient client) => Network.ResetEndpoint(client.Endpoint, "disconnected by fault plan");

    /// <summary>Kills a node: its stages, pending requests and memory are gone, its connections reset.</summary>
    /// <returns>False when the node was already down (nothing happened).</returns>
    public bool Crash(string nodeId)
    {
        var node = Node(nodeId);
        if (!node.IsUp)
        {
            return false;
        }

        node.IsUp = false;
        node.Executor.IsAlive = false;
        node.Time.IsAlive = false;
        World.Trace.Record(World.NowTicks, "node.crash", node.Incarnation, 0, 0, nodeId);

        // Checkers that key state by node forget the lost incarnation (no destroys, exits or completions follow).
        (Observer as INodeCrashAware)?.OnNodeCrashed(nodeId);
        node.Mesh.Kill();
        Network.StopListening(node.ClientEndpoint);
        Network.StopListening(node.WebSocketEndpoint);
        Network.StopListening(node.Mesh.Endpoint);
        Network.Unbind(node.Mesh.Endpoint);
        Network.ResetEndpoint(node.Mesh.Endpoint, $"{nodeId} crashed");
        Network.ResetEndpoint(node.ClientEndpoint, $"{nodeId} crashed");
        Network.ResetEndpoint(node.WebSocketEndpoint, $"{nodeId} crashed");
        return true;
    }

    /// <summary>Starts a fresh incarnation of a crashed node (empty: no stages, no sessions).</summary>
    /// <returns>False when the node was already up (nothing happened).</returns>
    public bool Restart(string nodeId)
    {
        var node = Node(nodeId);
        if (node.IsUp)
        {
            return false;
        }

        Start(node);
        World.Trace.Record(World.NowTicks, "node.restart", node.Incarnation, 0, 0, nodeId);
        return true;
    }

    public void RunFor(TimeSpan span) => World.RunFor(span);

    public void Dispose()
    {
        foreach (var client in _clients)
        {
            client.Dispose();
        }

        foreach (var node in _nodes.Where(n => n.IsUp))
        {
            node.Mesh.Dispose();
            node.Server.Dispose();
        }
    }

    /// <summary>A pool's ownership fault goes to the observer when it records them (the checkers do), named as <see cref="LivePools"/> names pools.</summary>
    private void OnPoolFault(string poolName, PoolOwnershipException fault) => (Observer as IPoolFaultAware)?.OnPoolOwnershipFault(poolName, fault);

    internal void AddNode(string nodeId, SimNodeKind kind)
    {
        var node = new SimNode(nodeId, kind, World.NextChildSeed());
        _nodes.Add(node);
        _byId.Add(nodeId, node);
        Start(node);
    }

    internal void AddClient(string name, int inFlightMax, ClientReadOptions reading, Func<int, IClientPacketQueue>? packetQueues, SimClientTransport transport)
    {
        // Each client draws its seed in order whether it uses randomness or not (only WebSocket clients do, for their
        // mask keys), so the seeds of everything drawn after them do not depend on the clients' transports.
        var seed = World.NextChildSeed();
        _clients.Add(new SimClient(Network, name, ClientPool, MsgIds, inFlightMax, reading, packetQueues, transport, seed) { UnmatchedReplies = ClientReplyPolicy });
    }

    private void Start(SimNode node)
    {
        node.Incarnation++;
        node.Executor = new NodeExecutor(World.Executor);
        node.Time = new NodeTimeProvider(World.Time);
        var poolName = node.NodeId;
        node.Pool = new MessagePool(new MessagePoolOptions { CheckedMode = true, SingleThreaded = true, Store = NodeParts.PoolStore, OnOwnershipFault = f => OnPoolFault(poolName, f) });
        node.Sessions = new SimSessionStatistics();
        var random = new Xoshiro256StarStar(node.Seed + (ulong)node.Incarnation);
        var seams = new NodeSeams(node.Time, node.Executor, random, node.Pool) { Observer = Observer, Parts = NodeParts };
        if (node.Kind == SimNodeKind.Play)
        {
            var play = new PlayServer(node.NodeId, seams, _serverOptions);
            foreach (var type in _stageTypes)
            {
                play.RegisterStage(type.Name, type.StageFactory, type.ActorFactory);
            }

            node.Server = play;
            var sessions = node.Sessions;
            Network.Listen(node.ClientEndpoint, connection => SessionFactory(connection, play, MsgIds, sessions, SessionSendQueues(Network, connection, ConfiguredSessionSendQueueBytesMax ?? int.MaxValue), SimClientTransport.Tcp));
            Network.Listen(node.WebSocketEndpoint, connection => SessionFactory(connection, play, MsgIds, sessions, SessionSendQueues(Network, connection, ConfiguredSessionSendQueueBytesMax ?? int.MaxValue), SimClientTransport.WebSocket));
        }
        else
        {
            var api = new ApiServer(node.NodeId, seams, _serverOptions);
            foreach (var setup in _apiSetups)
            {
                setup(api);
            }

            node.Server = api;
        }

        node.Mesh = new SimMeshTransport(Network, node.Server, id => _byId.ContainsKey(id), _meshSemantics, (network, connection) => MeshSendQueues(network, connection, ConfiguredMeshSendQueueBytesMax ?? int.MaxValue))
        {
            Traffic = _meshTraffic,
            WrongSender = (nodeId, trueSender, recorded) => WrongMeshSender?.Invoke(nodeId, trueSender, recorded),
        };
        node.Server.Mesh = node.Mesh;
        node.IsUp = true;
    }
}

/// <summary>The stage registries of a cluster's live play servers.</summary>
internal sealed class RegistryView(SimCluster cluster) : IStageRegistryView
{
    public bool IsRegistered(string nodeId, long stageId) =>
        cluster.Nodes.FirstOrDefault(n => n.NodeId == nodeId) is { IsUp: true, Play: { } play } && play.HasStage(stageId);

    public IEnumerable<(string NodeId, long StageId)> RegisteredStages()
    {
        foreach (var node in cluster.PlayServers.Where(n => n.IsUp))
        {
            foreach (var stage in node.Play!.GetStageStatistics())
            {
                yield return (node.NodeId, stage.StageId);
            }
        }
    }
}

/// <summary>
/// A node's executor: after a crash the node runs nothing more, neither work scheduled later nor work already
/// waiting in the world's queue (a stage turn posted at the crash's instant, which schedule exploration may run
/// after the crash). Each item waits inside a guard from a free list, so the check costs no allocation.
/// </summary>
/// <remarks>Not thread-safe; runs on the simulation thread.</remarks>
internal sealed class NodeExecutor(SimExecutor inner) : IExecutor
{
    private readonly Stack<Guard> _free = new();

    public bool IsAlive { get; set; } = true;

    /// <summary>Items handed to this executor while the node was up.</summary>
    public long WorkItems { get; private set; }

    /// <summary>Items that were queued before the crash and did not run.</summary>
    public long DroppedAfterCrash { get; private set; }

    public void Schedule(IThreadPoolWorkItem workItem)
    {
        if (!IsAlive)
        {
            return;
        }

        WorkItems++;
        var guard = _free.Count > 0 ? _free.Pop() : new Guard(this);
        guard.Item = workItem;
        inner.Schedule(guard);
    }

    private sealed class Guard(NodeExecutor owner) : IThreadPoolWorkItem
    {
        public IThreadPoolWorkItem? Item { get; set; }

        public void Execute()
        {
            var item = Item!;
            Item = null;

            // Free before running: the item may schedule again at once and take this guard.
            owner._free.Push(this);
            if (owner.IsAlive)
            {
                item.Execute();
            }
            else
            {
                owner.DroppedAfterCrash++;
            }
        }
    }
}

/// <summary>A node's view of virtual time: after a crash, the node's timers stop firing.</summary>
internal sealed class NodeTimeProvider(SimTimeProvider inner) : TimeProvider
{
    public bool IsAlive { get; set; } = true;

    /// <summary>Timer callbacks run for the node.</summary>
    public long Firings { get; private set; }

    public override long TimestampFrequency => inner.TimestampFrequency;

    public override long GetTimestamp() => inner.GetTimestamp();

    public override DateTimeOffset GetUtcNow() => inner.GetUtcNow();

    public override TimeZoneInfo LocalTimeZone => TimeZoneInfo.Utc;

    public override ITimer CreateTimer(TimerCallback callback, object? state, TimeSpan dueTime, TimeSpan period)
    {
        var guarded = new GuardedCallback(this, callback, state);
        var timer = inner.CreateTimer(static s => ((GuardedCallback)s!).Invoke(), guarded, dueTime, period);
        guarded.Timer = timer;
        return timer;
    }

    private sealed class GuardedCallback(NodeTimeProvider owner, TimerCallback callback, object? state)
    {
        public ITimer? Timer { get; set; }

        public void Invoke()
        {
            if (owner.IsAlive)
            {
                owner.Firings++;
                callback(state);
                return;
            }

            // The node crashed: its periodic timers (game loops, sweeps) would otherwise fire into the void forever
            // and the world would never go quiet, so each stops at its first firing after the crash.
            Timer?.Dispose();
        }
    }
}
