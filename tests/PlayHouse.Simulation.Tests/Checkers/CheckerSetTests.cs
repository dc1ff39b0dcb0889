using Microsoft.Extensions.Time.Testing;
using PlayHouse.Core.Runtime;
using PlayHouse.Core.Seams;
using PlayHouse.Simulation.Checkers;

namespace PlayHouse.Simulation.Tests.Checkers;

public sealed class CheckerSetTests
{
    private static readonly string[] StandardNames =
        ["FifoPerSender", "SingleActiveHandler", "ExactlyOnceRequest", "PoolLedger", "QueueCap", "Lifecycle", "Liveness"];

    private readonly FakeTimeProvider _clock = CheckerClock.AtZero();

    [Fact]
    public void CheckerSet_NothingWrong_EveryVerdictPassesInAFixedOrder()
    {
        var set = new CheckerSet(_clock);
        set.OnHandlerEntered("play-1", 1, StageWorkKind.Create, "create");
        set.OnLifecycle("play-1", 1, 0, 0, LifecycleEvent.StageCreate);
        set.OnLifecycle("play-1", 1, 0, 0, LifecycleEvent.StagePostCreate);
        set.OnHandlerExited("play-1", 1);
        set.OnMessageCompleted("play-1", 1, StageWorkKind.Create, "create");

        Assert.True(set.CheckStep());
        Assert.True(set.CheckQuiescent());
        Assert.Equal(StandardNames, set.Verdicts.Select(v => v.CheckerName));
        Assert.All(set.Verdicts, v => Assert.True(v.Passed, v.ToString()));
        Assert.Null(set.FirstViolation);
        Assert.Empty(set.AllViolations);
        set.ThrowIfViolated();
    }

    [Fact]
    public void CheckerSet_ViolationsInTwoCheckers_FirstIsEarliestAndVerdictsNameThem()
    {
        var set = new CheckerSet(_clock);
        _clock.Advance(TimeSpan.FromSeconds(1));
        set.Fifo.OnDelivered("play-1", 4, 9, 3);
        set.Fifo.OnDelivered("play-1", 4, 9, 2);
        _clock.Advance(TimeSpan.FromSeconds(1));
        set.OnHandlerEntered("play-1", 4, StageWorkKind.Timer, null);
        set.OnHandlerEntered("play-1", 4, StageWorkKind.Timer, null);

        Assert.False(set.CheckStep());
        Assert.True(set.HasViolations);
        Assert.Equal("FifoPerSender", set.FirstViolation!.CheckerName);
        Assert.Equal(TimeSpan.FromSeconds(1), set.FirstViolation.VirtualTime);
        Assert.Equal(3, set.ViolationCount);
        Assert.Equal(["FifoPerSender", "SingleActiveHandler", "SingleActiveHandler"], set.AllViolations.Select(v => v.CheckerName));

        var verdicts = set.Verdicts;
        Assert.False(verdicts[0].Passed);
        Assert.Equal("stage play-1/4: sender 9 seq 2 arrived after seq 3 (order went backwards)", verdicts[0].FirstViolationMessage);
        Assert.False(verdicts[1].Passed);
        Assert.Equal(2, verdicts[1].ViolationCount);
        Assert.True(verdicts[2].Passed);
        Assert.StartsWith("FAIL FifoPerSender (1 violation(s)): stage play-1/4", verdicts[0].ToString(), StringComparison.Ordinal);

        var error = Assert.Throws<InvariantViolationException>(set.ThrowIfViolated);
        Assert.StartsWith("3 invariant violation(s); first: [FifoPerSender] at 00:00:01: stage play-1/4", error.Message, StringComparison.Ordinal);
        Assert.Equal(3, error.Violations.Count);
    }

    [Fact]
    public void CheckerSet_RuntimeHooks_ReachTheObserverCheckers()
    {
        var set = new CheckerSet(_clock, new CheckerSetOptions { MailboxInternalEntriesAllowance = 0 });
        set.Queues.WatchMailboxes("play-1", mailboxCapacityMax: 1, internalEntriesAllowance: 0);
        set.OnRequestCompleted("play-1", 5, "api-1", RequestOutcome.Replied, 0);
        set.OnLifecycle("play-1", 2, 9, 0, LifecycleEvent.ActorCreate);
        set.OnMailboxPosted("play-1", 2, 2, 0);
        set.OnHandlerExited("play-1", 2);

        Assert.Equal(1, set.Requests.ViolationCount);
        Assert.Equal(1, set.Lifecycle.ViolationCount);
        Assert.Equal(1, set.Queues.ViolationCount);
        Assert.Equal(1, set.Handlers.ViolationCount);
        Assert.False(set.CheckStep());
    }

    [Fact]
    public void CheckerSet_ExtraObserverChecker_ReceivesHooksAndJoinsTheVerdicts()
    {
        var set = new CheckerSet(_clock);
        var extra = new NoDropsChecker(set.Context);
        set.Add(extra);
        set.OnDropped("play-1", "unknown-stage", "Ping");

        Assert.False(set.CheckStep());
        Assert.Equal("NoDrops", set.Verdicts[^1].CheckerName);
        Assert.Equal("play-1 dropped 'Ping': unknown-stage", set.Verdicts[^1].FirstViolationMessage);
        Assert.Equal(8, set.Checkers.Count);
    }

