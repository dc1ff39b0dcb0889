using PlayHouse.Core.Runtime;

namespace PlayHouse.Core.Tests.Runtime;

/// <summary>
/// What a stage's timers, off-stage slots and lifecycle refuse or ignore when the runtime's own invariants are broken
/// or raced: a tick for a cancelled timer or a closed stage posts nothing, a tick never posted or run outside a turn
/// is refused, a slot freed twice is refused, a create outside a turn is refused, and a closed stage's destroy is a
/// no-op. The clock's thread and the stage race in production; here the racing call is made directly.
/// </summary>
public sealed class StageTurnGuardTests
{
    [Fact]
    public void TickFiredAfterItsTimerWasCancelled_PostsNothing()
    {
        var timers = new CapturingTimerTable();
        using var h = new RuntimeHarness(parts: NodeParts.Standard with { StageTimers = _ => timers });
        h.CreateStage(1);
        var host = Host(h, 1);
        var id = host.AddRepeatTimer(TimeSpan.FromMilliseconds(10), TimeSpan.FromMilliseconds(10), () => { });
        var timer = timers.Added.Single();
        host.CancelTimer(id);

        // The clock's callback that was already running when the cancel came.
        host.Timers.PostTick(StageWorkKind.Timer, timer);

        Assert.Equal(0, timer.PendingTicks);
        Assert.Equal(0, h.Play.GetStageStatistics().Single().MailboxLength);
    }

    [Fact]
    public void TickForAClosedStage_PostsNothing_EvenFromASourceStillActive()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var host = Host(h, 1);
        host.CloseStage();
        h.Pump();
        var stillActive = new StageTimer(host, 99, 0, () => { });

        host.Timers.PostTick(StageWorkKind.Timer, stillActive);

        Assert.True(stillActive.IsActive);
        Assert.Equal(0, stillActive.PendingTicks);
    }

    [Fact]
    public void TickRunWithoutAPost_IsRefusedAsABrokenInvariant_AndItsCallbackDoesNotRun()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var ran = 0;
        InvalidOperationException? refusal = null;
        h.Stages[1].OnServer = (stage, _) =>
        {
            var host = (StageHost)stage.Link;
            refusal = Assert.Throws<InvalidOperationException>(() => host.Timers.RunTimer(new StageTimer(host, 99, 0, () => ran++)));
            return ValueTask.CompletedTask;
        };
        h.Api.SendToStage(RuntimeHarness.PlayNode, 1, "Go", default);
        h.Pump();

        Assert.Equal($"Stage 1 on {RuntimeHarness.PlayNode} ran a tick that was never posted.", refusal?.Message);
        Assert.Equal(0, ran);
    }

    [Fact]
    public void TickRunOutsideTheStagesTurns_IsRefused_AndItsCallbackDoesNotRun()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var host = Host(h, 1);
        var ran = 0;
        var posted = new StageTimer(host, 99, 0, () => ran++) { PendingTicks = 1 };

        var refusal = Assert.Throws<InvalidOperationException>(() => host.Timers.RunTimer(posted));

        Assert.StartsWith("TakePendingTick of stage 1", refusal.Message);
        Assert.Equal((0, 1), (ran, posted.PendingTicks));
    }

    [Fact]
    public void RepeatTimer_KeepsNoCountOfCallbacksLeft_AsItFires()
    {
        var timers = new CapturingTimerTable();
        using var h = new RuntimeHarness(parts: NodeParts.Standard with { StageTimers = _ => timers });
        h.CreateStage(1);
        var fired = 0;
        h.Stages[1].Link.AddRepeatTimer(TimeSpan.FromMilliseconds(10), TimeSpan.FromMilliseconds(10), () => fired++);
        h.Advance(TimeSpan.FromMilliseconds(30));

        Assert.Equal(3, fired);
        Assert.Equal(0, timers.Added.Single().CountRemaining);
    }

    [Fact]
    public void DiscardedTick_ReleasesOnePendingTick_NeverGoingBelowZero()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var timer = new StageTimer(Host(h, 1), 99, 0, () => { }) { PendingTicks = 2 };

        timer.OnTickDiscarded();
        var afterOne = timer.PendingTicks;
        timer.OnTickDiscarded();
        timer.OnTickDiscarded();

        Assert.Equal((1, 0), (afterOne, timer.PendingTicks));
    }

    [Fact]
    public void OffStageSlotFreedWithoutBeingTaken_IsRefusedNamingTheStage()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);

        var refusal = Assert.Throws<InvalidOperationException>(() => Host(h, 1).OffStage.OnCompleted());

        Assert.Equal($"Stage 1 on {RuntimeHarness.PlayNode} freed more off-stage slots than it took.", refusal.Message);
    }

    [Fact]
    public void CreateRunOutsideTheStagesTurns_IsRefused_AndRunsNoOnCreate()
    {
        using var h = new RuntimeHarness();
        var creates = 0;
        h.ConfigureStage = s => s.OnCreateScript = _ =>
        {
            creates++;
            return ValueTask.FromResult(CreateResult.Success());
        };
        h.CreateStage(1);

        var refusal = Assert.Throws<InvalidOperationException>(() => Host(h, 1).Lifecycle.RunCreate(new StageMessage { Kind = StageWorkKind.Create, MsgId = "again" }).AsTask().GetAwaiter().GetResult());

        Assert.StartsWith("RunCreate of stage 1", refusal.Message);
        Assert.Equal(1, creates);
    }

    [Fact]
    public void DestroyOfAStageThatClosed_DoesNothing()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var host = Host(h, 1);
        host.CloseStage();
        h.Pump();

        var destroyAgain = host.Lifecycle.RunDestroy();

        Assert.True(destroyAgain.IsCompletedSuccessfully);
        Assert.Equal((1, 1), h.Stages[1].StageCallbacks);
    }

    private static StageHost Host(RuntimeHarness h, long stageId) => (StageHost)h.Stages[stageId].Link;

    /// <summary>The standard timer table, keeping every timer added to it for the test to look at.</summary>
    private sealed class CapturingTimerTable : IStageTimerTable
    {
        private readonly StageTimerTable _inner = new();

        public List<StageTimer> Added { get; } = [];

        public int Count => _inner.Count;

        public void Add(StageTimer timer)
        {
            Added.Add(timer);
            _inner.Add(timer);
        }

        public bool Remove(long timerId, [System.Diagnostics.CodeAnalysis.NotNullWhen(true)] out StageTimer? timer) => _inner.Remove(timerId, out timer);

        public bool Contains(long timerId) => _inner.Contains(timerId);

        public void RemoveAll(List<StageTimer> removed) => _inner.RemoveAll(removed);
    }
}
