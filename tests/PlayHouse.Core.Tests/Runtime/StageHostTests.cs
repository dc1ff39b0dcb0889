using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;
using PlayHouse.Core.Seams;
using PlayHouse.Core.Tests.Seams;

namespace PlayHouse.Core.Tests.Runtime;

/// <summary>
/// The stage host's own promises, apart from what its turn and parts do: what the observer hears of each post, the
/// mailbox's high-water mark, one scheduled turn at a time whatever mix of posts arrives, one destroy step however
/// often a close is asked for, the quiet close the registry uses, the clock reading a reply is judged at, and the
/// link's argument checks; and what a turn tells the observer of the handlers it runs.
/// </summary>
public sealed class StageHostTests
{
    private static readonly TimeSpan Timeout = TimeSpan.FromSeconds(30);

    [Fact]
    public void BatchOfFrames_TellsTheObserverOfEachQueuedOneInOrder_WithTheMailboxLengthItReached_AndRaisesTheHighWater()
    {
        var posts = new PostRecorder();
        using var node = new ObservedNode(posts, new ServerOptions { DefaultStageType = "room", MailboxCapacityMax = 2 });
        var gate = new TaskCompletionSource();
        node.Stage.OnClient = async (stage, _, packet) =>
        {
            await gate.Task;
            stage.Link.Reply(packet, ErrorCodes.Success);
        };
        var client = node.Join(accountId: 7);

        // The first request's handler waits, so the batch behind it stays in the mailbox: lengths 1 and 2, then the cap.
        var blocking = client.Request("Block");
        node.Executor.RunUntilIdle();
        var highWaterBefore = node.Host.MailboxHighWater;
        posts.Posts.Clear();
        var batch = new ClientFrameBatch();
        var seqs = new[] { client.Request("Q1", batch), client.Request("Q2", batch), client.Request("Q3", batch) };
        node.Play.FlushClientFrames(batch);

        Assert.Equal(1, highWaterBefore);
        Assert.Equal(new[] { (1L, 1, 1), (1L, 2, 2) }, posts.Posts);
        Assert.Equal(2, node.Host.MailboxHighWater);
        Assert.Equal(ErrorCodes.MailboxFull, client.ReplyTo(seqs[2]));
        gate.SetResult();
        node.Executor.RunUntilIdle();
        Assert.Equal((ErrorCodes.Success, ErrorCodes.Success, ErrorCodes.Success), (client.ReplyTo(blocking), client.ReplyTo(seqs[0]), client.ReplyTo(seqs[1])));
        node.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void BatchOnANodeWithoutAnObserver_IsQueuedAndAnswered_WithNoHookCalled()
    {
        using var node = new ObservedNode(RuntimeObserver.None);
        var client = node.Join(accountId: 7);
        var batch = new ClientFrameBatch();
        var first = client.Request("Echo1", batch);
        var second = client.Request("Echo2", batch);

        node.Play.FlushClientFrames(batch);
        node.Executor.RunUntilIdle();

        Assert.Equal(["Echo1", "Echo2"], node.Stage.Dispatched);
        Assert.Equal((ErrorCodes.Success, ErrorCodes.Success), (client.ReplyTo(first), client.ReplyTo(second)));
        node.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void PostAfterABatch_FindsTheStageScheduled_AndQueuesNoSecondTurn()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var client = h.Join(1, accountId: 7);
        var batch = new ClientFrameBatch();
        h.Play.OnClientFrame(client.SessionId, "Echo1", 11, 1, h.Bytes(1), h.Clock.GetTimestamp(), batch);
        h.Play.FlushClientFrames(batch);
        var pendingAfterTheBatch = h.Executor.PendingCount;

        var single = client.Request("Echo2", 1, [2]);
        var pendingAfterThePost = h.Executor.PendingCount;
        h.Pump();

        Assert.Equal((1, 1), (pendingAfterTheBatch, pendingAfterThePost));
        Assert.Equal(["Echo1", "Echo2"], h.Stages[1].Dispatched);
        Assert.Equal([(byte)2], client.ReplyTo(single).Payload);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void PostAfterAContinuation_FindsTheStageScheduled_AndQueuesNoSecondTurn()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var gate = new TaskCompletionSource();
        h.Stages[1].OnClient = async (stage, _, packet) =>
        {
            await gate.Task;
            stage.Link.Reply(packet, ErrorCodes.Success);
        };
        var client = h.Join(1, accountId: 7);
        var waiting = client.Request("Wait", 1, []);
        h.Pump();
        var pendingWhileItWaits = h.Executor.PendingCount;

        gate.SetResult();
        var pendingAfterTheContinuation = h.Executor.PendingCount;
        client.Send("OneWay", 1, []);
        var pendingAfterThePost = h.Executor.PendingCount;
        h.Pump();

        Assert.Equal((0, 1, 1), (pendingWhileItWaits, pendingAfterTheContinuation, pendingAfterThePost));
        Assert.Equal(ErrorCodes.Success, client.ReplyTo(waiting).ErrorCode);
        Assert.Equal(["Wait", "OneWay"], h.Stages[1].Dispatched);
    }

    [Fact]
    public void BatchRefusedWhole_ByASuspendedStagesFullMailbox_SchedulesNoTurn()
    {
        using var h = new RuntimeHarness(new ServerOptions { DefaultStageType = RuntimeHarness.StageType, MailboxCapacityMax = 1 });
        h.CreateStage(1);
        var gate = new TaskCompletionSource();
        h.Stages[1].OnClient = async (stage, _, packet) =>
        {
            await gate.Task;
            stage.Link.Reply(packet, ErrorCodes.Success);
        };
        var client = h.Join(1, accountId: 7);
        client.Request("Wait", 1, []);
        h.Pump();
        var queued = client.Request("Queued", 1, []);
        h.Pump();
        var pendingWithTheMailboxFull = h.Executor.PendingCount;
        var batch = new ClientFrameBatch();
        h.Play.OnClientFrame(client.SessionId, "Refused", 30, 1, h.Bytes(3), h.Clock.GetTimestamp(), batch);

        h.Play.FlushClientFrames(batch);

        Assert.Equal((0, 0), (pendingWithTheMailboxFull, h.Executor.PendingCount));
        Assert.Equal(ErrorCodes.MailboxFull, client.ReplyTo(30).ErrorCode);
        gate.SetResult();
        h.Pump();
        Assert.Equal(ErrorCodes.Success, client.ReplyTo(queued).ErrorCode);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void CloseAskedForTwice_QueuesOneDestroyStep_AndDestroysTheStageOnce()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var link = h.Stages[1].Link;

        link.CloseStage();
        link.CloseStage();
        var queued = h.Play.GetStageStatistics().Single().MailboxLength;
        h.Pump();

        Assert.Equal(1, queued);
        Assert.Single(h.Events.EventsOf(1), e => e == LifecycleEvent.StageDestroy);
        Assert.True(((StageHost)link).IsClosed);
    }

    [Fact]
    public void QuietClose_IsRefusedWhileAMessageOrAContinuationIsQueued_AndAfterACloseWasAskedFor()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        h.CreateStage(2);
        var gate = new TaskCompletionSource();
        h.Stages[2].OnServer = async (_, _) => await gate.Task;
        var withMessage = (StageHost)h.Stages[1].Link;
        var withContinuation = (StageHost)h.Stages[2].Link;
        var client = h.Join(1, accountId: 7);
        h.Stages[1].Link.SendToStage(RuntimeHarness.PlayNode, 2, "Wait", Payload.Empty);
        h.Pump();
        gate.SetResult();
        client.Send("Queued", 1, [1]);

        var refused = (withMessage.TryCloseIfQuiet(), withContinuation.TryCloseIfQuiet());
        var open = (withMessage.IsClosed, withContinuation.IsClosed);
        h.Pump();
        var closedOnceQuiet = withMessage.TryCloseIfQuiet();
        var closedAgain = withMessage.TryCloseIfQuiet();

        Assert.Equal((false, false), refused);
        Assert.Equal((false, false), open);
        Assert.Equal(["Queued"], h.Stages[1].Dispatched);
        Assert.Equal((true, false), (closedOnceQuiet, closedAgain));
        Assert.True(withMessage.IsClosed);
    }

