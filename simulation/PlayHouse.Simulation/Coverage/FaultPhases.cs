using PlayHouse.Simulation.Runs;

namespace PlayHouse.Simulation.Coverage;

/// <summary>The kinds of fault active at an instant of a run, as bits (<see cref="FaultPhases.MaskAt"/>).</summary>
[Flags]
public enum ActiveFaults
{
    None = 0,

    /// <summary>The mean latency differs from the run's own (a spike, or a calmer spell).</summary>
    Latency = 1,

    Loss = 2,

    Partition = 4,

    /// <summary>At least one client is cut off.</summary>
    Disconnect = 8,

    /// <summary>At least one node is down.</summary>
    Crash = 16,

    Clog = 32,

    /// <summary>No fault is active, but one was earlier: the run is recovering (liveness is judged here).</summary>
    Recovering = 64,
}

/// <summary>
/// The fault kinds a plan has active at each instant, worked out once from the plan: which faults overlap is part of
/// the abstract state a run reaches (a join while a client is cut off, a timeout while the mesh is partitioned).
/// </summary>
/// <remarks>
/// A latency step counts as active while the mean it set differs from the run's; a partition lasts until the next
/// heal; a disconnect until its client reconnects; a crash until its node restarts. Not thread-safe; one per run.
/// </remarks>
public sealed class FaultPhases
{
    private readonly long[] _boundaryTicks;
    private readonly ActiveFaults[] _masks;
    private int _next;
    private ActiveFaults _current;

    public FaultPhases(FaultPlan plan, double baselineLatencyMsMean)
    {
        ArgumentNullException.ThrowIfNull(plan);
        var boundaries = new SortedSet<long>();
        foreach (var step in plan.Steps)
        {
            boundaries.Add(step.At.Ticks);
            if (step.Duration > TimeSpan.Zero)
            {
                boundaries.Add((step.At + step.Duration).Ticks);
            }
        }

        _boundaryTicks = [.. boundaries];
        _masks = new ActiveFaults[_boundaryTicks.Length];
        var seenAny = false;
        for (var i = 0; i < _boundaryTicks.Length; i++)
        {
            var mask = Evaluate(plan, baselineLatencyMsMean, _boundaryTicks[i]);
            seenAny |= mask != ActiveFaults.None;
            _masks[i] = mask == ActiveFaults.None && seenAny ? ActiveFaults.Recovering : mask;
        }
    }

    /// <summary>The faults active at <paramref name="nowTicks"/>; the times asked must not go backwards.</summary>
    public ActiveFaults MaskAt(long nowTicks)
    {
        while (_next < _boundaryTicks.Length && _boundaryTicks[_next] <= nowTicks)
        {
            _current = _masks[_next];
            _next++;
        }

        return _current;
    }

    /// <summary>The faults active at one instant: every step up to it replayed in order.</summary>
    private static ActiveFaults Evaluate(FaultPlan plan, double baselineLatencyMsMean, long atTicks)
    {
        var latencyChanged = false;
        var partitioned = false;
        var clogs = 0;
        var losses = 0;
        var cut = new HashSet<string>(StringComparer.Ordinal);
        var down = new HashSet<string>(StringComparer.Ordinal);
        foreach (var step in plan.Steps)
        {
            if (step.At.Ticks > atTicks)
            {
                break;
            }

            var ended = step.Duration > TimeSpan.Zero && (step.At + step.Duration).Ticks <= atTicks;
            switch (step.Kind)
            {
                case FaultKind.LatencyChange:
                    latencyChanged = Math.Abs(step.Value - baselineLatencyMsMean) > 1e-9;
                    break;
                case FaultKind.LossBurst:
                    losses += ended ? 0 : 1;
                    break;
                case FaultKind.Partition:
                    partitioned = true;
                    break;
                case FaultKind.Heal:
                    partitioned = false;
                    clogs = 0;
                    break;
                case FaultKind.Clog:
                    clogs += ended ? 0 : 1;
                    break;
                case FaultKind.Disconnect:
                    cut.Add(step.Target);
                    break;
                case FaultKind.Reconnect:
                    if (step.Target == "all")
                    {
                        cut.Clear();
                    }
                    else
                    {
                        cut.Remove(step.Target);
                    }

                    break;
                case FaultKind.Crash:
                    down.Add(step.Target);
                    break;
                case FaultKind.Restart:
                    down.Remove(step.Target);
                    break;
            }
        }

        return (latencyChanged ? ActiveFaults.Latency : 0)
            | (losses > 0 ? ActiveFaults.Loss : 0)
            | (partitioned ? ActiveFaults.Partition : 0)
            | (cut.Count > 0 ? ActiveFaults.Disconnect : 0)
            | (down.Count > 0 ? ActiveFaults.Crash : 0)
            | (clogs > 0 ? ActiveFaults.Clog : 0);
    }
}
