using System.CommandLine;
using System.Globalization;
using System.Runtime;
using PlayHouse.Fixtures.Scenarios;
using PlayHouse.Simulation.Runs;

namespace PlayHouse.Sim.Cli;

/// <summary>
/// <c>bench sim</c>: simulated round trips per wall second through the full core with the fault network active,
/// against a bare event loop doing the same hops in the same process. <c>bench scale</c>: 10,000 clients x 100 requests.
/// </summary>
/// <remarks>
/// Method (seed 003): the two sides alternate which goes first over an even number of repeats (at least four) and the
/// ratio reported is the median of the per-repeat ratios, so warm-up, turbo and GC drift hit both sides alike.
/// Bytes per message on the simulated side are the steady state (sampled through the run's progress callback, setup
/// and report left out); the whole run's figure, setup included, is printed beside it.
/// Not thread-safe; everything runs on the calling thread.
/// </remarks>
internal sealed class BenchCommands(IRunView view, IWallClock clock)
{
    private const int RepeatsMin = 4;
    private const double ScaleBudgetWallSeconds = 10;

    // Allocation samples of the simulated side are taken this many events apart (about 30 per million round trips).
    private const long SteadySampleEvents = 100_000;

    public Command Build()
    {
        var bench = new Command("bench", "Benchmarks of the simulator (numbers for the README; nothing is asserted).");
        bench.Subcommands.Add(SimCommand());
        bench.Subcommands.Add(ScaleCommand());
        return bench;
    }

    /// <summary>The simulated side of <c>bench sim</c>: an echo with 1% loss, latency jitter, split segments and many clients.</summary>
    internal static SimOptions SimBenchOptions(long requests, int clients) => ScenarioCatalog.Create("echo").Defaults with
    {
        Clients = clients,
        Stages = 4,
        InFlight = 4,
        RequestsPerClient = (int)Math.Max(1, (requests + clients - 1) / clients),
        LossPercent = 1,
        LatencyShape = Simulation.Network.LatencyShape.Uniform,
        LatencyMsMin = 1,
        LatencyMsMean = 5,
        LatencyMsMax = 20,
        SplitPercent = 10,
    };

    private Command SimCommand()
    {
        var requests = new Option<long>("--requests") { Description = "Round trips per side per repeat.", DefaultValueFactory = _ => 1_000_000 };
        var seconds = new Option<double>("--seconds") { Description = "Keep adding pairs of repeats until this many wall seconds have passed (at least 4 repeats run).", DefaultValueFactory = _ => 0 };
        var clients = new Option<int>("--clients") { Description = "Simulated clients (the bare loop mirrors them).", DefaultValueFactory = _ => 100 };
        var seed = new Option<ulong>("--seed") { Description = "Seed of the simulated runs and the bare loop's PRNG.", DefaultValueFactory = _ => 1 };
        var warmUp = new Option<long>("--warm-up-requests") { Description = "Round trips per side of one unmeasured warm-up pair before the repeats (0 for none).", DefaultValueFactory = _ => 200_000 };
        var checkEvery = CheckEveryOption();
        var command = new Command("sim", "Simulated round trips per wall second through the full core (echo, 1% loss, jitter, split segments) against a bare PriorityQueue+Queue loop doing the same hops.")
        {
            requests, seconds, clients, seed, warmUp, checkEvery,
        };
        command.SetAction(parse =>
        {
            var requestCount = parse.GetValue(requests);
            var clientCount = parse.GetValue(clients);
            var checkEveryEvents = parse.GetValue(checkEvery);
            var warmUpCount = parse.GetValue(warmUp);
            if (requestCount < 1 || clientCount < 1 || checkEveryEvents < 1)
            {
                throw new UsageException("--requests, --clients and --check-every must be at least 1.");
            }

            if (warmUpCount < 0)
            {
                throw new UsageException("--warm-up-requests must be 0 or more.");
            }

            var warmUpOptions = warmUpCount == 0 ? null : SimBenchOptions(warmUpCount, clientCount);
            return RunSimBench(SimBenchOptions(requestCount, clientCount), warmUpOptions, parse.GetValue(seed), parse.GetValue(seconds), checkEveryEvents);
        });
        return command;
    }

