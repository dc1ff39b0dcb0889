using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;
using PlayHouse.Core.Seams;
using PlayHouse.Simulation.Checkers;

namespace PlayHouse.Simulation.Tests.Checkers;

/// <summary>
/// A play server and an API server whose observer is a <see cref="CheckerSet"/>, on a manual executor and clock
/// (or a <see cref="SimWorld"/>), with a checked pool. <see cref="Pump"/> runs one work item at a time and
/// calls <see cref="CheckerSet.CheckStep"/> after each, as a simulation run loop does.
/// </summary>
internal sealed class CheckerHarness : IDisposable
{
    public const string PlayNode = "play-1";
    public const string ApiNode = "api-1";
    public const string StageType = "room";

    private readonly Func<bool> _runOne;
    private long _nextNonce;

    private CheckerHarness(TimeProvider time, IExecutor executor, Func<bool> runOne, ServerOptions? options, CheckerSetOptions? checkerOptions, SimTrace? trace)
    {
        _runOne = runOne;
        Time = time;
        Pool = new MessagePool(new MessagePoolOptions { CheckedMode = true });
        Checkers = new CheckerSet(time, checkerOptions, trace);
        var seams = new NodeSeams(time, executor, new Xoshiro256StarStar(7), Pool) { Observer = Checkers };
        // Pump steps until nothing is left, which on a world jumps virtual time to the next timer: the expiry of a
        // disconnected actor and the idle close would fire inside any Pump, so this harness runs without them.
        var serverOptions = options ?? new ServerOptions { DisconnectedActorExpiry = null, IdleStageCloseAfter = null };
        Play = new PlayServer(PlayNode, seams, serverOptions);
        Api = new ApiServer(ApiNode, seams, serverOptions);
        _ = new InProcessMesh(executor).Join(Play).Join(Api);
        Play.RegisterStage(StageType, link => new CheckedRoom(link, Checkers, TakeCreateRefusal), link => new RoomActor(link));
        Api.Handle("Lookup", static (link, packet) =>
        {
            // Echo the nonce back, so the stage can answer its client with it.
            link.Reply(packet, "LookupReply", link.Pool.Copy(packet.Payload.Span, "api lookup reply"));
            return ValueTask.CompletedTask;
        });
        Checkers.Watch(Play);
        Checkers.Watch(Api);
    }

    public TimeProvider Time { get; }

    public MessagePool Pool { get; }

    public CheckerSet Checkers { get; }

    public PlayServer Play { get; }

    public ApiServer Api { get; }

    /// <summary>How many of the next stage creates the room refuses.</summary>
    public int CreatesToRefuse { get; set; }

    /// <summary>Work items run so far through <see cref="Pump"/>.</summary>
    public long Steps { get; private set; }

    public static CheckerHarness OnManualExecutor(ServerOptions? options = null, CheckerSetOptions? checkerOptions = null)
    {
        var executor = new ManualExecutor();
        return new CheckerHarness(CheckerClock.AtZero(), executor, executor.RunOne, options, checkerOptions, trace: null);
    }

    public static CheckerHarness OnWorld(SimWorld world, ServerOptions? options = null) =>
        new(world.Time, world.Executor, world.Step, options, checkerOptions: null, world.Trace);

    /// <summary>Runs every queued item, checking the per-step invariants after each.</summary>
    public void Pump()
    {
        while (_runOne())
        {
            Steps++;
            Checkers.CheckStep();
        }
    }

    public long NextNonce() => ++_nextNonce;

    private bool TakeCreateRefusal()
    {
        if (CreatesToRefuse == 0)
        {
            return false;
        }

        CreatesToRefuse--;
        return true;
    }

    public TestClient Connect(long clientId) => new(this, clientId);

    public Response CreateStage(long stageId)
    {
        var task = Api.CreateStage(PlayNode, StageType, stageId, "CreateRoom", Payload.Empty);
        Pump();
        Assert.True(task.IsCompleted, "The create request did not complete after pumping.");
        return task.GetAwaiter().GetResult();
    }

    public void Dispose()
    {
        Play.Dispose();
        Api.Dispose();
    }
}

/// <summary>
/// A simulated client as a workload would drive one: each request carries a nonce the server echoes, and the
/// client reports sends, completions and progress to the checkers.
/// </summary>
internal sealed class TestClient : IClientConnection
{
    private readonly CheckerHarness _harness;
    private readonly CheckerSet _checkers;
    private ushort _nextSeq;
    private long _nextSenderSeq;

    public TestClient(CheckerHarness harness, long clientId)
    {
        _harness = harness;
        _checkers = harness.Checkers;
        ClientId = clientId;
        SessionId = harness.Play.Connect(this);
        _checkers.Liveness.Register(clientId, _checkers.Context.NowTicks);
    }

    public long ClientId { get; }

    public long SessionId { get; }

    public long StageId { get; private set; }

    public List<(ushort MsgSeq, string MsgId, ushort ErrorCode)> Replies { get; } = [];

    public ushort Authenticate(long stageId, long accountId)
    {
        StageId = stageId;
        return Request(_harness.Play.Options.AuthenticateMsgId, BitConverter.GetBytes(accountId));
    }

