using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;
using PlayHouse.Core.Seams;
using PlayHouse.Core.Tests.Seams;

namespace PlayHouse.Core.Tests.Runtime;

/// <summary>
/// What play and API servers share: their construction's refusals, replies that break the exactly-once rule (to a
/// one-way message, a second one, a reply frame without a seq), replies judged at the turn's clock reading, sends the
/// mesh refuses (an unknown server, a full send queue, no mesh), requests refused past the pending cap, and reply
/// callbacks of a requester without a stage.
/// </summary>
public sealed class ServerNodeTests
{
    [Fact]
    public void Constructor_RefusesAnEmptyNodeId_MissingSeams_AndInvalidOptions_ByName()
    {
        var seams = new NodeSeams(new ManualTimeProvider(), new ManualExecutor(), new Xoshiro256StarStar(1), new MessagePool(new MessagePoolOptions()));

        var emptyId = Assert.Throws<ArgumentException>(() => new PlayServer("", seams));
        var noSeams = Assert.Throws<ArgumentNullException>(() => new PlayServer("play-1", null!));
        var badOptions = Assert.ThrowsAny<ArgumentException>(() => new PlayServer("play-1", seams, new ServerOptions { MailboxCapacityMax = 0 }));

        Assert.Equal(("nodeId", "seams"), (emptyId.ParamName, noSeams.ParamName));
        Assert.Contains(nameof(ServerOptions.MailboxCapacityMax), badOptions.Message);
    }

    [Fact]
    public void ReplyToAOneWayMessage_FailsTheHandler_AndReleasesTheReplysPayload()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var client = h.Join(1, accountId: 7);
        h.Stages[1].OnClient = (s, _, packet) =>
        {
            s.Link.Reply(packet, "Answer", h.Bytes(5));
            return ValueTask.CompletedTask;
        };

        client.Send("Tell", 1, [1]);
        h.Pump();

        var failure = Assert.Single(h.Events.Failures);
        Assert.Equal("Reply(Answer) to a packet that is not a request: one-way messages take no reply.", failure.Error.Message);
        Assert.Equal((0L, "Tell"), (h.Play.Counters.SecondReplyAttempts, failure.MsgId));
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void SecondReplyToARequest_FailsTheHandler_NamingTheRequest_AndReleasesTheSecondPayload()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var client = h.Join(1, accountId: 7);
        h.Stages[1].OnClient = (s, _, packet) =>
        {
            s.Link.Reply(packet, "First", h.Bytes(1));
            s.Link.Reply(packet, "Second", h.Bytes(2));
            return ValueTask.CompletedTask;
        };

        var seq = client.Request("Ask", 1, [1]);
        h.Pump();