    [Fact]
    public void ActorLifecycleEvents_CarryTheActorsInstanceAndAccount_AndTheStagesOwnCarryNeither()
    {
        var events = new PostRecorder();
        using var node = new ObservedNode(events);
        node.Join(accountId: 7);

        var actorEvents = events.Lifecycle.Where(e => e.Event is LifecycleEvent.ActorJoinStage or LifecycleEvent.ActorPostJoinStage).ToList();
        var stageEvents = events.Lifecycle.Where(e => e.Event is LifecycleEvent.StageCreate or LifecycleEvent.StagePostCreate).ToList();

        Assert.Equal(2, actorEvents.Count);
        Assert.All(actorEvents, e => Assert.Equal(7, e.AccountId));
        Assert.All(actorEvents, e => Assert.NotEqual(0, e.Instance));
        Assert.Equal(2, stageEvents.Count);
        Assert.All(stageEvents, e => Assert.Equal((0L, 0L), (e.Instance, e.AccountId)));
    }

    [Fact]
    public void JoinReply_CarriesTheMsgIdAuthenticationChose_OrTheRequestsOwnWhenItChoseNone()
    {
        string? replyMsgId = null;
        using var h = new RuntimeHarness(actorFactory: link => new NamedReplyActor(link, () => replyMsgId!));
        h.CreateStage(1);

        replyMsgId = "Welcome";
        var named = new FakeClient(h);
        var namedSeq = named.Authenticate(1, 7);
        h.Pump();
        replyMsgId = string.Empty;
        var unnamed = new FakeClient(h);
        var unnamedSeq = unnamed.Authenticate(1, 8);
        h.Pump();

        Assert.Equal(("Welcome", ErrorCodes.Success), (named.ReplyTo(namedSeq).MsgId, named.ReplyTo(namedSeq).ErrorCode));
        Assert.Equal((h.Play.Options.AuthenticateMsgId, ErrorCodes.Success), (unnamed.ReplyTo(unnamedSeq).MsgId, unnamed.ReplyTo(unnamedSeq).ErrorCode));
    }

