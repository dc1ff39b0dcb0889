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
}
