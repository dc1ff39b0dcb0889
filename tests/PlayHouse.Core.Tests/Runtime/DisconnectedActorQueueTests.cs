using PlayHouse.Core.Runtime;

namespace PlayHouse.Core.Tests.Runtime;

/// <summary>A stage's queue of disconnected actors drops the entries whose wait ended early, so they hold no actor until their deadline.</summary>
public sealed class DisconnectedActorQueueTests
{
    [Fact]
    public void Queue_WhoseWaitsMostlyEndEarly_StaysNearTheWaitingCount_AndHandsOutTheWaitingOnesInDeadlineOrder()
    {
        var queue = new DisconnectedActorQueue();
        var stillWaiting = new List<WaitingActor>();
        var largest = 0;
        for (var i = 0; i < 10_000; i++)
        {
            var wait = new WaitingActor(null!, null!, generation: i);
            queue.Add(new DisconnectedActor(wait, DeadlineTimestamp: i));
            if (i % 100 == 0)
            {
                stillWaiting.Add(wait);
            }
            else
            {
                // Reconnected or evicted: the ledger ends the wait while the entry is still queued.
                wait.State = i % 2 == 0 ? CapEntryState.Ended : CapEntryState.Evicted;
            }

            largest = Math.Max(largest, queue.Count);
        }

        var handedOut = new List<long>();
        while (queue.TryTakeDue(long.MaxValue, out var due))
        {
            if (due.Wait.IsWaiting)
            {
                handedOut.Add(due.Generation);
            }
        }

        Assert.InRange(largest, 1, (2 * stillWaiting.Count) + 64 + 1);
        Assert.Equal(stillWaiting.Select(w => w.Generation), handedOut);
    }

    [Fact]
    public void Queue_WhoseWaitsAllContinue_KeepsEveryEntry()
    {
        var queue = new DisconnectedActorQueue();
        for (var i = 0; i < 1_000; i++)
        {
            queue.Add(new DisconnectedActor(new WaitingActor(null!, null!, generation: i), DeadlineTimestamp: i));
        }

        Assert.Equal(1_000, queue.Count);
        Assert.True(queue.TryTakeDue(0, out var first));
        Assert.Equal(0, first.Generation);
        Assert.False(queue.TryTakeDue(0, out _));
    }

    [Fact]
    public void Add_WithADeadlineBeforeTheTails_IsRefused_NamingBoth()
    {
        var queue = new DisconnectedActorQueue();
        queue.Add(Waiting(generation: 1, deadline: 50));
        queue.Add(Waiting(generation: 2, deadline: 50));

        var error = Assert.Throws<InvalidOperationException>(() => queue.Add(Waiting(generation: 3, deadline: 49)));

        Assert.Equal("Disconnect deadlines must not decrease: 49 after 50.", error.Message);
        Assert.Equal(2, queue.Count);
    }

    [Fact]
    public void Add_ToAnEmptiedQueue_TakesAnyDeadline()
    {
        var queue = new DisconnectedActorQueue();
        queue.Add(Waiting(generation: 1, deadline: 50));
        Assert.True(queue.TryTakeDue(50, out _));

        queue.Add(Waiting(generation: 2, deadline: -5));

        Assert.Equal(1, queue.Count);
        Assert.Equal(-5, queue.NextDeadlineTimestamp);
    }

    [Fact]
    public void TryTakeDue_TakesTheHeadAtItsDeadline_AndNothingBefore()
    {
        var queue = new DisconnectedActorQueue();
        var emptyDeadline = queue.NextDeadlineTimestamp;
        queue.Add(Waiting(generation: 7, deadline: 100));
        queue.Add(Waiting(generation: 8, deadline: 200));

        var early = queue.TryTakeDue(99, out var notDue);
        var headDeadline = queue.NextDeadlineTimestamp;
        var atDeadline = queue.TryTakeDue(100, out var due);

        Assert.Equal(long.MaxValue, emptyDeadline);
        Assert.False(early);
        Assert.Null(notDue.Wait);
        Assert.Equal(100, headDeadline);
        Assert.True(atDeadline);
        Assert.Equal(7, due.Generation);
        Assert.Equal(200, queue.NextDeadlineTimestamp);
    }

    [Fact]
    public void Queue_CompactsFirstPast64Entries_ThenPastTwiceTheWaitingOnesItKept()
    {
        var queue = new DisconnectedActorQueue();
        var firstWaits = new List<WaitingActor>();
        for (var i = 0; i < 64; i++)
        {
            var entry = Waiting(generation: i, deadline: i);
            queue.Add(entry);
            firstWaits.Add(entry.Wait);
        }

        var countAt64 = queue.Count;

        // The 65th entry compacts; all 65 still wait, so the queue keeps them and next compacts past 130.
        queue.Add(Waiting(generation: 64, deadline: 64));
        var countAt65 = queue.Count;
        foreach (var wait in firstWaits)
        {
            wait.State = CapEntryState.Ended;
        }

        for (var i = 65; i < 130; i++)
        {
            queue.Add(Waiting(generation: i, deadline: i));
        }

        var countAt130 = queue.Count;
        queue.Add(Waiting(generation: 130, deadline: 130));

        Assert.Equal(64, countAt64);
        Assert.Equal(65, countAt65);
        Assert.Equal(130, countAt130);
        Assert.Equal(130 - 64 + 1, queue.Count);
        Assert.Equal(64, queue.NextDeadlineTimestamp);
    }

    private static DisconnectedActor Waiting(long generation, long deadline) =>
        new(new WaitingActor(null!, null!, generation), deadline);
}
