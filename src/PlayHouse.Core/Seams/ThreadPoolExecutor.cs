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
}
