using System.Globalization;
using System.Net.Security;
using System.Text;
using System.Text.Json;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;
using PlayHouse.Core.Seams;
using PlayHouse.Fixtures.Scenarios;
using PlayHouse.Fixtures.Workload;
using PlayHouse.Simulation.Checkers;
using PlayHouse.Simulation.Metrics;
using PlayHouse.Simulation.Runs;
using PlayHouse.Transport.Tcp;

namespace PlayHouse.Sim.Tcp;

/// <summary>The outcome of one scenario run over loopback TCP.</summary>
public sealed record TcpScenarioReport
{
    public required string Scenario { get; init; }

    public required SimOptions Options { get; init; }

    public bool Passed => Failure is null;

    /// <summary>Why the run failed (first checker violation, a timeout, or a crash); null when it passed.</summary>
    public string? Failure { get; init; }

    /// <summary>The runner's exit code for this outcome, as in simulation: see <see cref="RunExitCodes"/>.</summary>
    public int ExitCode { get; init; }

    public string Outcome => RunExitCodes.Describe(ExitCode);

    public double WallSeconds { get; init; }

    public long RequestsIssued { get; init; }

    public long RequestsSucceeded { get; init; }

    public long RequestsFailed { get; init; }

    public long RttSamples { get; init; }

    public double RttMsP50 { get; init; }

    public double RttMsP99 { get; init; }

    /// <summary>Replies whose RTT-tracker verdict the <see cref="PlayHouse.Fixtures.Workload.RttTrackerChecker"/> judged (every answered request).</summary>
    public long RttRepliesJudged { get; init; }

    public IReadOnlyList<CheckerVerdict> Verdicts { get; init; } = [];

    public IReadOnlyList<PoolReport> Pools { get; init; } = [];

    public IReadOnlyList<string> QueueHighWaters { get; init; } = [];

    public IReadOnlyList<KeyValuePair<string, long>> ServerCounters { get; init; } = [];

    public IReadOnlyList<KeyValuePair<string, long>> TransportCounters { get; init; } = [];

    /// <summary>Fault steps real mode cannot apply (partitions, clogs, latency and loss, crashes), listed, not silently dropped.</summary>
    public IReadOnlyList<string> SkippedFaults { get; init; } = [];

    /// <summary>
    /// Options this run did not honour, as key=value: simulated-network and virtual-time options set away from the
    /// scenario's defaults (see <see cref="TcpScenarioRunner.IgnoredOptionKeys"/>), and a workload mode the scenario's
    /// TCP shape overrides.
    /// </summary>
    public IReadOnlyList<string> IgnoredOptions { get; init; } = [];

    /// <summary>The report as plain key=value lines.</summary>
    public string ToText()
    {
        var text = new StringBuilder();
        void Line(string key, object? value) => text.Append(key).Append('=').Append(Convert.ToString(value, CultureInfo.InvariantCulture)).Append('\n');
        Line("scenario", Scenario);
        Line("mode", "tcp");
        Line("outcome", Outcome);
        if (Failure is not null)
        {
            Line("failure", Failure.ReplaceLineEndings(" | "));
        }

        Line("wallSeconds", WallSeconds.ToString("F2", CultureInfo.InvariantCulture));
        Line("requests.issued", RequestsIssued);
        Line("requests.succeeded", RequestsSucceeded);
        Line("requests.failed", RequestsFailed);
        Line("rtt.samples", RttSamples);
        Line("rtt.msP50", RttMsP50.ToString("F3", CultureInfo.InvariantCulture));
        Line("rtt.msP99", RttMsP99.ToString("F3", CultureInfo.InvariantCulture));
        Line("rtt.repliesJudged", RttRepliesJudged);
        foreach (var verdict in Verdicts)
        {
            Line("checker." + verdict.CheckerName, verdict.Passed ? "pass" : $"FAIL ({verdict.ViolationCount}): {verdict.FirstViolationMessage}");
        }

        foreach (var pool in Pools)
        {
            Line("pool." + pool.Name, $"rents {pool.Rents} returns {pool.Returns} outstanding {pool.Outstanding}");
        }

        foreach (var queue in QueueHighWaters)
        {
            Line("queue", queue);
        }

        foreach (var (name, value) in ServerCounters)
        {
            Line("server." + name, value);
        }

        foreach (var (name, value) in TransportCounters)
        {
            Line("tcp." + name, value);
        }

        foreach (var fault in SkippedFaults)
        {
            Line("fault.skipped", fault);
        }

        foreach (var option in IgnoredOptions)
        {
            Line("option.ignored", option);
        }

        return text.ToString();
    }

