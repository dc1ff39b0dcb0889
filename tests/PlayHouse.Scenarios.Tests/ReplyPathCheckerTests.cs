using Microsoft.Extensions.Time.Testing;
using PlayHouse.Core.Runtime;
using PlayHouse.Fixtures.Workload;
using PlayHouse.Simulation.Checkers;

namespace PlayHouse.Scenarios.Tests;

/// <summary>The workload's checkers of the reply path (B9): fail-fast cycles, and reply callbacks inside their stage's turns.</summary>
public sealed class ReplyPathCheckerTests
{
    private readonly CheckerContext _context = new(new FakeTimeProvider());

    [Fact]
    public void FailFastCycles_SelfRequestThatTimedOut_IsAViolationAndOneRefusedFastIsNot()
    {
        var checker = new FailFastCycleChecker(_context);

        checker.End(checker.Begin("play-1", 1, "play-1", 1), ErrorCodes.SelfRequest);
        Assert.False(checker.HasViolations);
        checker.End(checker.Begin("play-1", 1, "play-1", 1), ErrorCodes.RequestTimeout);

        Assert.Equal("stage play-1/1: its request to itself waited for its timeout instead of failing fast", Assert.Single(checker.Violations).Message);
        Assert.Equal(2, checker.RequestsJudged);
    }

    [Fact]
    public void FailFastCycles_TimeoutWhileTheTargetAwaitsTheSender_IsACycle()
    {
        var checker = new FailFastCycleChecker(_context);
        var aToB = checker.Begin("play-1", 1, "play-1", 2);
        var bToA = checker.Begin("play-1", 2, "play-1", 1);

        checker.End(aToB, ErrorCodes.RequestTimeout);
        checker.End(bToA, ErrorCodes.Success);

        Assert.Equal("stage play-1/1: its request to stage 2 waited for its timeout while stage 2 awaited a request back to it: a cycle that must fail fast", Assert.Single(checker.Violations).Message);
    }

    [Fact]
    public void FailFastCycles_TimeoutWhileARingOfThreeStagesAwaitsBackToTheSender_NamesTheRing()
    {
        var checker = new FailFastCycleChecker(_context);
        var oneToTwo = checker.Begin("play-1", 1, "play-1", 2);
        var twoToThree = checker.Begin("play-1", 2, "play-1", 3);
        var threeToOne = checker.Begin("play-1", 3, "play-1", 1);
        var elsewhere = checker.Begin("play-1", 3, "play-2", 1);

        checker.End(oneToTwo, ErrorCodes.RequestTimeout);
        checker.End(twoToThree, ErrorCodes.Success);
        checker.End(threeToOne, ErrorCodes.Success);
        checker.End(elsewhere, ErrorCodes.RequestTimeout);

        Assert.Equal("stage play-1/1: its request to stage 2 waited for its timeout while stages 2 -> 3 -> 1 awaited one another in a ring back to it: a cycle that must fail fast", Assert.Single(checker.Violations).Message);
        Assert.Equal(4, checker.RequestsJudged);
    }

    [Fact]
    public void FailFastCycles_TimeoutsThatCloseNoCycleOnOneServer_AreNotJudged()
    {
        var checker = new FailFastCycleChecker(_context);

        // A chain (1 -> 2 -> 3), a request to another server, and a cycle whose other half already ended.
        var oneToTwo = checker.Begin("play-1", 1, "play-1", 2);
        var twoToThree = checker.Begin("play-1", 2, "play-1", 3);
        checker.End(oneToTwo, ErrorCodes.RequestTimeout);
        checker.End(twoToThree, ErrorCodes.RequestTimeout);
        var twoToOne = checker.Begin("play-1", 2, "play-1", 1);
        checker.End(twoToOne, ErrorCodes.RequestCycle);
        checker.End(checker.Begin("play-1", 1, "play-1", 2), ErrorCodes.RequestTimeout);
        var crossA = checker.Begin("play-1", 1, "play-2", 1);
        var crossB = checker.Begin("play-2", 1, "play-1", 1);
        checker.End(crossA, ErrorCodes.RequestTimeout);
        checker.End(crossB, ErrorCodes.RequestTimeout);

        Assert.False(checker.HasViolations);
    }

    [Fact]
    public void FailFastCycles_NodeCrash_EndsTheAwaitsOfItsStages()
    {
        var checker = new FailFastCycleChecker(_context);
        checker.Begin("play-1", 2, "play-1", 1);

        checker.OnNodeCrashed("play-1");
        checker.End(checker.Begin("play-1", 1, "play-1", 2), ErrorCodes.RequestTimeout);

        Assert.False(checker.HasViolations);
    }

    [Fact]
    public void HandlerChecker_ReplyCallbackOutsideItsStagesTurn_IsAViolationAndOneInsideIsNot()
    {
        var turns = new SingleActiveHandlerChecker(_context);
        var checker = new WorkloadHandlerChecker(_context, turns);
        var stage = checker.ForStage("play-1", 4);

        turns.OnHandlerEntered("play-1", 4, StageWorkKind.ReplyCallback, "Lookup");
        checker.CallbackEntered(stage, "Lookup");
        checker.Exited(stage);
        turns.OnHandlerExited("play-1", 4);
        Assert.False(checker.HasViolations);

        // Another stage's turn does not count: the callback must run in its own stage.
        turns.OnHandlerEntered("play-1", 5, StageWorkKind.ClientMessage, "Chat");
        checker.CallbackEntered(stage, "Lookup");
        checker.Exited(stage);

        Assert.Equal("stage play-1/4: reply callback Lookup ran outside any turn of its stage (on the thread that delivered the reply), concurrently with the stage's own handlers", Assert.Single(checker.Violations).Message);
        Assert.True(turns.IsActive("play-1", 5));
        Assert.False(turns.IsActive("play-1", 4));
    }
}
