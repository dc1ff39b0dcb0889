using PlayHouse.Core.Runtime;

namespace PlayHouse.Simulation.Checkers;

/// <summary>The common part of checkers fed by the workload or the run loop (not by the runtime's observer).</summary>
public abstract class InvariantChecker : IInvariantChecker
{
    protected InvariantChecker(string name, CheckerContext context) => Log = new ViolationLog(name, context);

    public string Name => Log.CheckerName;

    public CheckerContext Context => Log.Context;

    public IReadOnlyList<Violation> Violations => Log.Snapshot();

    public long ViolationCount => Log.Count;

    public bool HasViolations => Log.HasViolations;

    public Violation? FirstViolation => Log.First;

    public CheckerVerdict Verdict => Log.Verdict;

    protected ViolationLog Log { get; }

    public virtual void CheckStep()
    {
    }

    public virtual void CheckQuiescent()
    {
    }

    public void ThrowIfViolated() => Log.ThrowIfViolated();
}

/// <summary>The common part of checkers that watch the runtime through <see cref="RuntimeObserver"/> hooks.</summary>
public abstract class RuntimeInvariantChecker : RuntimeObserver, IInvariantChecker
{
    protected RuntimeInvariantChecker(string name, CheckerContext context) => Log = new ViolationLog(name, context);

    public string Name => Log.CheckerName;

    public CheckerContext Context => Log.Context;

    public IReadOnlyList<Violation> Violations => Log.Snapshot();

    public long ViolationCount => Log.Count;

    public bool HasViolations => Log.HasViolations;

    public Violation? FirstViolation => Log.First;

    public CheckerVerdict Verdict => Log.Verdict;

    protected ViolationLog Log { get; }

    public virtual void CheckStep()
    {
    }

    public virtual void CheckQuiescent()
    {
    }

    public void ThrowIfViolated() => Log.ThrowIfViolated();

    /// <summary>A handler kind and msg id as violations print them.</summary>
    protected static string DescribeWork(StageWorkKind kind, string? msgId) => msgId is null ? kind.ToString() : $"{kind} '{msgId}'";
}

/// <summary>
/// A checker that judges only through another checker, such as one that renames the violations of a standard
/// checker: a <see cref="CheckerSet"/> schedules it as that checker (no per-step call when the inner one has no
/// per-step check) and counts it as sharing the set's context when the inner one does.
/// </summary>
public interface IWrappingChecker
{
    /// <summary>The checker that records every violation of this one.</summary>
    IInvariantChecker Inner { get; }
}
