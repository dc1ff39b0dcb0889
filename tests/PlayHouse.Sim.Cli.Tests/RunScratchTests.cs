using PlayHouse.Fixtures.Scenarios;
using PlayHouse.Simulation.Runs;

namespace PlayHouse.Sim.Cli.Tests;

/// <summary>
/// A swarm worker hands every run it does one <see cref="RunScratch"/>: the round-trip histogram and the network's
/// stream stores are reused from run to run instead of allocated per seed.
/// </summary>
public sealed class RunScratchTests
{
    [Fact]
    public void RunsSharingOneScratch_GiveEverySeedTheReportOfAFreshRun()
    {
        var scratch = new RunScratch();
        var names = ScenarioCatalog.Names;
        for (ulong seed = 300; seed < 300 + (ulong)(2 * names.Count); seed++)
        {
            var name = names[(int)(seed % (ulong)names.Count)];
            var options = CliCommands.SwarmOptions(seed, ScenarioCatalog.Create(name).Defaults);

            var fresh = SimRunner.Run(ScenarioCatalog.Create(name), seed, options);
            var reused = SimRunner.Run(ScenarioCatalog.Create(name), seed, options, new RunSettings { Scratch = scratch });

            // The histogram is emptied for each run and a store's old bytes are never read, so nothing of one run
            // reaches the next: same trace, same events, same round-trip figures.
            Assert.Equal(fresh.TraceHash, reused.TraceHash);
            Assert.Equal((fresh.Outcome, fresh.Events, fresh.RequestsSucceeded), (reused.Outcome, reused.Events, reused.RequestsSucceeded));
            Assert.Equal((fresh.RttSamples, fresh.RttMsP50, fresh.RttMsP99, fresh.RttMsMax), (reused.RttSamples, reused.RttMsP50, reused.RttMsP99, reused.RttMsMax));
        }
    }

    [Fact]
    public void RunWithAWarmScratch_AllocatesNeitherTheHistogramNorTheStreamStoresAgain()
    {
        // Large messages, many in flight: the stream stores grow past the large-object threshold (85,000 bytes).
        var options = ScenarioCatalog.Create("echo").Defaults with { MessageBytes = 12_000, InFlight = 8 };
        var scratch = new RunScratch();
        long Allocated(RunScratch? withScratch)
        {
            var before = GC.GetAllocatedBytesForCurrentThread();
            SimRunner.Run(ScenarioCatalog.Create("echo"), 11, options, new RunSettings { Scratch = withScratch });
            return GC.GetAllocatedBytesForCurrentThread() - before;
        }

        // The first run of each kind warms the code and the scratch; the second is the one compared.
        Allocated(null);
        var fresh = Allocated(null);
        Allocated(scratch);
        var reused = Allocated(scratch);

        // The histogram's counts alone are 172,032 bytes (21,504 longs: one tick to one minute at three digits).
        const long HistogramBytes = 172_032;
        Assert.True(fresh - reused > HistogramBytes, $"a fresh run allocated {fresh} B, one with a warm scratch {reused} B: less than the histogram saved");
        Assert.True(reused < fresh / 2, $"a fresh run allocated {fresh} B, one with a warm scratch {reused} B: the stream stores were allocated again");
    }
}
