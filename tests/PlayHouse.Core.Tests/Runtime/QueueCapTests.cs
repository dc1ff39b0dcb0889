using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;
using PlayHouse.Core.Seams;
using PlayHouse.Core.Tests.Seams;

namespace PlayHouse.Core.Tests.Runtime;

/// <summary>
/// The parts that bound a node's queues (B15): the stage mailbox, the tick admission and the mesh send queue's
/// refusal, each refusing overload with a clear outcome instead of buffering it.
/// </summary>
public sealed class QueueCapTests
{
    [Fact]
    public void StageMailbox_AtItsCap_RefusesMessagesFromOutsideButTakesTheStagesOwn()
    {
        var mailbox = new StageMailbox(externalCapacityMax: 2);

        Assert.True(mailbox.TryEnqueue(new StageMessage { Kind = StageWorkKind.ClientMessage, External = true, MsgId = "a" }));
        Assert.True(mailbox.TryEnqueue(new StageMessage { Kind = StageWorkKind.ClientMessage, External = true, MsgId = "b" }));
        Assert.False(mailbox.TryEnqueue(new StageMessage { Kind = StageWorkKind.ClientMessage, External = true, MsgId = "c" }));
        Assert.True(mailbox.TryEnqueue(new StageMessage { Kind = StageWorkKind.Timer }));
        Assert.Equal(3, mailbox.Count);
        Assert.Equal(2, mailbox.ExternalCount);

        // Dequeuing an outside message frees its place; the stage's own entry never held one.
        Assert.True(mailbox.TryDequeue(out var first));
        Assert.Equal("a", first.MsgId);
        Assert.Equal(1, mailbox.ExternalCount);
        Assert.True(mailbox.TryEnqueue(new StageMessage { Kind = StageWorkKind.ClientMessage, External = true, MsgId = "d" }));
        Assert.Equal(["b", null, "d"], Drain(mailbox).Select(m => m.MsgId));
        Assert.Equal(0, mailbox.ExternalCount);
        Assert.False(mailbox.TryDequeue(out _));
    }

    [Fact]
    public void CoalescingTickAdmission_PastItsCap_RefusesAndLeavesThePendingCountAtTheCap()
    {
        var admission = new CoalescingTickAdmission(pendingTicksMax: 2);
        var timer = new FakeTickSource();

        Assert.True(admission.Admit(timer));
        Assert.True(admission.Admit(timer));
        Assert.False(admission.Admit(timer));
        Assert.Equal(2, timer.PendingTicks);

        timer.PendingTicks--;
        Assert.True(admission.Admit(timer));
        Assert.Equal(2, timer.PendingTicks);
    }

    [Fact]
    public void NodeParts_StageMailboxAndTickAdmission_AreWhatTheNodeBuildsItsStagesWith()
    {
        var mailboxes = 0;
        var parts = NodeParts.Standard with
        {
            StageMailbox = options =>
            {
                mailboxes++;
                return new StageMailbox(options.MailboxCapacityMax);
            },
        };
        var seams = new NodeSeams(new ManualTimeProvider(), new ManualExecutor(), new Xoshiro256StarStar(1), new MessagePool()) { Parts = parts };
        using var play = new PlayServer("play-1", seams, new ServerOptions { DefaultStageType = "room" });
        play.RegisterStage("room", link => new ScriptedStage(link), link => new ScriptedActor(link));

        _ = play.CreateStage("room", 1, "create", Payload.Empty);
        _ = play.CreateStage("room", 2, "create", Payload.Empty);

        Assert.True(NodeParts.Standard.IsStandard);
        Assert.False(parts.IsStandard);
        Assert.Equal(2, mailboxes);
        Assert.IsType<CoalescingTickAdmission>(play.TickAdmission);
    }

