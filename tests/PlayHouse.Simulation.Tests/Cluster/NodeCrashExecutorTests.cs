using PlayHouse.Simulation.Cluster;

namespace PlayHouse.Simulation.Tests.Cluster;

public sealed class NodeCrashExecutorTests
{
    [Fact]
    public void WorkQueuedOnANodeBeforeItsCrash_DoesNotRunAfterTheCrash_WhileOtherNodesWorkDoes()
    {
        // A stage turn posted at the crash's instant is already in the world's queue when the crash runs (schedule
        // exploration can order them so); a dead process runs nothing, so the turn must be dropped.
        using var cluster = new SimClusterBuilder(3)
            .WithPlayServers(2)
            .Build();
        var crashed = cluster.Node("play-1");
        var survivor = cluster.Node("play-2");
        var ran = new List<string>();
        crashed.Executor.Schedule(new Work(() => ran.Add("play-1 before crash")));
        survivor.Executor.Schedule(new Work(() => ran.Add("play-2")));

        Assert.True(cluster.Crash("play-1"));
        crashed.Executor.Schedule(new Work(() => ran.Add("play-1 after crash")));
        cluster.World.RunUntilQuiet();

        Assert.Equal(["play-2"], ran);
        Assert.Equal(1, crashed.Executor.DroppedAfterCrash);
        Assert.Equal(0, survivor.Executor.DroppedAfterCrash);
    }

    [Fact]
    public void ANodesGuardedWork_RunsInScheduleOrder_AndReusesItsGuards()
    {
        using var cluster = new SimClusterBuilder(4)
            .WithPlayServers(1)
            .Build();
        var executor = cluster.Node("play-1").Executor;
        var ran = new List<int>();
        for (var i = 0; i < 5; i++)
        {
            var id = i;
            executor.Schedule(new Work(() =>
            {
                ran.Add(id);
                if (id < 3)
                {
                    // Scheduled from inside a running item, which has just given its guard back.
                    executor.Schedule(new Work(() => ran.Add(10 + id)));
                }
            }));
        }

        cluster.World.RunUntilQuiet();

        Assert.Equal([0, 1, 2, 3, 4, 10, 11, 12], ran);
        Assert.Equal(0, executor.DroppedAfterCrash);
    }

    private sealed class Work(Action action) : IThreadPoolWorkItem
    {
        public void Execute() => action();
    }
}