    public string ToJson() => JsonSerializer.Serialize(
        new
        {
            Scenario,
            Mode = "tcp",
            Outcome,
            ExitCode,
            Failure,
            WallSeconds,
            Requests = new { Issued = RequestsIssued, Succeeded = RequestsSucceeded, Failed = RequestsFailed },
            Rtt = new { Samples = RttSamples, P50Ms = RttMsP50, P99Ms = RttMsP99, RepliesJudged = RttRepliesJudged },
            Verdicts = Verdicts.Select(v => new { v.CheckerName, v.Passed, v.ViolationCount, v.FirstViolationMessage }),
            Pools,
            QueueHighWaters,
            ServerCounters = ServerCounters.ToDictionary(kv => kv.Key, kv => kv.Value),
            TransportCounters = TransportCounters.ToDictionary(kv => kv.Key, kv => kv.Value),
            SkippedFaults,
            IgnoredOptions,
            Options = Options.ToKeyValues().ToDictionary(kv => kv.Key, kv => kv.Value),
        },
        JsonOptions);

    private static readonly JsonSerializerOptions JsonOptions = new() { WriteIndented = true };
}

/// <summary>How to run a scenario over TCP.</summary>
public sealed record TcpRunSettings
{
    /// <summary>The clock of the nodes, transports, clients and checkers; the composition root passes the system clock.</summary>
    public required TimeProvider Time { get; init; }

    /// <summary>A run whose workload has not finished by then fails (wall time).</summary>
    public TimeSpan TimeLimit { get; init; } = TimeSpan.FromSeconds(60);

    /// <summary>The seed of the workload's randomness (nonces); real mode is not replayable, the seed only shapes payloads.</summary>
    public ulong Seed { get; init; } = 1;

    /// <summary>Every client connects over WebSocket (<c>/ws</c> on a Kestrel port per play server) instead of TCP.</summary>
    public bool WebSocket { get; init; }

    /// <summary>
    /// Clients authenticate the server with TLS: TCP clients connect to a TLS listener, WebSocket clients to
    /// <c>wss://</c>. The servers use a self-signed certificate made for the run, which the clients pin.
    /// </summary>
    public bool Tls { get; init; }

    /// <summary>The client transport as the banner names it: tcp, tls, ws or wss.</summary>
    public string TransportName => (WebSocket, Tls) switch
    {
        (false, false) => "tcp",
        (false, true) => "tls",
        (true, false) => "ws",
        (true, true) => "wss",
    };
}

/// <summary>
/// Runs the workload of a simulation scenario over loopback TCP with the same checkers: a real
/// <see cref="TcpCluster"/> (play servers, API servers, TCP mesh) on the thread pool and the system clock, the
/// scenario's workload stage and message ids, one <see cref="TcpPlayClient"/>-driven workload driver per client,
/// and the checker set as every node's observer. At the end the cluster winds down to quiescence and the checkers
/// judge it: per-sender FIFO, one handler per stage, exactly-once requests, pool ledgers, queue caps (mailboxes and
/// session send queues), lifecycle order, and the scenario's own checks (broadcast fan-out, timer counts).
/// </summary>
/// <remarks>
/// Fault plans apply only their client steps (disconnect, reconnect) here; network faults are the simulation's job
/// and are listed in <see cref="TcpScenarioReport.SkippedFaults"/>. Loopback runs far faster than the simulated
/// network, so client steps are placed by progress rather than by clock: the first fires when a third of the
/// workload is issued, and each later one after the same delay that separates it from the first in the plan.
/// </remarks>
public static class TcpScenarioRunner
{
    /// <summary>How often a drain or completion with no event to wait on is checked.</summary>
    private static readonly TimeSpan PollInterval = TimeSpan.FromMilliseconds(5);

    private const int TimerCount = 20;
    private const int TimerPeriodMs = 100;
    private const int GameLoopStepMs = 50;

    /// <summary>
    /// Options of <see cref="SimOptions"/> a TCP run cannot honour: the simulated network's shape (loopback has its
    /// own), schedule exploration, and the virtual-time limits (a TCP run has <see cref="TcpRunSettings.TimeLimit"/>).
    /// </summary>
    public static IReadOnlyList<string> IgnoredOptionKeys { get; } =
    [
        "latencyShape", "latencyMsMin", "latencyMsMean", "latencyMsMax", "lossPercent", "duplicatePercent", "reorderPercent",
        "splitPercent", "bandwidthBytesPerSecond", "streamLoss", "mesh", "exploreSchedules", "livenessWindowMs", "virtualTimeLimitMs",
    ];

    /// <summary>The scenarios this runner knows the shape of (every scenario of the catalog).</summary>
    public static bool Supports(IScenario scenario) => Shape.Of(scenario) is not null;

