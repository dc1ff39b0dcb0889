using PlayHouse.Core.Seams;

namespace PlayHouse.Simulation.Tests.World;

/// <summary>
/// The edges of the world's queue: the wheel's span and its first bucket, heaps past their first array, the hint
/// threshold of a crowded wheel early and late in a run, work queued for the current instant, the explored order of
/// events that share an instant, and the step variants and scheduling refusals that no order test reaches.
/// </summary>
public sealed class SimWorldQueueTests
{
    // The wheel's geometry and hint threshold (SimWorld's EventWheel): buckets of 256 ticks, 1,024 of them, hints from
    // 2,048 queued events on.
    private const long BucketTicks = 256;
    private const long WheelSpanTicks = 1024 * BucketTicks;
    private const int HintEventsMin = 2048;

    [Fact]
    public void EventsAtTheEdgeOfTheWheelsSpan_RunInTimeOrder_AfterAnEarlierOneQueuedBehindThem()
    {
        // The event exactly one span ahead is the first the wheel cannot hold: in the wheel it would share the first
        // bucket's slot and be taken for the earliest.
        var world = new SimWorld(1);
        var order = new EventOrderModel(world);
        order.Schedule(WheelSpanTicks);
        order.Schedule(WheelSpanTicks - 1);
        order.Schedule(5 * BucketTicks);

        world.RunUntilQuiet();

        Assert.Equal([(5 * BucketTicks, 2), (WheelSpanTicks - 1, 1), (WheelSpanTicks, 0)], order.Ran);
        Assert.Equal(order.Expected(), order.Ran);
    }

    [Fact]
    public void EventQueuedEarlierInTheWheelsFirstBucket_AfterTheWheelFoundItsEarliest_RunsFirst()
    {
        var world = new SimWorld(1);
        var order = new EventOrderModel(world);
        order.Schedule(200);

        // RunUntil peeks, so the wheel has found its earliest event (in bucket 0) before the earlier one comes.
        world.RunUntil(10);
        order.Schedule(100);
        world.RunUntilQuiet();

        Assert.Equal([(100L, 1), (200L, 0)], order.Ran);
        Assert.Equal(200, world.NowTicks);
    }

    [Fact]
    public void Heaps_HoldMoreEventsThanTheirFirstArray_AndRunThemInTimeThenScheduleOrder()
    {
        // Near events (past the wheel, within 100 ms) and far ones (later), 300 of each, queued latest first and two
        // to an instant, so both heaps grow past 256 entries and sift on every enqueue.
        var world = new SimWorld(1);
        var order = new EventOrderModel(world);
        for (var i = 299; i >= 0; i--)
        {
            order.Schedule(WheelSpanTicks + 50_000 + (i / 2 * 100));
            order.Schedule(TimeSpan.FromSeconds(2).Ticks + (i / 2 * 100));
        }

        Assert.Equal(600, world.PendingEventCount);
        world.RunUntilQuiet();

        Assert.Equal(600, order.Ran.Count);
        Assert.Equal(order.Expected(), order.Ran);
    }

    [Theory]
    [InlineData(10_000)]
    [InlineData(2_000_000)]
    public void Heap_EmptiedByItsLastEvent_KeepsNoReferenceToTheWorkItRan(long atTicks)
    {
        // One event past the wheel's span: within 100 ms it waits in the near heap, later in the far one.
        var world = new SimWorld(1);
        var ran = QueueOneEventPastTheWheel(world, WheelSpanTicks + atTicks);

        Assert.True(world.Step());
        Assert.Equal(0, world.PendingEventCount);
        GC.Collect();
        GC.WaitForPendingFinalizers();
        GC.Collect();

        Assert.False(ran.IsAlive, "the emptied heap still holds the work item it ran");
        GC.KeepAlive(world);
    }