    [Fact]
    public void CheckerSet_WithTrace_RecordsCanonicalLinesForRuntimeEvents()
    {
        var trace = new SimTrace();
        var lines = new StringWriter();
        trace.Attach(lines);
        var set = new CheckerSet(_clock, trace: trace);
        Feed(set);

        Assert.Equal(
            """
            10 lifecycle.StageCreate 3 0 0 play-1
            10 enter.ClientMessage 3 0 0 play-1 Chat
            10 exit 3 0 0 play-1
            10 request.issued 7 0 0 play-1 api-1 Lookup
            20 request.Replied 7 0 0 play-1 api-1
            20 request.TimedOut 8 60002 0 play-1 api-1
            20 lifecycle.ActorCreate 3 11 100 play-1
            20 drop 0 0 0 play-1 unknown-stage Ping
            20 enter.Timer 3 0 0 play-1 -

            """.Replace("\r\n", "\n", StringComparison.Ordinal),
            lines.ToString());
        Assert.Equal(9, trace.Count);
    }

    [Fact]
    public void CheckerSet_SameEvents_GiveTheSameTraceHashAndOtherEventsAnother()
    {
        var first = new SimTrace();
        var second = new SimTrace();
        var other = new SimTrace();
        Feed(new CheckerSet(CheckerClock.AtZero(), trace: first));
        Feed(new CheckerSet(CheckerClock.AtZero(), trace: second));
        var otherSet = new CheckerSet(CheckerClock.AtZero(), trace: other);
        Feed(otherSet);
        otherSet.OnHandlerExited("play-1", 3);

        Assert.Equal(first.Hash, second.Hash);
        Assert.NotEqual(first.Hash, other.Hash);
    }

    [Fact]
    public void CheckerSet_Watch_RegistersMailboxCapAndPoolOnce()
    {
        var pool = new Core.Pooling.MessagePool(new Core.Pooling.MessagePoolOptions { CheckedMode = true });
        var seams = new NodeSeams(_clock, new ManualExecutor(), new Xoshiro256StarStar(1), pool);
        using var play = new PlayServer("play-1", seams, new ServerOptions { MailboxCapacityMax = 3 });
        using var api = new ApiServer("api-1", seams);
        var set = new CheckerSet(_clock, new CheckerSetOptions { MailboxInternalEntriesAllowance = 1 });
        set.Watch(play);
        set.Watch(api);
        set.OnMailboxPosted("play-1", 8, 4, 3);
        Assert.False(set.HasViolations);

        set.OnMailboxPosted("play-1", 8, 5, 3);
        _ = pool.Rent(4, "forgotten");
        set.CheckQuiescent();

        Assert.Equal(1, set.Pools.PoolCount);
        Assert.Contains("over its cap of 4 (MailboxCapacityMax 3 + 1 internal entries)", set.Queues.FirstViolation!.Message, StringComparison.Ordinal);
        Assert.Contains("pool 'pool of play-1': 1 buffer(s) outstanding", set.Pools.FirstViolation!.Message, StringComparison.Ordinal);
    }

    private static void Feed(CheckerSet set)
    {
        var clock = (FakeTimeProvider)set.Context.Time;
        clock.Advance(TimeSpan.FromTicks(10));
        set.OnLifecycle("play-1", 3, 0, 0, LifecycleEvent.StageCreate);
        set.OnHandlerEntered("play-1", 3, StageWorkKind.ClientMessage, "Chat");
        set.OnHandlerExited("play-1", 3);
        set.OnRequestIssued("play-1", 7, "api-1", 0, "Lookup");
        clock.Advance(TimeSpan.FromTicks(10));
        set.OnRequestCompleted("play-1", 7, "api-1", RequestOutcome.Replied, 0);
        set.OnRequestCompleted("play-1", 8, "api-1", RequestOutcome.TimedOut, ErrorCodes.RequestTimeout);
        set.OnLifecycle("play-1", 3, 11, 100, LifecycleEvent.ActorCreate);
        set.OnDropped("play-1", "unknown-stage", "Ping");
        set.OnHandlerEntered("play-1", 3, StageWorkKind.Timer, null);
    }

    /// <summary>An extra checker: any drop is a violation.</summary>
    private sealed class NoDropsChecker(CheckerContext context) : RuntimeInvariantChecker("NoDrops", context)
    {
        public override void OnDropped(string nodeId, string reason, string? msgId) =>
            Log.Record($"{nodeId} dropped '{msgId}': {reason}");
    }

    [Fact]
    public void CheckerContext_Enter_TakesTheGateUnlessSingleThreaded()
    {
        var gate = new Lock();
        var shared = new CheckerContext(_clock);
        var single = new CheckerContext(_clock, singleThreaded: true);

        using (shared.Enter(gate))
        {
            Assert.True(gate.IsHeldByCurrentThread);
        }

        Assert.False(gate.IsHeldByCurrentThread);
        using (single.Enter(gate))
        {
            Assert.False(gate.IsHeldByCurrentThread);
        }
    }

    [Fact]
    public void CheckerSet_SingleThreaded_StillReportsEveryKindOfViolation()
    {
        var set = new CheckerSet(_clock, new CheckerSetOptions { SingleThreaded = true });
        set.OnHandlerEntered("play-1", 1, StageWorkKind.ClientMessage, "Echo");
        set.OnHandlerEntered("play-1", 1, StageWorkKind.ClientMessage, "Echo");
        set.Fifo.OnDelivered("play-1", 4, 9, 3);
        set.Fifo.OnDelivered("play-1", 4, 9, 2);
        set.Requests.OnClientRequestSent(3, 1, 11);
        set.Requests.OnClientRequestCompleted(3, 1, 11);
        set.Requests.OnClientRequestCompleted(3, 1, 11);

        Assert.False(set.CheckStep());
        Assert.True(set.Context.SingleThreaded);
        Assert.Equal(["FifoPerSender", "SingleActiveHandler", "ExactlyOnceRequest"], set.Verdicts.Where(v => !v.Passed).Select(v => v.CheckerName));
    }
}
