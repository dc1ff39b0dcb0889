using PlayHouse.Core.Runtime;
using PlayHouse.Core.Seams;

namespace PlayHouse.Core.Tests.Runtime;

/// <summary>
/// A receiving thread that the executor lets run work (<see cref="PlayHouse.Core.Seams.IExecutor.CanRunInline"/>) runs an idle stage's
/// turn itself when it flushes a receive's messages there, under the same rules as a scheduled turn: one turn at a
/// time per stage, in mailbox order, at most <see cref="ServerOptions.TurnMessageBudget"/> messages, never nested in
/// another turn. Work a turn defers with <see cref="TurnEnd"/> runs once, on its thread, when it ends.
/// </summary>
public sealed class TurnOnReceiveThreadTests
{
    [Fact]
    public void FlushOnAThreadThatMayRunWork_RunsTheIdleStagesTurnBeforeItReturns()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var client = h.Join(1, accountId: 7);
        h.Executor.CanRunInline = true;
        var batch = new ClientFrameBatch();
        h.Play.OnClientFrame(client.SessionId, "Echo1", 11, 1, h.Bytes(1), h.Clock.GetTimestamp(), batch);
        h.Play.OnClientFrame(client.SessionId, "Echo2", 12, 1, h.Bytes(2), h.Clock.GetTimestamp(), batch);

        h.Play.FlushClientFrames(batch);

        Assert.Equal(0, h.Executor.PendingCount);
        Assert.Equal(["Echo1", "Echo2"], h.Stages[1].Dispatched);
        Assert.Equal([(byte)1], client.ReplyTo(11).Payload);
        Assert.Equal([(byte)2], client.ReplyTo(12).Payload);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void AsyncLocalSetByAHandlerOnTheReceivingThread_DoesNotOutliveTheTurn()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var client = h.Join(1, accountId: 7);
        h.Executor.CanRunInline = true;
        var ambient = new AsyncLocal<string?>();
        string? seenInHandler = null;
        h.Stages[1].OnClient = (stage, _, packet) =>
        {
            ambient.Value = "set by the handler";
            seenInHandler = ambient.Value;
            stage.Link.Reply(packet, packet.MsgId, packet.Payload);
            return ValueTask.CompletedTask;
        };
        var batch = new ClientFrameBatch();
        h.Play.OnClientFrame(client.SessionId, "Echo", 70, 1, h.Bytes(7), h.Clock.GetTimestamp(), batch);

        h.Play.FlushClientFrames(batch);

