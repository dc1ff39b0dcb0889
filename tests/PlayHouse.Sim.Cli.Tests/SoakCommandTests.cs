using PlayHouse.Sim.Tcp;

namespace PlayHouse.Sim.Cli.Tests;

/// <summary>The soak command on a small run over loopback (no wall-clock or memory-size assertions), its input checks, and its flat-memory budget.</summary>
public sealed class SoakCommandTests
{
    [Fact]
    public void Soak_TwoThousandCyclesWithHostileFrames_LosesNothingLeaksNothingAndLetsGoOfEveryActorAndStage()
    {
        // Memory budgets far above anything a 2,000-cycle run can reach: this test judges the counts, not the machine.
        var result = CliHarness.Run(
            "soak", "--cycles", "2000", "--parallel", "16,32,64", "--stage-ids", "100", "--hostile-every", "10", "--sample-every", "500",
            "--actor-expiry-ms", "200", "--idle-stage-close-ms", "200", "--working-set-budget-mb", "100000", "--live-heap-budget-mb", "100000");

        Assert.True(result.ExitCode == 0, result.ToString());
        Assert.StartsWith("soak cycles=2000 parallel=16,32,64 stage-ids=100 hostile-every=10 ", result.Lines[0], StringComparison.Ordinal);
        Assert.StartsWith("machine cpu=", result.Lines[1], StringComparison.Ordinal);
        Assert.StartsWith("load-average-end=", result.Lines[^1], StringComparison.Ordinal);
        Assert.Equal(3, result.Lines.Count(l => l.StartsWith("progress ", StringComparison.Ordinal)));
        Assert.Contains(result.Lines, l => l.StartsWith("progress 500/2000 parallel=16 ", StringComparison.Ordinal));
        Assert.Contains(result.Lines, l => l.StartsWith("phase.parallel-64 cycles=", StringComparison.Ordinal));
        Assert.Contains("cycles ok=1800 hostile-closed=200 refused-at-cap=0 lost=0 ", result.Output, StringComparison.Ordinal);
        Assert.StartsWith("0 ", result.Value("leaked.sessions"), StringComparison.Ordinal);
        Assert.StartsWith("0 ", result.Value("buffers.outstanding"), StringComparison.Ordinal);
        Assert.Contains("registry.end live-stages=0 live-actors=0 ", result.Output, StringComparison.Ordinal);
        Assert.Equal("1800", result.Value("server.DisconnectedActorsExpired"));
        // Every tenth cycle is hostile, and those are the cycles of stage ids 10, 20, ... 100: ninety stage ids were used,
        // each closed at least once (more often on a machine slow enough for a stage to go idle between its cycles).
        Assert.InRange(long.Parse(result.Value("server.IdleStagesClosed")!, System.Globalization.CultureInfo.InvariantCulture), 90, 1800);
        Assert.Equal("2000", result.Value("tcp.ConnectionsAccepted"));
        Assert.StartsWith("met ", result.Value("budget.leaks"), StringComparison.Ordinal);
        Assert.StartsWith("met ", result.Value("budget.workingSet"), StringComparison.Ordinal);
        Assert.StartsWith("met ", result.Value("budget.liveHeap"), StringComparison.Ordinal);
    }