    public static async Task<TcpScenarioReport> RunAsync(IScenario scenario, SimOptions options, TcpRunSettings settings, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(scenario);
        ArgumentNullException.ThrowIfNull(options);
        ArgumentNullException.ThrowIfNull(settings);
        options.Validate();
        var shape = Shape.Of(scenario) ?? throw new NotSupportedException($"Scenario '{scenario.Name}' has no TCP shape; supported: {string.Join(", ", ScenarioCatalog.Names)}.");
        var ignored = IgnoredOptions(options, scenario.Defaults);
        if (shape.ForcedMode is { } mode)
        {
            if (options.Mode != mode)
            {
                ignored.Add($"mode={options.Mode} (the {shape.Name} scenario runs mode={mode} over TCP)");
            }

            options = options with { Mode = mode };
        }

        var time = settings.Time;
        var started = time.GetTimestamp();
        var checkers = new CheckerSet(time, new CheckerSetOptions { LivenessWindow = settings.TimeLimit });
        var rtt = new LatencyHistogram();
        var rttGate = new Lock();
        var registry = new WorkloadStageRegistry();
        var registryGate = registry.Gate;
        var scenarioChecker = new ScenarioChecker(checkers.Context, scenario.Name);
        checkers.Add(scenarioChecker);

        // The user-level checkers the simulation's workload runs add, so both substrates report the same verdicts.
        var workload = new WorkloadCheckers(checkers);

        // Devices only the simulation runs (a hook that throws while a frame is received, a graceful stop mid-run)
        // still register their checkers, so both modes report the same verdicts; over TCP they have nothing to judge.
        if (shape.Name == "receive-fault")
        {
            checkers.Add(ReceiveFaultChecker.Idle(checkers.Context));
        }
        else if (shape.Name == "drain")
        {
            checkers.Add(new ShutdownDrainChecker(checkers.Context));
        }
        else if (shape.Name == "heartbeat-first")
        {
            checkers.Add(new HeartbeatSessionChecker(checkers.Context));
        }
        else if (shape.Name == "unicode-echo")
        {
            checkers.Add(new FrameMsgIdChecker(checkers.Context));
        }
        long lastActorInstance = 0;
        var context = new ScenarioContext(options, new Xoshiro256StarStar(settings.Seed), checkers, rtt);
        var drivers = new List<TcpWorkloadDriver>();
        var skipped = options.Faults.Steps.Where(s => s.Kind is not (FaultKind.Disconnect or FaultKind.Reconnect)).Select(s => s.ToString()).ToList();
        string? failure = null;
        var exitCode = RunExitCodes.Pass;
        TcpCluster? cluster = null;
        WebSocketFront? front = null;
        System.Security.Cryptography.X509Certificates.X509Certificate2? certificate = null;
        var transportCounters = new SortedDictionary<string, long>(StringComparer.Ordinal);
        try
        {
            var stageOptions = new WorkloadStageOptions
            {
                Checkers = checkers,
                Registry = registry,
                Workload = workload,
                ApiNodeId = "api-1",
                RelayTargetStageId = shape.RelayToBackend ? options.Stages + 1L : 0,
                TimerCount = shape.Timers ? TimerCount : 0,
                TimerPeriodMs = TimerPeriodMs,
                GameLoopStepMs = shape.Timers ? GameLoopStepMs : shape.AnswerOnGameLoopStepMs,
                AnswerOnGameLoop = shape.AnswerOnGameLoopStepMs > 0,
                ReplyBytes = shape.ReplyBytes,
                PeerNodeIds = shape.Peers ? [.. Enumerable.Range(1, options.PlayServers).Select(i => $"play-{i}")] : [],
                PeerStageCount = options.Stages,
                CreateDelayMs = shape.CreateDelayMs,
                CreateFailuresPerStage = shape.CreateFailuresPerStage,
            };
            certificate = settings.Tls ? TlsServerOptions.CreateSelfSignedCertificate("localhost", time) : null;
            var transportOptions = new TcpTransportOptions { Tls = settings.Tls && !settings.WebSocket ? new TlsServerOptions { Certificate = certificate! } : null };
            cluster = new TcpClusterBuilder()
                .WithNodeIds(shape.PlayServerIds ?? [])
                .WithPlayServers(options.PlayServers)
                .WithApiServers(options.ApiServers)
                .WithTime(time)
                .WithTransportOptions(transportOptions)
                .WithServerOptions(new ServerOptions
                {
                    DefaultStageType = shape.CreateStagesOnJoin ? WorkloadScenario.StageType : null,
                    MailboxCapacityMax = options.MailboxCapacity,
                    RequestTimeout = TimeSpan.FromMilliseconds(Math.Max(options.RequestTimeoutMs, shape.ServerTimeoutMsMin)),
                })
                .WithStage(WorkloadScenario.StageType, link => new RegistryGuardedStage(new WorkloadStage(link, stageOptions), registryGate), link => new WorkloadActor(link, Interlocked.Increment(ref lastActorInstance), workload.Lifecycle))
                .WithApiHandlers(api => api.Handle(WorkloadMsgIds.ApiEcho, (link, packet) =>
                {
                    if (shape.ApiReplyBytes > 0 && WorkloadPayload.TryRead(packet.Payload.Span, out var body))
                    {
                        link.Reply(packet, WorkloadMsgIds.ApiEcho, WorkloadPayload.Rent(link.Pool, body, shape.ApiReplyBytes, "api-reply"));
                        return ValueTask.CompletedTask;
                    }

                    link.Reply(packet, WorkloadMsgIds.ApiEcho, packet.Payload);
                    return ValueTask.CompletedTask;
                }))
                .WithObserver(_ => checkers)
                .Build();
            foreach (var node in cluster.Nodes)
            {
                checkers.Queues.WatchMailboxes(node.Server, checkers.Options.MailboxInternalEntriesAllowance);
            }

            // A TCP link learns its peer from the frames themselves, so only the caches' sizes are judged here.
            var nodes = cluster.Nodes;
            workload.MeshSenders.WatchSenderCaches(() => nodes.Select(n => (n.NodeId, n.Server.SenderIds.Count, nodes.Count - 1)));

            using var limit = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
            limit.CancelAfter(settings.TimeLimit);
            var rooms = await PrepareAsync(shape, cluster, options, scenarioChecker).WaitAsync(limit.Token).ConfigureAwait(false);

            // The mixed-transports scenario alternates TCP and WebSocket clients, as its simulated twin does.
            if (settings.WebSocket || shape.WebSocketClients)
            {
                front = await WebSocketFront.StartAsync(cluster, settings.WebSocket ? certificate : null, limit.Token).ConfigureAwait(false);
            }

            var clientTls = certificate is null ? null : new SslClientAuthenticationOptions
            {
                TargetHost = "localhost",
                RemoteCertificateValidationCallback = (_, presented, _, _) => presented is not null && presented.GetCertHashString() == certificate.GetCertHashString(),
            };
            var webSocketFront = front;
            TcpClientConnector OverTcp(TcpCluster c) => (nodeId, o) => c.ConnectClientAsync(nodeId, o with { Tls = transportOptions.Tls is null ? null : clientTls });
            TcpClientConnector OverWebSocket(TcpCluster c, bool secure) => (nodeId, o) => TcpPlayClient.ConnectWebSocketAsync(webSocketFront!.AddressOf(nodeId), o with { Pool = c.ClientPool, Time = c.Time, Tls = secure ? clientTls : null });
            var play = cluster.PlayServers.Select(n => n.NodeId).ToList();
            for (var i = 0; i < options.Clients; i++)
            {
                var stageId = (i % options.Stages) + 1L;
                // With named servers (mesh-ids) clients take the servers in turn, as the simulated scenario places them.
                var (nodeId, roomId) = rooms.Count > 0 ? rooms[i % rooms.Count]
                    : shape.PlayServerIds is not null ? (play[i % play.Count], stageId)
                    : (play[(int)((stageId - 1) % play.Count)], stageId);
                var connector = settings.WebSocket ? OverWebSocket(cluster, settings.Tls)
                    : shape.WebSocketClients && i % 2 == 1 ? OverWebSocket(cluster, secure: false)
                    : OverTcp(cluster);
                drivers.Add(new TcpWorkloadDriver(cluster, nodeId, i + 1L, roomId, shape.RequestMsgId, context, rtt, rttGate, workload.Rtt, connector));
            }

            await Task.WhenAll(drivers.Select(d => d.StartAsync())).WaitAsync(limit.Token).ConfigureAwait(false);
            var faults = new ClientFaults(options.Faults, drivers, time, (long)drivers.Count * (options.WarmUpPerClient + options.RequestsPerClient));
            using var sweep = options.Mode == WorkloadMode.Send
                ? time.CreateTimer(_ => drivers.ForEach(d => d.SweepSends()), null, TimeSpan.FromMilliseconds(Math.Max(10, options.RequestTimeoutMs / 4)), TimeSpan.FromMilliseconds(Math.Max(10, options.RequestTimeoutMs / 4)))
                : null;

            // Completion has no single event (replies land on many I/O threads), so the runner checks every few ms.
            while (!(faults.ApplyDue() && drivers.All(d => d.IsDone) && !KeepsRunning(shape, registry, registryGate, time)))
            {
                if (limit.IsCancellationRequested)
                {
                    exitCode = RunExitCodes.LivenessFailure;
                    failure = $"the workload did not finish within {settings.TimeLimit}: issued {drivers.Sum(d => d.Issued)}, ok {drivers.Sum(d => d.Succeeded)}, failed {drivers.Sum(d => d.Failed)}";
                    break;
                }

                await Task.Delay(PollInterval, time, CancellationToken.None).ConfigureAwait(false);
            }

            foreach (var driver in drivers)
            {
                driver.Stop();
            }

            // A closed client returns its receive buffer when its last read completes, which over TLS and WebSocket
            // (a close handshake) can come after the server's side is done; the client pool is judged after that.
            try
            {
                await Task.WhenAll(drivers.Select(d => d.ClientFinished)).WaitAsync(TimeSpan.FromSeconds(10), time, CancellationToken.None).ConfigureAwait(false);
            }
            catch (TimeoutException)
            {
                // The pool ledger then names what is still out.
            }

            foreach (var node in cluster.PlayServers)
            {
                var listener = node.Listener!;
                checkers.Queues.Observe($"session send queues of {node.NodeId}", (int)Math.Min(int.MaxValue, listener.Counters.SendQueueHighWaterBytes), transportOptions.SendQueueBytesMax);
            }

            if (!await cluster.QuiesceAsync(TimeSpan.FromSeconds(20), cancellationToken).ConfigureAwait(false) && failure is null)
            {
                exitCode = RunExitCodes.LivenessFailure;
                failure = "the cluster did not reach quiescence within 20 s";
            }

            foreach (var node in cluster.Nodes)
            {
                foreach (var (name, value) in (node.Listener?.Counters.Snapshot() ?? []).Concat(node.Mesh.Counters.Snapshot()))
                {
                    transportCounters[name] = transportCounters.GetValueOrDefault(name) + value;
                }
            }

            foreach (var (name, pool) in cluster.LivePools())
            {
                checkers.Pools.Add("pool of " + name, pool);
            }

            CheckOutcome(shape, options, registry, drivers, scenarioChecker);
            checkers.CheckQuiescent();
        }
        catch (OperationCanceledException) when (!cancellationToken.IsCancellationRequested && failure is null)
        {
            // The only other token is the time limit's: setup (back-end stages, connecting clients) outlasted it.
            exitCode = RunExitCodes.LivenessFailure;
            failure = $"the run did not get its clients connected and authenticated within {settings.TimeLimit}";
        }
        catch (Exception e) when (e is not OutOfMemoryException)
        {
            if (failure is null)
            {
                exitCode = RunExitCodes.Crash;
                failure = "crash: " + e;
            }
        }
        finally
        {
            if (front is not null)
            {
                await front.DisposeAsync().ConfigureAwait(false);
            }

            if (cluster is not null)
            {
                await cluster.DisposeAsync().ConfigureAwait(false);
            }

            certificate?.Dispose();
        }

        // As in simulation, a safety violation outranks a liveness one: it is the more specific finding.
        var failed = checkers.Verdicts.Where(v => !v.Passed).OrderBy(v => v.CheckerName == LivenessChecker.CheckerName).FirstOrDefault();
        if (failure is null && failed.CheckerName is not null)
        {
            exitCode = failed.CheckerName == LivenessChecker.CheckerName ? RunExitCodes.LivenessFailure : RunExitCodes.InvariantViolation;
            failure = $"{failed.CheckerName}: {failed.FirstViolationMessage}";
        }

        var servers = new SortedDictionary<string, long>(StringComparer.Ordinal);
        foreach (var node in cluster?.Nodes ?? [])
        {
            foreach (var (name, value) in node.Server.Counters.Snapshot())
            {
                servers[name] = servers.GetValueOrDefault(name) + value;
            }
        }

        return new TcpScenarioReport
        {
            Scenario = scenario.Name,
            Options = options,
            Failure = failure,
            ExitCode = exitCode,
            WallSeconds = time.GetElapsedTime(started).TotalSeconds,
            RequestsIssued = drivers.Sum(d => (long)d.Issued),
            RequestsSucceeded = drivers.Sum(d => (long)d.Succeeded),
            RequestsFailed = drivers.Sum(d => (long)d.Failed),
            RttSamples = rtt.Count,
            RttMsP50 = TimeSpan.FromTicks(rtt.ValueAtPercentile(50)).TotalMilliseconds,
            RttMsP99 = TimeSpan.FromTicks(rtt.ValueAtPercentile(99)).TotalMilliseconds,
            RttRepliesJudged = workload.Rtt.RepliesChecked,
            Verdicts = checkers.Verdicts,
            Pools = cluster is null ? [] : [.. cluster.LivePools().Select(p =>
            {
                var s = p.Pool.GetStatistics();
                return new PoolReport(p.Name, s.Rents, s.Returns, s.Hits, s.Misses, s.Dropped, s.Outstanding);
            })],
            QueueHighWaters = [.. checkers.Queues.GetHighWaters().OrderByDescending(q => q.HighWater).ThenBy(q => q.Name, StringComparer.Ordinal).Take(8).Select(q => q.ToString())],
            ServerCounters = [.. servers.Where(kv => kv.Value != 0)],
            TransportCounters = [.. transportCounters.Where(kv => kv.Value != 0)],
            SkippedFaults = skipped,
            IgnoredOptions = ignored,
        };
    }

