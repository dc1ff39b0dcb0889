using static PlayHouse.Campaign.Tests.Campaigns;

namespace PlayHouse.Campaign.Tests;

/// <summary>
/// Nothing of a long campaign is lost: a rare checker's findings are kept beside thousands of a frequent one's, a stop
/// ends the run going on with its findings kept, and the report is handed out for saving before the reruns start.
/// </summary>
public sealed class KeptFindingsTests
{
    /// <summary>Two storming clients against a server that drops replies: many timeouts, quickly.</summary>
    private static readonly CampaignSchedule Storms = Schedule(
        durationMs: 300,
        requestTimeoutMs: 500,
        stages: 1,
        Client(0, CampaignTransport.Tcp, 0, Op(OperationKind.Echo, 200, 8)),
        Client(1, CampaignTransport.Tcp, 0, Op(OperationKind.Echo, 200, 8)));

    /// <summary>One client repeating 50 echoes and a short pause for <paramref name="durationMs"/>: against a server dropping replies, a timeout now and then.</summary>
    private static CampaignSchedule EchoesAndPauses(int durationMs) => Schedule(
        durationMs,
        requestTimeoutMs: 300,
        stages: 1,
        Client(0, CampaignTransport.Tcp, 0, Op(OperationKind.Echo, 50, 4), Op(OperationKind.Pause, value: 20)));

    [Fact]
    public void Ledger_ThousandsOfOneCheckersFindings_KeepTheRareCheckersInFull()
    {
        var ledger = new CampaignLedger(TimeProvider.System);
        var frequent = CampaignLedger.FindingsKeptPerChecker * 3;
        for (var i = 0; i < frequent; i++)
        {
            ledger.Report(Checkers.ExactlyOnceReply, 1, $"timeout {i}");
        }

        ledger.Report(Checkers.ErrorCodes, 2, "error code 7 on an echo");
        ledger.Report(Checkers.OwnReply, 3, "an echo of another content");

        Assert.Equal(frequent + 2, ledger.FindingCount);
        Assert.Equal(CampaignLedger.FindingsKeptPerChecker, ledger.Findings.Count(f => f.Checker == Checkers.ExactlyOnceReply));
        Assert.Equal("error code 7 on an echo", Assert.Single(ledger.Findings, f => f.Checker == Checkers.ErrorCodes).Detail);
        Assert.Equal("an echo of another content", Assert.Single(ledger.Findings, f => f.Checker == Checkers.OwnReply).Detail);
        Assert.Equal("timeout 0", ledger.FirstFinding!.Detail);
    }

    [Fact]
    public async Task Runner_StoppedDuringTheRerunsOfAFailingSeed_KeepsEveryFindingOfItsFirstRunAndSaysSo()
    {
        await using var flawed = await InProcessTarget.StartAsync("drop-reply:10");
        await using var session = Session(flawed.Target);
        using var stop = new CancellationTokenSource();
        var saved = new List<(int Runs, int Findings, bool Stopped)>();
        var lines = new List<string>();
        var options = Replaying(Storms, reruns: 3);
        var runner = new CampaignRunner(session, options, l =>
        {
            lock (lines)
            {
                lines.Add(l);
            }
        }, path => "replay " + path)
        {
            // The signal comes as soon as the first run's report was handed out: its reruns are under way.
            Checkpoint = report =>
            {
                saved.Add((report.Runs.Count, report.Runs.Sum(r => r.Ledger.FindingCount), report.Stopped));
                stop.Cancel();
            },
        };

        var report = await runner.RunAsync(stop.Token);

        var first = Assert.Single(report.Runs);
        Assert.True(first.Failed, Describe(report));
        Assert.False(first.Stopped);
        Assert.True(report.Stopped);
        Assert.Equal((1, first.Ledger.FindingCount, false), saved[0]);
        var failure = Assert.Single(report.Failures);
        Assert.True(failure.Stopped);
        Assert.True(failure.Reruns < 3, $"{failure.Reruns} reruns finished");
        Assert.Contains(lines, l => l.StartsWith("stopped by a signal after 1 seed(s)", StringComparison.Ordinal));
        Assert.Contains(report.Closing(null), l => l.StartsWith("stopped=by-signal runs-kept=1", StringComparison.Ordinal));
        Assert.Equal(CampaignExitCodes.Finding, CampaignExitCodes.Of(report));

        // Every finding of the first run is in its findings file (up to the per-checker cap), and the cut line names it.
        var file = Path.GetFullPath(Path.Combine(options.ScheduleDirectory!, "seed-1.replay.findings.txt"));
        var saves = File.ReadAllLines(file);
        Assert.Equal(first.Ledger.Findings.Select(f => f.ToString()), saves.Skip(1).TakeWhile(l => !l.StartsWith("count ", StringComparison.Ordinal)));
        Assert.All(first.Ledger.FindingsByChecker, kv => Assert.Contains($"count {kv.Key}={kv.Value}", saves));
        var printed = lines.Count(l => l.StartsWith("seed=1 finding ", StringComparison.Ordinal));
        Assert.InRange(printed, 1, CampaignRunner.FindingsPrinted + Checkers.All.Count);
        Assert.True(first.Ledger.FindingCount > printed, Describe(report));
        var cut = $"seed=1 {first.Ledger.FindingCount - printed} more finding(s) in {file}";
        Assert.Contains(lines, l => l == cut || l.StartsWith(cut + " (", StringComparison.Ordinal));
    }