    [Fact]
    public void TimerTicks_BehindAHandlerThatAwaits_NeverWaitMoreThanTheCapAndTheObserverSeesEachAdmitted()
    {
        var ticks = new TickRecorder();
        var executor = new ManualExecutor();
        var clock = new ManualTimeProvider();
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = true });
        var seams = new NodeSeams(clock, executor, new Xoshiro256StarStar(1), pool) { Observer = ticks };
        using var play = new PlayServer("play-1", seams, new ServerOptions { DefaultStageType = "room", TimerPendingTicksMax = 2 });
        var hold = new TaskCompletionSource();
        ScriptedStage? stage = null;
        play.RegisterStage("room", link => stage = new ScriptedStage(link) { OnServer = async (_, _) => await hold.Task }, link => new ScriptedActor(link));
        _ = play.CreateStage("room", 1, "create", Payload.Empty);
        executor.RunUntilIdle();
        stage!.Link.AddRepeatTimer(TimeSpan.FromMilliseconds(1), TimeSpan.FromMilliseconds(1), () => { });

        // A server message whose handler awaits keeps the stage busy while ten periods of the timer pass.
        play.OnMeshMessage(new MeshMessage { MsgId = "Hold", From = "api-1", StageId = 1, Payload = pool.Copy([1], "test") });
        executor.RunUntilIdle();
        for (var i = 0; i < 10; i++)
        {
            clock.Advance(TimeSpan.FromMilliseconds(1));
            executor.RunUntilIdle();
        }

        Assert.Equal([1, 2], ticks.PendingTicks);
        Assert.Equal(8, play.Counters.TimerTicksCoalesced);
        hold.SetResult();
        executor.RunUntilIdle();
    }

    [Fact]
    public void RequestOverAFullMeshSendQueue_FailsFastWithMeshSendQueueFull_AndIsCounted()
    {
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = true });
        var seams = new NodeSeams(new ManualTimeProvider(), new ManualExecutor(), new Xoshiro256StarStar(1), pool);
        using var api = new ApiServer("api-1", seams);
        var mesh = new CappedMesh(queueMax: 1);
        api.Mesh = mesh;

        var first = api.RequestToStage("play-1", 1, "Ask", pool.Copy([1], "request"));
        var second = api.RequestToStage("play-1", 1, "Ask", pool.Copy([2], "request"));
        api.SendToStage("play-1", 1, "Tell", pool.Copy([3], "send"));

        Assert.False(first.IsCompleted);
        Assert.True(second.IsCompleted);
        Assert.Equal(ErrorCodes.MeshSendQueueFull, RuntimeHarness.Completed(second).ErrorCode);
        Assert.Equal("MeshSendQueueFull", ErrorCodes.Describe(ErrorCodes.MeshSendQueueFull));
        Assert.Equal(2, api.Counters.MeshSendsRefused);
        Assert.Equal(0, api.Counters.MeshSendsToUnknownServers);
        Assert.Contains(api.Counters.Snapshot(), c => c.Key == nameof(ServerCounters.MeshSendsRefused) && c.Value == 2);
        Assert.Equal(1, api.PendingRequestCount);
        mesh.Release();
        pool.ThrowIfLeaks();
    }

    private static List<StageMessage> Drain(StageMailbox mailbox)
    {
        var messages = new List<StageMessage>();
        while (mailbox.TryDequeue(out var message))
        {
            messages.Add(message);
        }

        return messages;
    }

    private sealed class FakeTickSource : ITickSource
    {
        public int PendingTicks { get; set; }

        public bool IsActive => true;
    }

    private sealed class TickRecorder : RuntimeObserver
    {
        public List<int> PendingTicks { get; } = [];

        public override void OnTickPosted(string nodeId, long stageId, int pendingTicks) => PendingTicks.Add(pendingTicks);
    }

    /// <summary>A mesh whose send queue to every peer holds <c>queueMax</c> messages and never drains (a clogged peer).</summary>
    private sealed class CappedMesh(int queueMax) : IMeshTransport
    {
        private readonly List<Payload> _queued = [];

        public bool Send(string targetNodeId, in MeshMessage message) => TrySend(targetNodeId, message) != MeshSendResult.UnknownServer;

        public MeshSendResult TrySend(string targetNodeId, in MeshMessage message)
        {
            if (_queued.Count >= queueMax)
            {
                message.Payload.DisposeIfOwner();
                return MeshSendResult.QueueFull;
            }

            _queued.Add(message.Payload);
            return MeshSendResult.Sent;
        }

        public void Release()
        {
            foreach (var payload in _queued)
            {
                payload.DisposeIfOwner();
            }

            _queued.Clear();
        }
    }
}
