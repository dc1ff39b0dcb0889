namespace PlayHouse.Core.Seams;

/// <summary>
/// An executor that runs nothing until told: unit tests schedule work, then call <see cref="RunUntilIdle"/>
/// to run it on the test thread in FIFO order. Nothing sleeps and nothing races.
/// </summary>
/// <remarks>Not thread-safe; used from the test thread only.</remarks>
public sealed class ManualExecutor : IExecutor
{
    private readonly Queue<IThreadPoolWorkItem> _queue = new();

    /// <summary>Work items waiting to run.</summary>
    public int PendingCount => _queue.Count;

    /// <summary>
    /// Whether callers may run work inline (<see cref="IExecutor.CanRunInline"/>); false by default. A test sets it to
    /// play the thread pool, whose threads may run a stage's turn where they received its messages.
    /// </summary>
    public bool CanRunInline { get; set; }

    /// <summary>Work items run so far.</summary>
    public long ExecutedCount { get; private set; }

    public void Schedule(IThreadPoolWorkItem workItem)
    {
        ArgumentNullException.ThrowIfNull(workItem);
        _queue.Enqueue(workItem);
    }

    /// <summary>Runs one queued item; returns false when the queue was empty.</summary>
    public bool RunOne()
    {
        if (!_queue.TryDequeue(out var item))
        {
            return false;
        }

        ExecutedCount++;
        item.Execute();
        return true;
    }

    /// <summary>Runs items, including ones they schedule, until none is left; returns how many ran.</summary>
    /// <exception cref="InvalidOperationException">More than <paramref name="maxSteps"/> items ran: a livelock.</exception>
    public int RunUntilIdle(int maxSteps = 1_000_000)
    {
        var steps = 0;
        while (RunOne())
        {
            if (++steps > maxSteps)
            {
                throw new InvalidOperationException($"ManualExecutor ran {maxSteps} items without going idle; a work item keeps rescheduling itself.");
            }
        }

        return steps;
    }
}
