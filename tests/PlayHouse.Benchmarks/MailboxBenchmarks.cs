using BenchmarkDotNet.Attributes;
using Microsoft.Extensions.Time.Testing;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;
using PlayHouse.Core.Seams;

namespace PlayHouse.Benchmarks;

/// <summary>
/// The cost of one message through the core: dispatcher lookup, mailbox post, executor hand-off and the
/// stage turn that runs the handler. Target: 0 B allocated per message in steady state.
/// </summary>
[MemoryDiagnoser]
public class MailboxBenchmarks
{
    private const long StageId = 1;
    private const int Batch = 64;
    private ManualExecutor _executor = null!;
    private PlayServer _server = null!;
    private NullConnection _client = null!;
    private long _sessionId;
    private ushort _seq;

    [GlobalSetup]
    public void Setup()
    {
        _executor = new ManualExecutor();
        var pool = new MessagePool(new MessagePoolOptions { PreWarmCountPerClass = 64 });
        var seams = new NodeSeams(new FakeTimeProvider(), _executor, new Xoshiro256StarStar(1), pool);
        _server = new PlayServer("play-bench", seams, new ServerOptions { DefaultStageType = "room" });
        _server.RegisterStage("room", link => new EchoStage(link), link => new BenchActor(link));
        _client = new NullConnection();
        _sessionId = _server.Connect(_client);
        _server.OnClientFrame(_sessionId, _server.Options.AuthenticateMsgId, 1, StageId, pool.Copy(BitConverter.GetBytes(7L), "bench"));
        _executor.RunUntilIdle();
        if (_client.Frames != 1 || _client.LastErrorCode != ErrorCodes.Success)
        {
            throw new InvalidOperationException("The benchmark client failed to join its stage.");
        }
    }

    [GlobalCleanup]
    public void Cleanup() => _server.Dispose();

    /// <summary>One one-way server message: post, turn, handler.</summary>
    [Benchmark(Baseline = true)]
    public void PostAndTurn()
    {
        _server.OnMeshMessage(new MeshMessage { MsgId = "Tick", From = "api-bench", StageId = StageId });
        _executor.RunUntilIdle();
    }

    /// <summary>Sixty-four posts drained in turns; reported per message.</summary>
    [Benchmark(OperationsPerInvoke = Batch)]
    public void PostBatchThenTurn()
    {
        for (var i = 0; i < Batch; i++)
        {
            _server.OnMeshMessage(new MeshMessage { MsgId = "Tick", From = "api-bench", StageId = StageId });
        }

        _executor.RunUntilIdle();
    }

    /// <summary>A client request with a 64 B pooled payload, echoed back by the stage: the reply ledger included.</summary>
    [Benchmark]
    public void ClientRequestEcho()
    {
        var payload = _server.Pool.Rent(64, "bench");
        _seq = (ushort)(_seq == ushort.MaxValue ? 2 : _seq + 1);
        _server.OnClientFrame(_sessionId, "Echo", _seq, StageId, payload);
        _executor.RunUntilIdle();
    }

    private sealed class NullConnection : IClientConnection
    {
        public int Frames { get; private set; }

        public ushort LastErrorCode { get; private set; }

        public bool TrySend(string msgId, ushort msgSeq, long stageId, ushort errorCode, Payload payload)
        {
            Frames++;
            LastErrorCode = errorCode;
            payload.DisposeIfOwner();
            return true;
        }

        public void Close(string reason)
        {
        }
    }

    private sealed class EchoStage(IStageLink link) : IStage
    {
        public ValueTask<CreateResult> OnCreate(Packet packet) => ValueTask.FromResult(CreateResult.Success());

        public ValueTask OnPostCreate() => ValueTask.CompletedTask;

        public ValueTask<bool> OnJoinStage(IActor actor) => ValueTask.FromResult(true);

        public ValueTask OnPostJoinStage(IActor actor) => ValueTask.CompletedTask;

        public ValueTask OnConnectionChanged(IActor actor, bool connected) => ValueTask.CompletedTask;

        public ValueTask OnDispatch(IActor actor, Packet packet)
        {
            if (packet.IsRequest)
            {
                link.Reply(packet, packet.MsgId, packet.Payload);
            }

            return ValueTask.CompletedTask;
        }

        public ValueTask OnDispatch(Packet packet) => ValueTask.CompletedTask;

        public ValueTask OnDestroy() => ValueTask.CompletedTask;
    }

    private sealed class BenchActor(IActorLink link) : IActor
    {
        public IActorLink Link { get; } = link;

        public ValueTask OnCreate() => ValueTask.CompletedTask;

        public ValueTask<AuthenticateResult> OnAuthenticate(Packet packet) =>
            ValueTask.FromResult(AuthenticateResult.Success(BitConverter.ToInt64(packet.Payload.Span)));

        public ValueTask OnPostAuthenticate() => ValueTask.CompletedTask;

        public ValueTask OnDestroy() => ValueTask.CompletedTask;
    }
}
