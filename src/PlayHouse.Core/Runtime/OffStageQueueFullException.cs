namespace PlayHouse.Core.Runtime;

/// <summary>
/// Thrown by <see cref="IStageLink.RunOffStage{T}"/> and <see cref="IStageLink.RunOffStageAsync{T}"/> when the stage
/// already has <see cref="ServerOptions.OffStageInFlightMax"/> pieces of work whose continuations have not run. The
/// work was not started and its continuation will not run; the caller still owns whatever it meant to hand over.
/// </summary>
public sealed class OffStageQueueFullException : InvalidOperationException
{
    public OffStageQueueFullException(string nodeId, long stageId, int inFlightMax)
        : base($"Stage {stageId} on {nodeId} already has {inFlightMax} off-stage work item(s) whose continuations have not run (ServerOptions.OffStageInFlightMax); the work was refused and not started.")
    {
        NodeId = nodeId;
        StageId = stageId;
        InFlightMax = inFlightMax;
    }

    public OffStageQueueFullException()
        : this(string.Empty, 0, 0)
    {
    }

    public OffStageQueueFullException(string message)
        : base(message)
    {
        NodeId = string.Empty;
    }

    public OffStageQueueFullException(string message, Exception innerException)
        : base(message, innerException)
    {
        NodeId = string.Empty;
    }

    public string NodeId { get; }

    public long StageId { get; }

    public int InFlightMax { get; }

    /// <summary>The error code that names this outcome in replies and reports.</summary>
    public ushort ErrorCode => ErrorCodes.OffStageQueueFull;
}
