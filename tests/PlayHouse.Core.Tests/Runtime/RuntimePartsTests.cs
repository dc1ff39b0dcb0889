using PlayHouse.Core.Runtime;

namespace PlayHouse.Core.Tests.Runtime;

/// <summary>
/// Small parts of the runtime on their own: a reply token carries its route's address and nothing of the other route,
/// the stage id allocator skips ids in use and never hands out 0, and a stage's timer table is keyed by the stage's own ids.
/// </summary>
public sealed class RuntimePartsTests
{
    [Fact]
    public void ReplyTokenToAClient_CarriesTheSessionAndItsSequence_AndNoMeshAddress()
    {
        var session = new ClientSession(null!, sessionId: 77, null!);
        var token = ReplyToken.ToClient(inboundId: 5, "Echo", session, clientMsgSeq: 65_535, stageId: 9);

        Assert.True(token.IsRequest);
        Assert.Same(session, token.Session);
        Assert.Equal(77, token.SessionId);
        Assert.Equal(65_535, token.ClientMsgSeq);
        Assert.Null(token.MeshNodeId);
        Assert.Equal(0UL, token.MeshMsgSeq);
        Assert.Equal((5L, "Echo", 9L), (token.InboundId, token.RequestMsgId, token.StageId));
        Assert.Equal("reply->session 77 seq 65535", token.ToString());
    }

    [Fact]
    public void ReplyTokenToAMeshNode_CarriesTheNodeAndItsSequence_AndNoSession()
    {
        var token = ReplyToken.ToMesh(inboundId: 6, "Echo", "play-2", meshMsgSeq: ulong.MaxValue, stageId: 3);

        Assert.True(token.IsRequest);
        Assert.Null(token.Session);
        Assert.Equal(0, token.SessionId);
        Assert.Equal(0, token.ClientMsgSeq);
        Assert.Equal("play-2", token.MeshNodeId);
        Assert.Equal(ulong.MaxValue, token.MeshMsgSeq);
        Assert.Equal($"reply->play-2 seq {ulong.MaxValue}", token.ToString());
    }

    [Fact]
    public void DefaultReplyToken_IsNoRequest_AndAddressesNobody()
    {
        var token = default(ReplyToken);

        Assert.False(token.IsRequest);
        Assert.Null(token.Session);
        Assert.Null(token.MeshNodeId);
        Assert.Equal(0UL, token.MeshMsgSeq);
        Assert.Equal("no-reply", token.ToString());
    }

    [Fact]
    public void SequentialStageIds_StartAtOne_AndSkipTheIdsInUse()
    {
        var ids = new SequentialStageIds();
        var taken = new HashSet<long> { 2, 3, 5 };

        var handedOut = Enumerable.Range(0, 4).Select(_ => ids.Next(taken.Contains)).ToArray();

        Assert.Equal(new long[] { 1, 4, 6, 7 }, handedOut);
        Assert.DoesNotContain(handedOut, taken.Contains);
    }

    [Fact]
    public void SequentialStageIds_AfterTheLargestId_WrapToOne_NeverToANegativeId()
    {
        var ids = new SequentialStageIds();

        // Two to the 63rd ids cannot be handed out in a test; the counter is set next to its end instead.
        typeof(SequentialStageIds).GetField("_last", System.Reflection.BindingFlags.NonPublic | System.Reflection.BindingFlags.Instance)!.SetValue(ids, long.MaxValue - 1);
        var handedOut = Enumerable.Range(0, 3).Select(_ => ids.Next(_ => false)).ToArray();

        Assert.Equal(new[] { long.MaxValue, 1, 2 }, handedOut);
    }

    [Fact]
    public void StageRegistry_RemovingAStageWhoseIdAnotherNowHolds_KeepsTheOtherOne()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(5);
        var first = (StageHost)h.Stages[5].Link;
        ((IStageLink)first).CloseStage();
        h.Pump();
        h.CreateStage(5);
        var second = (StageHost)h.Stages[5].Link;
        var registry = new StageRegistry();
        registry.Add(second);

        registry.Remove(first, StageRemoval.Destroyed);

        Assert.True(registry.TryGet(5, out var kept));
        Assert.Same(second, kept);
        registry.Remove(second, StageRemoval.Destroyed);
        Assert.Equal(0, registry.Count);
    }

    [Fact]
    public void StageTimerTable_HoldsTimersByTheirIds_AndGivesThemAllUpAtClose()
    {
        var table = new StageTimerTable();
        var emptyCount = table.Count;
        var emptyRemoved = new List<StageTimer>();
        table.RemoveAll(emptyRemoved);
        var first = new StageTimer(null!, id: 1, count: 0, () => { });
        var second = new StageTimer(null!, id: 2, count: 3, () => { });
        var missingBeforeAny = table.Remove(1, out var none);

        table.Add(first);
        table.Add(second);
        var removed = table.Remove(1, out var taken);
        var removedAgain = table.Remove(1, out _);
        var all = new List<StageTimer>();
        table.RemoveAll(all);

        Assert.Equal(0, emptyCount);
        Assert.Empty(emptyRemoved);
        Assert.False(missingBeforeAny);
        Assert.Null(none);
        Assert.True(removed);
        Assert.Same(first, taken);
        Assert.False(removedAgain);
        Assert.Equal([second], all);
        Assert.Equal(0, table.Count);
        Assert.False(table.Contains(2));
    }

    [Fact]
    public void StageTimerTable_KnowsWhichIdsItHolds_AndRefusesADuplicate()
    {
        var table = new StageTimerTable();
        var containsBeforeAny = table.Contains(1);
        table.Add(new StageTimer(null!, id: 1, count: 0, () => { }));

        Assert.False(containsBeforeAny);
        Assert.True(table.Contains(1));
        Assert.False(table.Contains(2));
        Assert.Equal(1, table.Count);
        Assert.Throws<ArgumentException>(() => table.Add(new StageTimer(null!, id: 1, count: 0, () => { })));
    }
}
