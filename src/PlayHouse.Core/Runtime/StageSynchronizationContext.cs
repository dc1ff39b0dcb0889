namespace PlayHouse.Core.Runtime;

/// <summary>
/// The stage-affine context: every continuation captured inside a stage handler is posted back to that
/// stage, so "one handler at a time per stage" holds by construction rather than by inferring the current
/// stage from an ambient, flowing value (PlayHouse's flaw B9).
/// </summary>
internal sealed class StageSynchronizationContext(StageHost stage) : SynchronizationContext
{
    public StageHost Stage { get; } = stage;

    public override void Post(SendOrPostCallback d, object? state) => Stage.PostContinuation(d, state);

    public override void Send(SendOrPostCallback d, object? state) =>
        throw new NotSupportedException($"Synchronous Send into stage {Stage.StageId} would block its executor; use Post.");

    public override SynchronizationContext CreateCopy() => this;
}