        var failure = Assert.Single(h.Events.Failures);
        Assert.StartsWith("Request Ask (", failure.Error.Message);
        Assert.EndsWith(") was already answered; a request takes exactly one reply.", failure.Error.Message);
        // Counted twice: the handler's second reply, and the runtime's error reply for the failed handler, which finds
        // the request answered and sends nothing.
        Assert.Equal(("First", 2L), (client.ReplyTo(seq).MsgId, h.Play.Counters.SecondReplyAttempts));
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void ReplyFrameWithoutASeq_IsDroppedAndCounted_AndItsPayloadReleased()
    {
        using var h = new RuntimeHarness();

        h.Play.OnMeshMessage(new MeshMessage { IsReply = true, MsgSeq = 0, MsgId = "Stray", From = RuntimeHarness.ApiNode, Payload = h.Bytes(1, 2) });

        Assert.Equal(1L, h.Play.Counters.UnknownReplies);
        Assert.Contains(("reply-without-seq", "Stray"), h.Events.Dropped);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void RepliesInOneTurn_AreJudgedAtTheTurnsFirstClockReading()
    {
        // The handler of the second request moves the clock past the request timeout before it replies; the turn's
        // reading, taken at the first reply, still finds both requests in time.
        using var h = new RuntimeHarness(new ServerOptions { DefaultStageType = RuntimeHarness.StageType, RequestTimeout = TimeSpan.FromSeconds(1) });
        h.CreateStage(1);
        var client = h.Join(1, accountId: 7);
        h.Stages[1].OnClient = (s, _, packet) =>
        {
            if (packet.MsgId == "Slow")
            {
                h.Clock.AdvanceTo(h.Clock.NowTicks + TimeSpan.FromSeconds(2).Ticks);
            }

            s.Link.Reply(packet, ErrorCodes.Success);
            return ValueTask.CompletedTask;
        };

        var fast = client.Request("Fast", 1, [1]);
        var slow = client.Request("Slow", 1, [2]);
        h.Pump();

        Assert.Equal((ErrorCodes.Success, ErrorCodes.Success), (client.ReplyTo(fast).ErrorCode, client.ReplyTo(slow).ErrorCode));
        Assert.Equal(0L, h.Play.Counters.RepliesAfterExpiry);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void RequestToAnUnknownServer_FailsFastWithServerNotFound_AndIsDroppedByName()
    {
        using var h = new RuntimeHarness();

        var task = h.Api.RequestToStage("nowhere", 1, "Lost", h.Bytes(1));

        using var response = RuntimeHarness.Completed(task);
        Assert.Equal(ErrorCodes.ServerNotFound, response.ErrorCode);
        Assert.Equal(1L, h.Api.Counters.MeshSendsToUnknownServers);
        Assert.Contains(("unknown-server", "Lost"), h.Events.Dropped);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void SendWithNoMeshWired_IsCountedAsToAnUnknownServer_AndItsPayloadReleased()
    {
        using var h = new RuntimeHarness();
        h.Api.Mesh = null;

        h.Api.SendToStage(RuntimeHarness.PlayNode, 1, "Unwired", h.Bytes(1, 2));

        Assert.Equal(1L, h.Api.Counters.MeshSendsToUnknownServers);
        Assert.Contains(("unknown-server", "Unwired"), h.Events.Dropped);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void RequestIntoAFullSendQueue_FailsFastWithMeshSendQueueFull_AndIsDroppedByName()
    {
        using var h = new RuntimeHarness();
        h.Api.Mesh = new FullMesh();

        var task = h.Api.RequestToStage(RuntimeHarness.PlayNode, 1, "Clogged", h.Bytes(1));

        using var response = RuntimeHarness.Completed(task);
        Assert.Equal(ErrorCodes.MeshSendQueueFull, response.ErrorCode);
        Assert.Equal((1L, 0L), (h.Api.Counters.MeshSendsRefused, h.Api.Counters.MeshSendsToUnknownServers));
        Assert.Contains(("mesh-send-queue-full", "Clogged"), h.Events.Dropped);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void RequestPastThePendingCap_FailsFastOnce_AndReleasesItsPayload()
    {
        using var h = new RuntimeHarness(new ServerOptions { DefaultStageType = RuntimeHarness.StageType, PendingRequestsMax = 1 });
        h.CreateStage(1);
        h.Stages[1].OnServer = (_, _) => ValueTask.CompletedTask;
        var first = h.Api.RequestToStage(RuntimeHarness.PlayNode, 1, "Held", h.Bytes(1));

        var second = h.Api.RequestToStage(RuntimeHarness.PlayNode, 1, "Refused", h.Bytes(2));
        h.Pump();

        using var refused = RuntimeHarness.Completed(second);
        Assert.Equal(ErrorCodes.TooManyPendingRequests, refused.ErrorCode);
        Assert.False(first.IsCompleted);
        Assert.Equal(["Held"], h.Stages[1].Dispatched);
        Assert.Single(h.Events.RequestsOf(RuntimeHarness.ApiNode), r => r.Outcome == RequestOutcome.FailedFast);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void ReplyCallbackOfARequesterWithoutAStage_RunsOnTheExecutor_AndItsResponseIsReleasedAfter()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        byte[]? echoed = null;

        h.Api.RequestToStage(RuntimeHarness.PlayNode, 1, "Echo", h.Bytes(4, 5), response => echoed = response.Payload.Span.ToArray());
        var beforeThePump = echoed;
        h.Pump();

        Assert.Null(beforeThePump);
        Assert.Equal([4, 5], echoed);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void RequestWithCallback_RefusesANullCallback()
    {
        using var h = new RuntimeHarness();

        var error = Assert.Throws<ArgumentNullException>(() => h.Api.RequestToStage(RuntimeHarness.PlayNode, 1, "Echo", Payload.Empty, callback: null!));

        Assert.Equal("callback", error.ParamName);
    }

    [Fact]
    public void ReplyCallbackOfAStageThatClosedMeanwhile_NeverRuns_AndItsResponseIsReleased()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        h.CreateStage(2);
        var held = new List<Packet>();
        var callbackRan = false;
        h.Stages[1].OnServer = (s, _) =>
        {
            s.Link.RequestToStage(RuntimeHarness.PlayNode, 2, "Ask", Payload.Empty, _ => callbackRan = true);
            return ValueTask.CompletedTask;
        };
        h.Stages[2].OnServer = (_, packet) =>
        {
            held.Add(packet);
            return ValueTask.CompletedTask;
        };
        h.Api.SendToStage(RuntimeHarness.PlayNode, 1, "Start", Payload.Empty);
        h.Pump();
        h.Play.CloseStage(1);
        h.Pump();

        h.Stages[2].Link.Reply(held.Single(), "Answer", h.Bytes(7, 7));
        h.Pump();

        Assert.False(callbackRan);
        Assert.False(h.Play.HasStage(1));
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void Dispose_FailsWhatStillWaitsWithServerStopping_AndDisarmsTheRequestTimer()
    {
        using var h = new RuntimeHarness(new ServerOptions { DefaultStageType = RuntimeHarness.StageType, IdleStageCloseAfter = null });
        h.CreateStage(1);
        h.Stages[1].OnServer = (_, _) => ValueTask.CompletedTask;
        var pending = h.Api.RequestToStage(RuntimeHarness.PlayNode, 1, "Held", Payload.Empty);
        h.Pump();
        var armedBefore = h.Clock.ArmedTimerCount;

        h.Api.Dispose();

        using var response = RuntimeHarness.Completed(pending);
        Assert.Equal(ErrorCodes.ServerStopping, response.ErrorCode);
        Assert.Equal((1, 0), (armedBefore, h.Clock.ArmedTimerCount));
    }

    [Fact]
    public void IssuedRequest_IsReportedToTheObserver_WithItsSeqAndTarget()
    {
        var observer = new IssuedRecorder();
        var executor = new ManualExecutor();
        var seams = new NodeSeams(new ManualTimeProvider(), executor, new Xoshiro256StarStar(1), new MessagePool(new MessagePoolOptions())) { Observer = observer };
        using var api = new ApiServer(RuntimeHarness.ApiNode, seams);
        using var play = new PlayServer(RuntimeHarness.PlayNode, seams);
        new InProcessMesh(executor).Join(play).Join(api);

        var task = api.RequestToStage(RuntimeHarness.PlayNode, 5, "Ask", Payload.Empty);
        executor.RunUntilIdle();

        using var response = RuntimeHarness.Completed(task);
        Assert.Equal([(RuntimeHarness.ApiNode, 1UL, RuntimeHarness.PlayNode, 5L, "Ask")], observer.Issued);
        Assert.Equal(ErrorCodes.StageNotFound, response.ErrorCode);
    }

    /// <summary>A mesh whose send queue towards every server is at its cap.</summary>
    private sealed class FullMesh : IMeshTransport
    {
        public bool Send(string targetNodeId, in MeshMessage message) => throw new InvalidOperationException("only TrySend is used");

        public MeshSendResult TrySend(string targetNodeId, in MeshMessage message)
        {
            message.Payload.DisposeIfOwner();
            return MeshSendResult.QueueFull;
        }
    }

    /// <summary>Records the requests the nodes report issued.</summary>
    private sealed class IssuedRecorder : RuntimeObserver
    {
        public List<(string NodeId, ulong MsgSeq, string TargetNodeId, long TargetStageId, string MsgId)> Issued { get; } = [];

        public override void OnRequestIssued(string nodeId, ulong msgSeq, string targetNodeId, long targetStageId, string msgId) =>
            Issued.Add((nodeId, msgSeq, targetNodeId, targetStageId, msgId));
    }
}
