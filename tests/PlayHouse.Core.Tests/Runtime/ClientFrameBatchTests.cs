using PlayHouse.Core.Runtime;

namespace PlayHouse.Core.Tests.Runtime;

/// <summary>
/// A transport's receive loop may hand a receive's frames over with a <see cref="ClientFrameBatch"/>: plain messages to
/// the session's stage are held and enter the ledger and the mailbox together at the flush, and everything a single
/// frame's dispatch does (order, replies, refusals at the caps, counters) stays the same.
/// </summary>
public sealed class ClientFrameBatchTests
{
    [Fact]
    public void BatchedRequests_ReachTheStageInOrderAtTheFlush_AndEachIsAnsweredOnce()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var client = h.Join(1, accountId: 7);
        var batch = new ClientFrameBatch();
        var seqs = new List<ushort>();
        for (ushort seq = 10; seq < 15; seq++)
        {
            h.Play.OnClientFrame(client.SessionId, "Echo" + seq, seq, 1, h.Bytes((byte)seq), h.Clock.GetTimestamp(), batch);
            seqs.Add(seq);
        }

        h.Play.OnClientFrame(client.SessionId, "OneWay", 0, 1, h.Bytes(1), h.Clock.GetTimestamp(), batch);
        var heldBeforeFlush = (batch.Count, h.Play.UnansweredRequestCount, h.Play.GetStageStatistics().Single().MailboxLength);

        h.Play.FlushClientFrames(batch);
        var queuedAfterFlush = (batch.Count, h.Play.UnansweredRequestCount, h.Play.GetStageStatistics().Single().MailboxLength);
        h.Pump();

        Assert.Equal((6, 0, 0), heldBeforeFlush);
        Assert.Equal((0, 5, 6), queuedAfterFlush);
        Assert.Equal(["Echo10", "Echo11", "Echo12", "Echo13", "Echo14", "OneWay"], h.Stages[1].Dispatched);
        Assert.All(seqs, seq => Assert.Equal([(byte)seq], client.ReplyTo(seq).Payload));
        Assert.Equal(0, h.Play.UnansweredRequestCount);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void FrameThatIsNotAPlainMessage_FlushesTheHeldOnesBeforeItIsHandled()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var client = h.Join(1, accountId: 7);
        var batch = new ClientFrameBatch();
        h.Play.OnClientFrame(client.SessionId, "First", 20, 1, h.Bytes(1), h.Clock.GetTimestamp(), batch);

        // A message for a stage the session is not in is refused at once; the held one must be queued before it.
        h.Play.OnClientFrame(client.SessionId, "Elsewhere", 21, 99, h.Bytes(2), h.Clock.GetTimestamp(), batch);
        var afterRefusal = (batch.Count, h.Play.GetStageStatistics().Single().MailboxLength);
        h.Play.FlushClientFrames(batch);
        h.Pump();

