using System.Globalization;
using PlayHouse.Simulation.Cluster;

namespace PlayHouse.Simulation.Runs;

/// <summary>
/// Schedules each step of a fault plan as a world event and applies it to the cluster at its virtual instant.
/// Client steps (disconnect, reconnect) and node steps (crash, restart) are also handed to the scenario, which
/// owns its clients' sessions and may rebuild what a crash lost.
/// </summary>
/// <remarks>Not thread-safe; runs on the simulation thread.</remarks>
public sealed class FaultApplier
{
    private readonly SimCluster _cluster;
    private readonly SimOptions _options;
    private readonly Action<FaultStep> _onScenarioStep;
    private readonly FaultLedger? _ledger;

    public FaultApplier(SimCluster cluster, SimOptions options, Action<FaultStep> onScenarioStep)
        : this(cluster, options, onScenarioStep, ledger: null)
    {
    }

    /// <param name="cluster">The cluster the steps act on.</param>
    /// <param name="options">The run's options (the loss a burst returns to, the latency a change scales).</param>
    /// <param name="onScenarioStep">Hears of client and node steps that changed something.</param>
    /// <param name="ledger">Hears of each loss change before it is made and of each step's effect after it, or null.</param>
    public FaultApplier(SimCluster cluster, SimOptions options, Action<FaultStep> onScenarioStep, FaultLedger? ledger)
    {
        _cluster = cluster;
        _options = options;
        _onScenarioStep = onScenarioStep;
        _ledger = ledger;
    }

    /// <summary>Steps applied so far, in order.</summary>
    public List<FaultStep> Applied { get; } = [];

    public void Schedule(FaultPlan plan)
    {
        foreach (var step in plan.Steps)
        {
            _cluster.World.ScheduleAt(step.At.Ticks, new StepEvent(this, step));
            if (step.Duration > TimeSpan.Zero && step.Kind is FaultKind.LossBurst or FaultKind.Clog)
            {
                _cluster.World.ScheduleAt((step.At + step.Duration).Ticks, new StepEvent(this, step, ending: true));
            }
        }
    }

    private void Apply(FaultStep step, bool ending)
    {
        var world = _cluster.World;
        world.Trace.Record(world.NowTicks, ending ? "fault.end" : "fault", (long)step.Kind, 0, 0, step.ToString());
        if (!ending)
        {
            Applied.Add(step);
        }

        var network = _cluster.Network;
        switch (step.Kind)
        {
            case FaultKind.LatencyChange:
                network.SetDefaults(network.Defaults with { Latency = _options.LatencyScaledTo(step.Value) });
                break;
            case FaultKind.LossBurst:
                var loss = ending ? _options.LossPercent / 100 : Math.Clamp(step.Value / 100, 0, 1);

                // The ledger hears first, so every send before this instant counts at the old rate and every one after at the new.
                _ledger?.LossRequested(loss);
                network.SetDefaults(network.Defaults with { LossProbability = loss });
                break;
            case FaultKind.Partition:
                var pairs = Pairs(step).ToList();
                foreach (var (a, b) in pairs)
                {
                    _cluster.Partition(a, b);
                }

                // Both directions of every pair must now be cut.
                _ledger?.Partitioned(2 * pairs.Count, pairs.Sum(p => (IsCut(p.A, p.B) ? 1 : 0) + (IsCut(p.B, p.A) ? 1 : 0)));
                break;
            case FaultKind.Heal:
                _cluster.Heal();
                break;
            case FaultKind.Clog:
                foreach (var (a, b) in Pairs(step))
                {
                    if (ending)
                    {
                        _cluster.Unclog(a, b);
                        _cluster.Unclog(b, a);
                    }
                    else
                    {
                        _cluster.Clog(a, b);
                        _cluster.Clog(b, a);
                    }
                }

                break;
            case FaultKind.Crash:
                // The scenario hears only of steps that changed something: a crash of a node already down, or a
                // restart of one already up, must not make it rebuild twice.
                var wasUp = HasNode(step.Target) && _cluster.Node(step.Target).IsUp;
                if (HasNode(step.Target) && _cluster.Crash(step.Target))
                {
                    _onScenarioStep(step);
                }

                _ledger?.Crashed(wasUp ? 1 : 0, wasUp && !_cluster.Node(step.Target).IsUp ? 1 : 0);
                break;
            case FaultKind.Restart:
                if (HasNode(step.Target) && _cluster.Restart(step.Target))
                {
                    _onScenarioStep(step);
                }

                break;
            case FaultKind.Disconnect:
                var connected = Clients(step.Target).Where(c => c.IsConnected).ToList();
                foreach (var client in Clients(step.Target))
                {
                    _cluster.Disconnect(client);
                }

                _ledger?.Disconnected(connected.Count, connected.Count(c => !c.IsConnected));
                _onScenarioStep(step);
                break;
            case FaultKind.Reconnect:
                _onScenarioStep(step);
                break;
            default:
                throw new InvalidOperationException($"Unknown fault kind {step.Kind}.");
        }
    }

    private bool HasNode(string nodeId) => _cluster.Nodes.Any(n => n.NodeId == nodeId);

    private bool IsCut(string from, string to) => _cluster.Network.IsPartitioned(SimMeshTransport.EndpointOf(from), SimMeshTransport.EndpointOf(to));

    /// <summary>Node pairs of a partition or clog step; an empty Other means the target against every other node.</summary>
    private IEnumerable<(string A, string B)> Pairs(FaultStep step)
    {
        if (!HasNode(step.Target))
        {
            yield break;
        }

        if (step.Other.Length > 0)
        {
            if (HasNode(step.Other))
            {
                yield return (step.Target, step.Other);
            }

            yield break;
        }

        foreach (var node in _cluster.Nodes.Where(n => n.NodeId != step.Target))
        {
            yield return (step.Target, node.NodeId);
        }
    }

    /// <summary>The clients a step names: a 1-based index or "all"; an index past the client count names none.</summary>
    public IEnumerable<Clients.SimClient> Clients(string target)
    {
        if (target == "all" || target.Length == 0)
        {
            return _cluster.Clients;
        }

        return int.TryParse(target, NumberStyles.Integer, CultureInfo.InvariantCulture, out var index) && index >= 1 && index <= _cluster.Clients.Count
            ? [_cluster.Clients[index - 1]]
            : [];
    }

    private sealed class StepEvent(FaultApplier applier, FaultStep step, bool ending = false) : IThreadPoolWorkItem
    {
        public void Execute() => applier.Apply(step, ending);
    }
}
