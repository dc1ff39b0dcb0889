using PlayHouse.Core.Seams;

namespace PlayHouse.Core.Runtime;

/// <summary>
/// Work left for the end of the stage turn running on the calling thread. A transport defers a session's send here
/// when a turn queues the session's first frame, so every reply the turn writes to that session leaves in one send,
/// made on the turn's own thread once the turn ends, instead of in a work item scheduled for the send.
/// </summary>
/// <remarks>
/// Per thread: a turn runs on one thread from start to end, and only that thread's turn sees its list. At most
/// <see cref="DeferredCapacityMax"/> items wait per turn; past that <see cref="TryDefer"/> refuses and the caller
/// schedules the work itself. Each item runs once, after the turn has released its stage, so it may post to that
/// stage (or close a session) like any other thread.
/// </remarks>
public static class TurnEnd
{
    /// <summary>The most items one turn defers; the sessions a turn writes to beyond it are flushed by their own work items.</summary>
    public const int DeferredCapacityMax = 1024;

    [ThreadStatic]
    private static Turn? _turn;

    /// <summary>Whether a stage turn is running on the calling thread.</summary>
    public static bool IsInTurn => _turn is { Depth: > 0 };

    /// <summary>
    /// Runs <paramref name="workItem"/> on this thread when the current turn ends. False, deferring nothing, when no turn
    /// runs on this thread or the turn's list is at <see cref="DeferredCapacityMax"/>.
    /// </summary>
    public static bool TryDefer(IThreadPoolWorkItem workItem)
    {
        ArgumentNullException.ThrowIfNull(workItem);
        var turn = _turn;
        if (turn is not { Depth: > 0 } || turn.Count >= DeferredCapacityMax)
        {
            return false;
        }

        turn.Add(workItem);
        return true;
    }

    /// <summary>
    /// Runs <paramref name="workItem"/> when the current turn on this thread ends, or, outside a turn (or past the
    /// turn's cap), schedules it on <paramref name="executor"/>: a transport's send started by a turn leaves with all the
    /// turn's frames, on the turn's thread, and one started elsewhere is a work item.
    /// </summary>
    public static void DeferOrSchedule(IThreadPoolWorkItem workItem, IExecutor executor)
    {
        ArgumentNullException.ThrowIfNull(executor);
        if (!TryDefer(workItem))
        {
            executor.Schedule(workItem);
        }
    }

    /// <summary>Marks the start of a turn on this thread; pair with <see cref="Exit"/>.</summary>
    internal static Turn Enter()
    {
        var turn = _turn ??= new Turn();
        turn.Depth++;
        return turn;
    }

    /// <summary>
    /// Marks the end of a turn; the outermost one runs the deferred items in the order they were deferred, each once.
    /// An item that throws does not keep the others from running; the first exception is rethrown after the last item.
    /// A turn that an item runs (nested in the drain) leaves its items to the drain under way.
    /// </summary>
    internal static void Exit(Turn turn)
    {
        if (--turn.Depth > 0 || turn.Count == 0 || turn.Draining)
        {
            return;
        }

        Exception? first = null;
        turn.Draining = true;
        for (var i = 0; i < turn.Count; i++)
        {
            var item = turn.Items[i]!;
            turn.Items[i] = null;
            try
            {
                item.Execute();
            }
            catch (Exception e)
            {
                first ??= e;
            }
        }

        turn.Count = 0;
        turn.Draining = false;
        if (first is not null)
        {
            throw first;
        }
    }

    /// <summary>One thread's turn state: how deeply turns nest on it and what waits for the outermost one's end.</summary>
    internal sealed class Turn
    {
        public IThreadPoolWorkItem?[] Items { get; private set; } = new IThreadPoolWorkItem?[8];

        public int Count { get; set; }

        public int Depth { get; set; }

        public bool Draining { get; set; }

        public void Add(IThreadPoolWorkItem workItem)
        {
            if (Count == Items.Length)
            {
                var grown = new IThreadPoolWorkItem?[Math.Min(Items.Length * 2, DeferredCapacityMax)];
                Items.CopyTo(grown, 0);
                Items = grown;
            }

            Items[Count++] = workItem;
        }
    }
}
