using System.Globalization;
using PlayHouse.Fixtures.Scenarios;

namespace PlayHouse.Sim.Cli.Tests;

public sealed class ListAndBenchTests
{
    [Fact]
    public void List_PrintsEveryScenarioWithItsDescriptionAndDefaults()
    {
        var result = CliHarness.Run("list");

        Assert.Equal(0, result.ExitCode);
        foreach (var name in ScenarioCatalog.Names)
        {
            var scenario = ScenarioCatalog.Create(name);
            Assert.Contains($"{name}: {scenario.Description}", result.Lines);
            Assert.Contains(result.Lines, l => l.Trim().StartsWith($"scenario={name} ", StringComparison.Ordinal) && l.Contains(" faults=", StringComparison.Ordinal));
        }
    }

    [Fact]
    public void List_Interactive_TabulatesEveryScenarioAndTheCommonDefaults()
    {
        var result = CliHarness.Run(interactive: true, "list");

        Assert.Equal(0, result.ExitCode);
        foreach (var name in ScenarioCatalog.Names)
        {
            Assert.Contains(name, result.Output, StringComparison.Ordinal);
        }

        Assert.Contains(result.Lines, l => l.StartsWith("common defaults: playServers=", StringComparison.Ordinal));
    }

    [Fact]
    public void BenchSim_TinySize_PrintsEveryKey()
    {
        var result = CliHarness.Run("bench", "sim", "--requests", "400", "--clients", "8", "--warm-up-requests", "100");

        Assert.True(result.ExitCode == 0, result.ToString());
        Assert.Equal("104", result.Value("warmUp.requests"));
        Assert.Equal("pass", result.Value("warmUp.outcome"));
        foreach (var key in new[] { "sim.roundTripsPerSecond", "bare.roundTripsPerSecond", "ratio.median", "sim.bytesPerMessage", "bare.bytesPerMessage", "processors", "gc", "bare.rateSpread", "steadiness", "load-average-end" })
        {
            Assert.True(result.Value(key) is not null, $"no {key}\n{result}");
        }

        Assert.True(double.Parse(result.Value("sim.roundTripsPerSecond")!, CultureInfo.InvariantCulture) > 0);
        Assert.True(double.Parse(result.Value("bare.roundTripsPerSecond")!, CultureInfo.InvariantCulture) > 0);
        Assert.Equal(Environment.ProcessorCount.ToString(CultureInfo.InvariantCulture), result.Value("processors"));
        Assert.Equal("pass", result.Value("sim.outcome"));
        Assert.StartsWith("machine cpu=", result.Lines[1], StringComparison.Ordinal);
        Assert.Matches("^(steady|unsteady) \\(the rate of the bare loop varied ", result.Value("steadiness")!);

        // An even number of repeats, at least four, alternating which side goes first.
        var repeats = int.Parse(result.Value("repeats")!, CultureInfo.InvariantCulture);
        Assert.True(repeats >= 4 && repeats % 2 == 0);
        Assert.StartsWith("order:sim-first ", result.Value("repeat.1"), StringComparison.Ordinal);
        Assert.StartsWith("order:bare-first ", result.Value("repeat.2"), StringComparison.Ordinal);
    }

    [Fact]
    public void BenchSim_ReportsEventsPerSecondAndTheHopsOfARoundTripOnEachSide()
    {
        var result = CliHarness.Run("bench", "sim", "--requests", "400", "--clients", "8", "--warm-up-requests", "0");

        Assert.True(result.ExitCode == 0, result.ToString());

        // The bare loop's round trip is exactly three events (arrival, turn, arrival back); the simulation's takes more
        // (split segments are extra deliveries, and its setup and logins are events too).
        Assert.Equal("3.000", result.Value("bare.eventsPerRoundTrip"));
        Assert.True(Number(result, "sim.eventsPerRoundTrip") > 3, result.ToString());
        foreach (var side in new[] { "sim", "bare" })
        {
            var eventsPerSecond = Number(result, $"{side}.eventsPerSecond");
            Assert.True(eventsPerSecond > Number(result, $"{side}.roundTripsPerSecond"), result.ToString());
            // Both are printed rounded (events/s to a whole number, nanoseconds to a tenth), so they agree to within
            // those roundings, not exactly.
            var nanosecondsPerEvent = Number(result, $"{side}.nanosecondsPerEvent");
            Assert.True(Math.Abs((1e9 / eventsPerSecond) - nanosecondsPerEvent) <= 0.05 + (nanosecondsPerEvent / 1000), result.ToString());
            Assert.True(Number(result, $"{side}.nanosecondsPerRoundTrip") > Number(result, $"{side}.nanosecondsPerEvent"), result.ToString());
        }

        Assert.Contains(" sim.eventsPerSecond=", result.Value("repeat.1"), StringComparison.Ordinal);
        Assert.Contains(" bare.eventsPerSecond=", result.Value("repeat.1"), StringComparison.Ordinal);
    }

