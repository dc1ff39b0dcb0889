using System.Globalization;
using PlayHouse.Core.Runtime;

namespace PlayHouse.Simulation.Coverage;

/// <summary>What a feature of <see cref="BehaviourCoverage"/> records; the number is part of the feature's hash.</summary>
internal enum FeatureTag
{
    Post = 1,
    Tick,
    Turn,
    TurnMessage,
    Lifecycle,
    StageMembers,
    Issue,
    Completed,
    HandlerFailed,
    Dropped,
    QueueHighWater,
    Count,
    Outcome,
    Violated,
}

/// <summary>A stage's handler state as the coverage tracks it from the handler hooks.</summary>
internal enum StageMode
{
    Idle,
    Running,

    /// <summary>The handler returned control at an await; its message is not complete yet.</summary>
    Suspended,
}

/// <summary>What one feature was made of, kept (when names are asked for) so it can be named after the run.</summary>
internal readonly record struct FeatureParts(ulong Feature, FeatureTag Tag, long A, long B, long C, long D, ActiveFaults Faults);

/// <summary>Readable names of coverage features, made only when a report asks for them (never during a run).</summary>
/// <remarks>Thread-safe: pure functions.</remarks>
internal static class FeatureNames
{
    /// <summary>A stage's handler state and the kind of work it is in (or last was in), packed into one value of a feature.</summary>
    public static long PackMode(StageMode mode, StageWorkKind kind) => ((long)mode << 8) | (long)kind;

    /// <summary>The feature in words; <paramref name="textOf"/> turns a string's hash back into the string.</summary>
    public static string Describe(FeatureParts p, Func<long, string> textOf) => p.Tag switch
    {
        FeatureTag.Post => $"post {textOf(p.A)} depth {Bucket((int)p.B)} {Cap((int)p.C)} stage {Mode(p.D)} {Faults(p.Faults)}",
        FeatureTag.Tick => $"tick {textOf(p.A)} pending {Bucket((int)p.B)}",
        FeatureTag.Turn => $"turn {textOf(p.A)} {(StageWorkKind)p.B} depth {Bucket((int)p.C)} after {Mode(p.D)} {Faults(p.Faults)}",
        FeatureTag.TurnMessage => $"turn {textOf(p.A)} {(StageWorkKind)p.B} '{textOf(p.C)}'",
        FeatureTag.Lifecycle => $"lifecycle {textOf(p.A)} {(LifecycleEvent)p.B} after {(p.C == 0 ? "nothing" : ((LifecycleEvent)(p.C - 1)).ToString())} {Faults(p.Faults)}",
        FeatureTag.StageMembers => $"join into a stage of {Bucket((int)p.B)} actors",
        FeatureTag.Issue => $"request {textOf(p.A)} -> {textOf(p.B)} '{textOf(p.C)}' with {Bucket((int)p.D)} pending",
        FeatureTag.Completed => string.Create(CultureInfo.InvariantCulture, $"request {textOf(p.A)} -> {textOf(p.B)} {(RequestOutcome)p.C} code {p.D} {Faults(p.Faults)}"),
        FeatureTag.HandlerFailed => $"handler failed {textOf(p.A)} {(StageWorkKind)p.B} {textOf(p.C)}",
        FeatureTag.Dropped => $"drop {textOf(p.A)} '{textOf(p.B)}' {Faults(p.Faults)}",
        FeatureTag.QueueHighWater => $"queue '{textOf(p.A)}' high water {Bucket((int)p.B)} {Cap((int)p.C)}",
        FeatureTag.Count => string.Create(CultureInfo.InvariantCulture, $"{textOf(p.A)} in count bucket {p.B}"),
        FeatureTag.Outcome => string.Create(CultureInfo.InvariantCulture, $"outcome {p.A}"),
        _ => $"violated {textOf(p.A)}",
    };

    /// <summary>The range of a <see cref="BehaviourCoverage.Log2Bucket"/>: 0, 1, 2-3, 4-7, ...</summary>
    private static string Bucket(int bucket) => bucket switch
    {
        0 => "0",
        1 => "1",
        _ => string.Create(CultureInfo.InvariantCulture, $"{1L << (bucket - 1)}-{(1L << bucket) - 1}"),
    };

    private static string Cap(int against) => against switch
    {
        0 => "empty",
        1 => "within a quarter of its cap",
        2 => "within half its cap",
        3 => "below its cap",
        4 => "at its cap",
        _ => "over its cap",
    };

    private static string Mode(long packed)
    {
        var kind = (StageWorkKind)(packed & 0xFF);
        return (StageMode)(packed >> 8) switch
        {
            StageMode.Idle => "idle",
            StageMode.Running => "running " + kind,
            _ => "suspended in " + kind,
        };
    }

    private static string Faults(ActiveFaults faults) => faults == ActiveFaults.None ? "no faults" : "faults " + faults.ToString().Replace(", ", "+", StringComparison.Ordinal);
}
