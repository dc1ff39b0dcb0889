using System.Runtime.CompilerServices;
using PlayHouse.Core.Runtime;

namespace PlayHouse.Simulation.Checkers;

/// <summary>
/// At most one handler of a stage runs at any moment (B9): counts handler entries and exits per (node, stage),
/// records a violation when a second handler enters while one is active or an exit has no entry, and keeps
/// the high-water mark of concurrently active handlers (1 on a correct run).
/// </summary>
/// <remarks>
/// Thread-safe: one lock per hook call. In real mode handlers of different stages run on many threads; the
/// runtime calls the exit hook before a stage's turn ends, so the next turn's entry is ordered after it.
/// <see cref="CheckStep"/> assumes the single-threaded world: between two steps no handler is running.
/// </remarks>
public sealed class SingleActiveHandlerChecker : RuntimeInvariantChecker, INodeCrashAware
{
    public const string CheckerName = "SingleActiveHandler";

    private readonly Lock _gate = new();
    private readonly StageMap<StageActivity> _stages = new(static (_, _) => new StageActivity());
    private int _activeTotal;
    private int _highWater;
    private long _entries;

    public SingleActiveHandlerChecker(CheckerContext context)
        : base(CheckerName, context)
    {
    }

    public SingleActiveHandlerChecker(TimeProvider time)
        : this(new CheckerContext(time))
    {
    }

    /// <summary>The most handlers of one stage ever active at once, over all stages.</summary>
    public int HighWater
    {
        get
        {
            using (Context.Enter(_gate))
            {
                return _highWater;
            }
        }
    }

    /// <summary>Handler entries seen (turns and resumed continuations).</summary>
    public long Entries => Interlocked.Read(ref _entries);

    /// <summary>True while a handler of the stage runs: inside one of its turns (a message or a resumed continuation).</summary>
    public bool IsActive(string nodeId, long stageId)
    {
        using (Context.Enter(_gate))
        {
            return _stages.Find(nodeId, stageId) is { Active: > 0 };
        }
    }

    /// <summary>Per-stage high-water marks, ordered by node id (ordinal) then stage id.</summary>
    public IReadOnlyList<StageHandlerHighWater> GetHighWaters()
    {
        using (Context.Enter(_gate))
        {
            var list = new List<StageHandlerHighWater>(_stages.All.Count);
            foreach (var pair in _stages.All)
            {
                list.Add(new StageHandlerHighWater(pair.Key.NodeId, pair.Key.StageId, pair.Value.HighWater));
            }

            list.Sort(static (a, b) =>
            {
                var byNode = string.CompareOrdinal(a.NodeId, b.NodeId);
                return byNode != 0 ? byNode : a.StageId.CompareTo(b.StageId);
            });
            return list;
        }
    }

    public override void OnHandlerEntered(string nodeId, long stageId, StageWorkKind kind, string? msgId)
    {
        using (Context.Enter(_gate))
        {
            _entries++;
            var stage = _stages.GetOrAdd(nodeId, stageId, out _);
            stage.Active++;
            stage.Entries++;
            _activeTotal++;
            if (stage.Active > stage.HighWater)
            {
                stage.HighWater = stage.Active;
                _highWater = Math.Max(_highWater, stage.Active);
            }

            if (stage.Active == 1)
            {
                stage.ActiveKind = kind;

                // Usually the same msg id instance as last time; skipping the store skips its GC write barrier.
                if (!ReferenceEquals(stage.ActiveMsgId, msgId))
                {
                    stage.ActiveMsgId = msgId;
                }

                return;
            }

            ReportSecondEntered(nodeId, stageId, kind, msgId, stage);
        }
    }

    // Built out of line: a message's formatting state would otherwise widen the stack frame of every call.
    [MethodImpl(MethodImplOptions.NoInlining)]
    private void ReportSecondEntered(string nodeId, long stageId, StageWorkKind kind, string? msgId, StageActivity stage) =>
        Log.Record($"stage {nodeId}/{stageId}: handler {DescribeWork(kind, msgId)} entered while {DescribeWork(stage.ActiveKind, stage.ActiveMsgId)} was still active ({stage.Active} handlers active at once)");

    [MethodImpl(MethodImplOptions.NoInlining)]
    private void ReportExitWithoutEntry(string nodeId, long stageId) =>
        Log.Record($"stage {nodeId}/{stageId}: a handler exited while none was active (exit without entry)");

    public override void OnHandlerExited(string nodeId, long stageId)
    {
        using (Context.Enter(_gate))
        {
            var stage = _stages.GetOrAdd(nodeId, stageId, out _);
            if (stage.Active == 0)
            {
                ReportExitWithoutEntry(nodeId, stageId);
                return;
            }

            stage.Active--;
            _activeTotal--;
        }
    }

    /// <summary>A crash ends the node's handlers without their exits; the stages keep their high-water marks for the report.</summary>
    public void OnNodeCrashed(string nodeId)
    {
        using (Context.Enter(_gate))
        {
            foreach (var pair in _stages.All)
            {
                if (pair.Key.NodeId == nodeId)
                {
                    _activeTotal -= pair.Value.Active;
                    pair.Value.Active = 0;
                }
            }
        }
    }

    /// <summary>Between two steps of the single-threaded world every handler has exited (an await exits too).</summary>
    public override void CheckStep()
    {
        // The total makes the common case one read without the lock, inlined into the run loop; the scan (a large
        // method, costly to call per event) runs only when something is wrong.
        if (Volatile.Read(ref _activeTotal) != 0)
        {
            ReportStillActive("at the end of a step");
        }
    }

    public override void CheckQuiescent()
    {
        if (Volatile.Read(ref _activeTotal) != 0)
        {
            ReportStillActive("at quiescence");
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private void ReportStillActive(string when)
    {
        using (Context.Enter(_gate))
        {
            if (_activeTotal == 0)
            {
                return;
            }

            var stuck = new List<(string NodeId, long StageId)>();
            foreach (var pair in _stages.All)
            {
                if (pair.Value.Active > 0 && pair.Value.ReportedAtEntries != pair.Value.Entries)
                {
                    stuck.Add(pair.Key);
                }
            }

            stuck.Sort(static (a, b) =>
            {
                var byNode = string.CompareOrdinal(a.NodeId, b.NodeId);
                return byNode != 0 ? byNode : a.StageId.CompareTo(b.StageId);
            });
            foreach (var key in stuck)
            {
                var stage = _stages.All[key];

                // Reported once per stuck entry, so a handler that never exits is one violation, not one per step.
                stage.ReportedAtEntries = stage.Entries;
                Log.Record($"stage {key.NodeId}/{key.StageId}: handler {DescribeWork(stage.ActiveKind, stage.ActiveMsgId)} still active {when} ({stage.Active} entered, not exited)");
            }
        }
    }

    private sealed class StageActivity
    {
        public int Active;
        public int HighWater;
        public long Entries;
        public long ReportedAtEntries;
        public StageWorkKind ActiveKind;
        public string? ActiveMsgId;
    }
}

/// <summary>The most handlers of one stage that were active at once.</summary>
public readonly record struct StageHandlerHighWater(string NodeId, long StageId, int HighWater);
