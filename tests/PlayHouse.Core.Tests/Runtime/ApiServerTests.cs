using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;

namespace PlayHouse.Core.Tests.Runtime;

/// <summary>
/// The API server's own rules: handler registration refuses bad arguments and a second handler, an unknown message is
/// dropped, counted and answered once, a request over the ledger's cap never reaches its handler, only requests are
/// announced to a reply-addressing part, and every payload the server takes is owned under the name of its route.
/// </summary>
public sealed class ApiServerTests
{
    [Fact]
    public void Handle_RefusesAnEmptyMsgIdOrANullHandler_NamingTheArgument()
    {
        using var h = new RuntimeHarness();

        var emptyId = Assert.Throws<ArgumentException>(() => h.Api.Handle("", (_, _) => ValueTask.CompletedTask));
        var noHandler = Assert.Throws<ArgumentNullException>(() => h.Api.Handle("Ask", null!));

        Assert.Equal("msgId", emptyId.ParamName);
        Assert.Equal("handler", noHandler.ParamName);
    }

    [Fact]
    public void Handle_ASecondTimeForOneMsgId_IsRefusedNamingTheMsgIdAndTheNode()
    {
        using var h = new RuntimeHarness();
        h.Api.Handle("Ask", (_, _) => ValueTask.CompletedTask);

        var second = Assert.Throws<InvalidOperationException>(() => h.Api.Handle("Ask", (_, _) => ValueTask.CompletedTask));

        Assert.Equal($"API msg id 'Ask' already has a handler on {RuntimeHarness.ApiNode}.", second.Message);
    }

    [Fact]
    public void UnknownMessage_IsDroppedCountedAndAnsweredOnce_WithoutReachingAnyHandler()
    {
        using var h = new RuntimeHarness();
        h.Api.Handle("Ask", (_, _) => ValueTask.CompletedTask);

        var task = h.Api.RequestToApi(RuntimeHarness.ApiNode, "Nope", h.Bytes(1, 2));
        h.Pump();

        Assert.Equal(ErrorCodes.HandlerNotFound, RuntimeHarness.Completed(task).ErrorCode);
        Assert.Equal([("unknown-api-msg", (string?)"Nope")], h.Events.Dropped);
        Assert.Equal((1L, 0L), (h.Api.Counters.UnknownApiMessages, h.Api.Counters.HandlerFailures));
        Assert.Equal(0, h.Api.UnansweredRequestCount);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void RequestOverTheLedgersCap_NeverReachesItsHandler_AndItsPayloadIsReleased()
    {
        using var h = new RuntimeHarness(new ServerOptions { DefaultStageType = RuntimeHarness.StageType, UnansweredRequestsMax = 1 });
        var held = new List<Packet>();
        h.Api.Handle("Hold", (_, packet) =>
        {
            held.Add(packet);
            return ValueTask.CompletedTask;
        });

        var first = h.Api.RequestToApi(RuntimeHarness.ApiNode, "Hold", h.Bytes(1));
        var second = h.Api.RequestToApi(RuntimeHarness.ApiNode, "Hold", h.Bytes(2));
        h.Pump();

        Assert.Single(held);
        Assert.False(first.IsCompleted);
        Assert.Equal(ErrorCodes.TooManyUnansweredRequests, RuntimeHarness.Completed(second).ErrorCode);
        h.Api.Reply(held[0], ErrorCodes.Success);
        h.Pump();
        Assert.Equal(ErrorCodes.Success, RuntimeHarness.Completed(first).ErrorCode);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void ReplyAddressingPart_HearsOfEachRequestAHandlerStartsOn_AndOfNoOneWayMessage()
    {
        var addressing = new RecordingAddressing();
        using var h = new RuntimeHarness(parts: NodeParts.Standard with { ReplyAddressing = _ => addressing });
        h.Api.Handle("Note", (_, _) => ValueTask.CompletedTask);
        h.Api.Handle("Ask", (link, packet) =>
        {
            link.Reply(packet, ErrorCodes.Success);
            return ValueTask.CompletedTask;
        });

        h.Api.SendToApi(RuntimeHarness.ApiNode, "Note", Payload.Empty);
        var asked = h.Api.RequestToApi(RuntimeHarness.ApiNode, "Ask", Payload.Empty);
        h.Pump();

        Assert.Equal(ErrorCodes.Success, RuntimeHarness.Completed(asked).ErrorCode);
        Assert.Equal(["Ask"], addressing.Dispatched);
    }

    [Fact]
    public void CreatesSent_OwnTheirPayloadsUnderTheMeshRoute_UntilDelivered()
    {
        using var h = new RuntimeHarness();
        var named = h.Bytes(1);
        var unnamed = h.Bytes(2);
        var getOrCreate = h.Bytes(3);
        var oneWay = h.Bytes(4);

        h.Api.CreateStage(RuntimeHarness.PlayNode, RuntimeHarness.StageType, 1, "create", named);
        h.Api.CreateStage(RuntimeHarness.PlayNode, RuntimeHarness.StageType, "create", unnamed);
        h.Api.GetOrCreateStage(RuntimeHarness.PlayNode, RuntimeHarness.StageType, 3, "create", getOrCreate);
        h.Api.SendToStage(RuntimeHarness.PlayNode, 1, "Note", oneWay);

        Assert.All([named, unnamed, getOrCreate, oneWay], p => Assert.Contains("ownership moved to 'mesh'", StaleReason(p)));
        h.Pump();
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void HandlersReply_OwnsItsPayloadUnderTheReplyRoute()
    {
        using var h = new RuntimeHarness();
        var reason = "";
        h.Api.Handle("Ask", (link, packet) =>
        {
            var answer = h.Bytes(7);
            link.Reply(packet, "Answer", answer);
            reason = StaleReason(answer);
            return ValueTask.CompletedTask;
        });

        var asked = h.Api.RequestToApi(RuntimeHarness.ApiNode, "Ask", Payload.Empty);
        h.Pump();

        byte[] answered;
        using (var response = RuntimeHarness.Completed(asked))
        {
            answered = response.Payload.Span.ToArray();
        }

        Assert.Equal([(byte)7], answered);
        Assert.Contains("ownership moved to 'reply'", reason);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void InProcessMesh_RefusesANullExecutorOrNode_NamingTheArgument()
    {
        using var h = new RuntimeHarness();

        var noExecutor = Assert.Throws<ArgumentNullException>(() => new InProcessMesh(null!));
        var noNode = Assert.Throws<ArgumentNullException>(() => h.Mesh.Join(null!));

        Assert.Equal("executor", noExecutor.ParamName);
        Assert.Equal("node", noNode.ParamName);
    }

    /// <summary>Why a use of <paramref name="payload"/> now fails: the pool's stale-handle message, naming the owner.</summary>
    internal static string StaleReason(Payload payload) => Assert.Throws<PoolOwnershipException>(() => payload.Move("test-probe")).Message;

    /// <summary>Addresses replies as the standard node does, noting the msg id of each request a handler starts on.</summary>
    private sealed class RecordingAddressing : IReplyAddressing
    {
        public List<string> Dispatched { get; } = [];

        public void OnRequestDispatched(in ReplyToken token) => Dispatched.Add(token.RequestMsgId);

        public ReplyToken AddressOf(in Packet request) => request.ReplyToken;
    }
}
