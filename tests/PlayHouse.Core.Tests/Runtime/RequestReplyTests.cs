using Microsoft.Extensions.Time.Testing;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;
using PlayHouse.Core.Seams;

namespace PlayHouse.Core.Tests.Runtime;

public sealed class RequestReplyTests
{
    private static readonly TimeSpan Timeout = TimeSpan.FromSeconds(30);

    [Fact]
    public void StageToStageRequest_CompletesWithTheReply()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        h.CreateStage(2);
        var task = h.Stages[1].Link.RequestToStage(RuntimeHarness.PlayNode, 2, "Ping", h.Bytes(1, 2));
        h.Pump();

        using var response = RuntimeHarness.Completed(task);
        Assert.Equal(ErrorCodes.Success, response.ErrorCode);
        Assert.Equal([1, 2], response.Payload.Span.ToArray());
        Assert.Equal(["Ping"], h.Stages[2].Dispatched);
        response.Dispose();
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void SingleThreadedNode_StageToStageRequestAndTimeout_BehaveAsWithLocks()
    {
        // A single-threaded node (the simulation's) skips its locks; on one thread it must do exactly what a locked one does.
        Assert.False(new ServerOptions().SingleThreaded);
        using var h = new RuntimeHarness(new ServerOptions { DefaultStageType = RuntimeHarness.StageType, SingleThreaded = true });
        h.CreateStage(1);
        h.CreateStage(2);
        var ping = h.Stages[1].Link.RequestToStage(RuntimeHarness.PlayNode, 2, "Ping", h.Bytes(7));
        h.Pump();
        using (var response = RuntimeHarness.Completed(ping))
        {
            Assert.Equal(ErrorCodes.Success, response.ErrorCode);
            Assert.Equal([7], response.Payload.Span.ToArray());
        }

        h.Stages[2].OnServer = (_, _) => ValueTask.CompletedTask;
        var silent = h.Stages[1].Link.RequestToStage(RuntimeHarness.PlayNode, 2, "Silent", Payload.Empty, Timeout);
        h.Advance(Timeout);
        Assert.Equal(ErrorCodes.RequestTimeout, RuntimeHarness.Completed(silent).ErrorCode);
        Assert.Equal(["Ping", "Silent"], h.Stages[2].Dispatched);
        Assert.Equal(0, h.Play.PendingRequestCount);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void SingleThreadedNode_OnTheThreadPoolExecutor_IsRefusedAtConstruction()
    {
        var seams = new NodeSeams(new FakeTimeProvider(), ThreadPoolExecutor.Instance, new Xoshiro256StarStar(1), new MessagePool());

        var error = Assert.Throws<ArgumentException>(() => new PlayServer("play-1", seams, new ServerOptions { SingleThreaded = true }));

        Assert.Contains("SingleThreaded needs a single-threaded executor", error.Message, StringComparison.Ordinal);
        Assert.Equal("options", error.ParamName);
    }

    [Fact]
    public void RequestWithoutReply_TimesOutExactlyOnceAtItsDeadline()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        h.CreateStage(2);
        h.Stages[2].OnServer = (_, _) => ValueTask.CompletedTask;
        var task = h.Stages[1].Link.RequestToStage(RuntimeHarness.PlayNode, 2, "Silent", Payload.Empty, Timeout);
        h.Advance(Timeout - TimeSpan.FromTicks(1));
        Assert.False(task.IsCompleted);

        h.Advance(TimeSpan.FromTicks(1));
        Assert.Equal(ErrorCodes.RequestTimeout, RuntimeHarness.Completed(task).ErrorCode);
        Assert.Equal(1, h.Play.Counters.RequestTimeouts);
        Assert.Single(h.Events.RequestsOf(RuntimeHarness.PlayNode), r => r.Outcome == RequestOutcome.TimedOut);
        Assert.Equal(0, h.Play.PendingRequestCount);
    }

    [Fact]
    public void LateReply_AfterTimeout_IsDroppedCountedAndNeverDispatched()
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
        h.Stages[2].Link.Reply(held.Single(), "Late", h.Bytes(1));
        h.Pump();

        Assert.Equal(ErrorCodes.RequestTimeout, RuntimeHarness.Completed(task).ErrorCode);
        Assert.Equal(1, h.Play.Counters.LateReplies);
        Assert.Equal(["Slow"], h.Stages[2].Dispatched);
        Assert.Empty(h.Stages[1].Dispatched);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void DuplicateReply_IsDroppedAndCounted()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        h.CreateStage(2);
        var task = h.Stages[1].Link.RequestToStage(RuntimeHarness.PlayNode, 2, "Ping", Payload.Empty);
        h.Pump();
        var seq = h.Events.RequestsOf(RuntimeHarness.PlayNode).Single().MsgSeq;

