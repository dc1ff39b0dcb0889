namespace PlayHouse.Core.Runtime;

/// <summary>
/// What the dispatcher does at the two moments a stage handler hands control back: when its call returns with its
/// work suspended at an await, and when that work, awaits included, has completed. Until the second moment the
/// handler is in progress: it counts in the node's pending work (<see cref="PlayServer.HandlersInProgress"/>, which
/// a graceful shutdown drains, B16) and its packet's payload stays lent to it (B7d).
/// </summary>
/// <remarks>Called on the stage's turn, so one call at a time per stage; a node's stages may call from several threads.</remarks>
internal interface IHandlerCompletion
{
    /// <summary>The handler's call returned, its work suspended at an await; <paramref name="message"/> is what it handles.</summary>
    void OnSuspended(StageHost stage, ref StageMessage message);

    /// <summary>The handler's work completed (at once, or after awaits when <paramref name="wasSuspended"/>).</summary>
    void OnCompleted(StageHost stage, ref StageMessage message, bool wasSuspended);
}

/// <summary>
/// The standard part: nothing happens when a handler suspends; when its work completes, the handler leaves the
/// node's pending work and the payload lent to it is released (unless the handler took it with
/// <see cref="Pooling.Payload.Move"/>).
/// </summary>
internal sealed class StandardHandlerCompletion : IHandlerCompletion
{
    public static StandardHandlerCompletion Instance { get; } = new();

    public void OnSuspended(StageHost stage, ref StageMessage message)
    {
    }

    public void OnCompleted(StageHost stage, ref StageMessage message, bool wasSuspended)
    {
        stage.Server.OnHandlerEnded();
        message.Payload.DisposeIfOwner();
    }
}
