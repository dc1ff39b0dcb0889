using System.Collections.Concurrent;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;
using PlayHouse.Core.Seams;

namespace PlayHouse.Core.Tests.Runtime;

/// <summary>
/// The same runtime on the real seams: the ThreadPool executor and the system clock, with clients calling
/// in from many threads at once. These tests show the guarantees hold by construction, not by the manual
/// executor's single thread.
/// </summary>
public sealed class RealThreadsTests
{
    private static readonly TimeSpan Patience = TimeSpan.FromSeconds(30);

    [Fact]
    public async Task ConcurrentFirstJoinsFromManyThreads_CreateTheStageOnce()
    {
        var observer = new ConcurrencyObserver();
        using var server = NewServer(observer);
        const int clientCount = 32;
        var clients = Enumerable.Range(0, clientCount).Select(_ => new ThreadSafeClient(server)).ToArray();
        using var start = new Barrier(clientCount);
        var threads = clients.Select((c, i) => new Thread(() =>
        {
            start.SignalAndWait();
            c.Send(server.Options.AuthenticateMsgId, 1, 1, BitConverter.GetBytes((long)(i + 1)));
        })).ToArray();
        foreach (var t in threads)
        {
            t.Start();
        }

        foreach (var t in threads)
        {
            t.Join();
        }

        await Task.WhenAll(clients.Select(c => c.WaitForFrames(1)));

        Assert.Equal(1, observer.Count(LifecycleEvent.StageCreate));
        Assert.Equal(clientCount, observer.Count(LifecycleEvent.ActorPostJoinStage));
        Assert.All(clients, c => Assert.Equal(ErrorCodes.Success, c.Frames.Single().ErrorCode));
    }

    [Fact]
    public async Task AwaitingHandlersUnderConcurrentLoad_NeverOverlapWithinAStage()
    {
        var observer = new ConcurrencyObserver();
        var stages = new ConcurrentBag<CountingStage>();
        using var server = NewServer(observer, link =>
        {
            var stage = new CountingStage(link);
            stages.Add(stage);
            return stage;
        });
        const int clientCount = 8;
        const int requestsPerClient = 300;
        var clients = Enumerable.Range(0, clientCount).Select(_ => new ThreadSafeClient(server)).ToArray();
        for (var i = 0; i < clientCount; i++)
        {
            clients[i].Send(server.Options.AuthenticateMsgId, 1, 1, BitConverter.GetBytes((long)(i + 1)));
        }

        await Task.WhenAll(clients.Select(c => c.WaitForFrames(1)));
        var threads = clients.Select(c => new Thread(() =>
        {
            for (var r = 0; r < requestsPerClient; r++)
            {
                c.Send("Add", (ushort)(r + 2), 1, [1]);
            }
        })).ToArray();
        foreach (var t in threads)
        {
            t.Start();
        }

        foreach (var t in threads)
        {
            t.Join();
        }

        await Task.WhenAll(clients.Select(c => c.WaitForFrames(1 + requestsPerClient)));

        // The stage's counter is a plain field: any overlap of handlers would lose increments.
        Assert.Equal(clientCount * requestsPerClient, stages.Single().Total);
        Assert.Equal(1, observer.MaxConcurrentHandlers);
        Assert.All(clients, c => Assert.All(c.Frames, f => Assert.Equal(ErrorCodes.Success, f.ErrorCode)));
        Assert.Equal(0, server.Pool.GetStatistics().Outstanding);
    }

    private static PlayServer NewServer(RuntimeObserver observer, Func<IStageLink, IStage>? stageFactory = null)
    {
        var seams = new NodeSeams(TimeProvider.System, ThreadPoolExecutor.Instance, new Xoshiro256StarStar(1), new MessagePool(new MessagePoolOptions { CheckedMode = true }))
        {
            Observer = observer,
        };
        var server = new PlayServer("play-real", seams, new ServerOptions { DefaultStageType = "room" });
        server.RegisterStage("room", stageFactory ?? (link => new CountingStage(link)), link => new ScriptedActor(link));
        return server;
    }

    private sealed class CountingStage(IStageLink link) : ScriptedStage(link)
    {
        public int Total { get; private set; }

        public override ValueTask<CreateResult> OnCreate(Packet packet)
        {
            OnClient = async (stage, actor, p) =>
            {
                var before = Total;
                await Task.Yield();
                Total = before + p.Payload.Span[0];
                stage.Link.Reply(p, ErrorCodes.Success);
            };
            return base.OnCreate(packet);
        }
    }

    private sealed class ConcurrencyObserver : RuntimeObserver
    {
        private readonly ConcurrentDictionary<long, int> _active = new();
        private readonly ConcurrentQueue<LifecycleEvent> _events = new();
        private int _max;

        public int MaxConcurrentHandlers => Volatile.Read(ref _max);

        public int Count(LifecycleEvent e) => _events.Count(x => x == e);

        public override void OnLifecycle(string nodeId, long stageId, long actorInstance, long accountId, LifecycleEvent lifecycleEvent) => _events.Enqueue(lifecycleEvent);

        public override void OnHandlerEntered(string nodeId, long stageId, StageWorkKind kind, string? msgId)
        {
            var now = _active.AddOrUpdate(stageId, 1, (_, v) => v + 1);
            int seen;
            while (now > (seen = Volatile.Read(ref _max)) && Interlocked.CompareExchange(ref _max, now, seen) != seen)
            {
            }
        }

        public override void OnHandlerExited(string nodeId, long stageId) => _active.AddOrUpdate(stageId, 0, (_, v) => v - 1);
    }

    private sealed class ThreadSafeClient : IClientConnection
    {
        private readonly PlayServer _server;
        private readonly ConcurrentQueue<ReceivedFrame> _frames = new();
        private readonly SemaphoreSlim _arrived = new(0);

        public ThreadSafeClient(PlayServer server)
        {
            _server = server;
            SessionId = server.Connect(this);
        }

        public long SessionId { get; }

        public IReadOnlyCollection<ReceivedFrame> Frames => _frames;

        public bool TrySend(string msgId, ushort msgSeq, long stageId, ushort errorCode, Payload payload)
        {
            _frames.Enqueue(new ReceivedFrame(msgId, msgSeq, stageId, errorCode, payload.Span.ToArray()));
            payload.DisposeIfOwner();
            _arrived.Release();
            return true;
        }

        public void Close(string reason)
        {
        }

        public void Send(string msgId, ushort msgSeq, long stageId, byte[] payload) =>
            _server.OnClientFrame(SessionId, msgId, msgSeq, stageId, _server.Pool.Copy(payload, "client"));

        public async Task WaitForFrames(int count)
        {
            while (_frames.Count < count)
            {
                if (!await _arrived.WaitAsync(Patience))
                {
                    throw new TimeoutException($"Session {SessionId} got {_frames.Count} of {count} frames within {Patience}.");
                }
            }
        }
    }
}
