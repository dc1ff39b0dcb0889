using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;

namespace PlayHouse.Core.Tests.Runtime;

/// <summary>
/// The play server's own API and node-wide counts: its argument checks, closing a stage from outside, the handlers in
/// progress on a single-threaded node and with a completion part that ends a handler twice, the actors' high water,
/// and the stages' registry: types registered once, statistics in id order, the high water, a stage factory that
/// throws, the create message of a stage a join makes, and an idle stage leaving the registry.
/// </summary>
public sealed class PlayServerTests
{
    [Fact]
    public void EntryPoints_RefuseMissingArguments_ByName()
    {
        using var h = new RuntimeHarness();
        Func<IStageLink, IStage> stage = link => new ScriptedStage(link);
        Func<IActorLink, IActor> actor = link => new ScriptedActor(link);

        var names = new[]
        {
            Assert.ThrowsAny<ArgumentException>(() => h.Play.RegisterStage("", stage, actor)).ParamName,
            Assert.Throws<ArgumentNullException>(() => h.Play.RegisterStage("other", null!, actor)).ParamName,
            Assert.Throws<ArgumentNullException>(() => h.Play.RegisterStage("other", stage, null!)).ParamName,
            Assert.Throws<ArgumentNullException>(() => h.Play.Connect(null!)).ParamName,
            Assert.Throws<ArgumentNullException>(() => h.Play.OnClientFrame(1, "Echo", 1, 1, Payload.Empty, 0, null!)).ParamName,
            Assert.Throws<ArgumentNullException>(() => h.Play.FlushClientFrames(null!)).ParamName,
        };

        Assert.Equal("stageType stageFactory actorFactory connection batch batch", string.Join(' ', names));
        Assert.Equal(0, h.Play.SessionCount);
    }

    [Fact]
    public void StageType_RegistersOnce_AndASecondRegistrationIsRefusedByName()
    {
        using var h = new RuntimeHarness();

        var error = Assert.Throws<InvalidOperationException>(() => h.Play.RegisterStage(RuntimeHarness.StageType, link => new ScriptedStage(link), link => new ScriptedActor(link)));

        Assert.Equal($"Stage type '{RuntimeHarness.StageType}' is already registered on {RuntimeHarness.PlayNode}.", error.Message);
    }

    [Fact]
    public void CloseStage_SaysWhetherItFoundTheStage()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);

        var closedUnknown = h.Play.CloseStage(2);
        var closedKnown = h.Play.CloseStage(1);
        h.Pump();

        Assert.Equal((false, true), (closedUnknown, closedKnown));
        Assert.False(h.Play.HasStage(1));
    }

    [Fact]
    public void StageStatistics_ListEveryStageInIdOrder_AndTheHighWaterKeepsTheMostHeldAtOnce()
    {
        using var h = new RuntimeHarness();
        foreach (var stageId in new long[] { 3, 1, 2 })
        {
            h.CreateStage(stageId);
        }

        var ids = h.Play.GetStageStatistics().Select(s => s.StageId).ToList();
        h.Play.CloseStage(2);
        h.Pump();

        Assert.Equal([1L, 2L, 3L], ids);
        Assert.Equal((2, 3), (h.Play.StageCount, h.Play.StagesHighWater));
    }

    [Fact]
    public void StageFactoryThatThrows_FailsTheJoinWithCreateStageFailed_AndCountsAHandlerFailure()
    {
        using var h = new RuntimeHarness(stageFactory: _ => throw new InvalidOperationException("no room today"));
        var client = new FakeClient(h);

        var join = client.Authenticate(1, accountId: 7);
        h.Pump();

        Assert.Equal(ErrorCodes.CreateStageFailed, client.ReplyTo(join).ErrorCode);
        Assert.Equal((1L, 0), (h.Play.Counters.HandlerFailures, h.Play.StageCount));
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void StageAJoinCreates_IsCreatedWithTheAuthenticateMessagesId()
    {
        using var h = new RuntimeHarness();
        string? createMsgId = null;
        h.ConfigureStage = stage => stage.OnCreateScript = packet =>
        {
            createMsgId = packet.MsgId;
            return ValueTask.FromResult(CreateResult.Success());
        };

        var client = h.Join(5, accountId: 7);

        Assert.Equal(h.Play.Options.AuthenticateMsgId, createMsgId);
        Assert.Null(client.ClosedReason);
        Assert.Equal(1, h.Play.ActorCount);
    }

    [Fact]
    public void IdleStage_LeavesTheRegistryWhenItCloses()
    {
        using var h = new RuntimeHarness(new ServerOptions { DefaultStageType = RuntimeHarness.StageType, IdleStageCloseAfter = TimeSpan.FromSeconds(1) });
        h.CreateStage(1);
        var listedBefore = h.Play.HasStage(1);

        h.Advance(TimeSpan.FromSeconds(1));

        Assert.True(listedBefore);
        Assert.Equal((false, 0), (h.Play.HasStage(1), h.Play.StageCount));
        Assert.Equal(1L, h.Play.Counters.IdleStagesClosed);
    }

    [Fact]
    public void ActorsHighWater_KeepsTheMostActorsJoinedAtOnce()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        h.Join(1, accountId: 7);
        h.Join(1, accountId: 8);
        h.Play.CloseStage(1);
        h.Pump();
        h.Join(2, accountId: 9);

        Assert.Equal((1, 2), (h.Play.ActorCount, h.Play.ActorsHighWater));
    }

    [Fact]
    public void HandlersInProgress_OnASingleThreadedNode_CountsAHandlerSuspendedAtAnAwait()
    {
        using var h = new RuntimeHarness(new ServerOptions { DefaultStageType = RuntimeHarness.StageType, SingleThreaded = true });
        h.CreateStage(1);
        var gate = new TaskCompletionSource();
        h.Stages[1].OnServer = async (_, _) => await gate.Task;

        h.Api.SendToStage(RuntimeHarness.PlayNode, 1, "Wait", Payload.Empty);
        h.Pump();
        var whileSuspended = h.Play.HandlersInProgress;
        gate.SetResult();
        h.Pump();

        Assert.Equal((1, 0), (whileSuspended, h.Play.HandlersInProgress));
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public void CompletionPartThatEndsAHandlerTwice_IsCaught_AsMoreEndedThanStarted(bool singleThreaded)
    {
        var options = new ServerOptions { DefaultStageType = RuntimeHarness.StageType, SingleThreaded = singleThreaded };
        using var h = new RuntimeHarness(options, parts: NodeParts.Standard with { HandlerCompletion = new EndsTwice() });

        // Single-threaded, the second end throws where it happens; with threads, the next read of the count throws.
        var error = Record.Exception(() =>
        {
            h.CreateStage(1);
            _ = h.Play.HandlersInProgress;
        });

        Assert.IsType<InvalidOperationException>(error);
        Assert.Equal($"Node {RuntimeHarness.PlayNode}: more stage handlers ended than started.", error.Message);
    }

    /// <summary>A flawed completion part: it ends every handler twice.</summary>
    private sealed class EndsTwice : IHandlerCompletion
    {
        public void OnSuspended(StageHost stage, ref StageMessage message)
        {
        }

        public void OnCompleted(StageHost stage, ref StageMessage message, bool wasSuspended)
        {
            StandardHandlerCompletion.Instance.OnCompleted(stage, ref message, wasSuspended);
            stage.Server.OnHandlerEnded();
        }
    }
}
