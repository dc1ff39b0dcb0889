using PlayHouse.Core.Seams;
using PlayHouse.Simulation.Checkers;
using PlayHouse.Simulation.Cluster;
using PlayHouse.Simulation.Metrics;

namespace PlayHouse.Simulation.Runs;

/// <summary>
/// A clock for reports only: how long a run took on the wall. It never reaches the simulation; the runner
/// CLI supplies the real one and tests supply none.
/// </summary>
public interface IWallClock
{
    /// <summary>Elapsed wall time since the clock started.</summary>
    TimeSpan Elapsed { get; }
}

/// <summary>Progress of a run, reported every <see cref="RunSettings.ProgressEvents"/> events.</summary>
public readonly record struct RunProgress(long Events, TimeSpan VirtualTime, string Workload);

/// <summary>How to run: where the trace and progress go.</summary>
public sealed record RunSettings
{
    /// <summary>Receives one canonical line per traced event; null writes none (the hash is kept either way).</summary>
    public TextWriter? TraceWriter { get; init; }

    public Action<RunProgress>? Progress { get; init; }

    public long ProgressEvents { get; init; } = 250_000;

    public IWallClock? WallClock { get; init; }

    /// <summary>Events between the cheap per-step checks (1 = after every event).</summary>
    public int CheckEveryEvents { get; init; } = 1;

    /// <summary>
    /// Memory to reuse from the previous run on this thread (see <see cref="RunScratch"/>); null allocates it for this
    /// run alone. Runs that share one scratch must run one after another.
    /// </summary>
    public RunScratch? Scratch { get; init; }

    /// <summary>
    /// Receives the run's round-trip samples when it ends (merged in, so one histogram can gather many runs: a swarm's
    /// latency distribution per scenario), or null. It must have <see cref="LatencyHistogram"/>'s default layout.
    /// </summary>
    public LatencyHistogram? RttSink { get; init; }

    /// <summary>Watches the run from its first event to its end (a timeline being recorded), or null.</summary>
    public IRunRecorder? Recorder { get; init; }
}

/// <summary>
/// Watches one simulated run: attached once the cluster is built (before the first record of the trace) and told when
/// the run is over, with the checkers that judged it. It may listen to the trace and tap the network; it must not
/// change the world.
/// </summary>
/// <remarks>Called on the thread that runs the simulation.</remarks>
public interface IRunRecorder
{
    void OnStart(SimCluster cluster);

    /// <summary>The run is over (passed, failed or crashed); the cluster is about to be disposed.</summary>
    void OnEnd(SimCluster cluster, CheckerSet checkers);
}

