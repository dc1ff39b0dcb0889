using PlayHouse.Core.Runtime;

namespace PlayHouse.Simulation;

/// <summary>
/// Records the runtime's events into the world's trace: lifecycle callbacks, handler turns, requests issued and
/// completed, and drops. Only deterministic fields go in (ids, kinds, codes), so the hash replays exactly.
/// </summary>
/// <remarks>Not thread-safe; runs on the simulation thread.</remarks>
public class TraceObserver(SimWorld world) : RuntimeObserver
{
    protected SimWorld World { get; } = world;

    public override void OnHandlerEntered(string nodeId, long stageId, StageWorkKind kind, string? msgId) =>
        World.Trace.Record(World.NowTicks, "stage.turn", stageId, (long)kind, 0, msgId);

    public override void OnLifecycle(string nodeId, long stageId, long actorInstance, long accountId, LifecycleEvent lifecycleEvent) =>
        World.Trace.Record(World.NowTicks, "lifecycle", stageId, actorInstance, (long)lifecycleEvent, nodeId);

    public override void OnRequestIssued(string nodeId, ulong msgSeq, string targetNodeId, long targetStageId, string msgId) =>
        World.Trace.Record(World.NowTicks, "req.issue", (long)msgSeq, targetStageId, 0, nodeId);

    public override void OnRequestCompleted(string nodeId, ulong msgSeq, string targetNodeId, RequestOutcome outcome, ushort errorCode) =>
        World.Trace.Record(World.NowTicks, "req.done", (long)msgSeq, (long)outcome, errorCode, nodeId);

    public override void OnDropped(string nodeId, string reason, string? msgId) =>
        World.Trace.Record(World.NowTicks, "drop", 0, 0, 0, reason);
}