    [Theory]
    [InlineData(HintEventsMin - 1, 0)]
    [InlineData(HintEventsMin, 1)]
    public void CrowdedWheel_HintsItsFirstBucketOnlyOnceItHoldsHintEventsMin(int events, long hints)
    {
        // The earliest event sits in bucket 1, the first bucket the wheel finds; one peek finds it.
        var world = new SimWorld(1);
        var order = new EventOrderModel(world);
        for (var i = 0; i < events; i++)
        {
            order.Schedule(BucketTicks + (i % 700 * BucketTicks) + (i % 7));
        }

        world.RunUntil(0);
        Assert.Equal(hints, world.BucketsHinted);

        world.RunUntilQuiet();
        Assert.Equal(order.Expected(), order.Ran);
    }

    [Fact]
    public void Wheel_LateInARun_StillTakesTheEventsDueWithinItsSpan_AndHintsThemWhenCrowded()
    {
        // Ten seconds in, now is some 390,000 buckets past the start: the wheel's span must have followed it.
        var world = new SimWorld(1);
        var start = TimeSpan.FromSeconds(10).Ticks;
        world.RunUntil(start);
        var order = new EventOrderModel(world);
        for (var i = 0; i < HintEventsMin; i++)
        {
            order.Schedule(start + BucketTicks + (i % 700 * BucketTicks) + (i % 7));
        }

        world.RunUntil(start);
        Assert.Equal(1, world.BucketsHinted);

        world.RunUntilQuiet();
        Assert.Equal(order.Expected(), order.Ran);
    }

    [Fact]
    public void WorkQueuedForNow_RunsAfterTheEventsAlreadyDueAtThisInstant()
    {
        var world = new SimWorld(1);
        var ran = new List<string>();
        world.ScheduleAt(100, new Work(() =>
        {
            ran.Add("a");
            world.Executor.Schedule(new Work(() => ran.Add("c")));
        }));
        world.ScheduleAt(100, new Work(() => ran.Add("b")));

        world.RunUntilQuiet();

        Assert.Equal(["a", "b", "c"], ran);
        Assert.Equal(100, world.NowTicks);
    }

    [Fact]
    public void ExploredSchedule_PicksEachEventAmongThoseDueAtItsInstant_WithTheWorldsScheduleStream()
    {
        // Groups at 1,000, 3,000 and 5,000 ticks (event 1 and event 31 queue more work for their instant) with lone
        // events between and after them; eight seeds, so a pick drawn where none is due shows in some later group.
        (long, int)[] events =
        [
            (1_000, 0), (1_000, 1), (1_000, 2), (1_000, 3), (2_000, 20), (3_000, 30), (3_000, 31), (3_000, 32),
            (3_000, 33), (4_000, 50), (5_000, 60), (5_000, 61), (5_000, 62), (5_000, 63), (5_000, 64), (6_000, 70),
        ];
        var fifo = RunInOrder(seed: 1, events, explore: false);
        var differ = 0;
        for (var seed = 1UL; seed <= 8; seed++)
        {
            var explored = RunInOrder(seed, events, explore: true);
            Assert.Equal(ExploredOrder(seed, events), explored);
            differ += explored.SequenceEqual(fifo) ? 0 : 1;
        }

        Assert.Equal([0, 1, 2, 3, 10, 11, 20, 30, 31, 32, 33, 40, 50, 60, 61, 62, 63, 64, 70], fifo);
        Assert.Equal(8, differ);
    }

    [Fact]
    public void ExploredSchedule_OfTheLastEventsAllDueNow_RunsEachOnceInTheModelsOrder()
    {
        // Due at the current instant (0) and nothing behind them: each pick empties the queue down to the group.
        (long, int)[] events = [(0, 0), (0, 1), (0, 2)];
        var explored = RunInOrder(seed: 4, events, explore: true);

        Assert.Equal(ExploredOrder(seed: 4, events), explored);
        Assert.Equal([0, 1, 2, 10, 11], explored.Order());
    }

