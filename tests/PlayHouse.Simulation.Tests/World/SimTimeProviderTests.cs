namespace PlayHouse.Simulation.Tests.World;

/// <summary>
/// The world's clock and timers as a <see cref="TimeProvider"/>: ticks of 100 ns from a fixed UTC epoch, timers that
/// fire at their exact due instant, re-arm, disarm and dispose, and the executor's refusals and counts.
/// </summary>
public sealed class SimTimeProviderTests
{
    private static readonly DateTimeOffset Epoch = new(2026, 1, 1, 0, 0, 0, TimeSpan.Zero);

    [Fact]
    public void Clock_CountsTicksOfTheWorld_AtTenMillionPerSecond_FromAFixedUtcEpoch()
    {
        var world = new SimWorld(1);
        var time = world.Time;
        Assert.Equal(0, time.GetTimestamp());
        Assert.Equal(Epoch, time.GetUtcNow());

        world.RunUntil(12_345);

        Assert.Equal(TimeSpan.TicksPerSecond, time.TimestampFrequency);
        Assert.Equal(12_345, time.GetTimestamp());
        Assert.Equal(Epoch.AddTicks(12_345), time.GetUtcNow());
        Assert.Equal(TimeSpan.FromTicks(12_345), time.GetElapsedTime(0));
        Assert.Same(TimeZoneInfo.Utc, time.LocalTimeZone);
    }

    [Fact]
    public void CreateTimer_RefusesANullCallback_AndCountsOnlyTheTimersItCreated()
    {
        var world = new SimWorld(1);

        var refused = Assert.Throws<ArgumentNullException>(() => world.Time.CreateTimer(null!, null, TimeSpan.Zero, TimeSpan.Zero));
        Assert.Equal("callback", refused.ParamName);
        Assert.Equal(0, world.Time.TimersCreated);

        using var first = world.Time.CreateTimer(_ => { }, null, Timeout.InfiniteTimeSpan, Timeout.InfiniteTimeSpan);
        using var second = world.Time.CreateTimer(_ => { }, null, Timeout.InfiniteTimeSpan, Timeout.InfiniteTimeSpan);
        Assert.Equal(2, world.Time.TimersCreated);
    }

    [Fact]
    public void CreateTimer_FromAnotherThread_IsRecordedAsAnEscapeNamingTheTimer()
    {
        var world = new SimWorld(1);
        var thread = new Thread(() => world.Time.CreateTimer(_ => { }, null, Timeout.InfiniteTimeSpan, Timeout.InfiniteTimeSpan));
        thread.Start();
        thread.Join();

        var escape = Assert.Single(world.Escapes);
        Assert.Contains("tried to create a timer", escape, StringComparison.Ordinal);
        Assert.Equal(0, world.PendingEventCount);
    }

    [Fact]
    public void Timer_PassesItsStateToTheCallback_AndFiresOnceWithoutAPeriod()
    {
        var world = new SimWorld(1);
        var state = new object();
        var fired = new List<(long AtTicks, object? State)>();
        using var timer = world.Time.CreateTimer(s => fired.Add((world.NowTicks, s)), state, TimeSpan.FromTicks(30), Timeout.InfiniteTimeSpan);

        world.RunUntil(29);
        Assert.Empty(fired);
        world.RunUntil(1_000);

        var (atTicks, passed) = Assert.Single(fired);
        Assert.Equal(30, atTicks);
        Assert.Same(state, passed);
    }

    [Fact]
    public void Timer_WithAPeriodOfZero_FiresOnce_AndADueTimeOfZeroFiresAtTheCurrentInstant()
    {
        var world = new SimWorld(1);
        world.RunUntil(50);
        var fired = new List<long>();
        using var timer = world.Time.CreateTimer(_ => fired.Add(world.NowTicks), null, TimeSpan.Zero, TimeSpan.Zero);

        world.RunUntil(10_000);

        Assert.Equal([50L], fired);
        Assert.Equal(0, world.PendingEventCount);
    }

    [Fact]
    public void Timer_RefusesANegativeDueTime_ButTakesInfiniteAsDisarmed()
    {
        var world = new SimWorld(1);
        var fired = 0;
        using var timer = world.Time.CreateTimer(_ => fired++, null, Timeout.InfiniteTimeSpan, TimeSpan.FromTicks(10));

        Assert.Throws<ArgumentOutOfRangeException>(() => timer.Change(TimeSpan.FromTicks(-1), Timeout.InfiniteTimeSpan));
        Assert.True(timer.Change(Timeout.InfiniteTimeSpan, TimeSpan.FromTicks(10)));
        world.RunUntil(1_000);

        Assert.Equal(0, fired);
        Assert.Equal(0, world.PendingEventCount);
    }

