using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;
using PlayHouse.Core.Seams;
using PlayHouse.Core.Tests.Seams;

namespace PlayHouse.Core.Tests.Runtime;

/// <summary>
/// A play server and an API server on a manual executor and a manual clock, joined by an in-process mesh.
/// Nothing runs until <see cref="Pump"/>; time moves only through <see cref="Advance"/>.
/// </summary>
internal sealed class RuntimeHarness : IDisposable
{
    public const string PlayNode = "play-1";
    public const string ApiNode = "api-1";
    public const string StageType = "room";

    public RuntimeHarness(ServerOptions? options = null, Func<IStageLink, IStage>? stageFactory = null, Func<IActorLink, IActor>? actorFactory = null, NodeParts? parts = null)
    {
        Executor = new ManualExecutor();
        Clock = new ManualTimeProvider();
        Pool = new MessagePool(new MessagePoolOptions { CheckedMode = true });
        Events = new LifecycleRecorder();
        var seams = new NodeSeams(Clock, Executor, new Xoshiro256StarStar(42), Pool) { Observer = Events, Parts = parts ?? NodeParts.Standard };
        var serverOptions = options ?? new ServerOptions { DefaultStageType = StageType };
        Play = new PlayServer(PlayNode, seams, serverOptions);
        Api = new ApiServer(ApiNode, seams, serverOptions);
        Mesh = new InProcessMesh(Executor).Join(Play).Join(Api);
        Play.RegisterStage(StageType, stageFactory ?? MakeStage, actorFactory ?? (link => new ScriptedActor(link)));
    }

    public ManualExecutor Executor { get; }

    /// <summary>Every stage object the default factory made, by stage id (the latest one per id).</summary>
    public Dictionary<long, ScriptedStage> Stages { get; } = [];

    /// <summary>Applied to each stage the default factory makes, before it is created.</summary>
    public Action<ScriptedStage>? ConfigureStage { get; set; }

    public ManualTimeProvider Clock { get; }

    public MessagePool Pool { get; }

    public LifecycleRecorder Events { get; }

    public PlayServer Play { get; }

    public ApiServer Api { get; }

    public InProcessMesh Mesh { get; }

    /// <summary>Runs every queued work item, including the ones they queue.</summary>
    public int Pump() => Executor.RunUntilIdle();

    /// <summary>Moves virtual time forward and runs whatever became due.</summary>
    public void Advance(TimeSpan delta)
    {
        Pump();
        var target = Clock.NowTicks + delta.Ticks;
        while (Clock.TryFireNext(target))
        {
            Pump();
        }

        Clock.AdvanceTo(target);
        Pump();
    }

    private ScriptedStage MakeStage(IStageLink link)
    {
        var stage = new ScriptedStage(link);
        ConfigureStage?.Invoke(stage);
        Stages[link.StageId] = stage;
        return stage;
    }

    public Payload Bytes(params byte[] bytes) => Pool.Copy(bytes, "test");

    public Payload Text(string text) => Pool.Copy(System.Text.Encoding.UTF8.GetBytes(text), "test");

    /// <summary>Creates a stage through the API server and returns the creation reply.</summary>
    public Response CreateStage(long stageId, string msgId = "create")
    {
        var task = Api.CreateStage(PlayNode, StageType, stageId, msgId, Payload.Empty);
        Pump();
        return Completed(task);
    }

    /// <summary>The result of a task that must have completed by now (the manual executor ran it).</summary>
    public static T Completed<T>(Task<T> task)
    {
        Assert.True(task.IsCompleted, "The task did not complete after pumping the executor.");
        return task.GetAwaiter().GetResult();
    }

    /// <summary>Connects a fake client, authenticates it into a stage, and returns it.</summary>
    public FakeClient Join(long stageId, long accountId)
    {
        var client = new FakeClient(this);
        client.Authenticate(stageId, accountId);
        Pump();
        return client;
    }

    public void Dispose()
    {
        Play.Dispose();
        Api.Dispose();
    }
}

/// <summary>A client connection that records what the server sends it.</summary>
internal sealed class FakeClient : IClientConnection
{
    private readonly RuntimeHarness _harness;
    private ushort _nextSeq;

    public FakeClient(RuntimeHarness harness)
    {
        _harness = harness;
        SessionId = harness.Play.Connect(this);
    }

    public long SessionId { get; }

    public List<ReceivedFrame> Received { get; } = [];

