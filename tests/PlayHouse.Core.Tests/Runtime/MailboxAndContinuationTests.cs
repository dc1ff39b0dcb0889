using PlayHouse.Core.Runtime;

namespace PlayHouse.Core.Tests.Runtime;

public sealed class MailboxAndContinuationTests
{
    [Fact]
    public void HandlerAwaiting_ContinuationResumesOnTheStageAndNextMessageWaits()
    {
        using var h = new RuntimeHarness();
        var trail = new List<string>();
        SynchronizationContext? resumedOn = null;
        h.ConfigureStage = s => s.OnClient = async (stage, actor, packet) =>
        {
            trail.Add("start " + packet.MsgId);
            if (packet.MsgId == "Slow")
            {
                await Task.Delay(TimeSpan.FromSeconds(1), stage.Link.Time);
                resumedOn = SynchronizationContext.Current;
            }

            trail.Add("end " + packet.MsgId);
            stage.Link.Reply(packet, ErrorCodes.Success);
        };
        var client = h.Join(1, 5);
        client.Request("Slow", 1, [1]);
        client.Request("Fast", 1, [2]);
        h.Pump();

        // The stage is busy with the awaiting handler: the second message has not started.
        Assert.Equal(["start Slow"], trail);

        h.Advance(TimeSpan.FromSeconds(1));
        Assert.Equal(["start Slow", "end Slow", "start Fast", "end Fast"], trail);
        Assert.Equal("StageSynchronizationContext", resumedOn?.GetType().Name);
        Assert.Equal(1, h.Events.MaxConcurrentHandlers);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void RequestPayload_StaysValidAcrossTheHandlersAwait()
    {
        using var h = new RuntimeHarness();
        byte[]? readAfterAwait = null;
        h.ConfigureStage = s => s.OnClient = async (stage, actor, packet) =>
        {
            await Task.Delay(TimeSpan.FromMilliseconds(10), stage.Link.Time);
            readAfterAwait = packet.Payload.Span.ToArray();
            stage.Link.Reply(packet, ErrorCodes.Success);
        };
        var client = h.Join(1, 5);
        client.Request("Read", 1, [9, 8, 7]);
        h.Pump();

        // Another message's buffer is rented meanwhile: a payload returned too early would be reused here.
        using (var other = h.Pool.Rent(3, "other"))
        {
            other.WritableSpan.Fill(0xEE);
            h.Advance(TimeSpan.FromMilliseconds(10));
        }

        Assert.Equal([9, 8, 7], readAfterAwait);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void ReplyAfterAwait_ReachesItsOwnRequestWithItsSequence()
    {
        using var h = new RuntimeHarness();
        h.ConfigureStage = s => s.OnClient = async (stage, actor, packet) =>
        {
            var delayMs = packet.Payload.Span[0];
            await Task.Delay(TimeSpan.FromMilliseconds(delayMs), stage.Link.Time);
            stage.Link.Reply(packet, "Reply", stage.Link.Pool.Copy(packet.Payload.Span, "reply"));
        };
        var client = h.Join(1, 5);
        var first = client.Request("Work", 1, [30]);
        var second = client.Request("Work", 1, [10]);
        h.Advance(TimeSpan.FromMilliseconds(100));

        Assert.Equal([30], client.ReplyTo(first).Payload);
        Assert.Equal([10], client.ReplyTo(second).Payload);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void MailboxAtCap_RefusesWithMailboxFullAndCounts()
    {
        using var h = new RuntimeHarness(new ServerOptions { DefaultStageType = RuntimeHarness.StageType, MailboxCapacityMax = 2 });
        var gate = new TaskCompletionSource();
        h.ConfigureStage = s => s.OnClient = async (stage, actor, packet) =>
        {
            await gate.Task;
            stage.Link.Reply(packet, ErrorCodes.Success);
        };
        var client = h.Join(1, 5);
        var blocking = client.Request("Block", 1, []);
        h.Pump();
        var queued1 = client.Request("Q", 1, []);
        var queued2 = client.Request("Q", 1, []);
        var refused = client.Request("Q", 1, []);
        h.Pump();

        Assert.Equal(ErrorCodes.MailboxFull, client.ReplyTo(refused).ErrorCode);
        Assert.Equal(1, h.Play.Counters.MailboxRefused);
        Assert.Equal(2, h.Play.GetStageStatistics().Single().MailboxLength);

        gate.SetResult();
        h.Pump();
        Assert.Equal(ErrorCodes.Success, client.ReplyTo(blocking).ErrorCode);
        Assert.Equal(ErrorCodes.Success, client.ReplyTo(queued1).ErrorCode);
        Assert.Equal(ErrorCodes.Success, client.ReplyTo(queued2).ErrorCode);
        Assert.Equal(2, h.Play.GetStageStatistics().Single().MailboxHighWater);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void ClientMessages_AreHandledInArrivalOrder()
    {
        using var h = new RuntimeHarness();
        var client = h.Join(1, 5);
        for (var i = 0; i < 200; i++)
        {
            client.Send("M" + i, 1, []);
        }

        h.Pump();
        Assert.Equal(Enumerable.Range(0, 200).Select(i => "M" + i), h.Stages[1].Dispatched);
    }

    [Fact]
    public void HandlerThrowing_RepliesHandlerFailedAndTheStageKeepsWorking()
    {
        using var h = new RuntimeHarness();
        h.ConfigureStage = s => s.OnClient = (stage, actor, packet) =>
        {
            if (packet.MsgId == "Boom")
            {
                throw new InvalidOperationException("boom");
            }

            stage.Link.Reply(packet, ErrorCodes.Success);
            return ValueTask.CompletedTask;
        };
        var client = h.Join(1, 5);
        var boom = client.Request("Boom", 1, [1]);
        var fine = client.Request("Fine", 1, [1]);
        h.Pump();

        Assert.Equal(ErrorCodes.HandlerFailed, client.ReplyTo(boom).ErrorCode);
        Assert.Equal(ErrorCodes.Success, client.ReplyTo(fine).ErrorCode);
        Assert.Equal(1, h.Play.Counters.HandlerFailures);
        var failure = Assert.Single(h.Events.Failures);
        Assert.Equal("Boom", failure.MsgId);
        Assert.Equal("boom", failure.Error.Message);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void SecondReplyToOneRequest_ThrowsAndIsCounted()
    {
        using var h = new RuntimeHarness();
        Exception? secondReplyError = null;
        h.ConfigureStage = s => s.OnClient = (stage, actor, packet) =>
        {
            stage.Link.Reply(packet, ErrorCodes.Success);
            secondReplyError = Record.Exception(() => stage.Link.Reply(packet, ErrorCodes.Success));
            return ValueTask.CompletedTask;
        };
        var client = h.Join(1, 5);
        var seq = client.Request("Twice", 1, []);
        h.Pump();

        Assert.IsType<InvalidOperationException>(secondReplyError);
        Assert.Equal(1, h.Play.Counters.SecondReplyAttempts);
        Assert.Single(client.Received, f => f.MsgSeq == seq);
    }

    [Fact]
    public void PushToDisconnectedActor_IsDroppedAndCounted()
    {
        using var h = new RuntimeHarness();
        var client = h.Join(1, 5);
        client.Disconnect();
        h.Pump();
        var stage = h.Stages[1];
        stage.Link.SendToClient(stage.Link.Actors.Single(), "Push", h.Bytes(1));

        Assert.Equal(1, h.Play.Counters.ClientPushesToDisconnected);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void RefusedClientSend_IsCountedAndReleasesThePayload()
    {
        using var h = new RuntimeHarness();
        var client = h.Join(1, 5);
        client.RefuseSends = true;
        client.Request("Echo", 1, [1, 2]);
        h.Pump();

        Assert.Equal(1, h.Play.Counters.ClientSendsRefused);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void EchoReply_MovesTheRequestPayloadWithoutCopying()
    {
        using var h = new RuntimeHarness();
        var client = h.Join(1, 5);
        var before = h.Pool.GetStatistics().Rents;
        var seq = client.Request("Echo", 1, [4, 5]);
        h.Pump();

        Assert.Equal([4, 5], client.ReplyTo(seq).Payload);
        Assert.Equal(before + 1, h.Pool.GetStatistics().Rents);
        Assert.Equal(0, h.Pool.GetStatistics().Outstanding);
    }
}