    /// <summary>The ignored options (see <see cref="IgnoredOptionKeys"/>) set away from the scenario's defaults, as key=value.</summary>
    private static List<string> IgnoredOptions(SimOptions options, SimOptions defaults)
    {
        var baseline = defaults.ToKeyValues().ToDictionary(kv => kv.Key, kv => kv.Value, StringComparer.Ordinal);
        return [.. options.ToKeyValues().Where(kv => IgnoredOptionKeys.Contains(kv.Key, StringComparer.Ordinal) && baseline[kv.Key] != kv.Value).Select(kv => $"{kv.Key}={kv.Value}")];
    }

    /// <summary>Creates the stages the scenario makes before its clients start; returns the rooms when the play servers picked their ids.</summary>
    private static async Task<List<(string NodeId, long StageId)>> PrepareAsync(Shape shape, TcpCluster cluster, SimOptions options, ScenarioChecker checker)
    {
        var rooms = new List<(string NodeId, long StageId)>();
        if (shape.AllocateStageIds)
        {
            // Every create at once, naming no id: each must come back with a new room of its own.
            var api = cluster.ApiServers.FirstOrDefault()?.Api
                ?? throw new InvalidOperationException($"The {shape.Name} scenario needs at least one API server (apiServers >= 1).");
            var targets = cluster.PlayServers.Select(n => n.NodeId).ToList();
            var creates = Enumerable.Range(0, options.Stages).Select(i => (Target: targets[i % targets.Count], Create: api.CreateStage(targets[i % targets.Count], WorkloadScenario.StageType, "CreateRoom", Payload.Empty))).ToList();
            foreach (var (target, create) in creates)
            {
                using var response = await create.ConfigureAwait(false);
                if (!response.IsSuccess)
                {
                    checker.Fail($"the API server could not create a new room on {target}: {ErrorCodes.Describe(response.ErrorCode)}");
                }
                else if (rooms.Contains((target, response.StageId)))
                {
                    checker.Fail($"two creates on {target} got stage id {response.StageId}; every new room needs its own id");
                }
                else
                {
                    rooms.Add((target, response.StageId));
                }
            }

            return rooms;
        }

        if (shape.RelayToBackend)
        {
            foreach (var node in cluster.PlayServers)
            {
                using var response = await node.Play!.CreateStage(WorkloadScenario.StageType, options.Stages + 1L, "CreateBackend", Payload.Empty).ConfigureAwait(false);
                if (!response.IsSuccess)
                {
                    checker.Fail($"creating the back-end stage on {node.NodeId} failed: {ErrorCodes.Describe(response.ErrorCode)}");
                }
            }
        }

        if (shape.Peers)
        {
            // Every stage id exists on every play server, so a request may go to a stage's twin on the next server.
            foreach (var node in cluster.PlayServers)
            {
                for (var stageId = 1L; stageId <= options.Stages; stageId++)
                {
                    using var response = await node.Play!.CreateStage(WorkloadScenario.StageType, stageId, "CreatePeer", Payload.Empty).ConfigureAwait(false);
                    if (!response.IsSuccess)
                    {
                        checker.Fail($"creating peer stage {stageId} on {node.NodeId} failed: {ErrorCodes.Describe(response.ErrorCode)}");
                    }
                }
            }
        }

        if (!shape.CreateStagesOnJoin)
        {
            var api = cluster.ApiServers.FirstOrDefault()?.Api
                ?? throw new InvalidOperationException($"The {shape.Name} scenario needs at least one API server (apiServers >= 1).");
            var play = cluster.PlayServers.Select(n => n.NodeId).ToList();
            for (var stageId = 1L; stageId <= options.Stages; stageId++)
            {
                var target = play[(int)((stageId - 1) % play.Count)];
                using var response = await api.GetOrCreateStage(target, WorkloadScenario.StageType, stageId, "CreateRoom", Payload.Empty).ConfigureAwait(false);
                if (!response.IsSuccess)
                {
                    checker.Fail($"the API server could not create stage {stageId} on {target}: {ErrorCodes.Describe(response.ErrorCode)}");
                }
            }
        }

        return rooms;
    }

