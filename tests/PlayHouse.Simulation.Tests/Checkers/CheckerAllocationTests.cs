using PlayHouse.Core.Runtime;
using PlayHouse.Simulation.Checkers;

namespace PlayHouse.Simulation.Tests.Checkers;

/// <summary>The per-event path of the checkers allocates nothing once its tables are warm.</summary>
public sealed class CheckerAllocationTests
{
    [Fact]
    public void CheckerSet_SteadyStateEventsWithTrace_AllocateNothing()
    {
        var clock = CheckerClock.AtZero();
        var trace = new SimTrace();
        var set = new CheckerSet(clock, trace: trace);
        set.Queues.WatchMailboxes("play-1", 100, 10);
        set.Liveness.Register(1, 0);
        ulong msgSeq = 0;
        long senderSeq = 0;

        void RunEvents(int rounds)
        {
            for (var i = 0; i < rounds; i++)
            {
                set.OnMailboxPosted("play-1", 4, 1, 1);
                set.OnHandlerEntered("play-1", 4, StageWorkKind.ClientMessage, "Chat");
                set.Fifo.OnDelivered("play-1", 4, 9, ++senderSeq);
                set.OnRequestIssued("play-1", ++msgSeq, "api-1", 0, "Lookup");
                set.OnHandlerExited("play-1", 4);
                set.OnRequestCompleted("play-1", msgSeq, "api-1", RequestOutcome.Replied, 0);
                set.OnMessageCompleted("play-1", 4, StageWorkKind.ClientMessage, "Chat");
                set.Requests.OnClientRequestSent(1, 7, (long)msgSeq);
                set.Requests.OnClientRequestCompleted(1, 7, (long)msgSeq);
                set.Liveness.OnProgress(1, clock.GetTimestamp());
                set.Queues.Observe("session 1 send", 2, 8);
                set.CheckStep();
            }
        }

        RunEvents(100);
        var before = GC.GetAllocatedBytesForCurrentThread();
        RunEvents(10_000);
        var allocatedBytes = GC.GetAllocatedBytesForCurrentThread() - before;

        Assert.Equal(0, allocatedBytes);
        Assert.False(set.HasViolations, set.FirstViolation?.ToString());
        Assert.Equal(10_100, set.Requests.CompletedCount);
        Assert.Equal(10_100 * 4, trace.Count);
    }
}
