using PlayHouse.Core.Runtime;
using PlayHouse.Simulation.Checkers;

namespace PlayHouse.Simulation.Tests.Checkers;

/// <summary>The checker set as the observer of a real play server and API server.</summary>
public sealed class CheckersIntegrationTests
{
    private const long RoomId = 10;

    [Fact]
    public void Checkers_CreateJoinRequestReconnectClose_SeeEveryStepAndNoViolation()
    {
        using var harness = CheckerHarness.OnManualExecutor();
        RunCreateJoinRequestReconnectClose(harness);

        Assert.True(harness.Checkers.CheckQuiescent(), harness.Checkers.FirstViolation?.ToString());
        Assert.All(harness.Checkers.Verdicts, v => Assert.True(v.Passed, v.ToString()));
        Assert.Empty(harness.Checkers.AllViolations);

        // The checkers really watched the run: every kind of event reached them.
        var checkers = harness.Checkers;
        Assert.Equal(1, checkers.Handlers.HighWater);
        Assert.True(checkers.Handlers.Entries > 10, $"only {checkers.Handlers.Entries} handler entries");
        Assert.Equal(3, checkers.Requests.IssuedCount);
        Assert.Equal(3, checkers.Requests.CompletedCount);
        Assert.Equal(9, checkers.Requests.ClientSentCount);
        Assert.Equal(9, checkers.Requests.ClientCompletedCount);
        Assert.Equal(3, checkers.Fifo.DeliveriesChecked);
        Assert.Equal(0, checkers.Lifecycle.LiveActorCount);
        Assert.Equal(0, checkers.Lifecycle.RunningStageCount);
        Assert.True(checkers.Lifecycle.EventCount >= 17, $"only {checkers.Lifecycle.EventCount} lifecycle events");
        Assert.Equal(3, checkers.Liveness.ClientCount);
        var highWaters = checkers.Queues.GetHighWaters();
        Assert.Equal([QueueCapChecker.MailboxName(CheckerHarness.PlayNode, RoomId), QueueCapChecker.MailboxExternalName(CheckerHarness.PlayNode, RoomId)], highWaters.Select(q => q.Name));
        Assert.All(highWaters, mailbox => Assert.InRange(mailbox.HighWater, 1, mailbox.Cap));
        Assert.Equal(0, harness.Pool.GetStatistics().Outstanding);
        Assert.True(harness.Pool.GetStatistics().Rents > 20);
    }

    [Fact]
    public void Checkers_SameRunInTheSimWorldTwice_NoViolationAndTheSameTrace()
    {
        var first = RunInWorld(seed: 5);
        var second = RunInWorld(seed: 5);

        Assert.Equal(first.TraceHash, second.TraceHash);
        Assert.Equal(first.TraceCount, second.TraceCount);
        Assert.True(first.TraceCount > 40, $"only {first.TraceCount} trace records");
        Assert.True(first.Steps > 20, $"only {first.Steps} world steps");
    }

    [Fact]
    public void Checkers_RefusedCreateAndRefusedAuthentication_AreLegalLifecycles()
    {
        using var harness = CheckerHarness.OnManualExecutor();
        harness.CreatesToRefuse = 1;
        Assert.Equal(ErrorCodes.CreateStageFailed, harness.CreateStage(RoomId).ErrorCode);
        Assert.True(harness.CreateStage(RoomId).IsSuccess);

        var stranger = harness.Connect(1);
        var refused = stranger.Authenticate(RoomId, 0);
        harness.Pump();

        // A refused client gives up; otherwise liveness would rightly report it as stalled.
        harness.Checkers.Liveness.StopExpecting(stranger.ClientId);
        var member = harness.Connect(2);
        member.Authenticate(RoomId, 200);
        harness.Pump();
        member.Request("Close");
        harness.Pump();

        Assert.True(harness.Checkers.CheckQuiescent(), harness.Checkers.FirstViolation?.ToString());
        Assert.Equal(ErrorCodes.AuthenticationFailed, stranger.Replies.Single(r => r.MsgSeq == refused).ErrorCode);
        Assert.Equal(2, harness.Checkers.Requests.IssuedCount);
        Assert.Equal(0, harness.Checkers.Lifecycle.LiveActorCount);
        Assert.Equal(0, harness.Checkers.Lifecycle.RunningStageCount);
    }