    public string? ClosedReason { get; private set; }

    /// <summary>Refuses every send when true, as a full send queue would.</summary>
    public bool RefuseSends { get; set; }

    public bool TrySend(string msgId, ushort msgSeq, long stageId, ushort errorCode, Payload payload)
    {
        if (RefuseSends)
        {
            payload.DisposeIfOwner();
            return false;
        }

        Received.Add(new ReceivedFrame(msgId, msgSeq, stageId, errorCode, payload.Span.ToArray()));
        payload.DisposeIfOwner();
        return true;
    }

    public void Close(string reason) => ClosedReason = reason;

    public ushort Authenticate(long stageId, long accountId) =>
        Request(_harness.Play.Options.AuthenticateMsgId, stageId, BitConverter.GetBytes(accountId));

    public ushort Request(string msgId, long stageId, byte[] payload)
    {
        var seq = ++_nextSeq;
        _harness.Play.OnClientFrame(SessionId, msgId, seq, stageId, _harness.Pool.Copy(payload, "client"));
        return seq;
    }

    public void Send(string msgId, long stageId, byte[] payload) =>
        _harness.Play.OnClientFrame(SessionId, msgId, 0, stageId, _harness.Pool.Copy(payload, "client"));

    public ReceivedFrame ReplyTo(ushort seq) => Assert.Single(Received, f => f.MsgSeq == seq);

    public void Disconnect() => _harness.Play.Disconnect(SessionId);
}

internal sealed record ReceivedFrame(string MsgId, ushort MsgSeq, long StageId, ushort ErrorCode, byte[] Payload);

/// <summary>Records lifecycle events and handler overlap for assertions.</summary>
internal sealed class LifecycleRecorder : RuntimeObserver
{
    private readonly Dictionary<long, int> _activeByStage = [];

    public List<(long StageId, long Actor, LifecycleEvent Event)> Lifecycle { get; } = [];

    public List<(string NodeId, ulong MsgSeq, RequestOutcome Outcome, ushort ErrorCode)> Requests { get; } = [];

    /// <summary>Completions of requests issued by one node.</summary>
    public IEnumerable<(string NodeId, ulong MsgSeq, RequestOutcome Outcome, ushort ErrorCode)> RequestsOf(string nodeId) => Requests.Where(r => r.NodeId == nodeId);

    /// <summary>The most handlers of one stage that were ever active at once (must stay 1).</summary>
    public int MaxConcurrentHandlers { get; private set; }

    public override void OnLifecycle(string nodeId, long stageId, long actorInstance, long accountId, LifecycleEvent lifecycleEvent) =>
        Lifecycle.Add((stageId, actorInstance, lifecycleEvent));

    public override void OnRequestCompleted(string nodeId, ulong msgSeq, string targetNodeId, RequestOutcome outcome, ushort errorCode) =>
        Requests.Add((nodeId, msgSeq, outcome, errorCode));

    public override void OnHandlerEntered(string nodeId, long stageId, StageWorkKind kind, string? msgId)
    {
        var active = _activeByStage.GetValueOrDefault(stageId) + 1;
        _activeByStage[stageId] = active;
        MaxConcurrentHandlers = Math.Max(MaxConcurrentHandlers, active);
    }

    public override void OnHandlerExited(string nodeId, long stageId) => _activeByStage[stageId]--;

    /// <summary>The next mailbox post's hook throws (a faulty diagnostics hook), once.</summary>
    public bool ThrowOnNextMailboxPost { get; set; }

    public override void OnMailboxPosted(string nodeId, long stageId, int mailboxLength, int externalLength)
    {
        if (ThrowOnNextMailboxPost)
        {
            ThrowOnNextMailboxPost = false;
            throw new InvalidOperationException($"hook fault on a post to stage {stageId}");
        }
    }

    public List<(long StageId, StageWorkKind Kind, string? MsgId, Exception Error)> Failures { get; } = [];

    public override void OnHandlerFailed(string nodeId, long stageId, StageWorkKind kind, string? msgId, Exception error) =>
        Failures.Add((stageId, kind, msgId, error));

    public List<(string Reason, string? MsgId)> Dropped { get; } = [];

    public override void OnDropped(string nodeId, string reason, string? msgId) => Dropped.Add((reason, msgId));

    public IEnumerable<LifecycleEvent> EventsOf(long stageId) => Lifecycle.Where(e => e.StageId == stageId).Select(e => e.Event);
}