    private Command ScaleCommand()
    {
        var sets = new Option<string[]>("--set") { Description = "Overrides on top of the scale run's options (key=value).", AllowMultipleArgumentsPerToken = true };
        var seed = new Option<ulong>("--seed") { Description = "Seed of the run.", DefaultValueFactory = _ => 1 };
        var checkEvery = CheckEveryOption();
        var command = new Command("scale", $"10,000 simulated clients x 100 requests with latency and 1% loss (echo); prints wall and virtual seconds and the outcome (budget {ScaleBudgetWallSeconds} s wall, reported, not asserted).")
        {
            sets, seed, checkEvery,
        };
        command.SetAction(parse =>
        {
            var scenario = ScenarioCatalog.Create("echo");
            var defaults = scenario.Defaults;
            var scale = CliInputs.ApplySets(defaults, ["clients=10000", "requestsPerClient=100", "lossPercent=1", "stages=8"]);
            var options = CliInputs.ApplySets(scale, parse.GetValue(sets));
            var runSeed = parse.GetValue(seed);
            var checkEveryEvents = parse.GetValue(checkEvery);
            if (checkEveryEvents < 1)
            {
                throw new UsageException("--check-every must be at least 1.");
            }

            view.Line(options.ToBanner(runSeed));
            var report = view.Run("scale", progress => SimRunner.Run(scenario, runSeed, options, new RunSettings
            {
                Progress = progress,
                ProgressEvents = 20_000,
                WallClock = clock,
                CheckEveryEvents = checkEveryEvents,
            }));
            var wall = report.WallSeconds ?? 0;
            view.Line(Invariant($"scale.clients={options.Clients}"));
            view.Line(Invariant($"scale.requestsPerClient={options.RequestsPerClient}"));
            view.Line(Invariant($"scale.roundTrips={report.RequestsSucceeded}"));
            view.Line(Invariant($"scale.events={report.Events}"));
            view.Line(Invariant($"scale.wallSeconds={wall:0.###}"));
            view.Line(Invariant($"scale.virtualSeconds={report.VirtualSeconds:0.###}"));
            view.Line(Invariant($"scale.roundTripsPerSecond={(wall > 0 ? report.RequestsSucceeded / wall : 0):0}"));
            view.Line(Invariant($"scale.budgetWallSeconds={ScaleBudgetWallSeconds}"));
            view.Line(Invariant($"scale.withinBudget={(wall <= ScaleBudgetWallSeconds ? "true" : "false")}"));
            view.Line(Invariant($"scale.outcome={report.Outcome}"));
            view.Line(Invariant($"processors={Environment.ProcessorCount}"));
            view.Line("gc=" + GcMode());
            view.Report(report);
            return report.ExitCode;
        });
        return command;
    }

    private static Option<int> CheckEveryOption() => new("--check-every")
    {
        Description = "Events between the checkers' per-step checks on the simulated side (1 = after every event, as a normal run).",
        DefaultValueFactory = _ => 1,
    };