    [Fact]
    public void Checkers_HandlerThatKeepsARentedBuffer_PoolLedgerNamesTheOwner()
    {
        using var harness = CheckerHarness.OnManualExecutor();
        Assert.True(harness.CreateStage(RoomId).IsSuccess);
        var client = harness.Connect(1);
        client.Authenticate(RoomId, 100);
        harness.Pump();
        var leak = client.Request("Leak");
        harness.Pump();
        Assert.Equal(ErrorCodes.Success, client.Replies.Single(r => r.MsgSeq == leak).ErrorCode);

        Assert.True(harness.Checkers.CheckStep());
        Assert.False(harness.Checkers.CheckQuiescent());

        var violation = Assert.Single(harness.Checkers.AllViolations);
        Assert.Equal(PoolLedgerChecker.CheckerName, violation.CheckerName);
        Assert.Contains("pool 'pool of play-1': 1 buffer(s) outstanding at quiescence", violation.Message, StringComparison.Ordinal);
        Assert.Contains("(32 B, owner 'leaky handler')", violation.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void Checkers_MailboxWithoutInternalAllowance_ConnectionChangeGoesPastTheExternalCap()
    {
        // The external cap holds (the third message is refused), yet the disconnect notice is an internal entry
        // that bypasses it: this is why the mailbox cap has an allowance.
        var options = new ServerOptions { MailboxCapacityMax = 2 };
        using var strict = CheckerHarness.OnManualExecutor(options, new CheckerSetOptions { MailboxInternalEntriesAllowance = 0 });
        FillMailboxThenDisconnect(strict);

        var violation = Assert.Single(strict.Checkers.AllViolations);
        Assert.Equal("mailbox of stage play-1/10 held 3 messages, over its cap of 2 (MailboxCapacityMax 2 + 0 internal entries)", violation.Message);

        using var allowing = CheckerHarness.OnManualExecutor(options, new CheckerSetOptions { MailboxInternalEntriesAllowance = 1 });
        FillMailboxThenDisconnect(allowing);
        Assert.True(allowing.Checkers.CheckQuiescent(), allowing.Checkers.FirstViolation?.ToString());
    }

    private static void FillMailboxThenDisconnect(CheckerHarness harness)
    {
        Assert.True(harness.CreateStage(RoomId).IsSuccess);
        var client = harness.Connect(1);
        client.Authenticate(RoomId, 100);
        harness.Pump();
        for (var i = 0; i < 3; i++)
        {
            client.SendInOrder();
        }

        client.Disconnect();
        harness.Pump();
    }

    private static (ulong TraceHash, long TraceCount, long Steps) RunInWorld(ulong seed)
    {
        var world = new SimWorld(seed, new SimWorldOptions { ExploreSchedules = true });
        using var harness = CheckerHarness.OnWorld(world);
        RunCreateJoinRequestReconnectClose(harness);
        Assert.True(harness.Checkers.CheckQuiescent(), harness.Checkers.FirstViolation?.ToString());
        Assert.Empty(world.Escapes);
        return (world.Trace.Hash, world.Trace.Count, harness.Steps);
    }

    private static void RunCreateJoinRequestReconnectClose(CheckerHarness harness)
    {
        Assert.True(harness.CreateStage(RoomId).IsSuccess);

        var alice = harness.Connect(1);
        var aliceJoin = alice.Authenticate(RoomId, 100);
        harness.Pump();
        alice.Request("Echo", [1, 2, 3]);
        alice.SendInOrder();
        alice.SendInOrder(skip: 2);
        alice.Request("Lookup");
        alice.SendInOrder();
        harness.Pump();

        var bob = harness.Connect(2);
        bob.Authenticate(RoomId, 200);
        harness.Pump();
        bob.Request("Echo");

        // Alice drops and comes back on a new session: the probe actor is destroyed, the live one reconnects.
        alice.Disconnect();
        harness.Pump();
        var aliceAgain = harness.Connect(3);
        aliceAgain.Authenticate(RoomId, 100);
        harness.Pump();
        aliceAgain.Request("Echo");
        aliceAgain.Request("Lookup");
        harness.Pump();

        var close = bob.Request("Close");
        harness.Pump();

        Assert.Equal(ErrorCodes.Success, alice.Replies.Single(r => r.MsgSeq == aliceJoin).ErrorCode);
        Assert.Equal(ErrorCodes.Success, bob.Replies.Single(r => r.MsgSeq == close).ErrorCode);
        Assert.All(alice.Replies.Concat(bob.Replies).Concat(aliceAgain.Replies), r => Assert.Equal(ErrorCodes.Success, r.ErrorCode));
    }
}