    private static double Number(CliResult result, string key) =>
        double.Parse(result.Value(key) ?? throw new InvalidOperationException($"no {key}\n{result}"), CultureInfo.InvariantCulture);

    [Fact]
    public void BenchSim_NoWarmUp_MeasuresFromTheFirstRunAndANegativeWarmUpIsAUsageError()
    {
        var cold = CliHarness.Run("bench", "sim", "--requests", "80", "--clients", "4", "--warm-up-requests", "0");
        var negative = CliHarness.Run("bench", "sim", "--requests", "80", "--warm-up-requests", "-1");

        Assert.True(cold.ExitCode == 0, cold.ToString());
        Assert.Null(cold.Value("warmUp.requests"));
        Assert.Equal(64, negative.ExitCode);
        Assert.Contains("--warm-up-requests must be 0 or more.", negative.Error, StringComparison.Ordinal);
    }

    [Fact]
    public void BenchScale_SmallOverride_PrintsWallVirtualAndOutcome()
    {
        var result = CliHarness.Run("bench", "scale", "--set", "clients=50", "requestsPerClient=4");

        Assert.True(result.ExitCode == 0, result.ToString());
        Assert.Equal("pass", result.Value("scale.outcome"));
        Assert.Equal("200", result.Value("scale.roundTrips"));
        Assert.NotNull(result.Value("scale.wallSeconds"));
        Assert.NotNull(result.Value("scale.virtualSeconds"));
        Assert.Contains("lossPercent=1 ", result.Lines[0], StringComparison.Ordinal);

        // What the JIT compiled during the measured run: seconds on every thread and methods, both counted, so never negative.
        Assert.True(double.Parse(result.Value("scale.jitSeconds")!, CultureInfo.InvariantCulture) >= 0, result.ToString());
        Assert.True(long.Parse(result.Value("scale.methodsCompiled")!, CultureInfo.InvariantCulture) >= 0, result.ToString());

        // Each run's banner is followed by the machine it ran on; the load average is printed again at the end.
        Assert.All(result.Lines.Select((line, i) => (line, i)).Where(x => x.line.StartsWith("SEED=", StringComparison.Ordinal)), x => Assert.StartsWith("machine cpu=", result.Lines[x.i + 1], StringComparison.Ordinal));
        Assert.NotNull(result.Value("load-average-end"));
    }

    [Fact]
    public void BenchScale_WarmUpClients_RunsOneUnmeasuredRunBeforeTheMeasuredOne()
    {
        var result = CliHarness.Run("bench", "scale", "--warm-up-clients", "7", "--set", "clients=30", "requestsPerClient=2");

        Assert.True(result.ExitCode == 0, result.ToString());
        Assert.Equal("7", result.Value("warmUp.clients"));
        Assert.Equal("pass", result.Value("warmUp.outcome"));
        Assert.NotNull(result.Value("warmUp.wallSeconds"));
        Assert.Equal("60", result.Value("scale.roundTrips"));
        var lines = result.Lines.ToList();
        Assert.True(lines.FindIndex(l => l.StartsWith("warmUp.clients=", StringComparison.Ordinal)) < lines.FindIndex(l => l.StartsWith("scale.wallSeconds=", StringComparison.Ordinal)), result.ToString());
        Assert.Contains(" clients=7 ", lines[0], StringComparison.Ordinal);
    }

    [Fact]
    public void BenchScale_WarmUpClientsOmitted_WarmsUpWithAQuarterOfTheMeasuredClients()
    {
        var result = CliHarness.Run("bench", "scale", "--set", "clients=40", "requestsPerClient=2");

        Assert.True(result.ExitCode == 0, result.ToString());
        Assert.Equal("10", result.Value("warmUp.clients"));
        Assert.Equal("pass", result.Value("warmUp.outcome"));
        Assert.Equal("80", result.Value("scale.roundTrips"));
    }

