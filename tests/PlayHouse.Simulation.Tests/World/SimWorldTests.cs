namespace PlayHouse.Simulation.Tests.World;

public sealed class SimWorldTests
{
    [Fact]
    public void WorkScheduledFromAnotherThread_IsRecordedAsAnEscapeAndNotRun()
    {
        var world = new SimWorld(1);
        var ran = false;
        var thread = new Thread(() => world.Executor.Schedule(new Work(() => ran = true)));
        thread.Start();
        thread.Join();
        world.RunUntilQuiet();

        var escape = Assert.Single(world.Escapes);
        Assert.Contains("escaped", escape, StringComparison.Ordinal);
        Assert.False(ran);
    }

    [Fact]
    public async Task ContinuationOfARealTimer_IsCaughtAsAnEscape()
    {
        var world = new SimWorld(1);
        var escaped = new TaskCompletionSource();

        // The world runs on a dedicated thread, so the ThreadPool continuation cannot land on its owner thread.
        var owner = new Thread(() =>
        {
            world.BindToCurrentThread();
            world.ScheduleAt(0, new Work(() => _ = EscapeAsync(world, escaped)));
            world.RunUntilQuiet();
        });
        owner.Start();
        owner.Join();
        await escaped.Task.WaitAsync(TimeSpan.FromSeconds(30));

        Assert.NotEmpty(world.Escapes);
        Assert.Contains("real timer", world.Escapes[0], StringComparison.Ordinal);
    }

    [Fact]
    public void EventsAtTheSameInstant_RunInScheduleOrder_UnlessExplorationIsOn()
    {
        static string Order(SimWorld world)
        {
            var order = new List<int>();
            for (var i = 0; i < 8; i++)
            {
                var n = i;
                world.ScheduleAt(100, new Work(() => order.Add(n)));
            }

            world.RunUntilQuiet();
            return string.Join(",", order);
        }

        var fifo = Order(new SimWorld(5));
        var explored = Order(new SimWorld(5, new SimWorldOptions { ExploreSchedules = true }));
        var exploredAgain = Order(new SimWorld(5, new SimWorldOptions { ExploreSchedules = true }));

        Assert.Equal("0,1,2,3,4,5,6,7", fifo);
        Assert.NotEqual(fifo, explored);
        Assert.Equal(explored, exploredAgain);
    }

    [Fact]
    public void Time_JumpsToTheNextEvent_AndTimersFireAtTheirExactInstant()
    {
        var world = new SimWorld(1);
        var fired = new List<long>();
        using var timer = world.Time.CreateTimer(_ => fired.Add(world.NowTicks), null, TimeSpan.FromSeconds(3), TimeSpan.FromSeconds(2));
        world.RunUntil(TimeSpan.FromSeconds(8).Ticks);

        Assert.Equal([TimeSpan.FromSeconds(3).Ticks, TimeSpan.FromSeconds(5).Ticks, TimeSpan.FromSeconds(7).Ticks], fired);
        Assert.Equal(TimeSpan.FromSeconds(8).Ticks, world.NowTicks);
    }

    [Fact]
    public void EventsNearAndFarInTime_RunInTimeThenScheduleOrder_WhateverTheirMix()
    {
        // Events more than the queue's near horizon ahead wait apart from the near ones; scheduling from inside
        // events at mixed distances checks the two are merged by (time, sequence) exactly like one queue.
        var world = new SimWorld(5);
        var random = world.CreateRandom();
        var order = new EventOrderModel(world);

        void Schedule(long atTicks) => order.Schedule(atTicks, () =>
        {
            if (order.Scheduled < 2_000)
            {
                // Up to 400 ms ahead, some at this very instant, so near, far and equal instants all mix.
                var ahead = random.NextInt(4) == 0 ? 0 : random.NextLong(0, 400 * TimeSpan.TicksPerMillisecond);
                Schedule(world.NowTicks + ahead);
                Schedule(world.NowTicks + (ahead / 2));
            }
        });

        Schedule(0);
        Schedule(TimeSpan.TicksPerSecond);
        world.RunUntilQuiet();

        Assert.True(order.Ran.Count > 1_000, $"only {order.Ran.Count} events ran");
        Assert.Equal(order.Expected(), order.Ran);
    }