    [Fact]
    public async Task Run_StoppedWhileItsClientsAreStillSending_EndsEarlyKeepingItsFindings()
    {
        var longRun = EchoesAndPauses(durationMs: 120_000);
        await using var flawed = await InProcessTarget.StartAsync("drop-reply:5");
        await using var session = Session(flawed.Target);
        using var stop = new CancellationTokenSource();
        CampaignLedger? live = null;
        var running = CampaignRun.RunAsync(longRun, session, stop: stop.Token, started: ledger => live = ledger);

        // Stopped once the run has findings: they must survive the stop.
        while (live is null || live.FindingCount < 3)
        {
            Assert.False(running.IsCompleted, "the run ended before it was stopped");
            await Task.Delay(50);
        }

        stop.Cancel();
        var result = await running;

        Assert.True(result.Stopped);
        Assert.True(result.OperationsSeconds < longRun.DurationMs / 1000.0, $"the run went on for {result.OperationsSeconds:0.0} s of its {longRun.DurationMs / 1000} s");
        Assert.True(result.Ledger.FindingCount >= 3);
        Assert.All(result.Ledger.Findings, f => Assert.Equal(Checkers.ExactlyOnceReply, f.Checker));
        Assert.Contains("stopped=by-signal", result.Summary(), StringComparison.Ordinal);
    }

    [Fact]
    public async Task Runner_DuringALongFirstRun_HandsOutItsFindingsSoFarEveryInterval()
    {
        var longRun = EchoesAndPauses(durationMs: 2_000);
        await using var flawed = await InProcessTarget.StartAsync("drop-reply:5");
        await using var session = Session(flawed.Target);
        var seen = new List<(ulong Seed, int Findings)>();
        var runner = new CampaignRunner(session, Replaying(longRun, reruns: 1, shrink: false) with { CheckpointInterval = TimeSpan.FromMilliseconds(200) }, _ => { }, path => path)
        {
            Checkpoint = report =>
            {
                if (report.InProgress is { } live)
                {
                    lock (seen)
                    {
                        seen.Add((live.Schedule.Seed, live.Ledger.FindingCount));
                    }
                }
            },
        };

        var report = await runner.RunAsync();

        var first = report.Runs[0];
        Assert.True(first.Failed, Describe(report));
        Assert.Null(report.InProgress);
        lock (seen)
        {
            Assert.True(seen.Count >= 3, $"{seen.Count} checkpoints during a 2 s run every 200 ms");
            Assert.All(seen, s => Assert.Equal(longRun.Seed, s.Seed));
            Assert.Contains(seen, s => s.Findings > 0);
            Assert.True(seen.Max(s => s.Findings) <= first.Ledger.FindingCount);
        }
    }
}
