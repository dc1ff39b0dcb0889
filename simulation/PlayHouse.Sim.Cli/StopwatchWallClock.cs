using System.Diagnostics;
using PlayHouse.Simulation.Runs;

namespace PlayHouse.Sim.Cli;

/// <summary>
/// The runner's wall clock: how long runs and benchmarks take on the machine. It feeds reports, progress lines
/// and benchmark rates only; nothing in a simulation ever reads it, so runs stay replayable.
/// </summary>
/// <remarks>Thread-safe: a started stopwatch is only read.</remarks>
internal sealed class StopwatchWallClock : IWallClock
{
#pragma warning disable RS0030 // The runner is the real-mode composition root: measuring wall time is its job, and this is the one class that does it.
    private readonly Stopwatch _stopwatch = Stopwatch.StartNew();

    public TimeSpan Elapsed => _stopwatch.Elapsed;
#pragma warning restore RS0030

    public static StopwatchWallClock StartNew() => new();
}