        Assert.Equal("set by the handler", seenInHandler);
        Assert.Null(ambient.Value);
        Assert.Equal([(byte)7], client.ReplyTo(70).Payload);
        h.Pool.ThrowIfLeaks();
    }

    [Theory]
    [InlineData(false, true)]
    [InlineData(true, false)]
    public void FlushWhereRunningTheTurnIsNotAllowed_SchedulesTheTurnAsAWorkItem(bool executorAllows, bool optionAllows)
    {
        using var h = new RuntimeHarness(new ServerOptions { DefaultStageType = RuntimeHarness.StageType, RunClientTurnsOnReceiveThread = optionAllows });
        h.CreateStage(1);
        var client = h.Join(1, accountId: 7);
        h.Executor.CanRunInline = executorAllows;
        var batch = new ClientFrameBatch();
        h.Play.OnClientFrame(client.SessionId, "Echo1", 11, 1, h.Bytes(1), h.Clock.GetTimestamp(), batch);

        h.Play.FlushClientFrames(batch);
        var dispatchedAtFlush = h.Stages[1].Dispatched.Count;
        var pendingAtFlush = h.Executor.PendingCount;
        h.Pump();

        Assert.Equal((0, 1), (dispatchedAtFlush, pendingAtFlush));
        Assert.Equal([(byte)1], client.ReplyTo(11).Payload);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void FlushToAStageWhoseTurnIsAlreadyScheduled_QueuesBehindItAndRunsNothingInline()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var client = h.Join(1, accountId: 7);
        h.Executor.CanRunInline = true;

        // A single frame is posted the ordinary way: the stage's turn is scheduled and has not run.
        client.Request("First", 1, [1]);
        var batch = new ClientFrameBatch();
        h.Play.OnClientFrame(client.SessionId, "Second", 50, 1, h.Bytes(2), h.Clock.GetTimestamp(), batch);
        h.Play.FlushClientFrames(batch);
        var dispatchedAtFlush = h.Stages[1].Dispatched.Count;
        h.Pump();

        Assert.Equal(0, dispatchedAtFlush);
        Assert.Equal(["First", "Second"], h.Stages[1].Dispatched);
        Assert.Equal([(byte)2], client.ReplyTo(50).Payload);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void TurnRunOnTheReceivingThread_StopsAtTheTurnBudgetAndSchedulesTheRest()
    {
        using var h = new RuntimeHarness(new ServerOptions { DefaultStageType = RuntimeHarness.StageType, TurnMessageBudget = 2 });
        h.CreateStage(1);
        var client = h.Join(1, accountId: 7);
        h.Executor.CanRunInline = true;
        var batch = new ClientFrameBatch();
        for (ushort seq = 1; seq <= 3; seq++)
        {
            h.Play.OnClientFrame(client.SessionId, "Echo" + seq, seq, 1, h.Bytes((byte)seq), h.Clock.GetTimestamp(), batch);
        }

        h.Play.FlushClientFrames(batch);
        var atFlush = (h.Stages[1].Dispatched.Count, h.Executor.PendingCount);
        h.Pump();

        Assert.Equal((2, 1), atFlush);
        Assert.Equal(["Echo1", "Echo2", "Echo3"], h.Stages[1].Dispatched);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void FlushFromInsideAnotherStagesTurn_SchedulesThatTurnInsteadOfNestingIt()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        h.CreateStage(2);
        var inOne = h.Join(1, accountId: 7);
        var inTwo = h.Join(2, accountId: 8);
        h.Executor.CanRunInline = true;
        var dispatchedInTwoDuringTurn = -1;
        h.Stages[1].OnClient = (stage, _, packet) =>
        {
            var batch = new ClientFrameBatch();
            h.Play.OnClientFrame(inTwo.SessionId, "Nested", 60, 2, h.Bytes(6), h.Clock.GetTimestamp(), batch);
            h.Play.FlushClientFrames(batch);
            dispatchedInTwoDuringTurn = h.Stages[2].Dispatched.Count;
            stage.Link.Reply(packet, packet.MsgId, packet.Payload);
            return ValueTask.CompletedTask;
        };

        inOne.Request("Outer", 1, [5]);
        h.Pump();

        Assert.Equal(0, dispatchedInTwoDuringTurn);
        Assert.Equal(["Nested"], h.Stages[2].Dispatched);
        Assert.Equal([(byte)6], inTwo.ReplyTo(60).Payload);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void WorkDeferredDuringATurn_RunsOnceAfterTheTurnsLastHandler_AndNotBefore()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var client = h.Join(1, accountId: 7);
        var log = new List<string>();
        var deferred = new RecordingWorkItem(log);
        var deferredInHandler = new List<bool>();
        h.Stages[1].OnClient = (stage, _, packet) =>
        {
            log.Add("handler " + packet.MsgId);

            // The second handler defers the same item again: a turn runs what it deferred, but a transport defers a
            // connection only once per idle-to-busy change, so both calls are accepted and the item runs twice.
            deferredInHandler.Add(TurnEnd.TryDefer(deferred));
            return ValueTask.CompletedTask;
        };

        client.Send("A", 1, [1]);
        client.Send("B", 1, [2]);
        h.Pump();

        Assert.Equal([true, true], deferredInHandler);
        Assert.Equal(["handler A", "handler B", "deferred", "deferred"], log);
        Assert.False(TurnEnd.IsInTurn);
        Assert.False(TurnEnd.TryDefer(deferred));
        Assert.Equal(["handler A", "handler B", "deferred", "deferred"], log);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void DeferOrSchedule_WaitsForTheTurnsEndInsideATurn_AndSchedulesOutsideOne()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var client = h.Join(1, accountId: 7);
        var log = new List<string>();
        var executor = new ManualExecutor();
        var scheduledInHandler = -1;
        h.Stages[1].OnClient = (_, _, _) =>
        {
            TurnEnd.DeferOrSchedule(new RecordingWorkItem(log), executor);
            scheduledInHandler = executor.PendingCount;
            log.Add("handler");
            return ValueTask.CompletedTask;
        };

        client.Send("A", 1, [1]);
        h.Pump();
        TurnEnd.DeferOrSchedule(new RecordingWorkItem(log), executor);

        Assert.Equal(0, scheduledInHandler);
        Assert.Equal(["handler", "deferred"], log);
        Assert.Equal(1, executor.PendingCount);
        executor.RunUntilIdle();
        Assert.Equal(["handler", "deferred", "deferred"], log);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void TurnThatDefersPastTheCap_IsRefusedTheExcess_AndRunsEveryAcceptedItem()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var client = h.Join(1, accountId: 7);
        var log = new List<string>();
        var accepted = 0;
        var refused = 0;
        h.Stages[1].OnClient = (_, _, _) =>
        {
            for (var i = 0; i < TurnEnd.DeferredCapacityMax + 3; i++)
            {
                if (TurnEnd.TryDefer(new RecordingWorkItem(log)))
                {
                    accepted++;
                }
                else
                {
                    refused++;
                }
            }

            return ValueTask.CompletedTask;
        };

        client.Send("Many", 1, [1]);
        h.Pump();

        Assert.Equal((TurnEnd.DeferredCapacityMax, 3), (accepted, refused));
        Assert.Equal(TurnEnd.DeferredCapacityMax, log.Count);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void DeferredItemThatThrows_DoesNotKeepTheOthersFromRunning_AndTheStageKeepsWorking()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var client = h.Join(1, accountId: 7);
        var log = new List<string>();
        var throwOnce = true;
        h.Stages[1].OnClient = (stage, _, packet) =>
        {
            if (throwOnce)
            {
                throwOnce = false;
                TurnEnd.TryDefer(new ThrowingWorkItem());
                TurnEnd.TryDefer(new RecordingWorkItem(log));
            }

            stage.Link.Reply(packet, packet.MsgId, packet.Payload);
            return ValueTask.CompletedTask;
        };

        var first = client.Request("First", 1, [1]);
        var thrown = Assert.Throws<InvalidOperationException>(() => h.Pump());
        var second = client.Request("Second", 1, [2]);
        h.Pump();

        Assert.Equal("deferred work failed", thrown.Message);
        Assert.Equal(["deferred"], log);
        Assert.Equal([(byte)1], client.ReplyTo(first).Payload);
        Assert.Equal([(byte)2], client.ReplyTo(second).Payload);
        h.Pool.ThrowIfLeaks();
    }

    private sealed class RecordingWorkItem(List<string> log) : IThreadPoolWorkItem
    {
        public void Execute() => log.Add("deferred");
    }

    private sealed class ThrowingWorkItem : IThreadPoolWorkItem
    {
        public void Execute() => throw new InvalidOperationException("deferred work failed");
    }
}
