using PlayHouse.Core.Runtime;

namespace PlayHouse.Core.Tests.Runtime;

/// <summary>
/// The server-wide oldest-first cap (disconnected actors, empty stages): adding past the cap evicts the oldest entry
/// still listed, entries that ended are passed over, an entry leaves once, and the high water never exceeds the cap.
/// </summary>
public sealed class OldestFirstCapTests
{
    [Theory]
    [InlineData(true)]
    [InlineData(false)]
    public void Add_PastTheCap_EvictsTheOldestListedEntry_AndReturnsNullWhileWithinIt(bool singleThreaded)
    {
        var cap = new OldestFirstCap<Entry>(new ServerOptions { SingleThreaded = singleThreaded }, max: 2);
        var first = new Entry(1);
        var second = new Entry(2);
        var third = new Entry(3);

        var evictedByFirst = cap.Add(first);
        var evictedBySecond = cap.Add(second);
        var evictedByThird = cap.Add(third);

        Assert.Null(evictedByFirst);
        Assert.Null(evictedBySecond);
        Assert.Equal([first], evictedByThird);
        Assert.Equal(CapEntryState.Evicted, first.State);
        Assert.False(first.IsListed);
        Assert.True(second.IsListed);
        Assert.True(third.IsListed);
        Assert.Equal(2, cap.Count);
        Assert.Equal(2, cap.HighWater);
    }

    [Fact]
    public void Add_PastTheCap_PassesOverEntriesThatEnded_AndEvictsTheNextListedOne()
    {
        var cap = new OldestFirstCap<Entry>(new ServerOptions(), max: 3);
        var entries = Enumerable.Range(1, 6).Select(i => new Entry(i)).ToArray();
        cap.Add(entries[0]);
        cap.Add(entries[1]);
        cap.Add(entries[2]);

        // The second ends while the first still heads the queue, so it stays queued until an eviction passes it.
        cap.End(entries[1]);
        var evictedByFourth = cap.Add(entries[3]);
        var evictedByFifth = cap.Add(entries[4]);
        var evictedBySixth = cap.Add(entries[5]);

        Assert.Null(evictedByFourth);
        Assert.Equal([entries[0]], evictedByFifth);
        Assert.Equal([entries[2]], evictedBySixth);
        Assert.Equal(CapEntryState.Ended, entries[1].State);
        Assert.Equal(CapEntryState.Evicted, entries[2].State);
        Assert.Equal(3, cap.Count);
        Assert.Equal(new[] { 4, 5, 6 }, entries.Where(e => e.IsListed).Select(e => e.Number));
    }

    [Fact]
    public void End_OfAnEntryThatAlreadyLeft_ChangesNothing()
    {
        var cap = new OldestFirstCap<Entry>(new ServerOptions(), max: 1);
        var evicted = new Entry(1);
        var listed = new Entry(2);
        cap.Add(evicted);
        cap.Add(listed);

        cap.End(evicted);
        var countAfterEndingTheEvicted = cap.Count;
        cap.End(listed);
        cap.End(listed);

        Assert.Equal(1, countAfterEndingTheEvicted);
        Assert.Equal(CapEntryState.Evicted, evicted.State);
        Assert.Equal(CapEntryState.Ended, listed.State);
        Assert.Equal(0, cap.Count);
        Assert.Equal(1, cap.HighWater);
    }

    [Fact]
    public void HighWater_IsTheMostListedAtOnce_AndStaysAfterEntriesEnd()
    {
        var cap = new OldestFirstCap<Entry>(new ServerOptions(), max: 10);
        var entries = Enumerable.Range(1, 4).Select(i => new Entry(i)).ToArray();
        foreach (var entry in entries)
        {
            cap.Add(entry);
        }

        foreach (var entry in entries)
        {
            cap.End(entry);
        }

        cap.Add(new Entry(5));

        Assert.Equal(4, cap.HighWater);
        Assert.Equal(1, cap.Count);
    }

    [Fact]
    public void ManyEndedBehindAListedHead_AreDroppedFromTheQueue_SoTheyAreNotKeptAlive()
    {
        var cap = new OldestFirstCap<Entry>(new ServerOptions(), max: 1_000);
        cap.Add(new Entry(0));
        var ended = AddAndEndMany(cap, count: 200);

        // The head stays listed, so only a compaction can drop the ended entries behind it.
        GC.Collect();
        GC.WaitForPendingFinalizers();
        GC.Collect();

        // The queue is compacted once it holds more than twice the listed entries plus 64, so of the 200 ended
        // entries at most that many are still referenced.
        var alive = ended.Count(weak => weak.TryGetTarget(out _));
        Assert.Equal(1, cap.Count);
        Assert.InRange(alive, 0, (2 * 2) + 64);
    }

    [Fact]
    public void CompactionBehindAListedHead_KeepsTheHead_SoItIsStillTheFirstEvicted()
    {
        var cap = new OldestFirstCap<Entry>(new ServerOptions(), max: 2);
        var head = new Entry(0);
        cap.Add(head);
        AddAndEndMany(cap, count: 100);

        // The queue held the head and 100 ended entries, past twice the listed plus 64: it was compacted.
        var second = new Entry(101);
        var evictedBySecond = cap.Add(second);
        var evictedByThird = cap.Add(new Entry(102));

        Assert.Null(evictedBySecond);
        Assert.Equal([head], evictedByThird);
        Assert.Equal((2, true), (cap.Count, second.IsListed));
    }

    [Fact]
    public void NullEntry_IsRefusedByAddAndEnd_NamingTheArgument()
    {
        var cap = new OldestFirstCap<Entry>(new ServerOptions(), max: 1);

        var onAdd = Assert.Throws<ArgumentNullException>(() => cap.Add(null!));
        var onEnd = Assert.Throws<ArgumentNullException>(() => cap.End(null!));

        Assert.Equal("entry", onAdd.ParamName);
        Assert.Equal("entry", onEnd.ParamName);
    }

    // Not inlined, so no local of the caller's frame keeps an ended entry reachable when the test collects.
    [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
    private static List<WeakReference<Entry>> AddAndEndMany(OldestFirstCap<Entry> cap, int count)
    {
        var weak = new List<WeakReference<Entry>>(count);
        for (var i = 1; i <= count; i++)
        {
            var entry = new Entry(i);
            cap.Add(entry);
            cap.End(entry);
            weak.Add(new WeakReference<Entry>(entry));
        }

        return weak;
    }

    private sealed class Entry(int number) : CapEntry
    {
        public int Number { get; } = number;

        public override string ToString() => $"entry {Number}";
    }
}