    [Fact]
    public void Timer_ReArmedLaterOrEarlier_FiresOnlyAtItsNewDueInstant()
    {
        var world = new SimWorld(1);
        var fired = new List<long>();
        using var later = world.Time.CreateTimer(_ => fired.Add(world.NowTicks), null, TimeSpan.FromTicks(30), Timeout.InfiniteTimeSpan);
        using var earlier = world.Time.CreateTimer(_ => fired.Add(-world.NowTicks), null, TimeSpan.FromTicks(80), Timeout.InfiniteTimeSpan);

        world.RunUntil(10);
        Assert.True(later.Change(TimeSpan.FromTicks(50), Timeout.InfiniteTimeSpan));
        Assert.True(earlier.Change(TimeSpan.FromTicks(10), Timeout.InfiniteTimeSpan));
        world.RunUntil(1_000);

        // The stale events at 30 and 80 come up and are skipped: each timer fires once, at 60 and 20.
        Assert.Equal([-20L, 60L], fired);
    }

    [Fact]
    public void Timer_ReArmedToTheSameInstant_FiresOnce_ThoughTwoOfItsEventsComeDueThen()
    {
        var world = new SimWorld(1);
        var fired = new List<long>();
        using var timer = world.Time.CreateTimer(_ => fired.Add(world.NowTicks), null, TimeSpan.FromTicks(30), Timeout.InfiniteTimeSpan);

        world.RunUntil(10);
        Assert.True(timer.Change(TimeSpan.FromTicks(20), Timeout.InfiniteTimeSpan));
        Assert.Equal(2, world.PendingEventCount);
        world.RunUntil(1_000);

        Assert.Equal([30L], fired);
        Assert.Equal(0, world.PendingEventCount);
    }

    [Fact]
    public void Timer_DisarmedByAnInfiniteDueTime_LeavesItsQueuedEventStale()
    {
        var world = new SimWorld(1);
        var fired = 0;
        using var timer = world.Time.CreateTimer(_ => fired++, null, TimeSpan.FromTicks(30), TimeSpan.FromTicks(30));

        world.RunUntil(30);
        Assert.Equal(1, fired);
        Assert.True(timer.Change(Timeout.InfiniteTimeSpan, TimeSpan.FromTicks(30)));
        world.RunUntil(1_000);

        Assert.Equal(1, fired);
    }

    [Fact]
    public void Timer_WithAPeriod_FiresEveryPeriodAfterItsDueTime_UntilDisposedInItsCallback()
    {
        var world = new SimWorld(1);
        var fired = new List<long>();
        ITimer? timer = null;
        timer = world.Time.CreateTimer(
            _ =>
            {
                fired.Add(world.NowTicks);
                if (fired.Count == 3)
                {
                    timer!.Dispose();
                }
            },
            null,
            TimeSpan.FromTicks(5),
            TimeSpan.FromTicks(20));

        world.RunUntil(1_000);

        Assert.Equal([5L, 25L, 45L], fired);
        Assert.False(timer.Change(TimeSpan.Zero, Timeout.InfiniteTimeSpan));
    }

    [Fact]
    public async Task Timer_DisposedAsynchronously_NeverFires_AndRefusesToBeChanged()
    {
        var world = new SimWorld(1);
        var fired = 0;
        var timer = world.Time.CreateTimer(_ => fired++, null, TimeSpan.FromTicks(30), Timeout.InfiniteTimeSpan);

        var disposing = timer.DisposeAsync();
        Assert.True(disposing.IsCompletedSuccessfully);
        await disposing;
        world.RunUntil(1_000);

        Assert.Equal(0, fired);
        Assert.False(timer.Change(TimeSpan.FromTicks(1), Timeout.InfiniteTimeSpan));
        world.RunUntil(2_000);
        Assert.Equal(0, fired);
    }

    [Fact]
    public void Executor_RefusesANullWorkItem_AndCountsOnlyTheItemsItQueued()
    {
        var world = new SimWorld(1);
        var ran = 0;

        Assert.Throws<ArgumentNullException>(() => world.Executor.Schedule(null!));
        world.Executor.Schedule(new Work(() => ran++));
        world.Executor.Schedule(new Work(() => ran++));
        var thread = new Thread(() => world.Executor.Schedule(new Work(() => ran++)));
        thread.Start();
        thread.Join();
        world.RunUntilQuiet();

        Assert.Equal(2, world.Executor.Scheduled);
        Assert.Equal(2, ran);
        var escape = Assert.Single(world.Escapes);
        Assert.Contains("tried to schedule a work item", escape, StringComparison.Ordinal);
    }
}
