using Microsoft.Extensions.Time.Testing;
using PlayHouse.Core.Runtime;
using PlayHouse.Simulation.Checkers;

namespace PlayHouse.Simulation.Tests.Checkers;

/// <summary>
/// <see cref="StageMap{T}"/>, the per-stage lookup of the checkers fed by runtime hooks (a node found by reference,
/// small stage ids in an array), and the <see cref="SingleActiveHandlerChecker"/> built on it: one state per
/// (node, stage) whatever string instance names the node, across many nodes and stages, and a crash that forgets
/// exactly the crashed node's handlers.
/// </summary>
public sealed class StageMapTests
{
    private static readonly long[] StageIds = [0, 1, 7, 8, 9, 100, 4_095, 4_096, 4_097, 1_000_000, long.MaxValue, -1, long.MinValue];

    private readonly FakeTimeProvider _clock = CheckerClock.AtZero();

    [Fact]
    public void StageMap_ManyNodesAndStagesInterleaved_GivesOneStatePerStageWhateverStringNamesTheNode()
    {
        // Arrange
        var created = 0;
        var map = new StageMap<StageState>((nodeId, stageId) =>
        {
            created++;
            return new StageState(nodeId, stageId);
        });
        var nodes = Enumerable.Range(1, 5).Select(n => $"node-{n}").ToArray();

        // Act: every stage is added once, interleaving nodes so the last-node shortcut keeps missing.
        var first = new Dictionary<(string, long), StageState>();
        foreach (var stageId in StageIds)
        {
            foreach (var node in nodes)
            {
                var state = map.GetOrAdd(node, stageId, out var added);
                Assert.True(added, $"{node}/{stageId} was not new");
                first.Add((node, stageId), state);
            }
        }

        // Assert: every later lookup, by the same or another string instance, in any order, finds the same state.
        foreach (var stageId in StageIds.Reverse())
        {
            foreach (var node in nodes)
            {
                var fresh = new string(node.AsSpan());
                Assert.Same(first[(node, stageId)], map.GetOrAdd(fresh, stageId, out var addedAgain));
                Assert.False(addedAgain, $"{node}/{stageId} was added twice");
                Assert.Same(first[(node, stageId)], map.GetOrAdd(node, stageId, out _));
                Assert.Same(first[(node, stageId)], map.Find(fresh, stageId));
                Assert.Equal((node, stageId), (first[(node, stageId)].NodeId, first[(node, stageId)].StageId));
            }
        }

        Assert.Equal(nodes.Length * StageIds.Length, created);
        Assert.Equal(nodes.Length * StageIds.Length, map.All.Count);
        Assert.Null(map.Find("node-6", 0));
        Assert.Null(map.Find("node-1", 2));
    }

    [Fact]
    public void StageMap_StageFirstSeenBeyondTheArrayThenSmallerOnes_KeepsEveryStateAcrossTheGrowth()
    {
        // Arrange: a high stage id first, so the node's array grows from nothing to its largest size at once.
        var map = new StageMap<StageState>(static (nodeId, stageId) => new StageState(nodeId, stageId));
        var high = map.GetOrAdd("play-1", 4_000, out _);
        var low = map.GetOrAdd("play-1", 3, out _);

        // Act: more stages, on this node and on another node with the same ids.
        var otherNodeLow = map.GetOrAdd("play-2", 3, out var otherAdded);
        for (long stageId = 0; stageId < 4_096; stageId += 37)
        {
            map.GetOrAdd("play-1", stageId, out _);
        }

        // Assert
        Assert.True(otherAdded);
        Assert.NotSame(low, otherNodeLow);
        Assert.Same(high, map.GetOrAdd("play-1", 4_000, out var highAdded));
        Assert.Same(low, map.GetOrAdd("play-1", 3, out var lowAdded));
        Assert.False(highAdded);
        Assert.False(lowAdded);
        Assert.Same(otherNodeLow, map.GetOrAdd("play-2", 3, out _));
    }

