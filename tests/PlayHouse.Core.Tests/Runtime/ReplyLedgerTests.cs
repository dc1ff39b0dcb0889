using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;

namespace PlayHouse.Core.Tests.Runtime;

/// <summary>The exactly-once reply ledger is bounded: entries expire at their requester's deadline and the ledger has a cap.</summary>
public sealed class ReplyLedgerTests
{
    private static readonly TimeSpan Timeout = TimeSpan.FromSeconds(30);

    [Fact]
    public void RequestNobodyAnswers_LeavesTheLedgerAtTheRequestersDeadline_AndIsCounted()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        h.CreateStage(2);
        h.Stages[2].OnServer = (_, _) => ValueTask.CompletedTask;
        var task = h.Stages[1].Link.RequestToStage(RuntimeHarness.PlayNode, 2, "Silent", Payload.Empty, Timeout);
        h.Advance(Timeout - TimeSpan.FromTicks(1));
        var openBeforeDeadline = h.Play.UnansweredRequestCount;

        h.Advance(TimeSpan.FromTicks(1));

        Assert.Equal(1, openBeforeDeadline);
        Assert.Equal(ErrorCodes.RequestTimeout, RuntimeHarness.Completed(task).ErrorCode);
        Assert.Equal(0, h.Play.UnansweredRequestCount);
        Assert.Equal(1, h.Play.Counters.UnansweredRequestsExpired);
    }

    [Fact]
    public void ReplyAfterItsEntryExpired_IsCountedAndStillSent_NotThrown()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        h.CreateStage(2);
        var held = new List<Packet>();
        h.Stages[2].OnServer = (_, packet) =>
        {
            held.Add(packet);
            return ValueTask.CompletedTask;
        };
        var task = h.Stages[1].Link.RequestToStage(RuntimeHarness.PlayNode, 2, "Slow", Payload.Empty, Timeout);
        h.Advance(Timeout);
        var openAfterDeadline = h.Play.UnansweredRequestCount;

        h.Stages[2].Link.Reply(held.Single(), "TooLate", h.Bytes(1, 2, 3));
        h.Pump();

        // The replier's deadline is only its estimate of the requester's, so the reply still goes out; this requester
        // had timed out and drops it as late.
        Assert.Equal(0, openAfterDeadline);
        Assert.Equal(ErrorCodes.RequestTimeout, RuntimeHarness.Completed(task).ErrorCode);
        Assert.Equal((1L, 1L), (h.Play.Counters.UnansweredRequestsExpired, h.Play.Counters.RepliesAfterExpiry));
        Assert.Equal(1, h.Play.Counters.LateReplies);
        Assert.Equal(0, h.Play.Counters.SecondReplyAttempts);
        Assert.Throws<InvalidOperationException>(() => h.Stages[2].Link.Reply(held.Single(), ErrorCodes.Success));
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void ReplyThatComesAfterTheDefaultDeadline_StillReachesAClientThatWaitsLonger()
    {
        // A client's timeout is not on the wire: a relay that waits out its own downstream timeout replies just
        // after the assumed deadline, and the client (waiting longer) must still get that answer.
        using var h = new RuntimeHarness(new ServerOptions { DefaultStageType = RuntimeHarness.StageType, RequestTimeout = TimeSpan.FromSeconds(1) });
        h.CreateStage(1);
        h.CreateStage(2);
        h.Stages[2].OnServer = (_, _) => ValueTask.CompletedTask;
        h.Stages[1].OnClient = async (stage, _, packet) =>
        {
            using var downstream = await stage.Link.RequestToStage(RuntimeHarness.PlayNode, 2, "Silent", Payload.Empty);
            stage.Link.Reply(packet, downstream.ErrorCode);
        };
        var client = h.Join(1, accountId: 7);
        var seq = client.Request("Relay", 1, [1]);
        h.Advance(TimeSpan.FromSeconds(1));

        Assert.Equal(ErrorCodes.RequestTimeout, client.ReplyTo(seq).ErrorCode);
        Assert.Equal(1, h.Play.Counters.RepliesAfterExpiry);
    }

    [Fact]
    public void SecondReply_BeforeTheDeadline_StillThrowsAndIsCounted()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        h.CreateStage(2);
        var held = new List<Packet>();
        h.Stages[2].OnServer = (stage, packet) =>
        {
            held.Add(packet);
            stage.Link.Reply(packet, ErrorCodes.Success);
            return ValueTask.CompletedTask;
        };
        var task = h.Stages[1].Link.RequestToStage(RuntimeHarness.PlayNode, 2, "Once", Payload.Empty, Timeout);
        h.Pump();

        Assert.Throws<InvalidOperationException>(() => h.Stages[2].Link.Reply(held.Single(), ErrorCodes.Success));
        Assert.True(RuntimeHarness.Completed(task).IsSuccess);
        Assert.Equal(1, h.Play.Counters.SecondReplyAttempts);
        Assert.Equal(0, h.Play.Counters.RepliesAfterExpiry);
    }

    [Fact]
    public void LedgerAtItsCap_RefusesTheNextRequestWithTooManyUnansweredRequests_AndKeepsTheHeldOnes()
    {
        using var h = new RuntimeHarness(new ServerOptions { DefaultStageType = RuntimeHarness.StageType, UnansweredRequestsMax = 2 });
        h.CreateStage(2);
        var held = new List<Packet>();
        h.Stages[2].OnServer = (_, packet) =>
        {
            if (packet.IsRequest)
            {
                held.Add(packet);
            }

            return ValueTask.CompletedTask;
        };
        var first = h.Api.RequestToStage(RuntimeHarness.PlayNode, 2, "Hold", h.Bytes(1));
        var second = h.Api.RequestToStage(RuntimeHarness.PlayNode, 2, "Hold", h.Bytes(2));
        var third = h.Api.RequestToStage(RuntimeHarness.PlayNode, 2, "Hold", h.Bytes(3));
        h.Api.SendToStage(RuntimeHarness.PlayNode, 2, "OneWay", h.Bytes(4));
        h.Pump();

        Assert.Equal(ErrorCodes.TooManyUnansweredRequests, RuntimeHarness.Completed(third).ErrorCode);
        Assert.Equal(1, h.Play.Counters.UnansweredRequestsRefused);
        Assert.Equal(2, h.Play.UnansweredRequestCount);
        Assert.Equal(["Hold", "Hold", "OneWay"], h.Stages[2].Dispatched);

        // The held requests are still answerable, and answering one frees a place in the ledger.
        h.Stages[2].Link.Reply(held[0], ErrorCodes.Success);
        var fourth = h.Api.RequestToStage(RuntimeHarness.PlayNode, 2, "Hold", Payload.Empty);
        h.Pump();

        Assert.True(RuntimeHarness.Completed(first).IsSuccess);
        Assert.False(second.IsCompleted);
        Assert.False(fourth.IsCompleted);
        Assert.Equal(1, h.Play.Counters.UnansweredRequestsRefused);
        h.Stages[2].Link.Reply(held[1], ErrorCodes.Success);
        h.Stages[2].Link.Reply(held[2], ErrorCodes.Success);
        h.Pump();
        Assert.True(RuntimeHarness.Completed(fourth).IsSuccess);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void LedgerAtItsCap_DropsExpiredEntriesBeforeRefusing()
    {
        using var h = new RuntimeHarness(new ServerOptions { DefaultStageType = RuntimeHarness.StageType, UnansweredRequestsMax = 1 });
        h.CreateStage(2);
        h.Stages[2].OnServer = (_, _) => ValueTask.CompletedTask;
        var leaked = h.Api.RequestToStage(RuntimeHarness.PlayNode, 2, "Leak", Payload.Empty, TimeSpan.FromSeconds(1));
        h.Advance(TimeSpan.FromSeconds(1));

        var next = h.Api.RequestToStage(RuntimeHarness.PlayNode, 2, "Next", Payload.Empty, TimeSpan.FromSeconds(1));
        h.Pump();

        Assert.Equal(ErrorCodes.RequestTimeout, RuntimeHarness.Completed(leaked).ErrorCode);
        Assert.False(next.IsCompleted);
        Assert.Equal((1L, 0L), (h.Play.Counters.UnansweredRequestsExpired, h.Play.Counters.UnansweredRequestsRefused));
        Assert.Equal(["Leak", "Next"], h.Stages[2].Dispatched);
    }

    [Fact]
    public void ExplicitRequestTimeout_TravelsWithTheRequest_AndSetsHowLongItsEntryLives()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(2);
        var held = new Dictionary<string, Packet>();
        h.Stages[2].OnServer = (_, packet) =>
        {
            held[packet.MsgId] = packet;
            return ValueTask.CompletedTask;
        };

        // Longer than the receiver's 30 s default, then a short one behind it: each lives exactly as long as its requester waits.
        var patient = h.Api.RequestToStage(RuntimeHarness.PlayNode, 2, "Patient", Payload.Empty, TimeSpan.FromSeconds(90));
        var hasty = h.Api.RequestToStage(RuntimeHarness.PlayNode, 2, "Hasty", Payload.Empty, TimeSpan.FromSeconds(1));
        h.Advance(TimeSpan.FromSeconds(60));
        var openAfterOneMinute = h.Play.UnansweredRequestCount;
        h.Stages[2].Link.Reply(held["Patient"], ErrorCodes.Success);
        h.Pump();

        Assert.Equal(1, openAfterOneMinute);
        Assert.Equal(1, h.Play.Counters.UnansweredRequestsExpired);
        Assert.True(RuntimeHarness.Completed(patient).IsSuccess);
        Assert.Equal(ErrorCodes.RequestTimeout, RuntimeHarness.Completed(hasty).ErrorCode);
        Assert.Equal(0, h.Play.UnansweredRequestCount);
    }

    [Fact]
    public void ClientRequest_OverTheLedgerCap_GetsTooManyUnansweredRequests()
    {
        using var h = new RuntimeHarness(new ServerOptions { DefaultStageType = RuntimeHarness.StageType, UnansweredRequestsMax = 1 });
        h.CreateStage(1);
        var held = new List<Packet>();
        h.Stages[1].OnClient = (_, _, packet) =>
        {
            held.Add(packet);
            return ValueTask.CompletedTask;
        };
        var client = h.Join(1, accountId: 7);
        var kept = client.Request("Hold", 1, [1]);
        var refused = client.Request("Hold", 1, [2]);
        h.Pump();

        Assert.Equal(ErrorCodes.TooManyUnansweredRequests, client.ReplyTo(refused).ErrorCode);
        Assert.DoesNotContain(client.Received, f => f.MsgSeq == kept);
        Assert.Equal(1, h.Play.Counters.UnansweredRequestsRefused);
        Assert.Single(held);
        h.Stages[1].Link.Reply(held[0], ErrorCodes.Success);
        Assert.Equal(ErrorCodes.Success, client.ReplyTo(kept).ErrorCode);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void ImmediateRuntimeErrors_StillGoOut_WhenTheLedgerIsFull()
    {
        using var h = new RuntimeHarness(new ServerOptions { DefaultStageType = RuntimeHarness.StageType, UnansweredRequestsMax = 1 });
        h.CreateStage(2);
        h.Stages[2].OnServer = (_, _) => ValueTask.CompletedTask;
        _ = h.Api.RequestToStage(RuntimeHarness.PlayNode, 2, "Hold", Payload.Empty);
        var unknownStage = h.Api.RequestToStage(RuntimeHarness.PlayNode, 404, "Hello", Payload.Empty);
        h.Pump();

        // The runtime answers an unknown stage at once, without a ledger entry, so a full ledger cannot stop it.
        Assert.Equal(ErrorCodes.StageNotFound, RuntimeHarness.Completed(unknownStage).ErrorCode);
        Assert.Equal(0, h.Play.Counters.UnansweredRequestsRefused);
    }
}
