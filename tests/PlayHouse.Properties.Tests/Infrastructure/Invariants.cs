using System.Globalization;
using PlayHouse.Fixtures.Workload;
using PlayHouse.Simulation.Checkers;
using PlayHouse.Simulation.Runs;

namespace PlayHouse.Properties.Tests.Infrastructure;

/// <summary>
/// The eight invariants of the property suite, each judged on a run's report by the checkers that own it. A run
/// that crashed fails every property (nothing it checked can be trusted); other checkers' failures belong to their
/// own properties.
/// </summary>
public static class Invariants
{
    public static SimInvariant FifoPerSender { get; } = new(
        "FIFO per sender per stage",
        r => Crash(r) ?? Checkers(r, FifoPerSenderChecker.CheckerName),
        r => r.RequestsSucceeded > 0);

    public static SimInvariant SingleActiveHandler { get; } = new(
        "at most one active handler per stage",
        r => Crash(r) ?? Checkers(r, SingleActiveHandlerChecker.CheckerName, WorkloadHandlerChecker.CheckerName),
        r => r.RequestsSucceeded > 0);

    public static SimInvariant ExactlyOnce { get; } = new(
        "every request completes exactly once, with its own reply or a timeout",
        r => Crash(r) ?? Checkers(r, ExactlyOnceRequestChecker.CheckerName),
        r => Metric(r, "requests.issued") > 0);

    public static SimInvariant NoPoolLeaks { get; } = new(
        "no pool leaks at quiescence, per pool and per size class",
        r => Crash(r) ?? Checkers(r, PoolLedgerChecker.CheckerName) ?? UnbalancedClass(r),
        r => r.Pools.Any(p => p.Rents > 0));

    public static SimInvariant BoundedRttTracking { get; } = new(
        "RTT tracking bounded by the in-flight window, never mis-paired (B1)",
        r => Crash(r) ?? Checkers(r, RttTrackerChecker.CheckerName),
        r => r.RttSamples > 0 || Metric(r, "requests.failed") > 0);

    public static SimInvariant QueuesWithinCaps { get; } = new(
        "every mailbox, session send queue and RTT tracker within its cap",
        r => Crash(r) ?? Checkers(r, QueueCapChecker.CheckerName),
        r => r.RequestsSucceeded > 0 && r.QueueHighWaters.Count > 0);

    public static SimInvariant LifecycleInOrder { get; } = new(
        "lifecycle callbacks exactly once and in order, across disconnect and reconnect",
        r => Crash(r) ?? Checkers(r, LifecycleChecker.CheckerName, WorkloadLifecycleChecker.CheckerName),
        r => Metric(r, "stages") > 0);

    public static SimInvariant Liveness { get; } = new(
        "after the last fault heals, every client completes a request within the liveness window",
        r => Crash(r) ?? Checkers(r, LivenessChecker.CheckerName) ?? (r.ExitCode == RunExitCodes.LivenessFailure ? r.Failure : null),
        r => r.RequestsSucceeded > 0);

    private static string? Crash(SimReport report) =>
        report.ExitCode == RunExitCodes.Crash ? $"the run crashed: {report.Failure?.ReplaceLineEndings(" | ")}" : null;

    private static string? Checkers(SimReport report, params string[] names)
    {
        foreach (var name in names)
        {
            var verdict = report.Verdicts.FirstOrDefault(v => v.CheckerName == name);
            if (verdict.CheckerName is null)
            {
                return $"checker '{name}' did not run";
            }

            if (!verdict.Passed)
            {
                return string.Create(CultureInfo.InvariantCulture, $"{name} ({verdict.ViolationCount} violation(s)): {verdict.FirstViolationMessage}");
            }
        }

        return null;
    }

    private static string? UnbalancedClass(SimReport report)
    {
        foreach (var pool in report.Pools)
        {
            foreach (var row in pool.Classes.Where(c => c.Rents != c.Returns))
            {
                return string.Create(CultureInfo.InvariantCulture, $"pool '{pool.Name}' size class {row.SizeClass} ({row.CapacityBytes} B): rents {row.Rents} != returns {row.Returns}");
            }
        }

        return null;
    }

    private static long Metric(SimReport report, string key) =>
        report.ScenarioMetrics.FirstOrDefault(m => m.Key == key) is { Value: { } text } ? long.Parse(text, CultureInfo.InvariantCulture) : 0;
}