    [Theory]
    [InlineData(1)]
    [InlineData(256)]
    [InlineData(20_000)]
    public void EventsWithinAFewNetworkHopsAhead_RunInTimeThenScheduleOrder_WithManyTiesAndRunUntilJumps(long grainTicks)
    {
        // Events a hop's latency ahead (up to some 60 ms, across the span of the queue's wheel and past it) on a grain
        // of 1, 256 (the wheel's bucket) or 20,000 ticks, so many share an instant or a bucket; RunUntil jumps in
        // between move time without an event. Whatever part of the queue holds them, the order is (time, sequence).
        var world = new SimWorld(11);
        var random = world.CreateRandom();
        var order = new EventOrderModel(world);

        void Schedule(long atTicks) => order.Schedule(atTicks, () =>
        {
            if (order.Scheduled < 4_000)
            {
                var ahead = random.NextInt(5) == 0 ? 0 : random.NextLong(0, 60 * TimeSpan.TicksPerMillisecond / grainTicks) * grainTicks;
                Schedule(world.NowTicks + ahead);
                if (random.NextInt(2) == 0)
                {
                    Schedule(world.NowTicks + (ahead / 3));
                }
            }
        });

        for (var i = 0; i < 50; i++)
        {
            Schedule(random.NextLong(0, 30 * TimeSpan.TicksPerMillisecond / grainTicks) * grainTicks);
        }

        while (world.PendingEventCount > 0)
        {
            world.RunUntil(world.NowTicks + random.NextLong(1, 10 * TimeSpan.TicksPerMillisecond));
        }

        Assert.True(order.Ran.Count > 3_000, $"only {order.Ran.Count} events ran");
        Assert.Equal(order.Expected(), order.Ran);
    }

    [Fact]
    public void EventsOfACrowdedWheel_RunInTimeThenScheduleOrder_WhileTheWheelHintsTheirObjectsAhead()
    {
        // Thousands of events queued at once within the wheel's span (as 10,000 clients keep it) turn on the cache
        // hints that run ahead of the wheel; hints read the queued events and must never change which runs when.
        var world = new SimWorld(5);
        var random = world.CreateRandom();
        var order = new EventOrderModel(world);

        void Schedule(long atTicks) => order.Schedule(atTicks, () =>
        {
            if (order.Scheduled < 30_000)
            {
                Schedule(world.NowTicks + random.NextLong(0, 20 * TimeSpan.TicksPerMillisecond));
            }
        });

        for (var i = 0; i < 5_000; i++)
        {
            Schedule(random.NextLong(0, 20 * TimeSpan.TicksPerMillisecond));
        }

        world.RunUntilQuiet();

        Assert.True(world.BucketsHinted > 100, $"the wheel hinted ahead only {world.BucketsHinted} times");
        Assert.Equal(order.Expected(), order.Ran);
    }

    [Fact]
    public void ChildSeeds_AreDrawnDeterministically()
    {
        var a = new SimWorld(99);
        var b = new SimWorld(99);

        Assert.Equal(a.NextChildSeed(), b.NextChildSeed());
        Assert.Equal(a.NextChildSeed(), b.NextChildSeed());
        Assert.NotEqual(new SimWorld(99).NextChildSeed(), new SimWorld(100).NextChildSeed());
    }

    private static async Task EscapeAsync(SimWorld world, TaskCompletionSource escaped)
    {
        // A real timer with ConfigureAwait(false): the continuation runs on the ThreadPool, outside the world.
        await Task.Delay(TimeSpan.FromMilliseconds(1), TimeProvider.System).ConfigureAwait(false);
        world.Executor.Schedule(new Work(() => { }));
        escaped.SetResult();
    }
}
