using PlayHouse.Core.Seams;
using PlayHouse.Simulation;
using PlayHouse.Simulation.Cluster;
using PlayHouse.Simulation.Network;
using PlayHouse.Simulation.Runs;

namespace PlayHouse.Properties.Tests.Machinery;

/// <summary>
/// DELIBERATELY FLAWED. The simulated network with new defaults reaching only the paths created after them: a path in use
/// keeps the options it was created with, the way a network that copies its settings into each path when the path is
/// first used behaves. A loss burst (or a latency change) set while connections are open silently injects nothing on
/// them. Only the fault-realization tests use it, to show that the fault ledger catches it.
/// </summary>
internal sealed class PathsKeepTheirOptionsNetwork(SimWorld world, Xoshiro256StarStar random, PathOptions defaults) : SimNetwork(world, random, defaults)
{
    // The flaw: the paths already in use are left as they were.
    internal override void ApplyDefaultsToPaths(PathOptions options)
    {
    }
}

/// <summary>
/// A catalogue scenario with one part of the simulation replaced before the cluster is built (the way a flawed twin is
/// plugged in). Not in the runner's catalogue: the runner builds the standard parts.
/// </summary>
internal sealed class ReplacedPartScenario(IScenario inner, string part, Action<SimClusterBuilder, SimOptions> plugIn) : IScenario
{
    public string Name => inner.Name;

    public string Description => $"{inner.Description} ({part})";

    public SimOptions Defaults => inner.Defaults;

    public void Configure(SimClusterBuilder builder, SimOptions options)
    {
        inner.Configure(builder, options);
        plugIn(builder, options);
    }

    public IScenarioRun Start(SimCluster cluster, ScenarioContext context) => inner.Start(cluster, context);
}