        // The network duplicates the reply.
        h.Play.OnMeshMessage(new MeshMessage { IsReply = true, MsgSeq = seq, MsgId = "Ping", From = RuntimeHarness.PlayNode, StageId = 2, Payload = h.Bytes(1) });
        h.Pump();

        Assert.True(RuntimeHarness.Completed(task).IsSuccess);
        Assert.Equal(1, h.Play.Counters.DuplicateReplies);
        Assert.Single(h.Events.RequestsOf(RuntimeHarness.PlayNode));
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void ReplyWithUnknownSequence_NeverReachesAHandlerAndProducesNoMessage()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        h.Play.OnMeshMessage(new MeshMessage { IsReply = true, MsgSeq = 12345, MsgId = "Ghost", From = RuntimeHarness.ApiNode, StageId = 1, Payload = h.Bytes(1) });
        h.Pump();

        Assert.Empty(h.Stages[1].Dispatched);
        Assert.Equal(1, h.Play.Counters.UnknownReplies);
        Assert.Equal(0, h.Mesh.InFlightCount);
        Assert.Equal(0, h.Api.Counters.UnknownReplies + h.Api.Counters.UnknownApiMessages);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void ReplyFromTheWrongServer_DoesNotCompleteTheRequest()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        h.Api.Handle("Hold", (_, _) => ValueTask.CompletedTask);
        var task = h.Stages[1].Link.RequestToApi(RuntimeHarness.ApiNode, "Hold", Payload.Empty);
        h.Pump();
        const ulong seq = 1; // The play server's first request.
        h.Play.OnMeshMessage(new MeshMessage { IsReply = true, MsgSeq = seq, MsgId = "Hold", From = "impostor", Payload = Payload.Empty });
        h.Pump();