    /// <summary>Sends a request whose payload is its nonce followed by <paramref name="body"/>.</summary>
    public ushort Request(string msgId, byte[]? body = null)
    {
        var seq = ++_nextSeq;
        var nonce = _harness.NextNonce();
        var bytes = new byte[8 + (body?.Length ?? 0)];
        BitConverter.TryWriteBytes(bytes, nonce);
        body?.CopyTo(bytes, 8);
        _checkers.Requests.OnClientRequestSent(ClientId, seq, nonce);
        _harness.Play.OnClientFrame(SessionId, msgId, seq, StageId, _harness.Pool.Copy(bytes, "client frame"));
        return seq;
    }

    /// <summary>A one-way message carrying this client's next sender sequence, which the stage feeds to the FIFO checker.</summary>
    public void SendInOrder(long skip = 0)
    {
        _nextSenderSeq += 1 + skip;
        _harness.Play.OnClientFrame(SessionId, "Seq", 0, StageId, _harness.Pool.Copy(BitConverter.GetBytes(_nextSenderSeq), "client frame"));
    }

    public void Disconnect() => _harness.Play.Disconnect(SessionId);

    public bool TrySend(string msgId, ushort msgSeq, long stageId, ushort errorCode, Payload payload)
    {
        if (msgSeq != 0)
        {
            Replies.Add((msgSeq, msgId, errorCode));
            if (errorCode == ErrorCodes.Success && payload.Length >= 8)
            {
                _checkers.Requests.OnClientRequestCompleted(ClientId, msgSeq, BitConverter.ToInt64(payload.Span));
                _checkers.Liveness.OnProgress(ClientId, _checkers.Context.NowTicks);
            }
            else
            {
                _checkers.Requests.OnClientRequestFailed(ClientId, msgSeq, errorCode);
            }
        }

        payload.DisposeIfOwner();
        return true;
    }

    public void Close(string reason)
    {
    }
}

/// <summary>A room whose handlers exercise requests, awaits, one-way ordering, closing and (on demand) a leak.</summary>
internal sealed class CheckedRoom(IStageLink link, CheckerSet checkers, Func<bool> refuseCreate) : IStage
{
    private Payload _leaked;

    public ValueTask<CreateResult> OnCreate(Packet packet) =>
        ValueTask.FromResult(refuseCreate() ? CreateResult.Refuse() : CreateResult.Success());

    public ValueTask OnPostCreate() => ValueTask.CompletedTask;

    public ValueTask<bool> OnJoinStage(IActor actor) => ValueTask.FromResult(true);

    public ValueTask OnPostJoinStage(IActor actor) => ValueTask.CompletedTask;

    public ValueTask OnConnectionChanged(IActor actor, bool connected) => ValueTask.CompletedTask;

    public async ValueTask OnDispatch(IActor actor, Packet packet)
    {
        switch (packet.MsgId)
        {
            case "Seq":
                checkers.Fifo.OnDelivered(link.NodeId, link.StageId, ((RoomActor)actor).AccountId, BitConverter.ToInt64(packet.Payload.Span));
                break;
            case "Echo":
                link.Reply(packet, "EchoReply", packet.Payload);
                break;
            case "Lookup":
                // The handler awaits the API server; the stage stays busy until the reply resumes it.
                using (var response = await link.RequestToApi(CheckerHarness.ApiNode, "Lookup", link.Pool.Copy(packet.Payload.Span, "room lookup")))
                {
                    link.Reply(packet, "LookupReply", link.Pool.Copy(response.Payload.Span, "room lookup reply"));
                }

                break;
            case "Leak":
                _leaked = link.Pool.Rent(32, "leaky handler");
                link.Reply(packet, "LeakReply", link.Pool.Copy(packet.Payload.Span, "leak reply"));
                break;
            case "Close":
                link.Reply(packet, "CloseReply", link.Pool.Copy(packet.Payload.Span, "close reply"));
                link.CloseStage();
                break;
            default:
                link.Reply(packet, ErrorCodes.HandlerNotFound);
                break;
        }
    }

    public ValueTask OnDispatch(Packet packet) => ValueTask.CompletedTask;

    public ValueTask OnDestroy() => ValueTask.CompletedTask;

    public override string ToString() => $"CheckedRoom({link.StageId}, leaked {_leaked})";
}

/// <summary>An actor whose account id is the 8 bytes after the nonce; it answers authentication with the nonce.</summary>
internal sealed class RoomActor(IActorLink link) : IActor
{
    public IActorLink Link { get; } = link;

    public long AccountId { get; private set; }

    public ValueTask OnCreate() => ValueTask.CompletedTask;

    public ValueTask<AuthenticateResult> OnAuthenticate(Packet packet)
    {
        var bytes = packet.Payload.Span;
        AccountId = bytes.Length >= 16 ? BitConverter.ToInt64(bytes[8..]) : 0;
        return ValueTask.FromResult(AccountId == 0
            ? AuthenticateResult.Refuse()
            : AuthenticateResult.Success(AccountId, "AuthenticateReply", Link.Stage.Pool.Copy(bytes[..8], "auth reply")));
    }

    public ValueTask OnPostAuthenticate() => ValueTask.CompletedTask;

    public ValueTask OnDestroy() => ValueTask.CompletedTask;
}
