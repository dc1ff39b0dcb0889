namespace PlayHouse.Core.Seams;

/// <summary>
/// The execution seam: runs stage turns, continuations and off-stage work. The real one queues on the
/// ThreadPool; tests use <see cref="ManualExecutor"/>; the simulation runs everything on its one thread.
/// </summary>
/// <remarks>Implementations must accept calls from any thread.</remarks>
public interface IExecutor
{
    /// <summary>Queues a work item; it runs later, never inline inside this call.</summary>
    void Schedule(IThreadPoolWorkItem workItem);

    /// <summary>
    /// Whether the calling thread may run a work item of this executor itself, at once, instead of scheduling it: true
    /// only on a thread the executor would have run it on. False by default, so work runs only when the executor runs it.
    /// </summary>
    bool CanRunInline => false;
}