    [Fact]
    public void SingleActiveHandler_SecondEntryOnOneStageAmongManyNodesAndStages_ReportsOnlyThatStage()
    {
        // Arrange: one handler active on every stage of four nodes, each hook with its own node id instance.
        var checker = new SingleActiveHandlerChecker(_clock);
        var nodes = Enumerable.Range(1, 4).Select(n => $"play-{n}").ToArray();
        foreach (var stageId in StageIds)
        {
            foreach (var node in nodes)
            {
                checker.OnHandlerEntered(new string(node.AsSpan()), stageId, StageWorkKind.ClientMessage, "Chat");
            }
        }

        Assert.False(checker.HasViolations, checker.FirstViolation?.Message);

        // Act: a second handler enters on play-3/4096 only.
        checker.OnHandlerEntered("play-3", 4_096, StageWorkKind.ReplyCallback, "Lookup");

        // Assert
        var violation = Assert.Single(checker.Violations);
        Assert.Equal("stage play-3/4096: handler ReplyCallback 'Lookup' entered while ClientMessage 'Chat' was still active (2 handlers active at once)", violation.Message);
        var highWaters = checker.GetHighWaters();
        Assert.Equal(nodes.Length * StageIds.Length, highWaters.Count);
        Assert.Equal(new StageHandlerHighWater("play-3", 4_096, 2), Assert.Single(highWaters, h => h.HighWater > 1));
    }

    [Fact]
    public void SingleActiveHandler_EveryStageEnteredAndExitedWithFreshNodeIdStrings_Passes()
    {
        // Arrange
        var checker = new SingleActiveHandlerChecker(_clock);
        var nodes = Enumerable.Range(1, 4).Select(n => $"play-{n}").ToArray();

        // Act: three turns per stage, entered with one string instance and exited with another.
        for (var turn = 0; turn < 3; turn++)
        {
            foreach (var stageId in StageIds)
            {
                foreach (var node in nodes)
                {
                    checker.OnHandlerEntered(new string(node.AsSpan()), stageId, StageWorkKind.ServerMessage, "Ping");
                }

                foreach (var node in nodes.Reverse())
                {
                    checker.OnHandlerExited(new string(node.AsSpan()), stageId);
                }

                checker.CheckStep();
            }
        }

        checker.CheckQuiescent();

        // Assert
        Assert.False(checker.HasViolations, checker.FirstViolation?.Message);
        Assert.Equal(1, checker.HighWater);
        Assert.Equal(3 * nodes.Length * StageIds.Length, checker.Entries);
    }

    [Fact]
    public void SingleActiveHandler_NodeCrash_ForgetsOnlyThatNodesActiveHandlers()
    {
        // Arrange: handlers active on two stages of play-2 (one in the array, one in the map) and one of play-1.
        var checker = new SingleActiveHandlerChecker(_clock);
        checker.OnHandlerEntered("play-2", 5, StageWorkKind.ClientMessage, "Chat");
        checker.OnHandlerEntered("play-2", 5_000, StageWorkKind.Timer, null);
        checker.OnHandlerEntered("play-1", 5, StageWorkKind.ClientMessage, "Move");

        // Act: play-2 crashes.
        ((INodeCrashAware)checker).OnNodeCrashed(new string("play-2".AsSpan()));
        checker.CheckStep();

        // Assert: only play-1's handler is still active at the end of the step.
        Assert.Equal("stage play-1/5: handler ClientMessage 'Move' still active at the end of a step (1 entered, not exited)", Assert.Single(checker.Violations).Message);
        Assert.Equal(
            [new("play-1", 5, 1), new("play-2", 5, 1), new("play-2", 5_000, 1)],
            checker.GetHighWaters());
    }

    [Fact]
    public void SingleActiveHandler_RestartedNodeAfterACrash_StartsCleanButIsStillJudged()
    {
        // Arrange: a handler of play-2/5 never exits because its node crashes.
        var checker = new SingleActiveHandlerChecker(_clock);
        checker.OnHandlerEntered("play-2", 5, StageWorkKind.ClientMessage, "Chat");
        checker.OnNodeCrashed("play-2");

        // Act: the restarted node's stage runs a turn (no false alarm), then exits once too often.
        checker.OnHandlerEntered("play-2", 5, StageWorkKind.ClientMessage, "Chat");
        checker.OnHandlerExited("play-2", 5);
        checker.CheckStep();
        Assert.False(checker.HasViolations, checker.FirstViolation?.Message);
        checker.OnHandlerExited(new string("play-2".AsSpan()), 5);

        // Assert
        Assert.Equal("stage play-2/5: a handler exited while none was active (exit without entry)", Assert.Single(checker.Violations).Message);
        Assert.Equal(1, checker.HighWater);
    }

    private sealed class StageState(string nodeId, long stageId)
    {
        public string NodeId { get; } = nodeId;

        public long StageId { get; } = stageId;
    }
}
