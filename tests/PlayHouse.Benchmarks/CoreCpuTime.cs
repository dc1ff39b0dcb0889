using System.Diagnostics;
using System.Globalization;
using PlayHouse.Sim.Tcp;

namespace PlayHouse.Benchmarks;

/// <summary>
/// <c>core</c>: the core's cost per round trip (<see cref="CoreRoundTrip"/>) as process CPU time, which a machine shared
/// with other work disturbs far less than wall time. Each shape runs in repeats of a fixed number of round trips, the
/// shapes alternating their order; the median of the repeats is reported, with the machine and its load.
/// </summary>
/// <remarks>Not thread-safe; the one benchmark thread runs everything (the process has no other busy thread).</remarks>
internal static class CoreCpuTime
{
    private const int RepeatsDefault = 10;
    private const int RoundTripsPerRepeat = 2_000_000;

    public static int Run(string[] args)
    {
        var repeats = RepeatsDefault;
        var shapes = new[] { CoreShape.Threaded, CoreShape.SingleThreaded };
        for (var i = 0; i < args.Length; i++)
        {
            if (args[i] == "--repeats" && i + 1 < args.Length && int.TryParse(args[i + 1], CultureInfo.InvariantCulture, out var parsed) && parsed > 0)
            {
                repeats = parsed;
                i++;
            }
            else if (args[i] == "--shape" && i + 1 < args.Length && args[i + 1] is "threaded" or "single-threaded")
            {
                shapes = [args[i + 1] == "threaded" ? CoreShape.Threaded : CoreShape.SingleThreaded];
                i++;
            }
            else
            {
                Console.Error.WriteLine("error: core takes --repeats N (a positive count of repeats per shape) and --shape threaded|single-threaded");
                return 64;
            }
        }

        Console.WriteLine($"core.machine {BenchMachine.Describe()}");
        var trips = shapes.ToDictionary(s => s, s => new CoreRoundTrip(s));
        var cpuNs = shapes.ToDictionary(s => s, _ => new List<double>());
        var wallNs = shapes.ToDictionary(s => s, _ => new List<double>());
        var allocated = shapes.ToDictionary(s => s, _ => 0L);

        // Warm-up past the JIT's tier-up, then the measured repeats, the order of the shapes alternating.
        foreach (var trip in trips.Values)
        {
            Measure(trip, RoundTripsPerRepeat);
        }

        var gen2Before = GC.CollectionCount(2);
        for (var r = 0; r < repeats; r++)
        {
            foreach (var shape in r % 2 == 0 ? shapes : shapes.AsEnumerable().Reverse())
            {
                var (cpu, wall, bytes) = Measure(trips[shape], RoundTripsPerRepeat);
                cpuNs[shape].Add(cpu);
                wallNs[shape].Add(wall);
                allocated[shape] += bytes;
            }
        }

        var gen2 = GC.CollectionCount(2) - gen2Before;
        foreach (var shape in shapes)
        {
            var perTrip = (double)allocated[shape] / ((long)repeats * RoundTripsPerRepeat);
            Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
                $"core.{Name(shape)} cpuNsPerRoundTrip={Median(cpuNs[shape]):0.0} wallNsPerRoundTrip={Median(wallNs[shape]):0.0} cpuNsRange={cpuNs[shape].Min():0.0}..{cpuNs[shape].Max():0.0} bytesPerRoundTrip={perTrip:0.00} repeats={repeats} roundTripsPerRepeat={RoundTripsPerRepeat}"));
        }

        Console.WriteLine($"core.gen2Collections {gen2}");
        Console.WriteLine($"core.loadAfter \"{BenchMachine.LoadAverage()}\"");
        foreach (var trip in trips.Values)
        {
            trip.Dispose();
        }

        return 0;
    }

    private static double Median(List<double> values)
    {
        var sorted = values.Order().ToArray();
        return sorted.Length % 2 == 1 ? sorted[sorted.Length / 2] : (sorted[(sorted.Length / 2) - 1] + sorted[sorted.Length / 2]) / 2;
    }

    private static string Name(CoreShape shape) => shape == CoreShape.Threaded ? "threaded" : "singleThreaded";

    private static (double CpuNs, double WallNs, long Bytes) Measure(CoreRoundTrip trip, int count)
    {
        var process = Process.GetCurrentProcess();
        process.Refresh();
        var cpuStart = process.TotalProcessorTime;
        var bytesStart = GC.GetAllocatedBytesForCurrentThread();
        var wall = Stopwatch.StartNew();
        for (var i = 0; i < count; i++)
        {
            trip.RoundTrip();
        }

        wall.Stop();
        var bytes = GC.GetAllocatedBytesForCurrentThread() - bytesStart;
        process.Refresh();
        var cpu = process.TotalProcessorTime - cpuStart;
        return (cpu.TotalNanoseconds / count, wall.Elapsed.TotalNanoseconds / count, bytes);
    }
}
