using Microsoft.Extensions.Time.Testing;
using PlayHouse.Core.Seams;

namespace PlayHouse.Core.Tests.Seams;

public sealed class SeamTests
{
    [Fact]
    public void Xoshiro_SameSeed_GivesTheSameSequence_AndOtherSeedsDiffer()
    {
        var a = new Xoshiro256StarStar(12345);
        var b = new Xoshiro256StarStar(12345);
        var c = new Xoshiro256StarStar(12346);
        var seqA = Enumerable.Range(0, 100).Select(_ => a.NextUInt64()).ToArray();
        var seqB = Enumerable.Range(0, 100).Select(_ => b.NextUInt64()).ToArray();
        var seqC = Enumerable.Range(0, 100).Select(_ => c.NextUInt64()).ToArray();

        Assert.Equal(seqA, seqB);
        Assert.NotEqual(seqA, seqC);
    }

    [Fact]
    public void Xoshiro_FirstOutputs_MatchThePinnedValues()
    {
        // Pinned so a change to the generator (which would change every replayed seed) cannot pass unnoticed.
        var random = new Xoshiro256StarStar(0);
        var first = new[] { random.NextUInt64(), random.NextUInt64(), random.NextUInt64() };

        var sm = 0UL;
        var s0 = SplitMix64.Next(ref sm);
        var s1 = SplitMix64.Next(ref sm);
        Assert.Equal(0xE220A8397B1DCDAFUL, s0);
        Assert.Equal(0x6E789E6AA1B965F4UL, s1);
        Assert.Equal(ulong.RotateLeft(s1 * 5, 7) * 9, first[0]);
        Assert.Equal(3, first.Distinct().Count());
    }

    [Fact]
    public void NextInt_StaysInRangeAndCoversIt()
    {
        var random = new Xoshiro256StarStar(7);
        var counts = new int[10];
        for (var i = 0; i < 100_000; i++)
        {
            counts[random.NextInt(10)]++;
        }

        Assert.All(counts, n => Assert.InRange(n, 9_000, 11_000));
        Assert.Equal(100_000, counts.Sum());
    }

    [Fact]
    public void XoshiroDraws_AreTheExtensionDrawsBitForBit()
    {
        // The concrete generator's own draws skip interface dispatch; they must replay the same sequences as the
        // extension draws every other random source uses, or a seed would replay differently. The extensions hand
        // the concrete type to its own methods, so the other side is the same generator behind another type.
        var concrete = new Xoshiro256StarStar(99);
        IRandomSource viaInterface = new ForwardingSource(new Xoshiro256StarStar(99));
        var bounds = new[] { 1, 2, 3, 7, 10, 1000, int.MaxValue };
        // A range of 2^63 + 1 rejects about half the draws, so the rejection loop is held to the same sequence too.
        var longRanges = new (long Min, long Max)[] { (0, 1), (-5, 5), (10_000, 200_001), (long.MinValue, long.MaxValue), (long.MinValue, 1), (0, (long.MaxValue / 3 * 2) + 1) };
        for (var i = 0; i < 20_000; i++)
        {
            var bound = bounds[i % bounds.Length];
            Assert.Equal(viaInterface.NextInt(bound), concrete.NextInt(bound));
            var (min, max) = longRanges[i % longRanges.Length];
            Assert.Equal(viaInterface.NextLong(min, max), concrete.NextLong(min, max));
            Assert.Equal(viaInterface.NextDouble(), concrete.NextDouble());
            var p = (i % 11) / 10.0;
            Assert.Equal(viaInterface.NextBool(p), concrete.NextBool(p));
        }

        Assert.Equal(viaInterface.NextUInt64(), concrete.NextUInt64());
        Assert.Throws<ArgumentOutOfRangeException>(() => concrete.NextInt(0));
        Assert.Throws<ArgumentOutOfRangeException>(() => concrete.NextLong(3, 3));
    }

    [Fact]
    public void NextDouble_IsInUnitInterval()
    {
        var random = new Xoshiro256StarStar(7);
        var values = Enumerable.Range(0, 10_000).Select(_ => random.NextDouble()).ToArray();

        Assert.All(values, v => Assert.InRange(v, 0.0, 0.9999999999999999));
        Assert.InRange(values.Average(), 0.48, 0.52);
    }