/// <summary>
/// Runs one scenario from one seed: builds the cluster with the checkers as every node's observer, applies
/// the fault plan, steps the world until the workload is done (or the virtual time limit), winds down to
/// quiescence and checks everything. The result says pass, invariant violation, liveness failure or crash.
/// </summary>
public static class SimRunner
{
    public static SimReport Run(IScenario scenario, ulong seed, SimOptions options, RunSettings? settings = null)
    {
        ArgumentNullException.ThrowIfNull(scenario);
        ArgumentNullException.ThrowIfNull(options);
        settings ??= new RunSettings();
        options.Validate();
        var wallStart = settings.WallClock?.Elapsed ?? TimeSpan.Zero;
        CheckerSet? checkers = null;
        SimCluster? cluster = null;
        var rtt = settings.Scratch?.TakeRtt() ?? new LatencyHistogram();
        IScenarioRun? run = null;
        string? crash = null;
        var timedOut = false;
        var eventsMax = options.EventBudget;
        try
        {
            var builder = new SimClusterBuilder(seed)
                .WithPlayServers(options.PlayServers)
                .WithApiServers(options.ApiServers)
                .WithClients(options.Clients, inFlightMax: Math.Min(ushort.MaxValue - 1, options.InFlight + 1))
                .WithNetwork(options.ToPathOptions())
                .WithMeshSemantics(options.Mesh)
                .WithStreamStores(settings.Scratch?.StreamStores)
                // The world's own livelock limit is the run's budget: the runner stops at the budget first and reports a
                // liveness failure, so the world's exception stays a backstop for anything that steps it elsewhere.
                .WithWorldOptions(new SimWorldOptions { ExploreSchedules = options.ExploreSchedules, EventsMax = eventsMax })
                .WithObserver(c =>
                {
                    checkers = new CheckerSet(c.World.Time, new CheckerSetOptions { LivenessWindow = TimeSpan.FromMilliseconds(options.LivenessWindowMs), SingleThreaded = true }, c.World.Trace);
                    return checkers;
                });
            scenario.Configure(builder, options);
            cluster = builder.Build();
            var world = cluster.World;
            world.Trace.Attach(settings.TraceWriter);
            settings.Recorder?.OnStart(cluster);
            if (options.Flaws.Length > 0)
            {
                // A flawed run's trace starts by naming its flaws, so its hash never equals a correct run's by accident.
                world.Trace.Record(0, "flaws", text: options.Flaws);
            }
            foreach (var node in cluster.Nodes)
            {
                checkers!.Queues.WatchMailboxes(node.Server, checkers.Options.MailboxInternalEntriesAllowance);
            }

            checkers!.Lifecycle.WatchRegistries(cluster.StageRegistries);

            var context = new ScenarioContext(options, new Xoshiro256StarStar(cluster.WorkloadSeed), checkers!, rtt);
            // Start inside the simulation's context, so any await in the scenario's setup resumes on the world.
            world.SynchronizationContext.Run(() => run = scenario.Start(cluster, context));
            if (run is null)
            {
                throw new InvalidOperationException($"Scenario '{scenario.Name}' did not start.");
            }

            var ledger = new FaultLedger(cluster.Network.Counters, options);
            var faults = new FaultApplier(cluster, options, run.OnFault, ledger);
            faults.Schedule(options.Faults);
            if (!options.Faults.IsEmpty)
            {
                world.ScheduleAt(options.Faults.HealedAt.Ticks, new Callback(() => checkers!.Liveness.FaultsHealedAt(world.NowTicks)));
            }

            var limitTicks = TimeSpan.FromMilliseconds(options.VirtualTimeLimitMs).Ticks;

            // The world's context stays installed across the loop, so each step need not swap it in and out.
            var callerContext = SynchronizationContext.Current;
            SynchronizationContext.SetSynchronizationContext(world.SynchronizationContext);
            try
            {
                timedOut = StepUntilDone(world, run, checkers!, limitTicks, eventsMax, settings);
            }
            finally
            {
                SynchronizationContext.SetSynchronizationContext(callerContext);
            }

            var workloadEndTicks = world.NowTicks;
            var runaway = !run.IsDone && world.EventsExecuted >= eventsMax ? Runaway.InWorkload : Runaway.None;
            run.Finish();

            // Wind down: let every close, timeout and in-flight byte play out, then check the quiet world. The event
            // budget holds here too: a loop that starts only once the workload is done would otherwise spin forever.
            var quiet = world.RunUntilQuiet(world.NowTicks + TimeSpan.FromMinutes(10).Ticks, eventsMax);
            if (!quiet && runaway == Runaway.None && world.EventsExecuted >= eventsMax)
            {
                runaway = Runaway.InWindDown;
            }

            foreach (var (name, pool) in cluster.LivePools())
            {
                checkers!.Pools.Add("pool of " + name, pool);
            }

            // Stream bytes in flight live in the network's own stores, not in a pool; a quiet world holds none.
            var network = cluster.Network;
            checkers!.Pools.AddByteStore("network stream bytes in flight", () => network.StreamBytesInFlight);

            if (quiet)
            {
                checkers!.CheckQuiescent();
            }
            else
            {
                // A world still busy ten virtual minutes after the workload is not quiescent: judging leaks or open
                // requests now would blame work that is still going; the run fails for liveness instead.
                checkers!.CheckStep();
            }

            return SimReport.Create(scenario, seed, options, cluster, checkers, rtt, run, workloadEndTicks, timedOut, crash: null, settings.WallClock is null ? null : settings.WallClock.Elapsed - wallStart, quiet, runaway, ledger.Realizations());
        }
        catch (Exception ex) when (ex is not OutOfMemoryException && checkers is not null && checkers.Pools.HasRecorded(ex))
        {
            // A pool ownership fault that nothing caught ended the run where it was detected: the pool ledger already
            // recorded it as its violation (with the buffer and its owners), so the run failed that invariant, loudly,
            // rather than crashing. The world stopped mid-event, so nothing is judged at quiescence.
            return SimReport.Create(scenario, seed, options, cluster, checkers, rtt, run, cluster?.World.NowTicks ?? 0, timedOut, crash: null, settings.WallClock is null ? null : settings.WallClock.Elapsed - wallStart);
        }
        catch (Exception ex) when (ex is not OutOfMemoryException)
        {
            crash = ex.ToString();
            return SimReport.Create(scenario, seed, options, cluster, checkers, rtt, run, cluster?.World.NowTicks ?? 0, timedOut, crash, settings.WallClock is null ? null : settings.WallClock.Elapsed - wallStart);
        }
        finally
        {
            settings.RttSink?.Merge(rtt);
            if (cluster is not null && checkers is not null)
            {
                settings.Recorder?.OnEnd(cluster, checkers);
            }

            cluster?.World.Trace.Attach(null);
            cluster?.Dispose();
        }
    }

