using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;

namespace PlayHouse.Core.Tests.Runtime;

/// <summary>
/// A play server's inbound mesh messages: a request for an unknown stage, system messages (a create of an id that
/// exists, an operation the server does not know, a create the ledger refuses), a request that closes a cycle of awaits,
/// and messages from a stage that the awaiting stage does not wait for, which are no cycle. Each releases its payload.
/// </summary>
public sealed class MeshRoutingTests
{
    private static readonly TimeSpan Timeout = TimeSpan.FromSeconds(30);

    [Fact]
    public void RequestForAnUnknownStage_IsAnsweredStageNotFound_DroppedByName_AndItsPayloadReleased()
    {
        using var h = new RuntimeHarness();

        var task = h.Api.RequestToStage(RuntimeHarness.PlayNode, 42, "Lost", h.Bytes(1, 2, 3));
        h.Pump();

        using var response = RuntimeHarness.Completed(task);
        Assert.Equal(ErrorCodes.StageNotFound, response.ErrorCode);
        Assert.Equal((1L, 0L), (h.Play.Counters.UnknownStageRequests, h.Play.Counters.UnknownStageSends));
        Assert.Contains(("unknown-stage", "Lost"), h.Events.Dropped);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void CreateOfAStageThatExists_IsAnsweredStageAlreadyExists_AndTheFirstCreateSucceededOnce()
    {
        using var h = new RuntimeHarness();

        var first = h.Api.CreateStage(RuntimeHarness.PlayNode, RuntimeHarness.StageType, 1, "create", h.Bytes(1));
        h.Pump();
        var again = h.Api.CreateStage(RuntimeHarness.PlayNode, RuntimeHarness.StageType, 1, "create", h.Bytes(2));
        var getOrCreate = h.Api.GetOrCreateStage(RuntimeHarness.PlayNode, RuntimeHarness.StageType, 1, "create", h.Bytes(3));
        h.Pump();

        using var created = RuntimeHarness.Completed(first);
        using var refused = RuntimeHarness.Completed(again);
        using var existed = RuntimeHarness.Completed(getOrCreate);
        Assert.Equal((ErrorCodes.Success, ErrorCodes.StageAlreadyExists), (created.ErrorCode, refused.ErrorCode));
        Assert.Equal((ErrorCodes.Success, SystemMsgIds.StageExisted), (existed.ErrorCode, existed.MsgId));
        Assert.Equal((0L, 0L), (h.Api.Counters.DuplicateReplies, h.Play.Counters.SecondReplyAttempts));
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void CreateOfAnUnknownStageType_IsAnsweredUnknownStageType_Once_AndItsPayloadReleased()
    {
        using var h = new RuntimeHarness();

        var task = h.Api.CreateStage(RuntimeHarness.PlayNode, "no-such-type", 1, "create", h.Bytes(1, 2));
        h.Pump();

        using var response = RuntimeHarness.Completed(task);
        Assert.Equal(ErrorCodes.UnknownStageType, response.ErrorCode);
        Assert.Equal((0L, 0L), (h.Play.Counters.SecondReplyAttempts, h.Api.Counters.DuplicateReplies));
        Assert.False(h.Play.HasStage(1));
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void SystemMessageWithAnUnknownOperation_IsAnsweredHandlerNotFound_AndCounted()
    {
        using var h = new RuntimeHarness();

        var task = h.Api.RequestAsync(RuntimeHarness.PlayNode, 1, "Odd", h.Bytes(1), null, null, (SystemOp)99, RuntimeHarness.StageType);
        h.Pump();

        using var response = RuntimeHarness.Completed(task);
        Assert.Equal(ErrorCodes.HandlerNotFound, response.ErrorCode);
        Assert.Equal(1L, h.Play.Counters.UnknownApiMessages);
        Assert.False(h.Play.HasStage(1));
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void CreateRefusedAtTheLedgerCap_IsAnsweredTooManyUnansweredRequests_AndCreatesNothing()
    {
        using var h = new RuntimeHarness(new ServerOptions { DefaultStageType = RuntimeHarness.StageType, UnansweredRequestsMax = 1 });
        h.CreateStage(1);
        h.Stages[1].OnServer = (_, _) => ValueTask.CompletedTask;
        var unanswered = h.Api.RequestToStage(RuntimeHarness.PlayNode, 1, "Hold", Payload.Empty);
        h.Pump();

        var create = h.Api.CreateStage(RuntimeHarness.PlayNode, RuntimeHarness.StageType, 2, "create", h.Bytes(1));
        h.Pump();

        using var response = RuntimeHarness.Completed(create);
        Assert.Equal(ErrorCodes.TooManyUnansweredRequests, response.ErrorCode);
        Assert.False(h.Play.HasStage(2));
        Assert.False(unanswered.IsCompleted);
        Assert.Equal(1L, h.Play.Counters.UnansweredRequestsRefused);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void RequestThatClosesACycle_IsRefused_AndItsPayloadReleased()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        h.CreateStage(2);
        ushort? backError = null;
        h.Stages[1].OnServer = async (s, packet) =>
        {
            using var response = await s.Link.RequestToStage(RuntimeHarness.PlayNode, 2, "Ask", Payload.Empty, Timeout);
        };
        h.Stages[2].OnServer = async (s, packet) =>
        {
            using (var back = await s.Link.RequestToStage(RuntimeHarness.PlayNode, 1, "Back", h.Bytes(9, 9, 9), Timeout))
            {
                backError = back.ErrorCode;
            }

            s.Link.Reply(packet, ErrorCodes.Success);
        };

        h.Api.SendToStage(RuntimeHarness.PlayNode, 1, "Start", Payload.Empty);
        h.Pump();

        Assert.Equal(ErrorCodes.RequestCycle, backError);
        Assert.Equal(1L, h.Play.Counters.CycleRequestsRefused);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void MessagesNobodyAwaits_FromTheStageAnotherAwaits_AreDeliveredNotRefusedAsCycles()
    {
        // Stage 1 awaits stage 2; stage 2 sends stage 1 a one-way message and a request it does not await (a callback)
        // before it answers. Neither can deadlock stage 1, so both wait in its mailbox for its handler to end.
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        h.CreateStage(2);
        ushort? callbackError = null;
        h.Stages[1].OnServer = async (s, packet) =>
        {
            if (packet.MsgId == "Start")
            {
                using var response = await s.Link.RequestToStage(RuntimeHarness.PlayNode, 2, "Ask", Payload.Empty, Timeout);
            }
            else if (packet.IsRequest)
            {
                s.Link.Reply(packet, ErrorCodes.Success);
            }
        };
        h.Stages[2].OnServer = (s, packet) =>
        {
            s.Link.SendToStage(RuntimeHarness.PlayNode, 1, "Note", h.Bytes(1));
            s.Link.RequestToStage(RuntimeHarness.PlayNode, 1, "Poke", h.Bytes(2), response => callbackError = response.ErrorCode, Timeout);
            s.Link.Reply(packet, ErrorCodes.Success);
            return ValueTask.CompletedTask;
        };

        h.Api.SendToStage(RuntimeHarness.PlayNode, 1, "Start", Payload.Empty);
        h.Pump();

        Assert.Equal(["Start", "Note", "Poke"], h.Stages[1].Dispatched);
        Assert.Equal(ErrorCodes.Success, callbackError);
        Assert.Equal(0L, h.Play.Counters.CycleRequestsRefused);
        h.Pool.ThrowIfLeaks();
    }
    [Fact]
    public void ChainStartedByARequestNobodyAwaits_RunsToItsEnd_WithoutACycleRefusal()
    {
        // Stage 2 asks stage 1 with a callback (it does not wait). Stage 1's handler awaits stage 3, whose handler awaits
        // stage 2: stage 2 waits for nobody, so this is a chain, not a cycle, and every request is answered.
        using var h = new RuntimeHarness();
        for (long stageId = 1; stageId <= 3; stageId++)
        {
            h.CreateStage(stageId);
        }

        ushort? pokeError = null;
        var answered = new List<(long StageId, ushort ErrorCode)>();
        h.Stages[2].OnServer = (s, packet) =>
        {
            if (packet.MsgId == "Start")
            {
                s.Link.RequestToStage(RuntimeHarness.PlayNode, 1, "Poke", Payload.Empty, response => pokeError = response.ErrorCode, Timeout);
            }
            else
            {
                s.Link.Reply(packet, ErrorCodes.Success);
            }

            return ValueTask.CompletedTask;
        };
        h.Stages[1].OnServer = async (s, packet) =>
        {
            using var response = await s.Link.RequestToStage(RuntimeHarness.PlayNode, 3, "Ask", Payload.Empty, Timeout);
            answered.Add((1, response.ErrorCode));
            s.Link.Reply(packet, ErrorCodes.Success);
        };
        h.Stages[3].OnServer = async (s, packet) =>
        {
            using var response = await s.Link.RequestToStage(RuntimeHarness.PlayNode, 2, "Back", Payload.Empty, Timeout);
            answered.Add((3, response.ErrorCode));
            s.Link.Reply(packet, ErrorCodes.Success);
        };

        h.Api.SendToStage(RuntimeHarness.PlayNode, 2, "Start", Payload.Empty);
        h.Pump();

        Assert.Equal([(3L, ErrorCodes.Success), (1L, ErrorCodes.Success)], answered);
        Assert.Equal(ErrorCodes.Success, pokeError);
        Assert.Equal(0L, h.Play.Counters.CycleRequestsRefused);
        h.Pool.ThrowIfLeaks();
    }
}
