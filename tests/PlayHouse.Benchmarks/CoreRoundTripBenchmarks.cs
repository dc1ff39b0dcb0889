using BenchmarkDotNet.Attributes;

namespace PlayHouse.Benchmarks;

/// <summary>The core's cost per round trip with no network (<see cref="CoreRoundTrip"/>); target 0 B per round trip.</summary>
[MemoryDiagnoser]
public class CoreRoundTripBenchmarks
{
    private CoreRoundTrip _trip = null!;

    [Params(CoreShape.Threaded, CoreShape.SingleThreaded)]
    public CoreShape Shape { get; set; }

    [GlobalSetup]
    public void Setup() => _trip = new CoreRoundTrip(Shape);

    [GlobalCleanup]
    public void Cleanup() => _trip.Dispose();

    [Benchmark]
    public int RoundTrip() => _trip.RoundTrip();
}
