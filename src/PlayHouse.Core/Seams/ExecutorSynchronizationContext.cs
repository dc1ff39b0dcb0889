namespace PlayHouse.Core.Seams;

/// <summary>
/// A synchronization context that posts continuations to an <see cref="IExecutor"/>. Work that runs off a
/// stage (API handlers, off-stage I/O) runs under it, so its awaits resume through the executor seam and
/// never on a thread the seam did not choose (some BCL tasks, such as timer-based delays, complete their
/// continuations asynchronously on the ThreadPool when no context is captured).
/// </summary>
public sealed class ExecutorSynchronizationContext(IExecutor executor) : SynchronizationContext
{
    public IExecutor Executor { get; } = executor;

    public override void Post(SendOrPostCallback d, object? state) => Executor.Schedule(new PostedCallback(this, d, state));

    public override void Send(SendOrPostCallback d, object? state) =>
        throw new NotSupportedException("Synchronous Send would block the executor; use Post.");

    public override SynchronizationContext CreateCopy() => this;

    /// <summary>Runs <paramref name="action"/> with this context current, restoring the previous one after.</summary>
    public void Run(Action action)
    {
        ArgumentNullException.ThrowIfNull(action);
        var previous = Current;
        SetSynchronizationContext(this);
        try
        {
            action();
        }
        finally
        {
            SetSynchronizationContext(previous);
        }
    }

    private sealed class PostedCallback(ExecutorSynchronizationContext owner, SendOrPostCallback callback, object? state) : IThreadPoolWorkItem
    {
        public void Execute()
        {
            // The continuation runs with this context current, so its next await comes back here too.
            var previous = Current;
            SetSynchronizationContext(owner);
            try
            {
                callback(state);
            }
            finally
            {
                SetSynchronizationContext(previous);
            }
        }
    }
}
