using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;

namespace PlayHouse.Core.Tests.Runtime;

/// <summary>
/// Where a client's frame goes beyond the plain path: a batch flushed before a frame it cannot hold (another stage, a
/// full batch, a frame from a closed session, a hook that throws), a batch whose stage closed before its flush, the
/// receive's clock reading that dates a frame, and joins the ledger or the stage's mailbox refuse.
/// </summary>
public sealed class ClientFrameRoutingTests
{
    [Fact]
    public void FrameFromAClosedSession_FlushesTheHeldOnesFirst_AndIsDroppedByName()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var client = h.Join(1, accountId: 7);
        var gone = h.Join(1, accountId: 8);
        gone.Disconnect();
        h.Pump();
        var batch = new ClientFrameBatch();
        h.Play.OnClientFrame(client.SessionId, "Held", 10, 1, h.Bytes(1), h.Clock.GetTimestamp(), batch);

        h.Play.OnClientFrame(gone.SessionId, "Gone", 11, 1, h.Bytes(2), h.Clock.GetTimestamp(), batch);
        var afterTheDrop = (batch.Count, h.Play.GetStageStatistics().Single().MailboxLength);
        h.Pump();

        Assert.Equal((0, 1), afterTheDrop);
        Assert.Equal(ErrorCodes.Success, client.ReplyTo(10).ErrorCode);
        Assert.Contains(("frame-from-closed-session", "Gone"), h.Events.Dropped);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void FrameForAnotherStage_FlushesTheHeldOnes_SoEachStageGetsOnlyItsOwn()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        h.CreateStage(2);
        var inOne = h.Join(1, accountId: 7);
        var inTwo = h.Join(2, accountId: 8);
        var batch = new ClientFrameBatch();
        h.Play.OnClientFrame(inOne.SessionId, "ForOne", 10, 1, h.Bytes(1), h.Clock.GetTimestamp(), batch);

        h.Play.OnClientFrame(inTwo.SessionId, "ForTwo", 11, 2, h.Bytes(2), h.Clock.GetTimestamp(), batch);
        var afterTheSecond = (batch.Count, h.Play.GetStageStatistics()[0].MailboxLength);
        h.Play.FlushClientFrames(batch);
        h.Pump();

        Assert.Equal((1, 1), afterTheSecond);
        Assert.Equal(["ForOne"], h.Stages[1].Dispatched);
        Assert.Equal(["ForTwo"], h.Stages[2].Dispatched);
        Assert.Equal((ErrorCodes.Success, ErrorCodes.Success), (inOne.ReplyTo(10).ErrorCode, inTwo.ReplyTo(11).ErrorCode));
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void FrameOnePastTheBatchCapacity_FlushesTheHeldOnes_AndIsHeldAlone()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var client = h.Join(1, accountId: 7);
        var batch = new ClientFrameBatch();
        for (ushort seq = 1; seq <= ClientFrameBatch.CapacityMax; seq++)
        {
            h.Play.OnClientFrame(client.SessionId, "Echo", (ushort)(100 + seq), 1, h.Bytes(1), h.Clock.GetTimestamp(), batch);
        }

        var full = (batch.Count, h.Play.GetStageStatistics().Single().MailboxLength);
        h.Play.OnClientFrame(client.SessionId, "Echo", 200, 1, h.Bytes(2), h.Clock.GetTimestamp(), batch);
        var afterTheNext = (batch.Count, h.Play.GetStageStatistics().Single().MailboxLength);
        h.Play.FlushClientFrames(batch);
        h.Pump();

        Assert.Equal((ClientFrameBatch.CapacityMax, 0), full);
        Assert.Equal((1, ClientFrameBatch.CapacityMax), afterTheNext);
        Assert.Equal(ClientFrameBatch.CapacityMax + 1, h.Stages[1].Dispatched.Count);
        Assert.Equal(ErrorCodes.Success, client.ReplyTo(200).ErrorCode);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void Flush_ClearsTheHeldEntries_SoTheBatchKeepsNothingReachable()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var client = h.Join(1, accountId: 7);
        var batch = new ClientFrameBatch();
        h.Play.OnClientFrame(client.SessionId, "Echo", 10, 1, h.Bytes(1), h.Clock.GetTimestamp(), batch);
        var heldActor = batch[0].Actor;

        h.Play.FlushClientFrames(batch);
        h.Pump();