        Assert.Equal((0, 1), afterRefusal);
        Assert.Equal(ErrorCodes.NotInStage, client.ReplyTo(21).ErrorCode);
        Assert.Equal(ErrorCodes.Success, client.ReplyTo(20).ErrorCode);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void BatchPastTheLedgerCap_RefusesTheExcessWithTooManyUnansweredRequests_AndHoldsTheRest()
    {
        using var h = new RuntimeHarness(new ServerOptions { DefaultStageType = RuntimeHarness.StageType, UnansweredRequestsMax = 2 });
        h.CreateStage(1);
        var client = h.Join(1, accountId: 7);
        var held = new List<Packet>();
        h.Stages[1].OnClient = (_, _, packet) =>
        {
            held.Add(packet);
            return ValueTask.CompletedTask;
        };
        var batch = new ClientFrameBatch();
        for (ushort seq = 30; seq < 33; seq++)
        {
            h.Play.OnClientFrame(client.SessionId, "Hold" + seq, seq, 1, h.Bytes(3), h.Clock.GetTimestamp(), batch);
        }

        h.Play.FlushClientFrames(batch);
        h.Pump();

        Assert.Equal(ErrorCodes.TooManyUnansweredRequests, client.ReplyTo(32).ErrorCode);
        Assert.Equal((1L, 2), (h.Play.Counters.UnansweredRequestsRefused, h.Play.UnansweredRequestCount));
        Assert.Equal(["Hold30", "Hold31"], held.Select(p => p.MsgId));
        foreach (var packet in held)
        {
            h.Stages[1].Link.Reply(packet, ErrorCodes.Success);
        }

        h.Pump();
        Assert.Equal((ErrorCodes.Success, ErrorCodes.Success), (client.ReplyTo(30).ErrorCode, client.ReplyTo(31).ErrorCode));
        Assert.Equal(0, h.Play.UnansweredRequestCount);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void BatchPastTheMailboxCap_RefusesTheExcessWithMailboxFull_AndClosesItsLedgerEntry()
    {
        using var h = new RuntimeHarness(new ServerOptions { DefaultStageType = RuntimeHarness.StageType, MailboxCapacityMax = 2 });
        h.CreateStage(1);
        var client = h.Join(1, accountId: 7);
        var batch = new ClientFrameBatch();
        for (ushort seq = 40; seq < 43; seq++)
        {
            h.Play.OnClientFrame(client.SessionId, "Echo", seq, 1, h.Bytes(4), h.Clock.GetTimestamp(), batch);
        }

        h.Play.FlushClientFrames(batch);
        var refusedBeforeTheTurn = (client.ReplyTo(42).ErrorCode, h.Play.Counters.MailboxRefused, h.Play.UnansweredRequestCount);
        h.Pump();

        Assert.Equal((ErrorCodes.MailboxFull, 1L, 2), refusedBeforeTheTurn);
        Assert.Equal((ErrorCodes.Success, ErrorCodes.Success), (client.ReplyTo(40).ErrorCode, client.ReplyTo(41).ErrorCode));
        Assert.Equal(0, h.Play.UnansweredRequestCount);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void BatchedRequestsThatWaitPastTheQueueTimeMax_AreAnsweredRequestExpired_FromTheirReceive()
    {
        using var h = new RuntimeHarness(new ServerOptions { DefaultStageType = RuntimeHarness.StageType, ClientMessageQueueTimeMax = TimeSpan.FromSeconds(1) });
        h.CreateStage(1);
        var client = h.Join(1, accountId: 7);
        var batch = new ClientFrameBatch();
        var start = h.Clock.NowTicks;
        h.Play.OnClientFrame(client.SessionId, "Stale", 60, 1, h.Bytes(6), h.Clock.GetTimestamp(), batch);
        h.Play.FlushClientFrames(batch);
        h.Clock.AdvanceTo(start + TimeSpan.FromMilliseconds(500).Ticks);
        h.Play.OnClientFrame(client.SessionId, "Fresh", 61, 1, h.Bytes(6), h.Clock.GetTimestamp(), batch);
        h.Play.FlushClientFrames(batch);

        // The turn comes one second after the first receive: the first request has waited its limit, the second half of it.
        h.Clock.AdvanceTo(start + TimeSpan.FromSeconds(1).Ticks);
        h.Pump();

        Assert.Equal((ErrorCodes.RequestExpired, ErrorCodes.Success), (client.ReplyTo(60).ErrorCode, client.ReplyTo(61).ErrorCode));
        Assert.Equal(["Fresh"], h.Stages[1].Dispatched);
        Assert.Equal(0, h.Play.UnansweredRequestCount);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void BatchForAClosedSession_IsNotHeld_AndReleasesItsPayload()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var client = h.Join(1, accountId: 7);
        client.Disconnect();
        var batch = new ClientFrameBatch();

        h.Play.OnClientFrame(client.SessionId, "Late", 50, 1, h.Bytes(5), h.Clock.GetTimestamp(), batch);
        var heldAfterTheFrame = batch.Count;
        var outstandingAfterTheFrame = h.Pool.GetStatistics().Outstanding;
        h.Play.FlushClientFrames(batch);
        h.Pump();

        Assert.Equal((0, 0L), (heldAfterTheFrame, (long)outstandingAfterTheFrame));
        Assert.DoesNotContain(client.Received, f => f.MsgSeq == 50);
        Assert.DoesNotContain("Late", h.Stages[1].Dispatched);
        h.Pool.ThrowIfLeaks();
    }
}