    private int RunSimBench(SimOptions options, SimOptions? warmUpOptions, ulong seed, double secondsMin, int checkEveryEvents)
    {
        var bare = BareOptions(options, seed);
        view.Line(options.ToBanner(seed));
        view.Line(Invariant($"requests={(long)options.Clients * options.RequestsPerClient}"));
        if (warmUpOptions is not null)
        {
            // One unmeasured pair first: the tiered JIT is still recompiling the simulated side's many methods
            // during its first run (that repeat measured a ratio about a third lower), and the bare loop's few
            // methods much sooner, so a cold first repeat would measure the compiler rather than the simulator.
            // The bare loop's own method is compiled optimised at once (see BareLoop.Run); the many short calls here
            // bring the generic queue code it calls to its final tier before the repeats, as the long simulated
            // warm-up does for the simulation's.
            var (_, warmUpReport) = MeasureSim(warmUpOptions, seed, checkEveryEvents);
            var bareWarmUp = BareOptions(warmUpOptions, seed);
            const int bareWarmUpRuns = 40;
            var bareWarmUpRun = bareWarmUp with { RequestsPerClient = Math.Max(1, bareWarmUp.RequestsPerClient / bareWarmUpRuns) };
            for (var i = 0; i < bareWarmUpRuns; i++)
            {
                BareLoop.Run(bareWarmUpRun);
            }
            view.Line(Invariant($"warmUp.requests={(long)warmUpOptions.Clients * warmUpOptions.RequestsPerClient}"));
            view.Line("warmUp.outcome=" + warmUpReport.Outcome);
        }

        var simRates = new List<double>();
        var bareRates = new List<double>();
        var ratios = new List<double>();
        var simBytes = new List<double>();
        var simWholeRunBytes = new List<double>();
        var bareBytes = new List<double>();
        var started = clock.Elapsed;
        SimReport? failed = null;
        for (var repeat = 0; repeat < RepeatsMin || repeat % 2 != 0 || (clock.Elapsed - started).TotalSeconds < secondsMin; repeat++)
        {
            // Even repeats run the simulation first, odd ones the bare loop first.
            var simFirst = repeat % 2 == 0;
            var bareSide = default(Measurement);
            if (!simFirst)
            {
                bareSide = MeasureBare(bare);
            }

            var (simSide, report) = MeasureSim(options, seed, checkEveryEvents);
            if (simFirst)
            {
                bareSide = MeasureBare(bare);
            }

            if (!report.Passed)
            {
                failed = report;
                break;
            }

            simRates.Add(simSide.RoundTripsPerSecond);
            bareRates.Add(bareSide.RoundTripsPerSecond);
            ratios.Add(simSide.RoundTripsPerSecond / bareSide.RoundTripsPerSecond);
            simBytes.Add(simSide.BytesPerRoundTrip);
            simWholeRunBytes.Add(simSide.WholeRunBytesPerRoundTrip);
            bareBytes.Add(bareSide.BytesPerRoundTrip);
            view.Line(Invariant(
                $"repeat.{repeat + 1}=order:{(simFirst ? "sim-first" : "bare-first")} sim.roundTripsPerSecond={simSide.RoundTripsPerSecond:0} bare.roundTripsPerSecond={bareSide.RoundTripsPerSecond:0} ratio={ratios[^1]:0.0000} sim.bytesPerMessage={simSide.BytesPerRoundTrip:0.0} sim.bytesPerMessageWholeRun={simSide.WholeRunBytesPerRoundTrip:0.0} bare.bytesPerMessage={bareSide.BytesPerRoundTrip:0.0} sim.gen2={simSide.Gen2Collections} bare.gen2={bareSide.Gen2Collections}"));
        }

        if (failed is not null)
        {
            // Rates of a failing run mean nothing: show why it failed instead.
            view.Line("sim.outcome=" + failed.Outcome);
            view.Report(failed);
            return failed.ExitCode;
        }

        view.Line(Invariant($"repeats={ratios.Count}"));
        view.Line("sim.outcome=pass");
        view.Line(Invariant($"sim.roundTripsPerSecond={Median(simRates):0}"));
        view.Line(Invariant($"bare.roundTripsPerSecond={Median(bareRates):0}"));
        view.Line(Invariant($"ratio.median={Median(ratios):0.0000}"));
        view.Line(Invariant($"sim.bytesPerMessage={Median(simBytes):0.0}"));
        view.Line(Invariant($"sim.bytesPerMessageWholeRun={Median(simWholeRunBytes):0.0}"));
        view.Line(Invariant($"bare.bytesPerMessage={Median(bareBytes):0.0}"));
        view.Line(Invariant($"processors={Environment.ProcessorCount}"));
        view.Line("gc=" + GcMode());
        return 0;
    }

