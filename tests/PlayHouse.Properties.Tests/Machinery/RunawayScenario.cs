using PlayHouse.Simulation;
using PlayHouse.Simulation.Cluster;
using PlayHouse.Simulation.Runs;

namespace PlayHouse.Properties.Tests.Machinery;

/// <summary>When a <see cref="RunawayScenario"/> starts its endless loop.</summary>
public enum RunawayPhase
{
    /// <summary>As the workload starts: the workload can never finish.</summary>
    Workload,

    /// <summary>When the workload is done and the run winds down.</summary>
    WindDown,
}

/// <summary>
/// DELIBERATELY FLAWED. A catalogue scenario with one more piece of work: an executor work item that, each time it runs,
/// schedules itself again, the way a stage that posts itself a message from every handler or a callback that re-arms
/// itself with no delay does. It never lets virtual time move, so no virtual time limit ends the run; only the event
/// budget does. Not in the runner's catalogue: only the runaway tests use it.
/// </summary>
public sealed class RunawayScenario(IScenario inner, RunawayPhase phase) : IScenario
{
    public string Name => "runaway-" + inner.Name;

    public string Description => $"{inner.Description}, plus a work item that reschedules itself forever ({phase})";

    public SimOptions Defaults => inner.Defaults;

    /// <summary>How often the loop has run, over every run of this instance.</summary>
    public long Spins { get; private set; }

    public void Configure(SimClusterBuilder builder, SimOptions options) => inner.Configure(builder, options);

    public IScenarioRun Start(SimCluster cluster, ScenarioContext context)
    {
        var run = new Run(inner.Start(cluster, context), this, cluster.World, phase);
        if (phase == RunawayPhase.Workload)
        {
            run.StartLoop();
        }

        return run;
    }

    private sealed class Run(IScenarioRun inner, RunawayScenario scenario, SimWorld world, RunawayPhase phase) : IScenarioRun, IThreadPoolWorkItem
    {
        public bool IsDone => inner.IsDone;

        public string Progress => inner.Progress;

        public IReadOnlyList<KeyValuePair<string, string>> Metrics => inner.Metrics;

        public void OnFault(FaultStep step) => inner.OnFault(step);

        public void Finish()
        {
            inner.Finish();
            if (phase == RunawayPhase.WindDown)
            {
                StartLoop();
            }
        }

        public void StartLoop() => world.Executor.Schedule(this);

        // The flaw: every run of the item queues it again at the same instant.
        public void Execute()
        {
            scenario.Spins++;
            world.Executor.Schedule(this);
        }
    }
}