    [Fact]
    public void ReplyOutsideATurn_IsJudgedAtAFreshClockReading_EachTime()
    {
        using var h = new RuntimeHarness();
        var (held, start) = HoldTwoRequestsDueAt30And40Seconds(h);

        // Past the first deadline (30 s), before the second (40 s); then past the second. No turn of stage 2 runs between.
        h.Clock.AdvanceTo(start + TimeSpan.FromSeconds(35).Ticks);
        h.Stages[2].Link.Reply(held[0], ErrorCodes.Success);
        var expiredAfterTheFirst = h.Play.Counters.RepliesAfterExpiry;
        h.Clock.AdvanceTo(start + TimeSpan.FromSeconds(45).Ticks);
        h.Stages[2].Link.Reply(held[1], ErrorCodes.Success);

        Assert.Equal((1L, 2L), (expiredAfterTheFirst, h.Play.Counters.RepliesAfterExpiry));
        h.Pump();
    }

    [Fact]
    public void RepliesWithinOneTurn_AreJudgedAtTheTurnsFirstClockReading()
    {
        using var h = new RuntimeHarness();
        var (held, start) = HoldTwoRequestsDueAt30And40Seconds(h);
        h.Clock.AdvanceTo(start + TimeSpan.FromSeconds(35).Ticks);

        // One turn answers both: the first reply reads the clock at 35 s (past the first deadline); the clock then moves
        // past the second deadline, but the turn's second reply is judged at the same reading, so it is in time.
        h.Stages[2].OnServer = (stage, _) =>
        {
            stage.Link.Reply(held[0], ErrorCodes.Success);
            h.Clock.AdvanceTo(start + TimeSpan.FromSeconds(45).Ticks);
            stage.Link.Reply(held[1], ErrorCodes.Success);
            return ValueTask.CompletedTask;
        };
        h.Stages[1].Link.SendToStage(RuntimeHarness.PlayNode, 2, "AnswerBoth", Payload.Empty);
        h.Pump();

        Assert.Equal(1, h.Play.Counters.RepliesAfterExpiry);
        Assert.Equal(0, h.Play.Counters.SecondReplyAttempts);
    }

    [Fact]
    public void ReplacedReplyAddressing_HearsEachRequestAHandlerStartsOn_AndPicksTheAddressOfItsReply()
    {
        var addressing = new RecordingAddressing();
        using var node = new ObservedNode(RuntimeObserver.None, parts: NodeParts.Standard with { ReplyAddressing = _ => addressing });
        var client = node.Join(accountId: 7);

        var seq = client.Request("Echo");
        node.Executor.RunUntilIdle();

        Assert.Equal(["Echo"], addressing.Addressed);
        Assert.Equal(["create", node.Play.Options.AuthenticateMsgId, "Echo"], addressing.Dispatched);
        Assert.Equal(ErrorCodes.Success, client.ReplyTo(seq));
    }

