using System.Collections.Concurrent;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;
using PlayHouse.Core.Seams;
using PlayHouse.Sim.Tcp;

namespace PlayHouse.Transport.Tcp.Tests;

/// <summary>
/// A core race the TCP scenarios' lifecycle checker found: a first join registered a new stage, and a second join on
/// another thread found it and queued its Join before the first join had queued the stage's Create, so an actor
/// was created in a stage that was not. The stage factory here holds the first join inside creation while a second
/// thread joins the same stage.
/// </summary>
public sealed class CoreRaceRegressionTests
{
    [Fact]
    public async Task ConcurrentFirstJoins_QueueBehindTheStagesCreate()
    {
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = true });
        var recorder = new LifecycleRecorder();
        using var server = new PlayServer("race", new NodeSeams(TimeProvider.System, ThreadPoolExecutor.Instance, EntropyRandomSource.Create(), pool) { Observer = recorder }, new ServerOptions { DefaultStageType = "slow-create" });
        using var factoryEntered = new ManualResetEventSlim();
        using var secondJoinPosted = new ManualResetEventSlim();
        var instances = 0;
        server.RegisterStage(
            "slow-create",
            link =>
            {
                if (Interlocked.Increment(ref instances) == 1)
                {
                    // Hold the first creation until the second join got in, or for a while if it cannot get in.
                    factoryEntered.Set();
                    secondJoinPosted.Wait(TimeSpan.FromMilliseconds(300));
                }

                return new EchoStage(link);
            },
            link => new EchoActor(link));
        var first = new RecordingConnection();
        var second = new RecordingConnection();
        var firstSession = server.Connect(first);
        var secondSession = server.Connect(second);

        var firstJoin = Task.Factory.StartNew(() => server.OnClientFrame(firstSession, EchoMsgIds.Authenticate, 1, 9, pool.Copy(TestServer.Account(1), "auth")), TaskCreationOptions.LongRunning);
        var secondJoin = Task.Factory.StartNew(
            () =>
            {
                factoryEntered.Wait(TestServer.Patience);
                server.OnClientFrame(secondSession, EchoMsgIds.Authenticate, 1, 9, pool.Copy(TestServer.Account(2), "auth"));
                secondJoinPosted.Set();
            },
            TaskCreationOptions.LongRunning);
        await Task.WhenAll(firstJoin, secondJoin).WaitAsync(TestServer.Patience);
        var replies = await Task.WhenAll(first.Reply, second.Reply).WaitAsync(TestServer.Patience);

        Assert.All(replies, code => Assert.Equal(ErrorCodes.Success, code));
        Assert.Equal(LifecycleEvent.StageCreate, recorder.Events.First(e => e.StageId == 9).Event);
        Assert.Equal(1, instances);
    }

    private sealed class LifecycleRecorder : RuntimeObserver
    {
        private readonly ConcurrentQueue<(long StageId, LifecycleEvent Event)> _events = new();

        public IReadOnlyList<(long StageId, LifecycleEvent Event)> Events => [.. _events];

        public override void OnLifecycle(string nodeId, long stageId, long actorInstance, long accountId, LifecycleEvent lifecycleEvent) =>
            _events.Enqueue((stageId, lifecycleEvent));
    }

    private sealed class RecordingConnection : IClientConnection
    {
        private readonly TaskCompletionSource<ushort> _reply = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public Task<ushort> Reply => _reply.Task;

        public bool TrySend(string msgId, ushort msgSeq, long stageId, ushort errorCode, Payload payload)
        {
            payload.DisposeIfOwner();
            _reply.TrySetResult(errorCode);
            return true;
        }

        public void Close(string reason) => _reply.TrySetResult(ushort.MaxValue);
    }
}
