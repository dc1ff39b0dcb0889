using PlayHouse.Core.Collections;

namespace PlayHouse.Core.Tests.Collections;

/// <summary>
/// A count of things in progress kept per thread: a thing may start on one thread and end on another, and a read never
/// misses a thing that was in progress for the whole read.
/// </summary>
public sealed class StartEndCountTests
{
    [Fact]
    public void Stripes_AreAPowerOfTwo_AtLeastAsManyAsAsked()
    {
        Assert.Equal(8, new StartEndCount(5).StripeCount);
        Assert.Equal(1, new StartEndCount(0).StripeCount);
        Assert.Equal(64, new StartEndCount(1_000).StripeCount);
    }

    [Fact]
    public void ThingsEndingInOtherStripesThanTheyStarted_AreCountedOnceEach()
    {
        var count = new StartEndCount(4);
        count.StartIn(0);
        count.StartIn(0);
        count.StartIn(1);
        var three = count.InProgress;

        count.EndIn(3);
        count.EndIn(2);
        var one = count.InProgress;

        count.EndIn(0);

        Assert.Equal((3L, 1L, 0L), (three, one, count.InProgress));
    }

    [Fact]
    public void MoreEndsThanStarts_ReadsNegative()
    {
        var count = new StartEndCount(2);
        count.StartIn(0);
        count.EndIn(1);
        count.EndIn(0);

        Assert.Equal(-1, count.InProgress);
    }

    [Fact]
    public async Task AThingInProgressThroughout_IsNeverMissed_WhileOthersStartOnOneThreadAndEndOnAnother()
    {
        var count = new StartEndCount(4);
        count.Start();
        using var handoff = new System.Collections.Concurrent.BlockingCollection<int>(boundedCapacity: 64);
        using var stop = new CancellationTokenSource();
        const int churn = 200_000;

        var starter = Task.Factory.StartNew(
            () =>
            {
                for (var i = 0; i < churn; i++)
                {
                    count.Start();
                    handoff.Add(i);
                }

                handoff.CompleteAdding();
            },
            TaskCreationOptions.LongRunning);
        var ender = Task.Factory.StartNew(
            () =>
            {
                foreach (var _ in handoff.GetConsumingEnumerable())
                {
                    count.End();
                }
            },
            TaskCreationOptions.LongRunning);
        var reader = Task.Factory.StartNew(
            () =>
            {
                long reads = 0;
                long lowest = long.MaxValue;
                while (!stop.IsCancellationRequested)
                {
                    lowest = Math.Min(lowest, count.InProgress);
                    reads++;
                }

                return (reads, lowest);
            },
            TaskCreationOptions.LongRunning);

        await Task.WhenAll(starter, ender);
        await stop.CancelAsync();
        var (reads, lowest) = await reader;

        // The first thing never ended: every read must count it, whatever the churn around it did.
        Assert.True(reads > 0);
        Assert.True(lowest >= 1, $"a read missed the thing in progress: {lowest} after {reads} reads");
        Assert.Equal(1, count.InProgress);
    }
}
