namespace PlayHouse.Simulation.Tests.World;

/// <summary>A work item that runs an action; the world's tests queue these as their events.</summary>
/// <remarks>Runs on whichever thread executes it; the world's tests run it on the world's thread.</remarks>
internal sealed class Work(Action action) : IThreadPoolWorkItem
{
    public void Execute() => action();
}

/// <summary>
/// The model of the world's order: every event scheduled is recorded with its effective instant and a sequence
/// of its own, and the events must run sorted by (instant, sequence), whichever part of the queue held them.
/// </summary>
/// <remarks>Invariant: one recorded entry per scheduled event. Used on the world's thread only.</remarks>
internal sealed class EventOrderModel(SimWorld world)
{
    private readonly List<(long TimeTicks, long Sequence, int Id)> _scheduled = [];

    public List<(long TimeTicks, int Id)> Ran { get; } = [];

    public int Scheduled => _scheduled.Count;

    /// <summary>Schedules an event that records itself when it runs, then does <paramref name="then"/>.</summary>
    public void Schedule(long atTicks, Action then)
    {
        var id = _scheduled.Count;
        _scheduled.Add((Math.Max(atTicks, world.NowTicks), id + 1L, id));
        world.ScheduleAt(atTicks, new Work(() =>
        {
            Ran.Add((world.NowTicks, id));
            then();
        }));
    }

    /// <summary>Schedules an event that only records itself.</summary>
    public void Schedule(long atTicks) => Schedule(atTicks, () => { });

    public List<(long TimeTicks, int Id)> Expected() =>
        [.. _scheduled.OrderBy(e => e.TimeTicks).ThenBy(e => e.Sequence).Select(e => (e.TimeTicks, e.Id))];
}
