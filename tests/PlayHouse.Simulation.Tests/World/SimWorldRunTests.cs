namespace PlayHouse.Simulation.Tests.World;

/// <summary>
/// How the world runs its queue: scheduling at, before and after now, the run loops' limits one tick and one event
/// either side, the event budget that declares a livelock, the counters, and the synchronization context of a step.
/// </summary>
public sealed class SimWorldRunTests
{
    [Fact]
    public void Scheduling_RefusesANullItem_AndRunsWorkDueInThePastAtTheCurrentInstant()
    {
        var world = new SimWorld(1);
        Assert.Throws<ArgumentNullException>(() => world.ScheduleAt(0, null!));
        world.RunUntil(100);
        var ran = new List<(string Name, long AtTicks)>();

        world.ScheduleAt(40, new Work(() => ran.Add(("past", world.NowTicks))));
        world.ScheduleAfter(TimeSpan.FromTicks(-5), new Work(() => ran.Add(("negative delay", world.NowTicks))));
        world.ScheduleAfter(TimeSpan.FromTicks(7), new Work(() => ran.Add(("delay", world.NowTicks))));
        world.RunUntilQuiet();

        Assert.Equal([("past", 100L), ("negative delay", 100L), ("delay", 107L)], ran);
    }

    [Fact]
    public void RunUntil_RunsEventsDueAtItsLimit_LeavesThoseOneTickLater_AndNeverTurnsTimeBack()
    {
        var world = new SimWorld(1);
        var ran = new List<long>();
        world.ScheduleAt(99, new Work(() => ran.Add(world.NowTicks)));
        world.ScheduleAt(100, new Work(() => ran.Add(world.NowTicks)));
        world.ScheduleAt(101, new Work(() => ran.Add(world.NowTicks)));

        world.RunUntil(100);
        Assert.Equal([99L, 100L], ran);
        Assert.Equal(100, world.NowTicks);
        Assert.Equal(1, world.PendingEventCount);

        world.RunUntil(50);
        Assert.Equal(100, world.NowTicks);
        Assert.Equal(TimeSpan.FromTicks(100), world.Now);

        world.RunFor(TimeSpan.FromTicks(1));
        Assert.Equal([99L, 100L, 101L], ran);
        Assert.Equal(101, world.NowTicks);
    }

    [Fact]
    public void RunUntilQuiet_RunsEventsDueAtItsTimeLimit_ButStopsAtTheLimitBeforeOneDueLater()
    {
        var world = new SimWorld(1);
        var ran = new List<long>();
        world.ScheduleAt(100, new Work(() => ran.Add(world.NowTicks)));
        world.ScheduleAt(201, new Work(() => ran.Add(world.NowTicks)));

        Assert.False(world.RunUntilQuiet(200));
        Assert.Equal([100L], ran);
        Assert.Equal(200, world.NowTicks);

        Assert.True(world.RunUntilQuiet(201));
        Assert.Equal([100L, 201L], ran);
        Assert.Equal(201, world.NowTicks);
        Assert.True(world.RunUntilQuiet());
    }

    [Fact]
    public void RunUntilQuiet_StopsWhenEventsExecutedReachesTheBudget_NotOneEventSooner()
    {
        var world = new SimWorld(1);
        for (var i = 0; i < 5; i++)
        {
            world.ScheduleAt(10, new Work(() => { }));
        }

        Assert.False(world.RunUntilQuiet(long.MaxValue, eventsExecutedMax: 3));
        Assert.Equal(3, world.EventsExecuted);
        Assert.Equal(2, world.PendingEventCount);

        Assert.True(world.RunUntilQuiet(long.MaxValue, eventsExecutedMax: 5));
        Assert.Equal(5, world.EventsExecuted);
        Assert.Equal(0, world.PendingEventCount);
    }

    [Fact]
    public void EventBudget_RunsExactlyEventsMax_AndDeclaresTheNextOneALivelock()
    {
        var world = new SimWorld(1, new SimWorldOptions { EventsMax = 3 });
        var ran = 0;
        for (var i = 0; i < 4; i++)
        {
            world.ScheduleAt(i * 10L, new Work(() => ran++));
        }

        Assert.True(world.Step());
        Assert.True(world.Step());
        Assert.True(world.Step());
        var livelock = Assert.Throws<SimulationException>(() => world.Step());

        Assert.Equal(3, ran);
        Assert.Equal(4, world.EventsExecuted);
        Assert.Equal($"Livelock: more than 3 events ran (virtual time {TimeSpan.FromTicks(30)}).", livelock.Message);
    }

    [Fact]
    public void EventBudget_InTheRunnersLoop_AlsoDeclaresTheEventPastEventsMaxALivelock()
    {
        var world = new SimWorld(1, new SimWorldOptions { EventsMax = 2 });
        for (var i = 0; i < 3; i++)
        {
            world.ScheduleAt(5, new Work(() => { }));
        }

        Assert.True(world.StepInContext());
        Assert.True(world.StepInContext());
        Assert.Throws<SimulationException>(() => world.StepInContext());
        Assert.False(new SimWorld(1).StepInContext());
    }