        Assert.NotNull(heldActor);
        Assert.Equal((null, null, null), ((object?)batch[0].Actor, (object?)batch[0].Session, (object?)batch[0].MsgId));
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void BatchHeldForAStageThatClosed_IsRefusedStageNotFound_CountingRequestsAndSendsApart()
    {
        using var h = new RuntimeHarness(new ServerOptions { DefaultStageType = RuntimeHarness.StageType, RequestTimeout = TimeSpan.FromSeconds(1) });
        h.CreateStage(1);
        var client = h.Join(1, accountId: 7);
        var batch = new ClientFrameBatch();
        var received = h.Clock.GetTimestamp();
        h.Play.OnClientFrame(client.SessionId, "Ask", 10, 1, h.Bytes(1), received, batch);
        h.Play.OnClientFrame(client.SessionId, "Tell", 0, 1, h.Bytes(2), received, batch);
        h.Play.OnClientFrame(client.SessionId, "AskAgain", 11, 1, h.Bytes(3), received, batch);
        h.Play.CloseStage(1);
        h.Pump();

        // The flush comes two seconds after the receive, which dates the ledger entry: the refusal is past its deadline.
        h.Clock.AdvanceTo(h.Clock.NowTicks + TimeSpan.FromSeconds(2).Ticks);
        h.Play.FlushClientFrames(batch);
        h.Pump();

        Assert.Equal((ErrorCodes.StageNotFound, ErrorCodes.StageNotFound), (client.ReplyTo(10).ErrorCode, client.ReplyTo(11).ErrorCode));
        var counters = h.Play.Counters;
        Assert.Equal((2L, 1L, 0L, 0L), (counters.UnknownStageRequests, counters.UnknownStageSends, counters.MailboxRefused, counters.SecondReplyAttempts));
        Assert.Equal(2L, counters.RepliesAfterExpiry);
        var stageNotFound = ErrorCodes.Describe(ErrorCodes.StageNotFound);
        Assert.Equal([(stageNotFound, "Ask"), (stageNotFound, "Tell"), (stageNotFound, "AskAgain")], h.Events.Dropped.Where(d => d.Reason == stageNotFound));
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void HeldRefusalsWhoseRepliesThrow_AreAllAnswered_AndTheirErrorsRaisedTogether()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var connection = new ThrowingConnection();
        var sessionId = h.Play.Connect(connection);
        h.Play.OnClientFrame(sessionId, h.Play.Options.AuthenticateMsgId, 1, 1, h.Bytes(BitConverter.GetBytes(7L)));
        h.Pump();
        h.Play.CloseStage(1);
        var one = new ClientFrameBatch();
        var two = new ClientFrameBatch();
        h.Play.OnClientFrame(sessionId, "Alone", 10, 1, h.Bytes(1), h.Clock.GetTimestamp(), one);
        h.Play.OnClientFrame(sessionId, "First", 11, 1, h.Bytes(2), h.Clock.GetTimestamp(), two);
        h.Play.OnClientFrame(sessionId, "Second", 12, 1, h.Bytes(3), h.Clock.GetTimestamp(), two);
        h.Pump();
        connection.ThrowOnSend = true;

        var single = Assert.Throws<IOException>(() => h.Play.FlushClientFrames(one));
        var both = Assert.Throws<AggregateException>(() => h.Play.FlushClientFrames(two));

        Assert.Equal("send of Alone failed", single.Message);
        Assert.Equal(["send of First failed", "send of Second failed"], both.InnerExceptions.Select(e => e.Message));
        Assert.Equal((0, 0), (one.Count, two.Count));
        Assert.Equal(0, h.Play.UnansweredRequestCount);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void HookThatThrowsWhileTheHeldOnesAreQueued_StopsTheFrameInHand_AndReleasesItsPayload()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var client = h.Join(1, accountId: 7);
        var batch = new ClientFrameBatch();
        h.Play.OnClientFrame(client.SessionId, "Held", 10, 1, h.Bytes(1), h.Clock.GetTimestamp(), batch);
        h.Events.ThrowOnNextMailboxPost = true;

        Assert.Throws<InvalidOperationException>(() => h.Play.OnClientFrame(client.SessionId, PlayServer.HeartbeatMsgId, 11, 1, h.Bytes(2), h.Clock.GetTimestamp(), batch));
        h.Pump();

        Assert.Equal(ErrorCodes.Success, client.ReplyTo(10).ErrorCode);
        Assert.DoesNotContain(client.Received, f => f.MsgSeq == 11);
        Assert.Equal(0, batch.Count);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void BatchedRequest_WithoutAQueueTimeLimit_IsNotStaleHoweverLateItsTurnComes()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var client = h.Join(1, accountId: 7);

        // Away from the clock's zero, where a stale-at of "now" would read as "never".
        h.Clock.AdvanceTo(TimeSpan.FromSeconds(1).Ticks);
        var batch = new ClientFrameBatch();
        h.Play.OnClientFrame(client.SessionId, "Patient", 10, 1, h.Bytes(1), h.Clock.GetTimestamp(), batch);
        h.Play.FlushClientFrames(batch);

        h.Clock.AdvanceTo(h.Clock.NowTicks + TimeSpan.FromSeconds(1).Ticks);
        h.Pump();

        Assert.Equal(ErrorCodes.Success, client.ReplyTo(10).ErrorCode);
        Assert.Equal(["Patient"], h.Stages[1].Dispatched);
        Assert.Equal(0L, h.Play.Counters.RequestsExpiredInMailbox);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void RequestsLedgerEntry_ExpiresRequestTimeoutAfterTheReceive_NotAfterTheDispatch()
    {
        var options = new ServerOptions { DefaultStageType = RuntimeHarness.StageType, RequestTimeout = TimeSpan.FromSeconds(10) };
        using var h = new RuntimeHarness(options);
        h.CreateStage(1);
        var client = h.Join(1, accountId: 7);
        h.Stages[1].OnClient = (_, _, _) => ValueTask.CompletedTask;
        var start = h.Clock.NowTicks;
        var receivedSingle = h.Clock.GetTimestamp();
        var receivedBatch = h.Clock.GetTimestamp();
        var batch = new ClientFrameBatch();
        h.Play.OnClientFrame(client.SessionId, "Held", 10, 1, h.Bytes(1), receivedBatch, batch);

        // Both reach the server five seconds after their receive; nobody answers them.
        h.Clock.AdvanceTo(start + TimeSpan.FromSeconds(5).Ticks);
        h.Play.OnClientFrame(client.SessionId, "Single", 11, 1, h.Bytes(2), receivedSingle);
        h.Play.FlushClientFrames(batch);
        h.Pump();
        var beforeTheDeadline = h.Play.UnansweredRequestCount;
        h.Clock.AdvanceTo(start + TimeSpan.FromSeconds(10).Ticks);

        Assert.Equal((2, 0), (beforeTheDeadline, h.Play.UnansweredRequestCount));
        Assert.Equal(2L, h.Play.Counters.UnansweredRequestsExpired);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void AuthenticationSentWithoutASeq_IsAnsweredAsTheFirstRequest()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var client = new FakeClient(h);

        client.Send(h.Play.Options.AuthenticateMsgId, 1, BitConverter.GetBytes(7L));
        h.Pump();

        var reply = Assert.Single(client.Received);
        Assert.Equal(("AuthenticateReply", (ushort)1, ErrorCodes.Success), (reply.MsgId, reply.MsgSeq, reply.ErrorCode));
        Assert.Equal(1, h.Play.ActorCount);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void JoinRefusedAtTheLedgerCap_IsAnsweredTooManyUnansweredRequests_AndTheSessionMayAuthenticateAgain()
    {
        using var h = new RuntimeHarness(new ServerOptions { DefaultStageType = RuntimeHarness.StageType, UnansweredRequestsMax = 1 });
        h.CreateStage(1);
        var holder = h.Join(1, accountId: 7);
        var held = new List<Packet>();
        h.Stages[1].OnClient = (_, _, packet) =>
        {
            held.Add(packet);
            return ValueTask.CompletedTask;
        };
        holder.Request("Hold", 1, [1]);
        h.Pump();

        var late = new FakeClient(h);
        var refused = late.Authenticate(1, accountId: 8);
        h.Pump();
        var actorsCreatedAfterTheRefusal = h.Events.Lifecycle.Count(e => e.Event == LifecycleEvent.ActorCreate);
        h.Stages[1].Link.Reply(held.Single(), ErrorCodes.Success);
        var retried = late.Authenticate(1, accountId: 8);
        h.Pump();

        Assert.Equal((ErrorCodes.TooManyUnansweredRequests, ErrorCodes.Success), (late.ReplyTo(refused).ErrorCode, late.ReplyTo(retried).ErrorCode));
        Assert.Contains((nameof(ErrorCodes.TooManyUnansweredRequests), h.Play.Options.AuthenticateMsgId), h.Events.Dropped);
        Assert.Equal(1, actorsCreatedAfterTheRefusal);
        Assert.Equal(2, h.Play.ActorCount);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void JoinIntoAFullMailbox_IsRefusedMailboxFull_AndTheSessionMayAuthenticateAgain()
    {
        using var h = new RuntimeHarness(new ServerOptions { DefaultStageType = RuntimeHarness.StageType, MailboxCapacityMax = 1 });
        h.CreateStage(1);
        var busy = h.Join(1, accountId: 7);
        busy.Request("Queued", 1, [1]);

        var late = new FakeClient(h);
        var refused = late.Authenticate(1, accountId: 8);
        h.Pump();
        var retried = late.Authenticate(1, accountId: 8);
        h.Pump();

        Assert.Equal((ErrorCodes.MailboxFull, ErrorCodes.Success), (late.ReplyTo(refused).ErrorCode, late.ReplyTo(retried).ErrorCode));
        Assert.Equal(1L, h.Play.Counters.MailboxRefused);
        Assert.Equal(2, h.Play.ActorCount);
        h.Pool.ThrowIfLeaks();
    }

    /// <summary>A client connection whose sends throw when told to, as a broken transport's would.</summary>
    private sealed class ThrowingConnection : IClientConnection
    {
        public bool ThrowOnSend { get; set; }

        public bool TrySend(string msgId, ushort msgSeq, long stageId, ushort errorCode, Payload payload)
        {
            payload.DisposeIfOwner();
            return ThrowOnSend ? throw new IOException($"send of {msgId} failed") : true;
        }

        public void Close(string reason)
        {
        }
    }
}
