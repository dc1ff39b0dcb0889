using System.Diagnostics.CodeAnalysis;

namespace PlayHouse.Core.Runtime;

/// <summary>
/// Where a stage keeps its timers by id: the component <see cref="NodeParts.StageTimers"/> builds, one per stage.
/// Timer ids are scoped to their stage (each stage numbers its timers from 1), so the table must be too: PlayHouse kept
/// the timers of every stage in one table keyed by the per-stage id, which dropped the second stage's timer 1 and let
/// one stage's cancel stop another's (B13).
/// </summary>
/// <remarks>Not thread-safe; used only from the owning stage's turns.</remarks>
internal interface IStageTimerTable
{
    /// <summary>Timers registered (for the owning stage).</summary>
    int Count { get; }

    /// <summary>Registers a new timer of the owning stage under its id.</summary>
    void Add(StageTimer timer);

    /// <summary>Takes the owning stage's timer <paramref name="timerId"/> out of the table.</summary>
    bool Remove(long timerId, [NotNullWhen(true)] out StageTimer? timer);

    bool Contains(long timerId);

    /// <summary>Takes every timer of the owning stage out of the table into <paramref name="removed"/> (the stage is closing).</summary>
    void RemoveAll(List<StageTimer> removed);
}

/// <summary>
/// The standard timer table: a dictionary per stage, so ids of different stages never meet. Made at the stage's first
/// timer: most stages of a churning server never start one, and a server may hold many of them.
/// </summary>
internal sealed class StageTimerTable : IStageTimerTable
{
    private Dictionary<long, StageTimer>? _timers;

    public int Count => _timers?.Count ?? 0;

    // Ids come from the stage's own counter, so a duplicate is a broken stage, not a case to tolerate: Add throws.
    public void Add(StageTimer timer) => (_timers ??= []).Add(timer.Id, timer);

    public bool Remove(long timerId, [NotNullWhen(true)] out StageTimer? timer)
    {
        timer = null;
        return _timers is not null && _timers.Remove(timerId, out timer);
    }

    public bool Contains(long timerId) => _timers is not null && _timers.ContainsKey(timerId);

    public void RemoveAll(List<StageTimer> removed)
    {
        if (_timers is not null)
        {
            removed.AddRange(_timers.Values);
            _timers.Clear();
        }
    }
}