    [Fact]
    public void FakeTimeProvider_FiresTimersWithTheClockAtTheAdvancesEnd_WhereManualTimeProviderStepsToEachDueTime()
    {
        // Why the runtime harness keeps its own clock (see ManualTimeProvider's remarks): a stage's repeat timer
        // must see 100 and 200, and a zero-due timer armed inside a stage turn must not fire on that turn's stack.
        var fake = new FakeTimeProvider(DateTimeOffset.MinValue);
        var manual = new ManualTimeProvider();
        var seenByFake = new List<string>();
        var seenByManual = new List<string>();
        using var fakeRepeat = fake.CreateTimer(_ => seenByFake.Add($"repeat@{fake.GetTimestamp()}"), null, TimeSpan.FromTicks(100), TimeSpan.FromTicks(100));
        using var manualRepeat = manual.CreateTimer(_ => seenByManual.Add($"repeat@{manual.GetTimestamp()}"), null, TimeSpan.FromTicks(100), TimeSpan.FromTicks(100));
        fake.Advance(TimeSpan.FromTicks(250));
        manual.Advance(TimeSpan.FromTicks(250));
        using var fakeZero = fake.CreateTimer(_ => seenByFake.Add("zero"), null, TimeSpan.Zero, Timeout.InfiniteTimeSpan);
        using var manualZero = manual.CreateTimer(_ => seenByManual.Add("zero"), null, TimeSpan.Zero, Timeout.InfiniteTimeSpan);

        Assert.Equal(["repeat@250", "repeat@250", "zero"], seenByFake);
        Assert.Equal(["repeat@100", "repeat@200"], seenByManual);
        manual.Advance(TimeSpan.Zero);
        Assert.Equal(["repeat@100", "repeat@200", "zero"], seenByManual);
    }

    [Fact]
    public void ManualTimeProvider_FiresTimersInDueThenCreationOrder()
    {
        var clock = new ManualTimeProvider();
        var fired = new List<string>();
        using var late = clock.CreateTimer(_ => fired.Add("late"), null, TimeSpan.FromSeconds(2), Timeout.InfiniteTimeSpan);
        using var earlyA = clock.CreateTimer(_ => fired.Add("earlyA"), null, TimeSpan.FromSeconds(1), Timeout.InfiniteTimeSpan);
        using var earlyB = clock.CreateTimer(_ => fired.Add("earlyB"), null, TimeSpan.FromSeconds(1), Timeout.InfiniteTimeSpan);
        clock.Advance(TimeSpan.FromSeconds(5));

        Assert.Equal(["earlyA", "earlyB", "late"], fired);
        Assert.Equal(TimeSpan.FromSeconds(5).Ticks, clock.NowTicks);
        Assert.Equal(0, clock.ArmedTimerCount);
    }

    [Fact]
    public void ManualTimeProvider_PeriodicTimerFiresEachPeriodAndStopsWhenDisposed()
    {
        var clock = new ManualTimeProvider();
        var times = new List<long>();
        var timer = clock.CreateTimer(_ => times.Add(clock.NowTicks), null, TimeSpan.FromSeconds(1), TimeSpan.FromSeconds(1));
        clock.Advance(TimeSpan.FromSeconds(3));
        timer.Dispose();
        clock.Advance(TimeSpan.FromSeconds(3));

        Assert.Equal([TimeSpan.TicksPerSecond, 2 * TimeSpan.TicksPerSecond, 3 * TimeSpan.TicksPerSecond], times);
        Assert.False(timer.Change(TimeSpan.Zero, TimeSpan.Zero));
    }

    [Fact]
    public void ManualTimeProvider_ChangeReschedulesAndInfiniteDisarms()
    {
        var clock = new ManualTimeProvider();
        var fired = 0;
        using var timer = clock.CreateTimer(_ => fired++, null, TimeSpan.FromSeconds(1), Timeout.InfiniteTimeSpan);
        timer.Change(TimeSpan.FromSeconds(3), Timeout.InfiniteTimeSpan);
        clock.Advance(TimeSpan.FromSeconds(2));
        Assert.Equal(0, fired);

        timer.Change(Timeout.InfiniteTimeSpan, Timeout.InfiniteTimeSpan);
        clock.Advance(TimeSpan.FromSeconds(2));
        Assert.Equal(0, fired);
        Assert.Equal(0, clock.ArmedTimerCount);
    }

    [Fact]
    public void ManualTimeProvider_RefusesToGoBackwards()
    {
        var clock = new ManualTimeProvider();
        clock.Advance(TimeSpan.FromSeconds(1));

        Assert.Throws<ArgumentOutOfRangeException>(() => clock.AdvanceTo(0));
        Assert.Equal(TimeSpan.TicksPerSecond, clock.GetTimestamp());
    }