    /// <summary>The timers scenario runs until every stage's count timer could have fired its last shot.</summary>
    private static bool KeepsRunning(Shape shape, WorkloadStageRegistry registry, Lock registryGate, TimeProvider time)
    {
        if (!shape.Timers)
        {
            return false;
        }

        var now = time.GetTimestamp();
        lock (registryGate)
        {
            return registry.Stages.Any(s => s.TimerCallbacks < TimerCount && time.GetElapsedTime(s.CreatedTicks, now) <= TimeSpan.FromMilliseconds((TimerCount + 20) * TimerPeriodMs));
        }
    }

    private static void CheckOutcome(Shape shape, SimOptions options, WorkloadStageRegistry registry, List<TcpWorkloadDriver> drivers, ScenarioChecker checker)
    {
        foreach (var stage in registry.Stages.Where(s => s.CorruptPayloads > 0))
        {
            checker.Fail($"stage {stage.NodeId}/{stage.StageId} received {stage.CorruptPayloads} corrupt payload(s)");
        }

        if (shape.Name == "broadcast" && options.Faults.IsEmpty)
        {
            // Every push a room hands out reaches its member: fan-out is conserved per room.
            foreach (var stage in registry.Stages)
            {
                var received = drivers.Where(d => d.StageId == stage.StageId).Sum(d => d.BroadcastsReceived);
                if (received != stage.BroadcastPushes)
                {
                    checker.Fail(string.Create(CultureInfo.InvariantCulture, $"stage {stage.NodeId}/{stage.StageId} pushed {stage.BroadcastPushes} broadcasts but its members received {received}"));
                }
            }
        }

        if (shape.Timers)
        {
            foreach (var stage in registry.Stages)
            {
                if (stage.TimerCallbacks != TimerCount)
                {
                    checker.Fail(string.Create(CultureInfo.InvariantCulture, $"stage {stage.NodeId}/{stage.StageId}: count timer fired {stage.TimerCallbacks} times, expected {TimerCount}"));
                }

                if (stage.GameLoopSimulated != TimeSpan.FromMilliseconds(GameLoopStepMs) * stage.GameLoopSteps)
                {
                    checker.Fail($"stage {stage.NodeId}/{stage.StageId}: game loop simulated {stage.GameLoopSimulated} over {stage.GameLoopSteps} steps of {GameLoopStepMs} ms");
                }
            }
        }

        if (options.Faults.IsEmpty && drivers.Sum(d => d.Failed) > 0)
        {
            checker.Fail($"{drivers.Sum(d => d.Failed)} request(s) failed on a loopback run without faults");
        }
    }

