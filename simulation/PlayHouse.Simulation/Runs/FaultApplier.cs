using System.Globalization;
using PlayHouse.Simulation.Cluster;
using PlayHouse.Simulation.Network;

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

    public FaultApplier(SimCluster cluster, SimOptions options, Action<FaultStep> onScenarioStep)
    {
        _cluster = cluster;
        _options = options;
        _onScenarioStep = onScenarioStep;
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
                network.SetDefaults(network.Defaults with { Latency = Scale(step.Value) });
                break;
            case FaultKind.LossBurst:
                network.SetDefaults(network.Defaults with { LossProbability = ending ? _options.LossPercent / 100 : Math.Clamp(step.Value / 100, 0, 1) });
                break;
            case FaultKind.Partition:
                foreach (var (a, b) in Pairs(step))
                {
                    _cluster.Partition(a, b);
                }

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
                if (HasNode(step.Target) && _cluster.Crash(step.Target))
                {
                    _onScenarioStep(step);
                }

                break;
            case FaultKind.Restart:
                if (HasNode(step.Target) && _cluster.Restart(step.Target))
                {
                    _onScenarioStep(step);
                }

                break;
            case FaultKind.Disconnect:
                foreach (var client in Clients(step.Target))
                {
                    _cluster.Disconnect(client);
                }

                _onScenarioStep(step);
                break;
            case FaultKind.Reconnect:
                _onScenarioStep(step);
                break;
            default:
                throw new InvalidOperationException($"Unknown fault kind {step.Kind}.");
        }
    }

    /// <summary>
    /// The run's own latency distribution scaled so that its nominal mean (<see cref="SimOptions.LatencyMsMean"/>)
    /// becomes <paramref name="meanMs"/>: minimum, mean and maximum move together, whatever the shape, and a step
    /// back to the run's mean restores the run's distribution exactly (a spike then heals).
    /// </summary>
    private LatencyModel Scale(double meanMs)
    {
        var baseline = _options.ToPathOptions().Latency;
        var mean = TimeSpan.FromMilliseconds(Math.Max(0, meanMs));
        if (_options.LatencyMsMean <= 0)
        {
            return baseline with { Min = mean, Mean = mean, Max = mean };
        }

        var factor = Math.Max(0, meanMs) / _options.LatencyMsMean;
        return baseline with { Min = baseline.Min * factor, Mean = baseline.Mean * factor, Max = baseline.Max * factor };
    }

    private bool HasNode(string nodeId) => _cluster.Nodes.Any(n => n.NodeId == nodeId);

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