    /// <summary>
    /// Steps the world until the workload is done, a checker records a violation, nothing is left to happen, the
    /// virtual time limit passes or the event budget is spent; true for the last three (the run timed out). A method of
    /// its own, so that what the loop reads per event lives in registers, not in the closure the run's lambdas share.
    /// </summary>
    private static bool StepUntilDone(SimWorld world, IScenarioRun run, CheckerSet checkers, long limitTicks, long eventsMax, RunSettings settings)
    {
        var sinceCheck = 0;
        var checkEveryEvents = settings.CheckEveryEvents;
        var progress = settings.Progress;
        var progressEvents = settings.ProgressEvents;

        // Steps until the next progress report, counted down instead of taking the event count modulo the interval
        // after every step (a 64-bit division per event); it reports after the same events. A nonsensical interval
        // keeps the modulo, and with it whatever that did.
        var countdown = progress is not null && progressEvents > 0 ? progressEvents - (world.EventsExecuted % progressEvents) : long.MaxValue;
        while (!run.IsDone)
        {
            // The budget is checked here, outside the world, before the step that would exceed it: the world's own
            // livelock exception never fires in a run, and the run ends as a liveness failure with its replay line.
            if (world.NowTicks > limitTicks || world.EventsExecuted >= eventsMax)
            {
                return true;
            }

            if (!world.StepInContext())
            {
                // Nothing left to happen but the workload is not done: it is stuck.
                return true;
            }

            if (++sinceCheck >= checkEveryEvents)
            {
                sinceCheck = 0;
                if (!checkers.CheckStep())
                {
                    return false;
                }
            }

            if (--countdown == 0)
            {
                countdown = progressEvents;
                progress!(new RunProgress(world.EventsExecuted, world.Now, run.Progress));
            }
            else if (progress is not null && progressEvents <= 0 && world.EventsExecuted % progressEvents == 0)
            {
                progress(new RunProgress(world.EventsExecuted, world.Now, run.Progress));
            }
        }

        return false;
    }

    /// <summary>Whether a run spent its event budget, and in which phase.</summary>
    internal enum Runaway
    {
        None,

        /// <summary>Before the workload was done.</summary>
        InWorkload,

        /// <summary>While winding down after the workload.</summary>
        InWindDown,
    }

    private sealed class Callback(Action action) : IThreadPoolWorkItem
    {
        public void Execute() => action();
    }
}
