using PlayHouse.Core.Runtime;

namespace PlayHouse.Core.Tests.Runtime;

/// <summary>
/// The work a turn leaves for its end, on the calling thread alone: nested turns leave their items to the outermost
/// one, a turn an item runs leaves its items to the drain under way, the first failure is the one rethrown, and the
/// queues and admissions refuse a cap of zero.
/// </summary>
public sealed class TurnEndTests
{
    [Fact]
    public void ItemDeferredInANestedTurn_RunsOnlyWhenTheOutermostTurnEnds()
    {
        var log = new List<string>();
        var outer = TurnEnd.Enter();
        try
        {
            var inner = TurnEnd.Enter();
            Assert.True(TurnEnd.TryDefer(new Step(log, "deferred")));
            TurnEnd.Exit(inner);
            log.Add($"inner ended, in turn: {TurnEnd.IsInTurn}");
        }
        finally
        {
            TurnEnd.Exit(outer);
        }

        Assert.Equal(["inner ended, in turn: True", "deferred"], log);
        Assert.False(TurnEnd.IsInTurn);
    }

    [Fact]
    public void TurnRunByADeferredItem_LeavesItsOwnItemsToTheDrainUnderWay_AndEachRunsOnce()
    {
        var log = new List<string>();
        var turn = TurnEnd.Enter();
        try
        {
            TurnEnd.TryDefer(new Step(log, "first", () =>
            {
                var nested = TurnEnd.Enter();
                TurnEnd.TryDefer(new Step(log, "deferred by the nested turn"));
                TurnEnd.Exit(nested);
                log.Add("nested turn ended");
            }));
        }
        finally
        {
            TurnEnd.Exit(turn);
        }

        Assert.Equal(["first", "nested turn ended", "deferred by the nested turn"], log);
        Assert.False(TurnEnd.IsInTurn);
    }

    [Fact]
    public void DeferredItemsThatThrow_AllRun_AndTheFirstFailureIsTheOneRethrown()
    {
        var log = new List<string>();
        var turn = TurnEnd.Enter();
        TurnEnd.TryDefer(new Step(log, "a", () => throw new InvalidOperationException("first failure")));
        TurnEnd.TryDefer(new Step(log, "b", () => throw new InvalidOperationException("second failure")));
        TurnEnd.TryDefer(new Step(log, "c"));

        var error = Assert.Throws<InvalidOperationException>(() => TurnEnd.Exit(turn));
        Assert.Equal("first failure", error.Message);
        Assert.Equal(["a", "b", "c"], log);
        Assert.False(TurnEnd.IsInTurn);
    }

    [Fact]
    public void TryDeferAndDeferOrSchedule_RefuseANullArgument_ByName()
    {
        Assert.Equal("workItem", Assert.Throws<ArgumentNullException>(() => TurnEnd.TryDefer(null!)).ParamName);
        Assert.Equal("executor", Assert.Throws<ArgumentNullException>(() => TurnEnd.DeferOrSchedule(new Step([], "x"), null!)).ParamName);
    }

    [Fact]
    public void MailboxAndTickAdmission_RefuseACapOfZero_AndTakeOne()
    {
        Assert.Equal("externalCapacityMax", Assert.Throws<ArgumentOutOfRangeException>(() => new StageMailbox(0)).ParamName);
        Assert.Equal("pendingTicksMax", Assert.Throws<ArgumentOutOfRangeException>(() => new CoalescingTickAdmission(0)).ParamName);
        Assert.Equal(0, new StageMailbox(1).Count);
        Assert.NotNull(new CoalescingTickAdmission(1));
    }

    private sealed class Step(List<string> log, string name, Action? then = null) : IThreadPoolWorkItem
    {
        public void Execute()
        {
            log.Add(name);
            then?.Invoke();
        }
    }
}
