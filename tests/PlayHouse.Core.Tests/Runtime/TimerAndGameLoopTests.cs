using PlayHouse.Core.Runtime;

namespace PlayHouse.Core.Tests.Runtime;

public sealed class TimerAndGameLoopTests
{
    [Fact]
    public void TwoStagesWithTimerIdOne_EachFireTheirOwnCountAndCancelOnlyTheirOwn()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        h.CreateStage(2);
        var fired = new Dictionary<long, int> { [1] = 0, [2] = 0 };
        var id1 = h.Stages[1].Link.AddCountTimer(TimeSpan.FromMilliseconds(10), TimeSpan.FromMilliseconds(10), 5, () => fired[1]++);
        var id2 = h.Stages[2].Link.AddCountTimer(TimeSpan.FromMilliseconds(10), TimeSpan.FromMilliseconds(10), 5, () => fired[2]++);
        h.Advance(TimeSpan.FromMilliseconds(20));
        var cancelled = h.Stages[1].Link.CancelTimer(id1);
        h.Advance(TimeSpan.FromSeconds(1));

        Assert.Equal(1, id1);
        Assert.Equal(1, id2);
        Assert.True(cancelled);
        Assert.Equal(2, fired[1]);
        Assert.Equal(5, fired[2]);
        Assert.False(h.Stages[2].Link.HasTimer(id2));
    }

    [Fact]
    public void RepeatTimer_FiresEveryPeriodUntilCancelled()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var ticks = new List<long>();
        var id = h.Stages[1].Link.AddRepeatTimer(TimeSpan.Zero, TimeSpan.FromMilliseconds(100), () => ticks.Add(h.Clock.NowTicks));
        h.Advance(TimeSpan.FromMilliseconds(350));
        h.Stages[1].Link.CancelTimer(id);
        h.Advance(TimeSpan.FromSeconds(1));

        Assert.Equal([0L, 1_000_000L, 2_000_000L, 3_000_000L], ticks);
    }

    [Fact]
    public void TimerTicksWhileStageBusy_AreCoalescedToTheCapAndCounted()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var gate = new TaskCompletionSource();
        var fired = 0;
        h.Stages[1].OnServer = async (_, _) => await gate.Task;
        h.Stages[1].Link.AddRepeatTimer(TimeSpan.FromMilliseconds(10), TimeSpan.FromMilliseconds(10), () => fired++);
        h.Api.SendToStage(RuntimeHarness.PlayNode, 1, "Block", default);
        h.Pump();
        h.Advance(TimeSpan.FromMilliseconds(100));

        // Ten ticks fell due while the stage was busy; one waits in the mailbox, nine were coalesced.
        Assert.Equal(0, fired);
        Assert.Equal(9, h.Play.Counters.TimerTicksCoalesced);
        gate.SetResult();
        h.Pump();
        Assert.Equal(1, fired);
    }

    [Fact]
    public void CountTimer_WithCoalescedTicks_StillRunsExactlyCountCallbacks()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var gate = new TaskCompletionSource();
        var fired = 0;
        h.Stages[1].OnServer = async (_, _) => await gate.Task;
        h.Stages[1].Link.AddCountTimer(TimeSpan.FromMilliseconds(10), TimeSpan.FromMilliseconds(10), 3, () => fired++);
        h.Api.SendToStage(RuntimeHarness.PlayNode, 1, "Block", default);
        h.Pump();
        h.Advance(TimeSpan.FromMilliseconds(50));
        gate.SetResult();
        h.Advance(TimeSpan.FromSeconds(1));

        Assert.Equal(3, fired);
        Assert.True(h.Play.Counters.TimerTicksCoalesced > 0);
    }

    [Fact]
    public void GameLoop_RunsOneFixedStepPerPeriod()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var steps = new List<GameLoopStep>();
        h.Stages[1].Link.StartGameLoop(TimeSpan.FromMilliseconds(50), steps.Add);
        h.Advance(TimeSpan.FromMilliseconds(200));

        Assert.Equal([1L, 2L, 3L, 4L], steps.Select(s => s.StepIndex));
        Assert.Equal(TimeSpan.FromMilliseconds(200), steps[^1].TotalSimulated);
        Assert.All(steps, s => Assert.Equal(TimeSpan.FromMilliseconds(50), s.FixedStep));
    }

    [Fact]
    public void GameLoop_AfterLongStall_CatchesUpAtMostTheCapAndCountsTheRest()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var gate = new TaskCompletionSource();
        var steps = 0;
        h.Stages[1].OnServer = async (_, _) => await gate.Task;
        h.Stages[1].Link.StartGameLoop(TimeSpan.FromMilliseconds(50), _ => steps++, catchUpStepsMax: 5);
        h.Api.SendToStage(RuntimeHarness.PlayNode, 1, "Block", default);
        h.Pump();
        h.Advance(TimeSpan.FromSeconds(1));
        gate.SetResult();
        h.Pump();

        // One second is twenty steps: five run in the catch-up, fifteen are dropped and counted.
        Assert.Equal(5, steps);
        Assert.Equal(15, h.Play.Counters.GameLoopStepsDropped);
        h.Stages[1].Link.StopGameLoop();
        Assert.False(h.Stages[1].Link.IsGameLoopRunning);
    }

    [Fact]
    public void ClosedStage_StopsItsTimersAndGameLoop()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);

        // The empty stage armed its idle-close timer when it was created; closing stops that one too.
        var armedBefore = h.Clock.ArmedTimerCount - 1;
        var fired = 0;
        h.Stages[1].Link.AddRepeatTimer(TimeSpan.FromMilliseconds(10), TimeSpan.FromMilliseconds(10), () => fired++);
        h.Stages[1].Link.StartGameLoop(TimeSpan.FromMilliseconds(10), _ => fired++);
        h.Stages[1].Link.CloseStage();
        h.Pump();
        h.Advance(TimeSpan.FromSeconds(1));

        Assert.Equal(0, fired);
        Assert.Equal(armedBefore, h.Clock.ArmedTimerCount);
        Assert.False(h.Play.HasStage(1));
    }

    [Fact]
    public void TimerCancelledWhileItsTickWaitsInTheMailbox_DoesNotRunItsCallback()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var fired = 0;
        var id = h.Stages[1].Link.AddRepeatTimer(TimeSpan.FromMilliseconds(10), TimeSpan.FromMilliseconds(10), () => fired++);

        ActBehindABusyTurnThenTick(h, stage => stage.Link.CancelTimer(id), TimeSpan.FromMilliseconds(10));

        Assert.Equal(0, fired);
        Assert.False(h.Stages[1].Link.HasTimer(id));
    }

    [Fact]
    public void GameLoopStoppedWhileItsTickWaitsInTheMailbox_RunsNoStep_AndDropsNone()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var steps = 0;
        h.Stages[1].Link.StartGameLoop(TimeSpan.FromMilliseconds(10), _ => steps++, catchUpStepsMax: 2);

        // One tick waits (the rest coalesced) for a second of steps, far past the catch-up cap.
        ActBehindABusyTurnThenTick(h, stage => stage.Link.StopGameLoop(), TimeSpan.FromSeconds(1));

        Assert.Equal(0, steps);
        Assert.Equal(0, h.Play.Counters.GameLoopStepsDropped);
        Assert.False(h.Stages[1].Link.IsGameLoopRunning);
    }

    /// <summary>
    /// Holds stage 1 in a turn while a message that runs <paramref name="act"/> and then the ticks of
    /// <paramref name="elapsed"/> queue behind it, in that order; then lets the stage run them.
    /// </summary>
    private static void ActBehindABusyTurnThenTick(RuntimeHarness h, Action<ScriptedStage> act, TimeSpan elapsed)
    {
        var gate = new TaskCompletionSource();
        h.Stages[1].OnServer = async (stage, packet) =>
        {
            if (packet.MsgId == "Block")
            {
                await gate.Task;
            }
            else
            {
                act(stage);
            }
        };
        h.Api.SendToStage(RuntimeHarness.PlayNode, 1, "Block", default);
        h.Pump();
        h.Api.SendToStage(RuntimeHarness.PlayNode, 1, "Act", default);
        h.Pump();
        h.Advance(elapsed);
        gate.SetResult();
        h.Pump();
    }

    [Fact]
    public void OffStageWork_ReturnsItsValueOnTheStage()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        SynchronizationContext? continuationContext = null;
        var value = 0;
        h.Stages[1].OnServer = (stage, _) =>
        {
            stage.Link.RunOffStage(() => 6 * 7, result =>
            {
                continuationContext = SynchronizationContext.Current;
                value = result.Value;
            });
            return ValueTask.CompletedTask;
        };
        h.Api.SendToStage(RuntimeHarness.PlayNode, 1, "Go", default);
        h.Pump();

        Assert.Equal(42, value);
        Assert.Equal("StageSynchronizationContext", continuationContext?.GetType().Name);
    }

    [Fact]
    public void OffStageWork_ThatThrows_HandsTheErrorToTheContinuation()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        OffStageResult<int> outcome = default;
        h.Stages[1].OnServer = (stage, _) =>
        {
            stage.Link.RunOffStage<int>(() => throw new TimeoutException("db"), result => outcome = result);
            return ValueTask.CompletedTask;
        };
        h.Api.SendToStage(RuntimeHarness.PlayNode, 1, "Go", default);
        h.Pump();

        Assert.False(outcome.IsSuccess);
        Assert.IsType<TimeoutException>(outcome.Error);
        Assert.Equal(ErrorCodes.HandlerFailed, outcome.ErrorCode);
    }

    [Fact]
    public void OffStageAsyncWork_RunsOffTheStageAndContinuesOnIt()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        SynchronizationContext? workContext = new();
        var value = "";
        h.Stages[1].OnServer = (stage, _) =>
        {
            stage.Link.RunOffStageAsync(
                async () =>
                {
                    workContext = SynchronizationContext.Current;
                    await Task.Delay(TimeSpan.FromMilliseconds(5), stage.Link.Time);
                    return "io-done";
                },
                result => value = result.Value!);
            return ValueTask.CompletedTask;
        };
        h.Api.SendToStage(RuntimeHarness.PlayNode, 1, "Go", default);
        h.Advance(TimeSpan.FromMilliseconds(5));

        // The work ran under the executor's context, not the stage's, and its await came back through the executor.
        Assert.IsType<Core.Seams.ExecutorSynchronizationContext>(workContext);
        Assert.Equal("io-done", value);
    }

    [Fact]
    public void OffStageWorkAtCap_IsRefusedAtTheCallWithOffStageQueueFull_AndNeverStarted()
    {
        using var h = new RuntimeHarness(new Core.Runtime.ServerOptions { DefaultStageType = RuntimeHarness.StageType, OffStageInFlightMax = 1 });
        h.CreateStage(1);
        var codes = new List<ushort>();
        var started = 0;
        OffStageQueueFullException? refusal = null;
        h.Stages[1].OnServer = (stage, _) =>
        {
            stage.Link.RunOffStage(() => ++started, r => codes.Add(r.ErrorCode));
            refusal = Assert.Throws<OffStageQueueFullException>(() => stage.Link.RunOffStage(() => ++started, r => codes.Add(r.ErrorCode)));
            return ValueTask.CompletedTask;
        };
        h.Api.SendToStage(RuntimeHarness.PlayNode, 1, "Go", default);
        h.Pump();

        Assert.Equal([ErrorCodes.Success], codes);
        Assert.Equal(1, started);
        Assert.Equal((ErrorCodes.OffStageQueueFull, 1L), (refusal!.ErrorCode, refusal.StageId));
        Assert.Equal(1, h.Play.Counters.OffStageRefused);
        Assert.Empty(h.Events.Failures);
    }

    [Fact]
    public void OffStageFlood_KeepsTheMailboxWithinItsCapPlusTheOffStageSlots_AndLeaksNothing()
    {
        const int mailboxCap = 8;
        const int slots = 4;
        using var h = new RuntimeHarness(new Core.Runtime.ServerOptions { DefaultStageType = RuntimeHarness.StageType, MailboxCapacityMax = mailboxCap, OffStageInFlightMax = slots });
        h.CreateStage(1);
        var gate = new TaskCompletionSource();
        var results = new List<int>();
        var refused = 0;
        h.Stages[1].OnServer = async (stage, packet) =>
        {
            if (packet.MsgId != "Flood")
            {
                return;
            }

            // Each result is a pooled buffer the continuation owns and returns.
            for (var i = 0; i < 100; i++)
            {
                var n = (byte)i;
                try
                {
                    stage.Link.RunOffStage(() => stage.Link.Pool.Copy([n], "off-stage-result"), r =>
                    {
                        results.Add(r.Value.Span[0]);
                        r.Value.Dispose();
                    });
                }
                catch (OffStageQueueFullException)
                {
                    refused++;
                }
            }

            // Hold the stage, so the results land in a mailbox that external messages fill to its cap meanwhile.
            await gate.Task;
        };
        h.Api.SendToStage(RuntimeHarness.PlayNode, 1, "Flood", default);
        h.Pump();
        for (var i = 0; i < 20; i++)
        {
            h.Api.SendToStage(RuntimeHarness.PlayNode, 1, "Fill", h.Bytes((byte)i));
        }

        h.Pump();
        var highWaterWhileHeld = h.Play.GetStageStatistics().Single().MailboxHighWater;
        gate.SetResult();
        h.Pump();

        // Without the reservation the 96 refusals were posted too, and the mailbox reached 8 + 100.
        Assert.Equal(mailboxCap + slots, highWaterWhileHeld);
        Assert.Equal(mailboxCap + slots, h.Play.GetStageStatistics().Single().MailboxHighWater);
        Assert.Equal([0, 1, 2, 3], results);
        Assert.Equal((96, 96L), (refused, h.Play.Counters.OffStageRefused));
        Assert.Equal(20 - mailboxCap, h.Play.Counters.MailboxRefused);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void OffStageResult_ArrivingAfterItsStageClosed_IsReleasedAndCounted()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var continued = false;
        h.Stages[1].OnServer = (stage, _) =>
        {
            stage.Link.RunOffStage(() => stage.Link.Pool.Copy([1, 2, 3], "off-stage-result"), r => continued = true);
            stage.Link.CloseStage();
            return ValueTask.CompletedTask;
        };
        h.Api.SendToStage(RuntimeHarness.PlayNode, 1, "Go", default);
        h.Pump();

        Assert.False(h.Play.HasStage(1));
        Assert.False(continued);
        Assert.Equal(1, h.Play.Counters.OffStageResultsDiscarded);
        h.Pool.ThrowIfLeaks();
    }
}
