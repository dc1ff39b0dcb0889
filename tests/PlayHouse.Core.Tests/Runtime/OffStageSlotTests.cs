using PlayHouse.Core.Runtime;

namespace PlayHouse.Core.Tests.Runtime;

/// <summary>
/// A stage's off-stage slots and the work that holds them: a slot is freed when the work's continuation ran, an async
/// work's failure reaches its continuation, a result the closed stage can no longer take is disposed, and the thread
/// that ran the work gets its own synchronization context back.
/// </summary>
public sealed class OffStageSlotTests
{
    [Fact]
    public void OneSlot_IsFreedWhenItsContinuationRan_SoEachLaterWorkStarts()
    {
        using var h = new RuntimeHarness(new ServerOptions { DefaultStageType = RuntimeHarness.StageType, OffStageInFlightMax = 1 });
        h.CreateStage(1);
        var results = new List<int>();
        var round = 0;
        h.Stages[1].OnServer = (stage, _) =>
        {
            var n = ++round;
            stage.Link.RunOffStage(() => n, r => results.Add(r.Value));
            return ValueTask.CompletedTask;
        };

        for (var i = 0; i < 3; i++)
        {
            h.Api.SendToStage(RuntimeHarness.PlayNode, 1, "Go", default);
            h.Pump();
        }

        Assert.Equal([1, 2, 3], results);
        Assert.Equal(0, h.Play.Counters.OffStageRefused);
    }

    [Fact]
    public void AsyncWorkThatThrows_HandsItsErrorToTheContinuation_WithHandlerFailed()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        OffStageResult<string> outcome = default;
        var continued = 0;
        h.Stages[1].OnServer = (stage, _) =>
        {
            stage.Link.RunOffStageAsync<string>(
                async () =>
                {
                    await Task.Delay(TimeSpan.FromMilliseconds(5), stage.Link.Time);
                    throw new TimeoutException("db");
                },
                result =>
                {
                    continued++;
                    outcome = result;
                });
            return ValueTask.CompletedTask;
        };
        h.Api.SendToStage(RuntimeHarness.PlayNode, 1, "Go", default);
        h.Advance(TimeSpan.FromMilliseconds(5));

        Assert.Equal(1, continued);
        Assert.IsType<TimeoutException>(outcome.Error);
        Assert.Equal((false, ErrorCodes.HandlerFailed), (outcome.IsSuccess, outcome.ErrorCode));
    }

    [Fact]
    public void DisposableResult_ArrivingAfterItsStageClosed_IsDisposedOnce()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var result = new CountingDisposable();
        var continued = false;
        h.Stages[1].OnServer = (stage, _) =>
        {
            stage.Link.RunOffStage(() => result, _ => continued = true);
            stage.Link.CloseStage();
            return ValueTask.CompletedTask;
        };
        h.Api.SendToStage(RuntimeHarness.PlayNode, 1, "Go", default);
        h.Pump();

        Assert.False(continued);
        Assert.Equal(1, result.Disposals);
        Assert.Equal(1, h.Play.Counters.OffStageResultsDiscarded);
    }

    [Fact]
    public void ThreadThatRanTheWork_GetsItsOwnSynchronizationContextBack()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        SynchronizationContext? duringWork = null;
        h.Stages[1].OnServer = (stage, _) =>
        {
            stage.Link.RunOffStage(() => duringWork = SynchronizationContext.Current, _ => { });
            return ValueTask.CompletedTask;
        };
        h.Api.SendToStage(RuntimeHarness.PlayNode, 1, "Go", default);

        // The executor runs the work on this thread, so the context this thread had must be there again after it.
        var original = SynchronizationContext.Current;
        var own = new SynchronizationContext();
        SynchronizationContext? afterWork;
        SynchronizationContext.SetSynchronizationContext(own);
        try
        {
            h.Pump();
            afterWork = SynchronizationContext.Current;
        }
        finally
        {
            SynchronizationContext.SetSynchronizationContext(original);
        }

        Assert.IsType<Core.Seams.ExecutorSynchronizationContext>(duringWork);
        Assert.Same(own, afterWork);
    }

    private sealed class CountingDisposable : IDisposable
    {
        public int Disposals { get; private set; }

        public void Dispose() => Disposals++;
    }
}