    private static BareLoopOptions BareOptions(SimOptions options, ulong seed) => new()
    {
        Clients = options.Clients,
        Stages = options.Stages,
        InFlight = options.InFlight,
        RequestsPerClient = options.RequestsPerClient,
        MessageBytes = options.MessageBytes,
        Latency = options.ToPathOptions().Latency,
        LossProbability = options.LossPercent / 100,
        RetransmitDelay = options.ToPathOptions().RetransmitDelay,
        Seed = seed,
    };

    private (Measurement Side, SimReport Report) MeasureSim(SimOptions options, ulong seed, int checkEveryEvents)
    {
        Settle();
        var gen2 = GC.CollectionCount(2);
        var samples = new List<(long Events, long Bytes)>(64);
        var allocated = GC.GetAllocatedBytesForCurrentThread();
        var start = clock.Elapsed;
        var report = SimRunner.Run(ScenarioCatalog.Create("echo"), seed, options, new RunSettings
        {
            CheckEveryEvents = checkEveryEvents,
            Progress = progress => samples.Add((progress.Events, GC.GetAllocatedBytesForCurrentThread())),
            ProgressEvents = SteadySampleEvents,
        });
        var wall = clock.Elapsed - start;
        allocated = GC.GetAllocatedBytesForCurrentThread() - allocated;
        var roundTrips = Math.Max(1, report.RequestsSucceeded);
        var wholeRun = allocated / (double)roundTrips;
        return (new Measurement(report.RequestsSucceeded / wall.TotalSeconds, SteadyBytesPerRoundTrip(samples, report) ?? wholeRun, GC.CollectionCount(2) - gen2, wholeRun), report);
    }

    /// <summary>
    /// Bytes allocated per round trip in steady state: between the samples taken after the first fifth of the run's
    /// events and the last sample (so cluster setup, the clients' logins and the report are outside the window),
    /// per event, times the run's events per round trip. Null when the run was too short for a window.
    /// </summary>
    private static double? SteadyBytesPerRoundTrip(List<(long Events, long Bytes)> samples, SimReport report)
    {
        if (samples.Count < 3 || report.RequestsSucceeded == 0)
        {
            return null;
        }

        var first = samples[samples.Count / 5];
        var last = samples[^1];
        if (last.Events <= first.Events)
        {
            return null;
        }

        var bytesPerEvent = (last.Bytes - first.Bytes) / (double)(last.Events - first.Events);
        return bytesPerEvent * report.Events / report.RequestsSucceeded;
    }

    private Measurement MeasureBare(BareLoopOptions options)
    {
        Settle();
        var gen2 = GC.CollectionCount(2);
        var allocated = GC.GetAllocatedBytesForCurrentThread();
        var start = clock.Elapsed;
        var result = BareLoop.Run(options);
        var wall = clock.Elapsed - start;
        allocated = GC.GetAllocatedBytesForCurrentThread() - allocated;
        var roundTrips = Math.Max(1, result.RoundTrips);
        return new Measurement(result.RoundTrips / wall.TotalSeconds, allocated / (double)roundTrips, GC.CollectionCount(2) - gen2, allocated / (double)roundTrips);
    }

    /// <summary>Starts each side from a collected heap, so one side's garbage is not collected on the other's time.</summary>
    private static void Settle()
    {
        GC.Collect();
        GC.WaitForPendingFinalizers();
        GC.Collect();
    }

    private static string GcMode() =>
        $"{(GCSettings.IsServerGC ? "server" : "workstation")}/{GCSettings.LatencyMode}";

    private static double Median(List<double> values)
    {
        var sorted = values.Order().ToList();
        var middle = sorted.Count / 2;
        return sorted.Count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
    }

    private static string Invariant(FormattableString text) => text.ToString(CultureInfo.InvariantCulture);

    /// <summary>One side of one repeat. <c>BytesPerRoundTrip</c> is the steady state; <c>WholeRunBytesPerRoundTrip</c> includes setup.</summary>
    private readonly record struct Measurement(double RoundTripsPerSecond, double BytesPerRoundTrip, int Gen2Collections, double WholeRunBytesPerRoundTrip);
}