    /// <summary>The TCP shape of each catalog scenario: its message id, mode and setup.</summary>
    /// <remarks>
    /// The performance checkers of the simulation (allocation per message, pool efficiency, allocation-free sends, resident
    /// work per idle session) measure the one simulation thread and its virtual time; a TCP run does not run them. Over
    /// TCP the idle-sessions scenario runs every client (its idle window is the simulation's).
    /// </remarks>
    private sealed record Shape(string Name, string RequestMsgId, WorkloadMode? ForcedMode = null, bool CreateStagesOnJoin = true, bool RelayToBackend = false, bool Timers = false, int CreateDelayMs = 0, int CreateFailuresPerStage = 0, bool AllocateStageIds = false, IReadOnlyList<string>? PlayServerIds = null, bool WebSocketClients = false, double ServerTimeoutMsMin = 0, bool Peers = false, int ReplyBytes = 0, int ApiReplyBytes = 0, int AnswerOnGameLoopStepMs = 0)
    {
        public static Shape? Of(IScenario scenario) => scenario switch
        {
            IdleSessionsScenario => new("idle-sessions", WorkloadMsgIds.Echo),
            TickBatchScenario => new("tick-batch", WorkloadMsgIds.Echo, AnswerOnGameLoopStepMs: TickBatchScenario.TickMs),
            SeedShapeScenario { Name: "seed-000-send" } => new("seed-000-send", WorkloadMsgIds.SendPush, WorkloadMode.Send),
            SeedShapeScenario { Name: "seed-004-echo" } => new("seed-004-echo", WorkloadMsgIds.Echo, ReplyBytes: 1_500),
            SeedShapeScenario { Name: "seed-004-api" } => new("seed-004-api", WorkloadMsgIds.ApiCall, ApiReplyBytes: 1_500),
            SeedShapeScenario seed => new(seed.Name, WorkloadMsgIds.Echo),
            EchoScenario => new("echo", WorkloadMsgIds.Echo),
            SendPushScenario => new("send-push", WorkloadMsgIds.SendPush, WorkloadMode.Send),
            BroadcastScenario => new("broadcast", WorkloadMsgIds.Broadcast, WorkloadMode.Send),
            StageToStageScenario => new("stage-to-stage", WorkloadMsgIds.Relay, RelayToBackend: true),
            ApiCreateScenario => new("api-create", WorkloadMsgIds.ApiCall, CreateStagesOnJoin: false),
            ApiCallScenario => new("api-call", WorkloadMsgIds.ApiCall, ServerTimeoutMsMin: ApiCallScenario.ServerTimeout.TotalMilliseconds),
            StagePeersScenario => new("stage-peers", WorkloadMsgIds.PeerRelay, Peers: true),
            TimersScenario => new("timers", WorkloadMsgIds.Echo, Timers: true),
            ReconnectScenario => new("reconnect", WorkloadMsgIds.Echo),
            MixedTransportsScenario => new("mixed-transports", WorkloadMsgIds.Echo, WebSocketClients: true),
            MeshIdsScenario => new("mesh-ids", WorkloadMsgIds.ApiCall, PlayServerIds: MeshIdsScenario.PlayServerIds),
            ApiAllocateScenario => new("api-allocate", WorkloadMsgIds.Echo, CreateStagesOnJoin: false, AllocateStageIds: true),
            StageCreateScenario => new("stage-create", WorkloadMsgIds.Echo, CreateDelayMs: StageCreateScenario.CreateDelayMs, CreateFailuresPerStage: StageCreateScenario.CreateFailuresPerStage),
            AwaitEchoScenario => new("await-echo", WorkloadMsgIds.DelayedEcho),

            // The injected hook fault is a simulation device; over TCP the scenario is an echo (the TCP session's
            // callbacks catch and count faults the same way, see SocketConnection).
            ReceiveFaultScenario => new("receive-fault", WorkloadMsgIds.Echo),

            // The graceful stop mid-run is a simulation device; over TCP the scenario's one-way sends await and answer.
            DrainScenario => new("drain", WorkloadMsgIds.DelayedEcho, WorkloadMode.Send),

            // The TCP clients authenticate first; the heartbeat checker judges the TCP sessions all the same.
            HeartbeatFirstScenario => new("heartbeat-first", WorkloadMsgIds.Echo),
            UnicodeEchoScenario => new("unicode-echo", WorkloadMsgIds.UnicodeEcho),
            _ => null,
        };
    }
}