    [Fact]
    public void Counters_TellEventsRunAndTheMostEverQueuedAtOnce_WhicheverWayTheEventsWereQueued()
    {
        var world = new SimWorld(1);
        Assert.False(world.Step());
        Assert.Equal(0, world.EventsExecuted);

        for (var i = 1; i <= 3; i++)
        {
            world.ScheduleAt(i * 10L, new Work(() => { }));
        }

        Assert.Equal(3, world.PendingEventCount);
        Assert.Equal(3, world.PendingEventHighWater);
        world.RunUntilQuiet();
        Assert.Equal(0, world.PendingEventCount);

        for (var i = 1; i <= 4; i++)
        {
            world.ScheduleAtWithSequence(100 + i, new Work(() => { }));
        }

        Assert.Equal(4, world.PendingEventHighWater);
        world.RunUntilQuiet();

        for (var i = 1; i <= 5; i++)
        {
            world.Executor.Schedule(new Work(() => { }));
        }

        Assert.Equal(5, world.PendingEventHighWater);
        world.RunUntilQuiet();
        Assert.Equal(12, world.EventsExecuted);
        Assert.Equal(5, world.PendingEventHighWater);
    }

    [Fact]
    public void ScheduleAtWithSequence_ReturnsTheSequenceTheEventReadsWhenItRuns_AndZeroFromAnotherThread()
    {
        var world = new SimWorld(1);
        var seen = new List<long>();
        world.ScheduleAt(5, new Work(() => seen.Add(world.CurrentEventSequence)));
        var first = world.ScheduleAtWithSequence(5, new Work(() => seen.Add(world.CurrentEventSequence)));
        var second = world.ScheduleAtWithSequence(1, new Work(() => seen.Add(world.CurrentEventSequence)));
        var foreign = -1L;
        var thread = new Thread(() => foreign = world.ScheduleAtWithSequence(5, new Work(() => seen.Add(-1))));
        thread.Start();
        thread.Join();
        world.RunUntilQuiet();

        Assert.Equal(2, first);
        Assert.Equal(3, second);
        Assert.Equal([3L, 1L, 2L], seen);
        Assert.Equal(0, foreign);
        Assert.Contains("tried to schedule work", Assert.Single(world.Escapes), StringComparison.Ordinal);
    }

    [Fact]
    public void Step_RunsTheEventUnderTheWorldsContext_AndPutsBackTheCallersContextAfterward()
    {
        var world = new SimWorld(1);
        var caller = new SynchronizationContext();
        SynchronizationContext? during = null;
        world.ScheduleAt(0, new Work(() => during = SynchronizationContext.Current));
        var previous = SynchronizationContext.Current;
        SynchronizationContext.SetSynchronizationContext(caller);
        try
        {
            Assert.True(world.Step());
            Assert.Same(world.SynchronizationContext, during);
            Assert.Same(caller, SynchronizationContext.Current);

            // A caller that installed the world's context keeps it: nothing is swapped.
            SynchronizationContext.SetSynchronizationContext(world.SynchronizationContext);
            world.ScheduleAt(0, new Work(() => during = SynchronizationContext.Current));
            Assert.True(world.Step());
            Assert.Same(world.SynchronizationContext, during);
            Assert.Same(world.SynchronizationContext, SynchronizationContext.Current);
        }
        finally
        {
            SynchronizationContext.SetSynchronizationContext(previous);
        }
    }

    [Fact]
    public void Escape_NamesTheThreadTheActionTheInstantAndTheOwner()
    {
        var world = new SimWorld(7, new SimWorldOptions { ExploreSchedules = true });
        world.RunUntil(TimeSpan.FromSeconds(2).Ticks);
        var owner = Environment.CurrentManagedThreadId;
        var foreignId = 0;
        var thread = new Thread(() =>
        {
            foreignId = Environment.CurrentManagedThreadId;
            world.NextChildSeed();
        });
        thread.Start();
        thread.Join();

        Assert.Equal(7UL, world.Seed);
        Assert.True(world.Options.ExploreSchedules);
        Assert.Equal(
            $"Thread {foreignId} tried to draw a child seed at virtual time {TimeSpan.FromSeconds(2)}; the simulation runs on thread {owner} only (a continuation escaped to the ThreadPool, or a real timer fired).",
            Assert.Single(world.Escapes));
    }

    [Fact]
    public void CreateRandom_DrawsFromTheNextChildSeed_SoEqualWorldsGiveEqualStreams()
    {
        var a = new SimWorld(42);
        var b = new SimWorld(42);

        var fromA = a.CreateRandom();
        var expected = new PlayHouse.Core.Seams.Xoshiro256StarStar(b.NextChildSeed());

        Assert.Equal(expected.NextUInt64(), fromA.NextUInt64());
        Assert.NotEqual(a.CreateRandom().NextUInt64(), new SimWorld(43).CreateRandom().NextUInt64());
    }
}