    [Fact]
    public void BenchScale_NoWarmUpClients_MeasuresTheFirstRunOfTheProcess()
    {
        var result = CliHarness.Run("bench", "scale", "--warm-up-clients", "0", "--set", "clients=30", "requestsPerClient=2");

        Assert.True(result.ExitCode == 0, result.ToString());
        Assert.Null(result.Value("warmUp.clients"));
        Assert.Equal("60", result.Value("scale.roundTrips"));
        Assert.Contains(" clients=30 ", result.Lines[0], StringComparison.Ordinal);
    }

    [Fact]
    public void BenchScale_NegativeWarmUpClients_Exits64WithOneLine()
    {
        var result = CliHarness.Run("bench", "scale", "--warm-up-clients", "-1");

        Assert.Equal(SimCli.UsageErrorExitCode, result.ExitCode);
        var lines = result.Error.Split('\n', StringSplitOptions.RemoveEmptyEntries);
        Assert.True(lines.Length == 1, result.ToString());
        Assert.StartsWith("error: --warm-up-clients takes 0", lines[0], StringComparison.Ordinal);
        Assert.DoesNotContain("scale.", result.Output, StringComparison.Ordinal);
    }

    [Fact]
    public void BenchScale_ClientsList_RunsEachPointSmallestFirstWithEventsAndMemory()
    {
        var result = CliHarness.Run("bench", "scale", "--clients", "40,20", "--set", "requestsPerClient=3");

        Assert.True(result.ExitCode == 0, result.ToString());
        var small = result.Value("curve.20");
        var large = result.Value("curve.40");
        Assert.NotNull(small);
        Assert.NotNull(large);
        Assert.True(result.Lines.ToList().FindIndex(l => l.StartsWith("curve.20=", StringComparison.Ordinal)) < result.Lines.ToList().FindIndex(l => l.StartsWith("curve.40=", StringComparison.Ordinal)), result.ToString());
        Assert.Contains(" roundTrips:60 ", small, StringComparison.Ordinal);
        Assert.Contains(" roundTrips:120 ", large, StringComparison.Ordinal);
        foreach (var field in new[] { "wallSeconds:", "events:", "cpuSeconds:", "cpuMicrosecondsPerEvent:", "jitSeconds:", "gcHeapBytesPeak:", "workingSetBytesPeak:", "gen2:" })
        {
            Assert.Contains(field, large, StringComparison.Ordinal);
        }

        Assert.EndsWith("outcome:pass", large, StringComparison.Ordinal);

        // The warm-up is a quarter of the largest point, as a single run's is a quarter of its clients.
        Assert.Equal("10", result.Value("warmUp.clients"));
        Assert.Equal("pass", result.Value("warmUp.outcome"));

        // Only the 10,000 x 100 shape has a budget.
        Assert.Null(result.Value("budget.scaleWallSeconds"));
    }

    [Fact]
    public void BenchScale_ClientsListWithWarmUpClients_WarmsUpWithThatCountOrNotAtAll()
    {
        var chosen = CliHarness.Run("bench", "scale", "--clients", "20,40", "--warm-up-clients", "3", "--set", "requestsPerClient=2");
        var cold = CliHarness.Run("bench", "scale", "--clients", "20,40", "--warm-up-clients", "0", "--set", "requestsPerClient=2");

        Assert.True(chosen.ExitCode == 0, chosen.ToString());
        Assert.Equal("3", chosen.Value("warmUp.clients"));
        Assert.NotNull(chosen.Value("curve.40"));
        Assert.True(cold.ExitCode == 0, cold.ToString());
        Assert.Null(cold.Value("warmUp.clients"));
        Assert.NotNull(cold.Value("curve.20"));
        Assert.Contains(" clients=20 ", cold.Lines[0], StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("1000,x")]
    [InlineData("0")]
    [InlineData("1000,,2000")]
    public void BenchScale_BadClientsList_Exits64WithOneLine(string clients)
    {
        var result = CliHarness.Run("bench", "scale", "--clients", clients);

        Assert.Equal(SimCli.UsageErrorExitCode, result.ExitCode);
        var lines = result.Error.Split('\n', StringSplitOptions.RemoveEmptyEntries);
        Assert.True(lines.Length == 1, result.ToString());
        Assert.StartsWith("error: --clients takes client counts of at least 1", lines[0], StringComparison.Ordinal);
        Assert.DoesNotContain("curve.", result.Output, StringComparison.Ordinal);
    }
}
