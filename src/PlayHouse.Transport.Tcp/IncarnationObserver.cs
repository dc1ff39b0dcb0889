using PlayHouse.Core.Runtime;
using PlayHouse.Core.Seams;

namespace PlayHouse.Transport.Tcp;

/// <summary>
/// The observer one incarnation of a real-socket node reports through: it forwards every hook to the cluster's
/// observer until the node crashes, and nothing after. A crashed process reports nothing more, but its stage turns
/// and timers already on the thread pool still run to their end here; muting them keeps the checkers, which forget
/// a crashed incarnation, from hearing its afterlife.
/// </summary>
/// <remarks>Thread-safe: hooks come from any executor thread; <see cref="Mute"/> from the crash verb.</remarks>
internal sealed class IncarnationObserver(RuntimeObserver inner) : RuntimeObserver
{
    private volatile bool _muted;

    public void Mute() => _muted = true;

    public override void OnHandlerEntered(string nodeId, long stageId, StageWorkKind kind, string? msgId)
    {
        if (!_muted)
        {
            inner.OnHandlerEntered(nodeId, stageId, kind, msgId);
        }
    }

    public override void OnHandlerExited(string nodeId, long stageId)
    {
        if (!_muted)
        {
            inner.OnHandlerExited(nodeId, stageId);
        }
    }

    public override void OnMessageCompleted(string nodeId, long stageId, StageWorkKind kind, string? msgId)
    {
        if (!_muted)
        {
            inner.OnMessageCompleted(nodeId, stageId, kind, msgId);
        }
    }

    public override void OnLifecycle(string nodeId, long stageId, long actorInstance, long accountId, LifecycleEvent lifecycleEvent)
    {
        if (!_muted)
        {
            inner.OnLifecycle(nodeId, stageId, actorInstance, accountId, lifecycleEvent);
        }
    }

    public override void OnRequestIssued(string nodeId, ulong msgSeq, string targetNodeId, long targetStageId, string msgId)
    {
        if (!_muted)
        {
            inner.OnRequestIssued(nodeId, msgSeq, targetNodeId, targetStageId, msgId);
        }
    }

    public override void OnRequestCompleted(string nodeId, ulong msgSeq, string targetNodeId, RequestOutcome outcome, ushort errorCode)
    {
        if (!_muted)
        {
            inner.OnRequestCompleted(nodeId, msgSeq, targetNodeId, outcome, errorCode);
        }
    }

    public override void OnMailboxPosted(string nodeId, long stageId, int mailboxLength, int externalLength)
    {
        if (!_muted)
        {
            inner.OnMailboxPosted(nodeId, stageId, mailboxLength, externalLength);
        }
    }

    public override void OnTickPosted(string nodeId, long stageId, int pendingTicks)
    {
        if (!_muted)
        {
            inner.OnTickPosted(nodeId, stageId, pendingTicks);
        }
    }

    public override void OnHandlerFailed(string nodeId, long stageId, StageWorkKind kind, string? msgId, Exception error)
    {
        if (!_muted)
        {
            inner.OnHandlerFailed(nodeId, stageId, kind, msgId, error);
        }
    }

    public override void OnDropped(string nodeId, string reason, string? msgId)
    {
        if (!_muted)
        {
            inner.OnDropped(nodeId, reason, msgId);
        }
    }
}

/// <summary>
/// The executor of one incarnation of a real-socket node: it hands work to the thread pool until the node crashes,
/// and drops it after, as a killed process runs nothing more. Work already on the pool's queue when the node
/// crashed still runs; its reports go nowhere (<see cref="IncarnationObserver"/>).
/// </summary>
/// <remarks>Thread-safe: scheduled from any thread; <see cref="Kill"/> from the crash verb.</remarks>
internal sealed class IncarnationExecutor(IExecutor inner) : IExecutor
{
    private volatile bool _dead;

    public bool CanRunInline => !_dead && inner.CanRunInline;

    public void Kill() => _dead = true;

    public void Schedule(IThreadPoolWorkItem workItem)
    {
        if (!_dead)
        {
            inner.Schedule(workItem);
        }
    }
}