        Assert.False(task.IsCompleted);
        Assert.Equal(1, h.Play.Counters.MisaddressedReplies);
    }

    [Fact]
    public void SelfRequest_FailsFastInsteadOfWaitingForTheTimeout()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var task = h.Stages[1].Link.RequestToStage(RuntimeHarness.PlayNode, 1, "Me", h.Bytes(1));

        Assert.True(task.IsCompleted);
        Assert.Equal(ErrorCodes.SelfRequest, RuntimeHarness.Completed(task).ErrorCode);
        Assert.Equal(1, h.Play.Counters.SelfRequestsRefused);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void CyclicRequests_FailFastAndBothHandlersFinishWithoutTimeout()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        h.CreateStage(2);
        ushort innerError = 0;
        ushort outerError = 0;
        h.Stages[1].OnServer = async (stage, packet) =>
        {
            using var response = await stage.Link.RequestToStage(RuntimeHarness.PlayNode, 2, "AskB", Payload.Empty, Timeout);
            outerError = response.ErrorCode;
        };
        h.Stages[2].OnServer = async (stage, packet) =>
        {
            if (packet.MsgId == "AskB")
            {
                using var response = await stage.Link.RequestToStage(RuntimeHarness.PlayNode, 1, "AskA", Payload.Empty, Timeout);
                innerError = response.ErrorCode;
                stage.Link.Reply(packet, ErrorCodes.Success);
            }
        };
        h.Api.SendToStage(RuntimeHarness.PlayNode, 1, "Start", Payload.Empty);
        h.Pump();

        Assert.Equal(ErrorCodes.RequestCycle, innerError);
        Assert.Equal(ErrorCodes.Success, outerError);
        Assert.Equal(1, h.Play.Counters.CycleRequestsRefused);
        Assert.Equal(0, h.Play.Counters.RequestTimeouts);
        Assert.Equal(0, h.Clock.NowTicks);
    }

    [Fact]
    public void CallbackRequest_RunsTheCallbackOnTheRequestingStage()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        h.CreateStage(2);
        SynchronizationContext? callbackContext = null;
        byte[]? received = null;
        h.Stages[1].OnServer = (stage, packet) =>
        {
            stage.Link.RequestToStage(RuntimeHarness.PlayNode, 2, "Ping", stage.Link.Pool.Copy([7], "test"), response =>
            {
                callbackContext = SynchronizationContext.Current;
                received = response.Payload.Span.ToArray();
            });
            return ValueTask.CompletedTask;
        };
        h.Api.SendToStage(RuntimeHarness.PlayNode, 1, "Go", Payload.Empty);
        h.Pump();

        Assert.Equal([7], received);
        Assert.Equal("StageSynchronizationContext", callbackContext?.GetType().Name);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void RequestToUnknownStage_RepliesStageNotFound_AndSendIsCounted()
    {
        using var h = new RuntimeHarness();
        var request = h.Api.RequestToStage(RuntimeHarness.PlayNode, 404, "Hello", h.Bytes(1));
        h.Api.SendToStage(RuntimeHarness.PlayNode, 404, "Hello", h.Bytes(1));
        h.Pump();

        Assert.Equal(ErrorCodes.StageNotFound, RuntimeHarness.Completed(request).ErrorCode);
        Assert.Equal(1, h.Play.Counters.UnknownStageRequests);
        Assert.Equal(1, h.Play.Counters.UnknownStageSends);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void RequestToUnknownServer_FailsFastWithServerNotFound()
    {
        using var h = new RuntimeHarness();
        var task = h.Api.RequestToStage("play-404", 1, "Hello", h.Bytes(1));

        Assert.Equal(ErrorCodes.ServerNotFound, RuntimeHarness.Completed(task).ErrorCode);
        Assert.Equal(1, h.Api.Counters.MeshSendsToUnknownServers);
        Assert.Equal(0, h.Api.PendingRequestCount);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void PendingRequestsAtCap_FailFastWithTooManyPendingRequests()
    {
        using var h = new RuntimeHarness(new ServerOptions { DefaultStageType = RuntimeHarness.StageType, PendingRequestsMax = 2 });
        h.Api.Handle("Hold", (_, _) => ValueTask.CompletedTask);
        var first = h.Api.RequestToApi(RuntimeHarness.ApiNode, "Hold", Payload.Empty);
        var second = h.Api.RequestToApi(RuntimeHarness.ApiNode, "Hold", Payload.Empty);
        var third = h.Api.RequestToApi(RuntimeHarness.ApiNode, "Hold", Payload.Empty);

        Assert.Equal(ErrorCodes.TooManyPendingRequests, RuntimeHarness.Completed(third).ErrorCode);
        Assert.False(first.IsCompleted);
        Assert.False(second.IsCompleted);
        Assert.Equal(1, h.Api.Counters.PendingRequestsRefused);
    }

    [Fact]
    public void ManyRequests_EachCompletesOnceWithItsOwnReply()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(2);
        h.Api.Handle("Noop", (_, _) => ValueTask.CompletedTask);
        var tasks = new List<(int Value, Task<Response> Task)>();
        for (var i = 0; i < 70_000; i++)
        {
            tasks.Add((i, h.Api.RequestToStage(RuntimeHarness.PlayNode, 2, "Echo", h.Pool.Copy(BitConverter.GetBytes(i), "test"))));
            if (i % 1000 == 0)
            {
                h.Pump();
            }
        }

        h.Pump();

        // 70,000 requests pass a 16-bit counter's wrap; each reply still carries its own request's bytes.
        foreach (var (value, task) in tasks)
        {
            using var response = RuntimeHarness.Completed(task);
            Assert.Equal(value, BitConverter.ToInt32(response.Payload.Span));
        }

        Assert.Equal(70_000, h.Events.RequestsOf(RuntimeHarness.ApiNode).Count(r => r.Outcome == RequestOutcome.Replied && r.MsgSeq > 1));
        Assert.Equal(70_001, h.Events.RequestsOf(RuntimeHarness.ApiNode).Select(r => r.MsgSeq).Distinct().Count());
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void ApiHandler_ThatThrows_RepliesHandlerFailed()
    {
        using var h = new RuntimeHarness();
        h.Api.Handle("Boom", (_, _) => throw new InvalidOperationException("boom"));
        var task = h.Api.RequestToApi(RuntimeHarness.ApiNode, "Boom", h.Bytes(1));
        h.Pump();

        Assert.Equal(ErrorCodes.HandlerFailed, RuntimeHarness.Completed(task).ErrorCode);
        Assert.Equal(1, h.Api.Counters.HandlerFailures);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void UnknownApiMessage_RepliesHandlerNotFound()
    {
        using var h = new RuntimeHarness();
        var task = h.Api.RequestToApi(RuntimeHarness.ApiNode, "Nope", h.Bytes(1));
        h.Pump();

        Assert.Equal(ErrorCodes.HandlerNotFound, RuntimeHarness.Completed(task).ErrorCode);
        Assert.Equal(1, h.Api.Counters.UnknownApiMessages);
        h.Pool.ThrowIfLeaks();
    }
}