/// <summary>
/// Serialises a workload stage's create and destroy callbacks across stages: the fixtures' stage registry is a plain
/// list written from OnCreate, which in simulation runs on one thread and here on the thread pool.
/// </summary>
internal sealed class RegistryGuardedStage(WorkloadStage inner, Lock registryGate) : IStage
{
    public ValueTask<CreateResult> OnCreate(Packet packet)
    {
        lock (registryGate)
        {
            return inner.OnCreate(packet);
        }
    }

    public ValueTask OnPostCreate() => inner.OnPostCreate();

    public ValueTask<bool> OnJoinStage(IActor actor) => inner.OnJoinStage(actor);

    public ValueTask OnPostJoinStage(IActor actor) => inner.OnPostJoinStage(actor);

    public ValueTask OnConnectionChanged(IActor actor, bool connected) => inner.OnConnectionChanged(actor, connected);

    public ValueTask OnDispatch(IActor actor, Packet packet) => inner.OnDispatch(actor, packet);

    public ValueTask OnDispatch(Packet packet) => inner.OnDispatch(packet);

    public ValueTask OnDestroy()
    {
        lock (registryGate)
        {
            return inner.OnDestroy();
        }
    }
}

/// <summary>The client steps of a fault plan, fired by workload progress and then by the plan's spacing.</summary>
/// <remarks>Not thread-safe; polled by the runner's loop.</remarks>
internal sealed class ClientFaults(FaultPlan plan, List<TcpWorkloadDriver> drivers, TimeProvider time, long totalRequests)
{
    private readonly List<FaultStep> _steps = [.. plan.Steps.Where(s => s.Kind is FaultKind.Disconnect or FaultKind.Reconnect).OrderBy(s => s.At)];
    private int _next;
    private long _firstFiredTimestamp;

    /// <summary>Fires every step that is due; true once all have fired.</summary>
    public bool ApplyDue()
    {
        while (_next < _steps.Count)
        {
            var step = _steps[_next];
            if (_next == 0)
            {
                if (drivers.Sum(d => (long)d.Issued) * 3 < totalRequests)
                {
                    return false;
                }

                _firstFiredTimestamp = time.GetTimestamp();
            }
            else if (time.GetElapsedTime(_firstFiredTimestamp) < step.At - _steps[0].At)
            {
                return false;
            }

            Fire(step);
            _next++;
        }

        return true;
    }

    private void Fire(FaultStep step)
    {
        var targets = step.Target is "" or "all"
            ? drivers
            : [.. drivers.Where(d => long.TryParse(step.Target, NumberStyles.Integer, CultureInfo.InvariantCulture, out var id) && d.ClientId == id)];
        foreach (var driver in targets)
        {
            if (step.Kind == FaultKind.Disconnect)
            {
                driver.HoldDisconnected();
            }
            else
            {
                _ = driver.ReconnectAsync();
            }
        }
    }
}
