namespace PlayHouse.Core.Seams;

/// <summary>The real-mode execution seam: every work item is queued on the .NET ThreadPool.</summary>
public sealed class ThreadPoolExecutor : IExecutor
{
    public static ThreadPoolExecutor Instance { get; } = new();

    public void Schedule(IThreadPoolWorkItem workItem)
    {
        ArgumentNullException.ThrowIfNull(workItem);
#pragma warning disable RS0030 // Real-mode seam: the one place in src/ that hands work to the ThreadPool.
        ThreadPool.UnsafeQueueUserWorkItem(workItem, preferLocal: false);
#pragma warning restore RS0030
    }

    /// <summary>
    /// True on a thread-pool thread, where a work item would have run anyway; false elsewhere (the socket engine's own
    /// event thread, a caller's thread), whose work must not be held up by a stage turn.
    /// </summary>
    public bool CanRunInline => Thread.CurrentThread.IsThreadPoolThread;
}
