using Microsoft.Extensions.Time.Testing;
using PlayHouse.Core.Runtime;
using PlayHouse.Simulation.Checkers;
using static PlayHouse.Core.Runtime.LifecycleEvent;

namespace PlayHouse.Simulation.Tests.Checkers;

/// <summary>A crash ends a node's incarnation without its usual endings; the checkers forget it instead of judging it.</summary>
public sealed class NodeCrashCheckerTests
{
    private readonly FakeTimeProvider _clock = CheckerClock.AtZero();

    [Fact]
    public void Lifecycle_StageAndActorOfACrashedNode_AreForgottenAndMayBeCreatedAgain()
    {
        var checker = new LifecycleChecker(_clock);
        RunStageWithJoinedActor(checker, "play-1");
        RunStageWithJoinedActor(checker, "play-2");

        checker.OnNodeCrashed("play-1");
        RunStageWithJoinedActor(checker, "play-1");
        checker.CheckQuiescent();

        Assert.False(checker.HasViolations, checker.FirstViolation?.ToString());
        Assert.Equal(2, checker.RunningStageCount);
    }

    [Fact]
    public void Lifecycle_StageCreatedAgainWithoutACrash_IsStillAViolation()
    {
        var checker = new LifecycleChecker(_clock);
        RunStageWithJoinedActor(checker, "play-1");

        checker.OnNodeCrashed("play-2");
        checker.OnLifecycle("play-1", 1, 0, 0, StageCreate);

        var violation = Assert.Single(checker.Violations);
        Assert.Contains("stage play-1/1: StageCreate after", violation.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void ExactlyOnce_RequestPendingOnACrashedNode_EndsByTheCrashAndIsNotReported()
    {
        var checker = new ExactlyOnceRequestChecker(_clock);
        checker.OnRequestIssued("play-1", 1, "api-1", 0, "Lookup");
        checker.OnRequestIssued("play-1", 2, "api-1", 0, "Lookup");
        checker.OnRequestCompleted("play-1", 1, "api-1", RequestOutcome.Replied, 0);
        checker.OnRequestIssued("api-1", 1, "play-1", 3, "Ping");

        checker.OnNodeCrashed("play-1");

        // The restarted node numbers its requests afresh: id 1 again is a new request, not a reuse.
        checker.OnRequestIssued("play-1", 1, "api-1", 0, "Lookup");
        checker.OnRequestCompleted("play-1", 1, "api-1", RequestOutcome.Replied, 0);
        checker.CheckQuiescent();
        var violation = Assert.Single(checker.Violations);
        Assert.Contains("node api-1: request #1 ('Ping' to play-1/3", violation.Message, StringComparison.Ordinal);
        Assert.Equal(1, checker.EndedByCrashCount);
    }

    [Fact]
    public void SingleActiveHandler_HandlerActiveAtACrash_IsNotReportedAsStuck()
    {
        var checker = new SingleActiveHandlerChecker(_clock);
        checker.OnHandlerEntered("play-1", 1, StageWorkKind.ClientMessage, "Echo");
        checker.OnHandlerEntered("play-2", 1, StageWorkKind.ClientMessage, "Echo");

        checker.OnNodeCrashed("play-1");
        checker.CheckStep();

        var violation = Assert.Single(checker.Violations);
        Assert.Contains("play-2/1", violation.Message, StringComparison.Ordinal);
        Assert.DoesNotContain("play-1/1", violation.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void CheckerSet_NodeCrash_ReachesStandardAndAddedCheckers()
    {
        var set = new CheckerSet(_clock);
        var added = new CrashRecorder();
        set.Add(added);
        set.OnRequestIssued("play-1", 1, "api-1", 0, "Lookup");

        set.OnNodeCrashed("play-1");
        set.CheckQuiescent();

        Assert.False(set.HasViolations, set.FirstViolation?.ToString());
        Assert.Equal(["play-1"], added.Crashed);
        Assert.Equal(1, set.NodeCrashCount);
    }

    private static void RunStageWithJoinedActor(LifecycleChecker checker, string node)
    {
        foreach (var lifecycleEvent in new[] { StageCreate, StagePostCreate })
        {
            checker.OnLifecycle(node, 1, 0, 0, lifecycleEvent);
        }

        checker.OnMessageCompleted(node, 1, StageWorkKind.Create, "create");
        checker.OnLifecycle(node, 1, 1, 0, ActorCreate);
        checker.OnLifecycle(node, 1, 1, 0, ActorAuthenticate);
        foreach (var lifecycleEvent in new[] { ActorPostAuthenticate, ActorJoinStage, ActorPostJoinStage })
        {
            checker.OnLifecycle(node, 1, 1, 100, lifecycleEvent);
        }
    }

    private sealed class CrashRecorder : IInvariantChecker, INodeCrashAware
    {
        public List<string> Crashed { get; } = [];

        public string Name => "CrashRecorder";

        public IReadOnlyList<Violation> Violations => [];

        public long ViolationCount => 0;

        public bool HasViolations => false;

        public Violation? FirstViolation => null;

        public CheckerVerdict Verdict => new(Name, true, null, 0);

        public void OnNodeCrashed(string nodeId) => Crashed.Add(nodeId);

        public void CheckStep()
        {
        }

        public void CheckQuiescent()
        {
        }

        public void ThrowIfViolated()
        {
        }
    }
}
