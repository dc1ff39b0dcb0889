using PlayHouse.Core.Seams;
using PlayHouse.Simulation.Checkers;
using PlayHouse.Simulation.Cluster;
using PlayHouse.Simulation.Metrics;

namespace PlayHouse.Simulation.Runs;

/// <summary>
/// A simulation scenario: how to build the cluster for some options, and how to drive it. Scenarios take their
/// size from <see cref="SimOptions"/> (small defaults for tests, seed-sized through the runner).
/// </summary>
public interface IScenario
{
    string Name { get; }

    string Description { get; }

    /// <summary>Small options suitable for a test run of this scenario.</summary>
    SimOptions Defaults { get; }

    /// <summary>Adds stage types, API handlers and server options to the builder.</summary>
    void Configure(SimClusterBuilder builder, SimOptions options);

    /// <summary>Starts the workload on a built cluster.</summary>
    IScenarioRun Start(SimCluster cluster, ScenarioContext context);
}

/// <summary>A scenario in progress.</summary>
public interface IScenarioRun
{
    /// <summary>True once the workload has done everything it set out to do.</summary>
    bool IsDone { get; }

    /// <summary>A one-line account of progress for the runner's progress display.</summary>
    string Progress { get; }

    /// <summary>
    /// A fault step the scenario may act on, after the cluster applied it: client steps (disconnect, reconnect),
    /// whose sessions the scenario owns, and node steps (crash, restart), whose lost state it may rebuild.
    /// </summary>
    void OnFault(FaultStep step);

    /// <summary>Winds down: disconnects clients and closes stages so the cluster can reach quiescence.</summary>
    void Finish();

    /// <summary>Scenario-specific numbers for the report, in a fixed order.</summary>
    IReadOnlyList<KeyValuePair<string, string>> Metrics { get; }
}

/// <summary>What a scenario gets from the runner: the options, the workload PRNG, the checkers and the RTT histogram.</summary>
public sealed class ScenarioContext(SimOptions options, IRandomSource random, CheckerSet checkers, LatencyHistogram rtt)
{
    public SimOptions Options { get; } = options;

    /// <summary>The workload's PRNG, seeded from the world's child seed for the workload.</summary>
    public IRandomSource Random { get; } = random;

    /// <summary>Where workload stages and clients report what the checkers verify.</summary>
    public CheckerSet Checkers { get; } = checkers;

    /// <summary>Round trips measured after warm-up, in virtual ticks.</summary>
    public LatencyHistogram Rtt { get; } = rtt;
}