    [Fact]
    public void Step_WithTheWorldsContextAlreadyInstalled_RunsTheEvent()
    {
        var world = new SimWorld(1);
        var ran = new List<long>();
        world.ScheduleAt(7, new Work(() => ran.Add(world.NowTicks)));
        var previous = SynchronizationContext.Current;
        SynchronizationContext.SetSynchronizationContext(world.SynchronizationContext);
        try
        {
            Assert.True(world.Step());
            Assert.Equal([7L], ran);
        }
        finally
        {
            SynchronizationContext.SetSynchronizationContext(previous);
        }
    }

    [Fact]
    public void StepInContext_RunsTheNextEvent_AtItsInstant()
    {
        var world = new SimWorld(1);
        var ran = new List<long>();
        world.ScheduleAt(9, new Work(() => ran.Add(world.NowTicks)));
        world.ScheduleAt(3, new Work(() => ran.Add(world.NowTicks)));

        Assert.True(world.StepInContext());
        Assert.Equal([3L], ran);
        Assert.True(world.StepInContext());
        Assert.Equal([3L, 9L], ran);
        Assert.False(world.StepInContext());
    }

    [Fact]
    public void ScheduleAt_FromAnotherThread_QueuesNothing_AndIsRecordedAsSchedulingWork()
    {
        var world = new SimWorld(1);
        var ran = false;
        var thread = new Thread(() => world.ScheduleAt(5, new Work(() => ran = true)));
        thread.Start();
        thread.Join();

        Assert.Equal(0, world.PendingEventCount);
        world.RunUntilQuiet();
        Assert.False(ran);
        Assert.Contains("tried to schedule work at", Assert.Single(world.Escapes), StringComparison.Ordinal);
    }

    // Out of line, so no local of the test holds the work item once it has run.
    [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
    private static WeakReference QueueOneEventPastTheWheel(SimWorld world, long atTicks)
    {
        var work = new Work(() => { });
        world.ScheduleAt(atTicks, work);
        return new WeakReference(work);
    }

    // Event 1 queues 10 and 11 for its instant when it runs, event 31 queues 40.
    private static readonly Dictionary<int, int[]> Children = new() { [1] = [10, 11], [31] = [40] };

    /// <summary>Runs <paramref name="events"/> and the work they queue; returns the ids in the order they ran.</summary>
    private static List<int> RunInOrder(ulong seed, (long AtTicks, int Id)[] events, bool explore)
    {
        var world = new SimWorld(seed, new SimWorldOptions { ExploreSchedules = explore });
        var ran = new List<int>();
        Work Make(int id) => new(() =>
        {
            ran.Add(id);
            foreach (var child in Children.GetValueOrDefault(id, []))
            {
                world.Executor.Schedule(Make(child));
            }
        });
        foreach (var (atTicks, id) in events)
        {
            world.ScheduleAt(atTicks, Make(id));
        }

        world.RunUntilQuiet();
        return ran;
    }

    /// <summary>
    /// The order exploration must give <paramref name="events"/>: at each step the events due at the earliest instant
    /// in schedule order, one picked with the world's schedule stream (the first child of the root seed) when there
    /// are several, nothing drawn for a lone one; the work an event queues joins its instant behind everything queued.
    /// </summary>
    private static List<int> ExploredOrder(ulong seed, (long AtTicks, int Id)[] events)
    {
        var schedule = new Xoshiro256StarStar(new Xoshiro256StarStar(seed).NextChildSeed());
        var pending = events.Select((e, i) => (e.AtTicks, Sequence: i + 1L, e.Id)).ToList();
        var sequence = (long)events.Length;
        var order = new List<int>();
        while (pending.Count > 0)
        {
            var time = pending.Min(e => e.AtTicks);
            var group = pending.Where(e => e.AtTicks == time).OrderBy(e => e.Sequence).ToList();
            var chosen = group.Count == 1 ? group[0] : group[schedule.NextInt(group.Count)];
            pending.Remove(chosen);
            order.Add(chosen.Id);
            foreach (var child in Children.GetValueOrDefault(chosen.Id, []))
            {
                pending.Add((time, ++sequence, child));
            }
        }

        return order;
    }
}
