using Microsoft.Extensions.Time.Testing;
using PlayHouse.Core.Runtime;
using PlayHouse.Simulation.Checkers;

namespace PlayHouse.Simulation.Tests.Checkers;

public sealed class SingleActiveHandlerCheckerTests
{
    private readonly FakeTimeProvider _clock = CheckerClock.AtZero();

    [Fact]
    public void SingleActiveHandler_SecondHandlerEntersWhileFirstActive_ReportsStageAndBothHandlers()
    {
        var checker = new SingleActiveHandlerChecker(_clock);
        checker.OnHandlerEntered("play-1", 3, StageWorkKind.ClientMessage, "Chat");
        checker.OnHandlerEntered("play-1", 3, StageWorkKind.ReplyCallback, "Lookup");

        var violation = Assert.Single(checker.Violations);
        Assert.Contains("stage play-1/3", violation.Message, StringComparison.Ordinal);
        Assert.Contains("handler ReplyCallback 'Lookup' entered while ClientMessage 'Chat' was still active", violation.Message, StringComparison.Ordinal);
        Assert.Contains("2 handlers active at once", violation.Message, StringComparison.Ordinal);
        Assert.Equal(2, checker.HighWater);
    }

    [Fact]
    public void SingleActiveHandler_ExitWithoutEntry_IsReported()
    {
        var checker = new SingleActiveHandlerChecker(_clock);
        checker.OnHandlerExited("play-1", 3);

        var violation = Assert.Single(checker.Violations);
        Assert.Contains("stage play-1/3: a handler exited while none was active", violation.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void SingleActiveHandler_HandlerStillActiveAtEndOfStep_IsReportedOnce()
    {
        var checker = new SingleActiveHandlerChecker(_clock);
        checker.OnHandlerEntered("play-1", 3, StageWorkKind.Timer, null);
        checker.CheckStep();
        checker.CheckStep();
        checker.CheckQuiescent();

        var violation = Assert.Single(checker.Violations);
        Assert.Contains("stage play-1/3: handler Timer still active at the end of a step", violation.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void SingleActiveHandler_TurnsInSequenceAndOtherStagesConcurrently_Passes()
    {
        var checker = new SingleActiveHandlerChecker(_clock);
        for (var i = 0; i < 3; i++)
        {
            checker.OnHandlerEntered("play-1", 3, StageWorkKind.ClientMessage, "Chat");
            checker.OnHandlerExited("play-1", 3);
        }

        // Different stages may run at once on real threads; only one handler per stage counts.
        checker.OnHandlerEntered("play-1", 3, StageWorkKind.ServerMessage, "Ping");
        checker.OnHandlerEntered("play-1", 4, StageWorkKind.ServerMessage, "Ping");
        checker.OnHandlerEntered("play-2", 3, StageWorkKind.ServerMessage, "Ping");
        checker.OnHandlerExited("play-1", 4);
        checker.OnHandlerExited("play-1", 3);
        checker.OnHandlerExited("play-2", 3);
        checker.CheckStep();
        checker.CheckQuiescent();

        Assert.False(checker.HasViolations);
        Assert.Equal(1, checker.HighWater);
        Assert.Equal(6, checker.Entries);
        Assert.Equal(
            new StageHandlerHighWater[] { new("play-1", 3, 1), new("play-1", 4, 1), new("play-2", 3, 1) },
            checker.GetHighWaters());
    }
}
