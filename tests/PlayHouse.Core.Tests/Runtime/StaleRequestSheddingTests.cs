using PlayHouse.Core.Runtime;

namespace PlayHouse.Core.Tests.Runtime;

/// <summary>
/// A request that comes up for dispatch past its deadline is answered with RequestExpired instead of reaching a handler:
/// a client message after <see cref="ServerOptions.ClientMessageQueueTimeMax"/> in the mailbox, a mesh request past the
/// timeout its sender carried. Each stage here is held busy by a handler awaiting a gate the test opens.
/// </summary>
public sealed class StaleRequestSheddingTests
{
    private static readonly TimeSpan QueueTimeMax = TimeSpan.FromSeconds(2);

    [Fact]
    public void ClientRequests_ShedAtTheQueueTimeLimit_NotOneTickBefore()
    {
        using var h = Harness(QueueTimeMax);
        var gate = HoldStageOnBlock(h);
        var client = h.Join(1, accountId: 7);
        client.Request("Block", 1, [0]);
        h.Pump();

        // The first request waits exactly the limit when the stage frees up, the second one tick less.
        var atLimit = client.Request("Work", 1, [1]);
        h.Advance(TimeSpan.FromTicks(1));
        var belowLimit = client.Request("Work", 1, [2]);
        h.Advance(QueueTimeMax - TimeSpan.FromTicks(1));
        gate.SetResult();
        h.Pump();

        Assert.Equal(ErrorCodes.RequestExpired, client.ReplyTo(atLimit).ErrorCode);
        Assert.Equal(ErrorCodes.Success, client.ReplyTo(belowLimit).ErrorCode);
        Assert.Equal([2], client.ReplyTo(belowLimit).Payload);
        Assert.Equal(["Block", "Work"], h.Stages[1].Dispatched);
        Assert.Equal((1L, 0L), (h.Play.Counters.RequestsExpiredInMailbox, h.Play.Counters.SendsExpiredInMailbox));
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void ShedClientRequest_GetsExactlyOneReply_WithItsOwnSequenceAndMsgId_AndLeavesTheLedger()
    {
        using var h = Harness(QueueTimeMax);
        var gate = HoldStageOnBlock(h);
        var client = h.Join(1, accountId: 7);
        client.Request("Block", 1, [0]);
        var stale = client.Request("Work", 1, [1, 2, 3]);
        h.Advance(QueueTimeMax);
        gate.SetResult();
        h.Pump();

        var reply = client.ReplyTo(stale);
        Assert.Equal(("Work", 1L, ErrorCodes.RequestExpired), (reply.MsgId, reply.StageId, reply.ErrorCode));
        Assert.Empty(reply.Payload);
        Assert.Equal(0, h.Play.UnansweredRequestCount);
        Assert.Equal((0L, 0L), (h.Play.Counters.SecondReplyAttempts, h.Play.Counters.RepliesAfterExpiry));
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void OneWayClientMessage_PastTheLimit_IsDroppedAndCounted_WithNoFrameToTheClient()
    {
        using var h = Harness(QueueTimeMax);
        var gate = HoldStageOnBlock(h);
        var client = h.Join(1, accountId: 7);
        client.Request("Block", 1, [0]);
        client.Send("Input", 1, [9]);
        h.Advance(QueueTimeMax);
        var framesBefore = client.Received.Count;
        gate.SetResult();
        h.Pump();

        Assert.Equal(["Block"], h.Stages[1].Dispatched);
        Assert.Equal((0L, 1L), (h.Play.Counters.RequestsExpiredInMailbox, h.Play.Counters.SendsExpiredInMailbox));
        Assert.Equal([(nameof(ErrorCodes.RequestExpired), (string?)"Input")], h.Events.Dropped);
        Assert.Equal(framesBefore + 1, client.Received.Count);
        Assert.Equal(ErrorCodes.Success, client.Received[^1].ErrorCode);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void WithoutAQueueTimeLimit_ClientRequestsWaitingAnyTime_AreDispatched()
    {
        using var h = Harness(queueTimeMax: null);
        var gate = HoldStageOnBlock(h);
        var client = h.Join(1, accountId: 7);
        client.Request("Block", 1, [0]);
        var old = client.Request("Work", 1, [1]);
        h.Advance(TimeSpan.FromMinutes(10));
        gate.SetResult();
        h.Pump();

        Assert.Equal(ErrorCodes.Success, client.ReplyTo(old).ErrorCode);
        Assert.Equal(["Block", "Work"], h.Stages[1].Dispatched);
        Assert.Equal(0, h.Play.Counters.RequestsExpiredInMailbox);
    }

    [Fact]
    public void MeshRequest_QueuedPastTheTimeoutItCarried_IsShed_AndItsRequesterHearsTimeoutThenALateReply()
    {
        using var h = Harness(queueTimeMax: null);
        var gate = HoldStageOnBlock(h);
        var client = h.Join(1, accountId: 7);
        client.Request("Block", 1, [0]);
        h.Pump();
        var expired = h.Api.RequestToStage(RuntimeHarness.PlayNode, 1, "Ask", h.Bytes(1), TimeSpan.FromSeconds(1));
        h.Advance(TimeSpan.FromTicks(1));
        var inTime = h.Api.RequestToStage(RuntimeHarness.PlayNode, 1, "Ask", h.Bytes(2), TimeSpan.FromSeconds(1));
        h.Advance(TimeSpan.FromSeconds(1) - TimeSpan.FromTicks(1));
        var timedOutFirst = RuntimeHarness.Completed(expired).ErrorCode;
        gate.SetResult();
        h.Pump();
        var answered = RuntimeHarness.Completed(inTime);
        var answeredInTime = answered.IsSuccess;
        answered.Dispose();

        // The requester of the first gave up at its deadline; the stage sheds it there and answers the second, which
        // is one tick short of its own.
        Assert.Equal(ErrorCodes.RequestTimeout, timedOutFirst);
        Assert.True(answeredInTime);
        Assert.Equal(["Block", "Ask"], h.Stages[1].Dispatched);
        Assert.Equal(1, h.Play.Counters.RequestsExpiredInMailbox);
        Assert.Equal(1, h.Api.Counters.LateReplies);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void MeshRequest_WithoutAnExplicitTimeout_IsNeverShed_EvenPastTheDefaultDeadline()
    {
        using var h = Harness(queueTimeMax: null);
        var gate = HoldStageOnBlock(h);
        var client = h.Join(1, accountId: 7);
        client.Request("Block", 1, [0]);
        h.Pump();
        var noDeadline = h.Api.RequestToStage(RuntimeHarness.PlayNode, 1, "Ask", h.Bytes(1));
        h.Advance(h.Play.Options.RequestTimeout + TimeSpan.FromSeconds(1));
        gate.SetResult();
        h.Pump();

        // The receiver's default is only a guess at the sender's timeout, so the request still runs.
        Assert.Equal(ErrorCodes.RequestTimeout, RuntimeHarness.Completed(noDeadline).ErrorCode);
        Assert.Equal(["Block", "Ask"], h.Stages[1].Dispatched);
        Assert.Equal(0, h.Play.Counters.RequestsExpiredInMailbox);
    }

    [Fact]
    public void MeshDeadlineShedding_TurnedOff_DispatchesTheExpiredRequest()
    {
        using var h = new RuntimeHarness(new ServerOptions { DefaultStageType = RuntimeHarness.StageType, ShedMeshRequestsPastDeadline = false });
        var gate = HoldStageOnBlock(h);
        var client = h.Join(1, accountId: 7);
        client.Request("Block", 1, [0]);
        h.Pump();
        var expired = h.Api.RequestToStage(RuntimeHarness.PlayNode, 1, "Ask", h.Bytes(1), TimeSpan.FromSeconds(1));
        h.Advance(TimeSpan.FromSeconds(2));
        gate.SetResult();
        h.Pump();

        Assert.Equal(ErrorCodes.RequestTimeout, RuntimeHarness.Completed(expired).ErrorCode);
        Assert.Equal(["Block", "Ask"], h.Stages[1].Dispatched);
        Assert.Equal(0, h.Play.Counters.RequestsExpiredInMailbox);
        Assert.Equal(1, h.Play.Counters.RepliesAfterExpiry);
    }

    [Fact]
    public void QueueTimeLimit_MustBePositive()
    {
        var options = new ServerOptions { ClientMessageQueueTimeMax = TimeSpan.Zero };

        var error = Assert.Throws<ArgumentException>(options.Validate);

        Assert.Contains(nameof(ServerOptions.ClientMessageQueueTimeMax), error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void RequestExpired_HasItsOwnCodeAndName()
    {
        Assert.Equal("RequestExpired", ErrorCodes.Describe(ErrorCodes.RequestExpired));
        Assert.Equal(60024, ErrorCodes.RequestExpired);
    }

    private static RuntimeHarness Harness(TimeSpan? queueTimeMax) =>
        new(new ServerOptions { DefaultStageType = RuntimeHarness.StageType, ClientMessageQueueTimeMax = queueTimeMax });

    /// <summary>
    /// Stage 1's handler of "Block" awaits the returned gate, holding the stage; every other request is echoed. The
    /// stage is created on first join.
    /// </summary>
    private static TaskCompletionSource HoldStageOnBlock(RuntimeHarness h)
    {
        var gate = new TaskCompletionSource();
        h.ConfigureStage = stage => stage.OnClient = async (s, _, packet) =>
        {
            if (packet.MsgId == "Block")
            {
                await gate.Task;
                s.Link.Reply(packet, ErrorCodes.Success);
                return;
            }

            s.Link.Reply(packet, packet.MsgId, packet.Payload);
        };
        return gate;
    }
}