    [Fact]
    public async Task ManualTimeProvider_DrivesTaskDelay()
    {
        var clock = new ManualTimeProvider();
        var delay = Task.Delay(TimeSpan.FromSeconds(10), clock);
        clock.Advance(TimeSpan.FromSeconds(9));
        Assert.False(delay.IsCompleted);

        clock.Advance(TimeSpan.FromSeconds(1));
        await delay.WaitAsync(TimeSpan.FromSeconds(5));
        Assert.True(delay.IsCompletedSuccessfully);
    }

    [Fact]
    public void ManualExecutor_RunsInFifoOrderIncludingNestedWork()
    {
        var executor = new ManualExecutor();
        var order = new List<int>();
        executor.Schedule(new Work(() =>
        {
            order.Add(1);
            executor.Schedule(new Work(() => order.Add(3)));
        }));
        executor.Schedule(new Work(() => order.Add(2)));

        Assert.Equal(3, executor.RunUntilIdle());
        Assert.Equal([1, 2, 3], order);
        Assert.Equal(0, executor.PendingCount);
    }

    [Fact]
    public void ManualExecutor_ReportsALivelock()
    {
        var executor = new ManualExecutor();
        Work? again = null;
        again = new Work(() => executor.Schedule(again!));
        executor.Schedule(again);

        var error = Assert.Throws<InvalidOperationException>(() => executor.RunUntilIdle(maxSteps: 100));
        Assert.Contains("100", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void ExecutorSynchronizationContext_PostsThroughTheExecutor()
    {
        var executor = new ManualExecutor();
        var context = new ExecutorSynchronizationContext(executor);
        var ran = false;
        context.Post(_ => ran = true, null);

        Assert.False(ran);
        Assert.Equal(1, executor.PendingCount);
        executor.RunUntilIdle();
        Assert.True(ran);
    }

    [Fact]
    public void Xoshiro_OutputsOfSeedZero_MatchAnIndependentImplementationOfTheReferenceAlgorithm()
    {
        // Computed outside .NET from the published xoshiro256** and SplitMix64; the later outputs depend on every step
        // of the state update, which the first output does not.
        var random = new Xoshiro256StarStar(0);
        var outputs = Enumerable.Range(0, 100).Select(_ => random.NextUInt64()).ToArray();

        Assert.Equal([0x99EC5F36CB75F2B4UL, 0xBF6E1F784956452AUL, 0x1A5F849D4933E6E0UL, 0x6AA594F1262D2D2CUL, 0xBBA5AD4A1F842E59UL], outputs[..5]);
        Assert.Equal(0x3CB72D021FBA219CUL, outputs[99]);
    }

    [Fact]
    public void NextBool_OfADrawEqualToTheProbability_IsFalse_SoProbabilityZeroIsNever()
    {
        // Draws are in [0, 1); "true with probability p" is a draw below p, so a draw equal to p is false.
        var drawn = new Xoshiro256StarStar(5).NextDouble();

        Assert.False(new Xoshiro256StarStar(5).NextBool(drawn));
        Assert.False(new SequenceSource(0).NextBool(0.0));
        Assert.True(new SequenceSource(0).NextBool(double.Epsilon));
    }

    [Fact]
    public void NextInt_RejectsTheDrawsThatWouldBiasIt_AndOnlyThose()
    {
        // For a bound of 3, 2^64 mod 3 = 1 low value in 2^64 is rejected: a draw whose low part is 0 (the draw 0). A
        // draw whose low part is exactly the threshold (1: the inverse of 3) is accepted.
        var rejectedFirst = new SequenceSource(0, 0xAAAAAAAAAAAAAAABUL);
        var acceptedAtTheThreshold = new SequenceSource(0xAAAAAAAAAAAAAAABUL, 0);

        Assert.Equal(2, rejectedFirst.NextInt(3));
        Assert.Equal(2, rejectedFirst.Draws);
        Assert.Equal(2, acceptedAtTheThreshold.NextInt(3));
        Assert.Equal(1, acceptedAtTheThreshold.Draws);
        Assert.Equal(2UL, RandomSourceExtensions.Below(0xAAAAAAAAAAAAAAABUL, 3, new SequenceSource()));
    }

    [Fact]
    public void RandomDraws_RefuseANullSourceAndEmptyRanges_NamingTheRange()
    {
        IRandomSource? none = null;
        var source = new SequenceSource(1, 2, 3);

        Assert.Throws<ArgumentNullException>(() => none!.NextInt(3));
        Assert.Throws<ArgumentNullException>(() => none!.NextLong(0, 3));
        Assert.Throws<ArgumentNullException>(() => none!.NextDouble());
        Assert.Throws<ArgumentOutOfRangeException>(() => source.NextInt(0));
        var empty = Assert.Throws<ArgumentOutOfRangeException>(() => source.NextLong(5, 5));
        Assert.StartsWith("maxExclusive (5) must exceed minInclusive (5).", empty.Message, StringComparison.Ordinal);
        Assert.Equal(0, source.Draws);
    }

    [Fact]
    public void EntropyRandomSource_SeedsEachGeneratorAfresh()
    {
        var first = EntropyRandomSource.Create();
        var second = EntropyRandomSource.Create();

        Assert.NotEqual(first.Seed, second.Seed);
        Assert.NotEqual(first.NextUInt64(), second.NextUInt64());
    }

    [Fact]
    public void ManualExecutor_CountsWhatItRan_RunsExactlyMaxStepsWithoutComplaint_AndRefusesNull()
    {
        var executor = new ManualExecutor();
        for (var i = 0; i < 3; i++)
        {
            executor.Schedule(new Work(() => { }));
        }

        Assert.Equal(3, executor.RunUntilIdle(maxSteps: 3));
        Assert.Equal(3, executor.ExecutedCount);
        Assert.Throws<ArgumentNullException>(() => executor.Schedule(null!));
    }

    [Fact]
    public void ThreadPoolExecutor_RefusesANullWorkItem_NamingItsOwnArgument()
    {
        // The ThreadPool refuses null too, but names its own parameter; the seam's caller passed "workItem".
        var refused = Assert.Throws<ArgumentNullException>(() => ThreadPoolExecutor.Instance.Schedule(null!));

        Assert.Equal("workItem", refused.ParamName);
    }

    [Fact]
    public void Executor_ThatDoesNotSay_NeverRunsWorkInline()
    {
        IExecutor executor = new QueueOnlyExecutor();

        Assert.False(executor.CanRunInline);
        Assert.False(new ManualExecutor().CanRunInline);
    }

    [Fact]
    public void ExecutorSynchronizationContext_IsCurrentWhileItsWorkRuns_AndRestoresThePreviousOneAfter()
    {
        var executor = new ManualExecutor();
        var context = new ExecutorSynchronizationContext(executor);
        var outer = SynchronizationContext.Current;
        SynchronizationContext? duringRun = null;
        SynchronizationContext? duringPost = null;

        context.Run(() => duringRun = SynchronizationContext.Current);
        var afterRun = SynchronizationContext.Current;
        context.Post(_ => duringPost = SynchronizationContext.Current, null);
        executor.RunUntilIdle();
        var afterPost = SynchronizationContext.Current;

        Assert.Same(context, duringRun);
        Assert.Same(context, duringPost);
        Assert.Same(outer, afterRun);
        Assert.Same(outer, afterPost);
        Assert.Same(context, context.CreateCopy());
        Assert.Throws<ArgumentNullException>(() => context.Run(null!));
        var send = Assert.Throws<NotSupportedException>(() => context.Send(_ => { }, null));
        Assert.Equal("Synchronous Send would block the executor; use Post.", send.Message);
    }

    private sealed class Work(Action action) : IThreadPoolWorkItem
    {
        public void Execute() => action();
    }

    /// <summary>Another <see cref="IRandomSource"/> type over the same bits, so the extensions take their generic path.</summary>
    private sealed class ForwardingSource(IRandomSource inner) : IRandomSource
    {
        public ulong NextUInt64() => inner.NextUInt64();
    }

    /// <summary>A source that hands out the given values in order (then zeros), counting its draws.</summary>
    private sealed class SequenceSource(params ulong[] values) : IRandomSource
    {
        public int Draws { get; private set; }

        public ulong NextUInt64()
        {
            var value = Draws < values.Length ? values[Draws] : 0;
            Draws++;
            return value;
        }
    }

    /// <summary>An executor that says nothing about running inline, so the interface's default answers.</summary>
    private sealed class QueueOnlyExecutor : IExecutor
    {
        public void Schedule(IThreadPoolWorkItem workItem)
        {
        }
    }
}
