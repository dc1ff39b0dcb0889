using PlayHouse.Core.Collections;
using PlayHouse.Core.Seams;

namespace PlayHouse.Core.Tests.Collections;

public sealed class RingQueueTests
{
    [Theory]
    [InlineData(1UL)]
    [InlineData(2UL)]
    [InlineData(3UL)]
    public void RandomEnqueuesAndDequeues_MatchAQueueInOrderCountAndIndexing(ulong seed)
    {
        // Bursts of enqueues and dequeues wrap the ring around and grow it while wrapped, which is where a ring
        // that re-lays its entries wrongly would lose or reorder one.
        var random = new Xoshiro256StarStar(seed);
        var ring = new RingQueue<(int Id, string Text)>(2);
        var model = new Queue<(int Id, string Text)>();
        var next = 0;
        for (var step = 0; step < 20_000; step++)
        {
            if (random.NextInt(3) != 0 || model.Count == 0)
            {
                var item = (next, "item " + next);
                next++;
                ring.Enqueue(item);
                model.Enqueue(item);
            }
            else if (random.NextBool(0.5))
            {
                ring.Dequeue(out var taken);
                Assert.Equal(model.Dequeue(), taken);
            }
            else
            {
                Assert.Equal(model.Peek(), ring.PeekHead());
                ring.DropHead();
                model.Dequeue();
            }

            Assert.Equal(model.Count, ring.Count);
            if (model.Count > 0)
            {
                var index = random.NextInt(model.Count);
                Assert.Equal(model.ElementAt(index), ring.At(index));
            }
        }

        Assert.True(next > 10_000, $"only {next} enqueued");
    }

    [Fact]
    public void EmptyRing_RefusesPeekDropDequeueAndIndexWithClearErrors()
    {
        var ring = default(RingQueue<int>);
        ring.Enqueue(7);
        ring.DropHead();

        Assert.Equal("The ring is empty.", Assert.Throws<InvalidOperationException>(() => ring.PeekHead()).Message);
        Assert.Equal("The ring is empty.", Assert.Throws<InvalidOperationException>(() => ring.DropHead()).Message);
        Assert.Throws<InvalidOperationException>(() => ring.Dequeue(out _));
        Assert.StartsWith("Only 0 entries are queued.", Assert.Throws<ArgumentOutOfRangeException>(() => ring.At(0)).Message, StringComparison.Ordinal);
    }

    [Fact]
    public void Storage_AfterEnqueuesAndDequeues_NamesTheArrayAndIndexHoldingTheHead()
    {
        // A caller hints the head's cache line from these two; a wrong index would hint a line the next read never uses.
        var ring = new RingQueue<int>(4);
        for (var i = 1; i <= 6; i++)
        {
            ring.Enqueue(i);
            if (i % 2 == 0)
            {
                ring.DropHead();
            }
        }

        var (items, head) = ring.Storage;

        Assert.NotNull(items);
        Assert.Equal(ring.PeekHead(), items[head]);
        Assert.Equal(4, items[head]);
    }

    [Fact]
    public void ReleaseIfEmpty_LetsGoOfTheArrayOnlyWhenNothingIsQueued_AndTheRingWorksOnAfterwards()
    {
        var ring = new RingQueue<string>(4);
        ring.Enqueue("a");
        ring.ReleaseIfEmpty();
        var keptWhileHolding = ring.Storage.Items;
        ring.Dequeue(out var first);
        ring.ReleaseIfEmpty();
        var releasedWhenEmpty = ring.Storage.Items;
        ring.Enqueue("b");
        ring.Enqueue("c");

        Assert.NotNull(keptWhileHolding);
        Assert.Equal("a", first);
        Assert.Null(releasedWhenEmpty);
        Assert.Equal(2, ring.Count);
        Assert.Equal("b", ring.PeekHead());
        Assert.Equal("c", ring.At(1));
    }

    [Fact]
    public void Constructor_TakesACapacityOfOne_AndRefusesZero()
    {
        var one = new RingQueue<int>(1);

        Assert.Single(one.Storage.Items!);
        Assert.Throws<ArgumentOutOfRangeException>(() => new RingQueue<int>(0));
    }

    [Fact]
    public void DroppedEntryHoldingAReference_IsClearedFromItsSlot_SoTheRingKeepsNothingReachable()
    {
        var ring = new RingQueue<string>(4);
        ring.Enqueue("first");
        ring.Enqueue("second");
        var (items, head) = ring.Storage;

        ring.DropHead();
        ring.Dequeue(out var second);

        Assert.Equal("second", second);
        Assert.Null(items![head]);
        Assert.Null(items[head + 1]);
    }

    [Theory]
    [InlineData(1, "Only 1 entry is queued.")]
    [InlineData(2, "Only 2 entries are queued.")]
    public void At_PastTheLastEntry_SaysHowManyAreQueued(int queued, string message)
    {
        var ring = new RingQueue<int>(4);
        for (var i = 0; i < queued; i++)
        {
            ring.Enqueue(i);
        }

        Assert.StartsWith(message, Assert.Throws<ArgumentOutOfRangeException>(() => ring.At(queued)).Message, StringComparison.Ordinal);
    }
}