    [Fact]
    public void Link_RefusesANullActorWorkOrContinuation_AndACountTimerOfZero_ByName()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var link = h.Stages[1].Link;

        Assert.Throws<ArgumentNullException>("actor", () => link.SendToClient(null!, "Hello", Payload.Empty));
        Assert.Throws<ArgumentOutOfRangeException>("count", () => link.AddCountTimer(TimeSpan.Zero, TimeSpan.FromSeconds(1), 0, () => { }));
        Assert.Throws<ArgumentNullException>("work", () => link.RunOffStage<int>(null!, _ => { }));
        Assert.Throws<ArgumentNullException>("continuation", () => link.RunOffStage(() => 1, null!));
        Assert.Throws<ArgumentNullException>("work", () => link.RunOffStageAsync<int>(null!, _ => { }));
        Assert.Throws<ArgumentNullException>("continuation", () => link.RunOffStageAsync(() => Task.FromResult(1), null!));
        Assert.Equal(0, h.Executor.PendingCount);
    }

    [Fact]
    public void TurnOnlyEntryPoint_CalledOutsideATurn_ThrowsNamingTheOperationAndTheStage()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var host = (StageHost)h.Stages[1].Link;
        var inTurn = false;
        h.Stages[1].OnServer = (_, _) =>
        {
            inTurn = host.IsInTurn;
            host.AssertInTurn("Probe");
            return ValueTask.CompletedTask;
        };
        h.Stages[1].Link.SendToStage(RuntimeHarness.PlayNode, 1, "Probe", Payload.Empty);
        h.Pump();

        var error = Assert.Throws<InvalidOperationException>(() => host.AssertInTurn("Probe"));

        Assert.Equal((true, false), (inTurn, host.IsInTurn));
        Assert.Equal("Probe of stage 1 on play-1 ran outside the stage's turns; it is called only from them.", error.Message);
        Assert.Equal("Stage(play-1/1, room)", host.ToString());
        Assert.Empty(h.Events.Failures);
    }

    [Fact]
    public void HandlerThatAwaits_IsEnteredAgainForItsContinuation_AndItsMessageCompletesOnce()
    {
        var hooks = new PostRecorder();
        using var node = new ObservedNode(hooks);
        var gate = new TaskCompletionSource();
        node.Stage.OnClient = async (stage, _, packet) =>
        {
            await gate.Task;
            stage.Link.Reply(packet, ErrorCodes.Success);
        };
        var client = node.Join(accountId: 7);
        hooks.Entered.Clear();
        hooks.Completed.Clear();
        var exitedBefore = hooks.Exited;
        var seq = client.Request("Wait");
        node.Executor.RunUntilIdle();
        var beforeTheContinuation = (hooks.Entered.Count, hooks.Exited - exitedBefore, hooks.Completed.Count);

        gate.SetResult();
        node.Executor.RunUntilIdle();

        // The message completes when its handler's task does, not when the handler first yields.
        Assert.Equal((1, 1, 0), beforeTheContinuation);
        Assert.Equal(["Wait", "Wait"], hooks.Entered);
        Assert.Equal(2, hooks.Exited - exitedBefore);
        Assert.Equal(["Wait"], hooks.Completed);
        Assert.Equal(ErrorCodes.Success, client.ReplyTo(seq));
    }

    [Fact]
    public void ReplyCallback_HearsTheRepliersMsgId_AndErrorCode()
    {
        using var h = new RuntimeHarness();
        CreateStagesWhereTwoAnswersPong(h);
        Response? heard = null;
        h.Stages[1].OnServer = (stage, _) =>
        {
            stage.Link.RequestToStage(RuntimeHarness.PlayNode, 2, "Ping", Payload.Empty, response => heard = response);
            return ValueTask.CompletedTask;
        };

        h.Stages[2].Link.SendToStage(RuntimeHarness.PlayNode, 1, "Start", Payload.Empty);
        h.Pump();

        Assert.NotNull(heard);
        Assert.Equal(("Pong", ErrorCodes.Success), (heard.Value.MsgId, heard.Value.ErrorCode));
    }

    [Fact]
    public void JoinQueuedBehindTheStagesDestroy_IsRefusedStageNotFound()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var gate = HoldTheMailbox(h, 1);
        h.Stages[1].Link.CloseStage();
        var late = new FakeClient(h);
        var seq = late.Authenticate(1, 8);
        h.Pump();
        var beforeTheDestroy = late.Received.Count;

        gate.SetResult();
        h.Pump();

        Assert.Equal(0, beforeTheDestroy);
        Assert.Equal(ErrorCodes.StageNotFound, late.ReplyTo(seq).ErrorCode);
        Assert.DoesNotContain(h.Stages[1].Callbacks, c => c.StartsWith("OnJoinStage", StringComparison.Ordinal));
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void ReplyCallbackQueuedBehindTheStagesDestroy_StillRunsOnce_WithTheReply()
    {
        using var h = new RuntimeHarness();
        CreateStagesWhereTwoAnswersPong(h);
        var gate = HoldTheMailbox(h, 1);
        h.Stages[1].Link.CloseStage();
        var heard = new List<(string MsgId, ushort ErrorCode)>();
        h.Stages[1].Link.RequestToStage(RuntimeHarness.PlayNode, 2, "Ping", Payload.Empty, response => heard.Add((response.MsgId, response.ErrorCode)));
        h.Pump();
        var beforeTheDestroy = heard.Count;

        gate.SetResult();
        h.Pump();

        Assert.Equal(0, beforeTheDestroy);
        Assert.Equal([("Pong", ErrorCodes.Success)], heard);
        Assert.True(((StageHost)h.Stages[1].Link).IsClosed);
    }

    /// <summary>Starts a handler on the stage that waits for the returned gate, so what is posted meanwhile stays queued.</summary>
    /// <summary>Creates stages 1 and 2; stage 2 answers every server request with "Pong".</summary>
    private static void CreateStagesWhereTwoAnswersPong(RuntimeHarness h)
    {
        h.CreateStage(1);
        h.CreateStage(2);
        h.Stages[2].OnServer = (stage, packet) =>
        {
            stage.Link.Reply(packet, "Pong", Payload.Empty, ErrorCodes.Success);
            return ValueTask.CompletedTask;
        };
    }

    private static TaskCompletionSource HoldTheMailbox(RuntimeHarness h, long stageId)
    {
        var gate = new TaskCompletionSource();
        h.Stages[stageId].OnServer = async (_, _) => await gate.Task;
        h.Stages[stageId].Link.SendToStage(RuntimeHarness.PlayNode, stageId, "Hold", Payload.Empty);
        h.Pump();
        return gate;
    }

    /// <summary>Stage 2 holds two requests of stage 1's, sent at 0 s and 10 s with a 30 s timeout: due at 30 s and 40 s.</summary>
    private static (List<Packet> Held, long Start) HoldTwoRequestsDueAt30And40Seconds(RuntimeHarness h)
    {
        h.CreateStage(1);
        h.CreateStage(2);
        var held = new List<Packet>();
        h.Stages[2].OnServer = (_, packet) =>
        {
            held.Add(packet);
            return ValueTask.CompletedTask;
        };
        var start = h.Clock.NowTicks;
        _ = h.Stages[1].Link.RequestToStage(RuntimeHarness.PlayNode, 2, "First", Payload.Empty, Timeout);
        h.Pump();
        h.Clock.AdvanceTo(start + TimeSpan.FromSeconds(10).Ticks);
        _ = h.Stages[1].Link.RequestToStage(RuntimeHarness.PlayNode, 2, "Second", Payload.Empty, Timeout);
        h.Pump();
        return (held, start);
    }

    /// <summary>Records each mailbox post, lifecycle event and handler hook the node reports. Invariant: entries in report order; one thread.</summary>
    private sealed class PostRecorder : RuntimeObserver
    {
        public List<(long StageId, int Length, int External)> Posts { get; } = [];

        public List<(long Instance, long AccountId, LifecycleEvent Event)> Lifecycle { get; } = [];

        public override void OnMailboxPosted(string nodeId, long stageId, int mailboxLength, int externalLength) =>
            Posts.Add((stageId, mailboxLength, externalLength));

        public override void OnLifecycle(string nodeId, long stageId, long actorInstance, long accountId, LifecycleEvent lifecycleEvent) =>
            Lifecycle.Add((actorInstance, accountId, lifecycleEvent));

        public List<string?> Entered { get; } = [];

        public int Exited { get; private set; }

        public List<string?> Completed { get; } = [];

        public override void OnHandlerEntered(string nodeId, long stageId, StageWorkKind kind, string? msgId) => Entered.Add(msgId);

        public override void OnHandlerExited(string nodeId, long stageId) => Exited++;

        public override void OnMessageCompleted(string nodeId, long stageId, StageWorkKind kind, string? msgId) => Completed.Add(msgId);
    }

    /// <summary>Addresses replies as the standard node does, recording each request a handler started on and each it addressed. Invariant: one entry per call; one thread.</summary>
    private sealed class RecordingAddressing : IReplyAddressing
    {
        public List<string> Addressed { get; } = [];

        public List<string> Dispatched { get; } = [];

        public void OnRequestDispatched(in ReplyToken token) => Dispatched.Add(token.RequestMsgId);

        public ReplyToken AddressOf(in Packet request)
        {
            Addressed.Add(request.MsgId);
            return request.ReplyToken;
        }
    }

    /// <summary>An actor whose authentication names the reply msg id the test sets (empty: none). Invariant: account from the payload.</summary>
    private sealed class NamedReplyActor(IActorLink link, Func<string> replyMsgId) : IActor
    {
        public IActorLink Link { get; } = link;

        public ValueTask OnCreate() => ValueTask.CompletedTask;

        public ValueTask<AuthenticateResult> OnAuthenticate(Packet packet) =>
            ValueTask.FromResult(AuthenticateResult.Success(BitConverter.ToInt64(packet.Payload.Span), replyMsgId(), Payload.Empty));

        public ValueTask OnPostAuthenticate() => ValueTask.CompletedTask;

        public ValueTask OnDestroy() => ValueTask.CompletedTask;
    }

    /// <summary>
    /// A play server with one stage (id 1) on a manual executor and clock, built with the observer and parts a test
    /// needs (the harness always uses its own recorder and the standard parts). Invariant: nothing runs until the
    /// executor is pumped. Threading: the test's thread only.
    /// </summary>
    private sealed class ObservedNode : IDisposable
    {
        public ObservedNode(RuntimeObserver observer, ServerOptions? options = null, NodeParts? parts = null)
        {
            Executor = new ManualExecutor();
            Pool = new MessagePool(new MessagePoolOptions { CheckedMode = true });
            var seams = new NodeSeams(new ManualTimeProvider(), Executor, new Xoshiro256StarStar(7), Pool) { Observer = observer, Parts = parts ?? NodeParts.Standard };
            Play = new PlayServer("play-1", seams, options ?? new ServerOptions { DefaultStageType = "room" });
            Play.RegisterStage("room", link => Stage = new ScriptedStage(link), link => new ScriptedActor(link));
            _ = Play.CreateStage("room", 1, "create", Payload.Empty);
            Executor.RunUntilIdle();
        }

        public ManualExecutor Executor { get; }

        public MessagePool Pool { get; }

        public PlayServer Play { get; }

        public ScriptedStage Stage { get; private set; } = null!;

        public StageHost Host => (StageHost)Stage.Link;

        public RecordingConnection Join(long accountId)
        {
            var connection = new RecordingConnection(this);
            connection.Request(Play.Options.AuthenticateMsgId, BitConverter.GetBytes(accountId));
            Executor.RunUntilIdle();
            return connection;
        }

        public void Dispose() => Play.Dispose();
    }

    /// <summary>A client connection of an <see cref="ObservedNode"/> that keeps each reply's error code by seq. Invariant: one entry per seq.</summary>
    private sealed class RecordingConnection : IClientConnection
    {
        private readonly ObservedNode _node;
        private readonly Dictionary<ushort, ushort> _replies = [];
        private readonly long _sessionId;
        private ushort _nextSeq;

        public RecordingConnection(ObservedNode node)
        {
            _node = node;
            _sessionId = node.Play.Connect(this);
        }

        public ushort Request(string msgId, byte[]? payload = null)
        {
            var seq = ++_nextSeq;
            _node.Play.OnClientFrame(_sessionId, msgId, seq, 1, _node.Pool.Copy(payload ?? [1], "client"));
            return seq;
        }

        public ushort Request(string msgId, ClientFrameBatch batch)
        {
            var seq = ++_nextSeq;
            _node.Play.OnClientFrame(_sessionId, msgId, seq, 1, _node.Pool.Copy([1], "client"), 0, batch);
            return seq;
        }

        public ushort ReplyTo(ushort seq) => _replies[seq];

        public bool TrySend(string msgId, ushort msgSeq, long stageId, ushort errorCode, Payload payload)
        {
            _replies.Add(msgSeq, errorCode);
            payload.DisposeIfOwner();
            return true;
        }

        public void Close(string reason)
        {
        }
    }
}
