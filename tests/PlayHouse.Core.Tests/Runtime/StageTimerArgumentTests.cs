using PlayHouse.Core.Runtime;

namespace PlayHouse.Core.Tests.Runtime;

/// <summary>
/// A stage's timers and game loop refuse what they cannot run (no callback, a period or step of zero, a negative first
/// delay, no catch-up step, a second loop), each naming its argument, and the off-stage refusal says what it refused.
/// </summary>
public sealed class StageTimerArgumentTests
{
    private static readonly TimeSpan Period = TimeSpan.FromMilliseconds(10);

    [Fact]
    public void Timer_WithoutACallbackOrAPeriod_OrWithANegativeFirstDelay_IsRefusedByName()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var link = h.Stages[1].Link;

        var noCallback = Assert.Throws<ArgumentNullException>(() => link.AddRepeatTimer(TimeSpan.Zero, Period, null!));
        var zeroPeriod = Assert.Throws<ArgumentOutOfRangeException>(() => link.AddRepeatTimer(TimeSpan.Zero, TimeSpan.Zero, () => { }));
        var negativeDelay = Assert.Throws<ArgumentOutOfRangeException>(() => link.AddRepeatTimer(TimeSpan.FromTicks(-1), Period, () => { }));
        var firstAccepted = link.AddRepeatTimer(TimeSpan.Zero, TimeSpan.FromTicks(1), () => { });

        Assert.Equal("callback", noCallback.ParamName);
        Assert.Equal("period", zeroPeriod.ParamName);
        Assert.Equal("initialDelay", negativeDelay.ParamName);
        Assert.Equal(1, firstAccepted);
        Assert.True(link.HasTimer(firstAccepted));
    }

    [Fact]
    public void GameLoop_WithoutACallbackStepOrCatchUp_OrStartedTwice_IsRefused()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var link = h.Stages[1].Link;

        var noCallback = Assert.Throws<ArgumentNullException>(() => link.StartGameLoop(Period, null!));
        var zeroStep = Assert.Throws<ArgumentOutOfRangeException>(() => link.StartGameLoop(TimeSpan.Zero, _ => { }));
        var noCatchUp = Assert.Throws<ArgumentOutOfRangeException>(() => link.StartGameLoop(Period, _ => { }, catchUpStepsMax: 0));
        var runningAfterRefusals = link.IsGameLoopRunning;
        link.StartGameLoop(Period, _ => { }, catchUpStepsMax: 1);
        var second = Assert.Throws<InvalidOperationException>(() => link.StartGameLoop(Period, _ => { }));

        Assert.Equal("callback", noCallback.ParamName);
        Assert.Equal("fixedStep", zeroStep.ParamName);
        Assert.Equal("catchUpStepsMax", noCatchUp.ParamName);
        Assert.False(runningAfterRefusals);
        Assert.True(link.IsGameLoopRunning);
        Assert.Equal("Stage 1 already runs a game loop; stop it first.", second.Message);
    }

    [Fact]
    public void CancelTimer_OfAnUnknownId_ReturnsFalse_AndLeavesTheStageIdle()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var link = h.Stages[1].Link;
        var id = link.AddCountTimer(Period, Period, 1, () => { });

        var unknown = link.CancelTimer(id + 1);
        var known = link.CancelTimer(id);
        var again = link.CancelTimer(id);

        Assert.False(unknown);
        Assert.True(known);
        Assert.False(again);
        Assert.False(link.HasTimer(id));
    }

    [Fact]
    public void OffStageQueueFull_NamesTheStageNodeAndCap_AndItsErrorCode()
    {
        var refusal = new OffStageQueueFullException("play-1", stageId: 7, inFlightMax: 3);
        var bare = new OffStageQueueFullException();
        var withMessage = new OffStageQueueFullException("full");
        var inner = new InvalidOperationException("cause");
        var withInner = new OffStageQueueFullException("full", inner);

        Assert.Equal(("play-1", 7L, 3), (refusal.NodeId, refusal.StageId, refusal.InFlightMax));
        Assert.StartsWith("Stage 7 on play-1 already has 3 off-stage work item(s)", refusal.Message, StringComparison.Ordinal);
        Assert.Equal(ErrorCodes.OffStageQueueFull, refusal.ErrorCode);
        Assert.Equal((string.Empty, 0L, 0), (bare.NodeId, bare.StageId, bare.InFlightMax));
        Assert.Equal(("full", string.Empty), (withMessage.Message, withMessage.NodeId));
        Assert.Equal(("full", string.Empty), (withInner.Message, withInner.NodeId));
        Assert.Same(inner, withInner.InnerException);
    }
}
