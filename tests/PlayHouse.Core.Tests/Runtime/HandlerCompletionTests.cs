using PlayHouse.Core.Runtime;

namespace PlayHouse.Core.Tests.Runtime;

/// <summary>The end of a handler: when it leaves the server's pending work, and hooks that cannot wedge a stage.</summary>
public sealed class HandlerCompletionTests
{
    [Fact]
    public void OneWayHandlerAwaiting_CountsInProgressUntilItsWorkCompletes_SoTheServerIsNotDrainedBefore()
    {
        using var h = new RuntimeHarness();
        h.ConfigureStage = s => s.OnClient = async (stage, actor, packet) =>
        {
            await Task.Delay(TimeSpan.FromSeconds(1), stage.Link.Time);
            actor.Link.SendToClient("Done", stage.Link.Pool.Copy(packet.Payload.Span, "done"));
        };
        var client = h.Join(1, 5);
        client.Send("Slow", 1, [1, 2, 3]);
        h.Pump();

        // A one-way message has no unanswered-request entry: only the handler count says the server is busy.
        Assert.Equal(1, h.Play.HandlersInProgress);
        Assert.Equal(0, h.Play.UnansweredRequestCount);
        Assert.False(h.Play.IsDrained);

        h.Advance(TimeSpan.FromSeconds(1));

        Assert.Equal(0, h.Play.HandlersInProgress);
        Assert.True(h.Play.IsDrained);
        Assert.Equal([1, 2, 3], Assert.Single(client.Received, f => f.MsgId == "Done").Payload);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void QueuedMessage_KeepsTheServerFromBeingDrained_UntilItsHandlerRan()
    {
        using var h = new RuntimeHarness();
        var client = h.Join(1, 5);
        client.Send("Queued", 1, [7]);

        Assert.False(h.Play.IsDrained);
        h.Pump();

        Assert.True(h.Play.IsDrained);
        Assert.Equal(0, h.Play.HandlersInProgress);
    }

    [Fact]
    public void MailboxHookThatThrows_LeavesThePostedMessageScheduled_AndTheStageKeepsWorking()
    {
        using var h = new RuntimeHarness();
        var client = h.Join(1, 5);
        h.Events.ThrowOnNextMailboxPost = true;

        // The hook runs on the caller's thread, which hears the fault (a session's receive callback catches it).
        Assert.Throws<InvalidOperationException>(() => client.Request("First", 1, [1]));
        h.Pump();
        var second = client.Request("Second", 1, [2]);
        h.Pump();

        // The first message was queued and its turn scheduled before the hook ran: it is answered like the second.
        Assert.Equal(ErrorCodes.Success, client.ReplyTo((ushort)(second - 1)).ErrorCode);
        Assert.Equal(ErrorCodes.Success, client.ReplyTo(second).ErrorCode);
        Assert.Equal(["First", "Second"], h.Stages[1].Dispatched.Where(m => m is "First" or "Second"));
        h.Pool.ThrowIfLeaks();
    }
}
