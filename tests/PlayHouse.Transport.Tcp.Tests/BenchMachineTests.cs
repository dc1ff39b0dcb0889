using PlayHouse.Sim.Tcp;

namespace PlayHouse.Transport.Tcp.Tests;

public sealed class BenchMachineTests
{
    [Fact]
    public void Spread_RatesWithinOneSpeedMode_IsTheRangeOverTheMedianAndSteady()
    {
        // A raw echo's rates from four repeats in one of the host's speed modes.
        double[] rates = [1_331_162, 1_318_276, 1_352_956, 1_327_002];

        var spread = BenchMachine.Spread(rates);

        Assert.Equal((1_352_956 - 1_318_276) / 1_329_082.0, spread, precision: 9);
        Assert.StartsWith("steady (the rate of the raw echo varied 2.6% across the repeats, within 10%)", BenchMachine.Steadiness("the raw echo", spread), StringComparison.Ordinal);
    }

    [Fact]
    public void Steadiness_RatesAcrossAChangeOfSpeedMode_IsUnsteadyAndSaysWhatToCompare()
    {
        // The same run with the host's speed changing between repeats.
        double[] rates = [1_736_236, 1_377_517, 1_759_939, 1_711_239];

        var spread = BenchMachine.Spread(rates);
        var verdict = BenchMachine.Steadiness("the raw echo", spread);

        Assert.True(spread > BenchMachine.SteadySpreadMax, spread.ToString(System.Globalization.CultureInfo.InvariantCulture));
        Assert.StartsWith("unsteady (the rate of the raw echo varied 22", verdict, StringComparison.Ordinal);
        Assert.Contains("compare the medians of several runs", verdict, StringComparison.Ordinal);
    }

    [Fact]
    public void Spread_FewerThanTwoRatesOrNoneAboveZero_IsZero()
    {
        Assert.Equal(0, BenchMachine.Spread([]));
        Assert.Equal(0, BenchMachine.Spread([5.0]));
        Assert.Equal(0, BenchMachine.Spread([0.0, 0.0]));
        Assert.Throws<ArgumentNullException>(() => BenchMachine.Spread(null!));
    }

    [Fact]
    public void Describe_NamesTheCpuProcessorsLoadAverageAndGc()
    {
        var line = BenchMachine.Describe();

        Assert.Matches("^cpu=\"[^\"]+\" processors=[0-9]+ load-average=\"[^\"]+\" gc=(workstation|server),", line);
        Assert.Contains($"processors={Environment.ProcessorCount} ", line, StringComparison.Ordinal);
        if (File.Exists("/proc/loadavg"))
        {
            Assert.Matches("^[0-9.]+ [0-9.]+ [0-9.]+$", BenchMachine.LoadAverage());
        }
    }
}