    [Fact]
    public void Soak_WithSmallCapsAndNoTimePolicies_EvictsAndClosesAcrossThreads_AndLosesNothing()
    {
        // Real sockets and the thread pool: every disconnect past five waiting actors evicts one in its own stage, and
        // every stage left empty past five empty ones closes early, while clients run 16 to 64 at once.
        var result = CliHarness.Run(
            "soak", "--cycles", "2000", "--parallel", "16,32,64", "--stage-ids", "1000", "--sample-every", "1000",
            "--actor-expiry-ms", "0", "--idle-stage-close-ms", "0", "--disconnected-actors-max", "5", "--empty-stages-max", "5",
            "--working-set-budget-mb", "100000", "--live-heap-budget-mb", "100000");

        Assert.True(result.ExitCode == 0, result.ToString());
        Assert.Contains("cycles ok=2000 hostile-closed=0 refused-at-cap=0 lost=0 ", result.Output, StringComparison.Ordinal);
        Assert.StartsWith("0 ", result.Value("leaked.sessions"), StringComparison.Ordinal);
        Assert.StartsWith("0 ", result.Value("buffers.outstanding"), StringComparison.Ordinal);
        Assert.Contains(" waiting-high-water=5 ", result.Output, StringComparison.Ordinal);
        Assert.InRange(long.Parse(result.Value("server.DisconnectedActorsEvictedAtCap")!, System.Globalization.CultureInfo.InvariantCulture), 1900, 1995);
        Assert.InRange(long.Parse(result.Value("server.EmptyStagesClosedAtCap")!, System.Globalization.CultureInfo.InvariantCulture), 500, 1995);
        Assert.Null(result.Value("server.DisconnectedActorsExpired"));
    }

    [Fact]
    public void Soak_AtAStageCapBelowTheStageIds_CountsTheRefusalsAsAnsweredNotLost()
    {
        // Nothing expires or closes here, so the first fifty stage ids keep their stages and every later one is refused.
        var result = CliHarness.Run(
            "soak", "--cycles", "600", "--parallel", "16", "--stage-ids", "600", "--stages-max", "50", "--sample-every", "300",
            "--actor-expiry-ms", "0", "--idle-stage-close-ms", "0", "--working-set-budget-mb", "100000", "--live-heap-budget-mb", "100000");

        Assert.Contains("refused-at-cap=550 lost=0 ", result.Output, StringComparison.Ordinal);
        Assert.Equal("550", result.Value("server.StagesRefusedAtCap"));
        Assert.Contains("registry.after-cycles live-stages=50 live-actors=50 stages-high-water=50 ", result.Output, StringComparison.Ordinal);
        Assert.True(result.ExitCode == 0, result.ToString());
    }

    [Theory]
    [InlineData("--parallel", "16,0", "--parallel")]
    [InlineData("--parallel", "x", "--parallel")]
    [InlineData("--cycles", "0", "--cycles")]
    [InlineData("--actor-expiry-ms", "-5", "--actor-expiry-ms")]
    [InlineData("--stages-max", "0", "--stages-max")]
    public void Soak_WithABadOption_Exits64WithOneErrorLineNamingIt(string option, string value, string named)
    {
        var result = CliHarness.Run("soak", option, value);

        Assert.Equal(SimCli.UsageErrorExitCode, result.ExitCode);
        var lines = result.Error.Split('\n', StringSplitOptions.RemoveEmptyEntries);
        Assert.True(lines.Length == 1, result.ToString());
        Assert.StartsWith("error: ", lines[0], StringComparison.Ordinal);
        Assert.Contains(named, lines[0], StringComparison.Ordinal);
        Assert.Empty(result.Output);
    }

    [Fact]
    public void FlatBudget_JudgesTheEndAgainstTheFirstSampleAfterTheStart()
    {
        SoakSample At(string label, long cycles, double workingSetMb) => new(label, cycles, workingSetMb, 0, 0, 0, 0, 0);
        var flat = new[] { At("start", 0, 40), At("progress", 100_000, 150), At("progress", 200_000, 160), At("end", 300_000, 170) };
        var growing = new[] { At("start", 0, 40), At("progress", 100_000, 150), At("progress", 200_000, 180), At("end", 300_000, 190) };

        var met = SoakBudget.Flat("workingSet", flat, s => s.WorkingSetMb, budgetMb: 32);
        var missed = SoakBudget.Flat("workingSet", growing, s => s.WorkingSetMb, budgetMb: 32);

        Assert.True(met.Met, met.ToString());
        Assert.False(missed.Met, missed.ToString());
        Assert.Equal("budget.workingSet=missed (end 190.0 MB, baseline 150.0 MB at 100000 cycles, growth +40.0 MB, budget +32 MB)", missed.ToString());
    }
}
