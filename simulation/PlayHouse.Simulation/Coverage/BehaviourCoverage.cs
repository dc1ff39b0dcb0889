using System.Globalization;
using System.Numerics;
using PlayHouse.Core.Runtime;
using PlayHouse.Simulation.Checkers;
using PlayHouse.Simulation.Runs;

namespace PlayHouse.Simulation.Coverage;

/// <summary>
/// The abstract states one run reached, as a set of 64-bit features, for a search that steers toward new behaviour
/// (<c>swarm --guided</c>). A feature is a small tuple of what the runtime's hooks and the run's report expose, each
/// coarsened so that runs can share it: a stage's mailbox depth (a power-of-two bucket, and where it stands against the
/// mailbox's cap) by the stage's handler state (idle, running or suspended at an await, and in which kind of work) by
/// the kinds of fault active at that instant; the order of each actor's lifecycle callbacks; how each request ended
/// (reply, timeout or failure, with its error code) under which faults; each drop reason; each queue's high water
/// against its cap; each counter of the report in hit-count buckets; and which checkers judged the run.
/// </summary>
/// <remarks>
/// Attach it to a run through <see cref="RunSettings.Coverage"/>; the runner calls <see cref="Begin"/> before the
/// workload starts and <see cref="End"/> after the checkers judged the run. Only deterministic inputs go in (ids,
/// kinds, codes, counts, virtual time; never allocation figures or wall time), and strings are hashed with FNV-1a
/// (not <see cref="string.GetHashCode()"/>, which differs between processes), so the same seed and options give the
/// same features in any process. Not thread-safe: called only from the simulation thread of its one run.
/// </remarks>
public sealed class BehaviourCoverage : RuntimeObserver
{
    private readonly HashSet<ulong> _features = [];
    private readonly Dictionary<ulong, string>? _names;
    private readonly Dictionary<(string NodeId, long StageId), StageState> _stages = [];
    private readonly Dictionary<(string NodeId, long StageId, long Actor), LifecycleEvent> _lastLifecycle = [];
    private readonly Dictionary<string, (ulong Hash, string Role)> _strings = new(StringComparer.Ordinal);
    private readonly Dictionary<string, int> _pendingRequests = new(StringComparer.Ordinal);
    private SimWorld? _world;
    private FaultPhases? _faults;
    private int _mailboxCapacity = int.MaxValue;
    private ulong[]? _sorted;
    private ulong _last;

    /// <param name="keepNames">Keep a readable name for every feature (<see cref="NameOf"/>), for reports that explain
    /// what a run reached first; off, nothing but the 64-bit features is kept.</param>
    public BehaviourCoverage(bool keepNames = false)
    {
        _names = keepNames ? [] : null;
    }

    /// <summary>The features reached, in ascending order (a stable order for hashing and for storage).</summary>
    public IReadOnlyList<ulong> Features => _sorted ??= [.. _features.Order()];

    /// <summary>The readable name of a feature this run reached, when names are kept; else null.</summary>
    public string? NameOf(ulong feature) => _names is not null && _names.TryGetValue(feature, out var name) ? name : null;

    /// <summary>Starts a run: the world whose clock stamps the hooks and the options whose faults and caps shape the states.</summary>
    public void Begin(SimWorld world, SimOptions options)
    {
        ArgumentNullException.ThrowIfNull(world);
        ArgumentNullException.ThrowIfNull(options);
        if (_world is not null)
        {
            throw new InvalidOperationException("A BehaviourCoverage records one run; make a new one for the next.");
        }

        _world = world;
        _faults = new FaultPhases(options.Faults, options.LatencyMsMean);
        _mailboxCapacity = options.MailboxCapacity;
    }

    /// <summary>Ends the run: the states only its end shows (queue high waters, counters, the checkers' verdicts, the outcome).</summary>
    public void End(CheckerSet? checkers, SimReport report)
    {
        ArgumentNullException.ThrowIfNull(report);
        if (Add(Tag.Outcome, report.ExitCode, 0, 0, 0))
{
Name("outcome " + report.Outcome);
}
        foreach (var verdict in report.Verdicts.Where(v => !v.Passed))
        {
            var (hash, _) = Intern(verdict.CheckerName);
            if (Add(Tag.Violated, (long)hash, 0, 0, 0))
{
Name("violated " + verdict.CheckerName);
}
        }

        if (checkers is not null)
        {
            foreach (var queue in checkers.Queues.GetHighWaters())
            {
                var kind = QueueKind(queue.Name);
                var (hash, _) = Intern(kind);
                var depth = Log2Bucket(queue.HighWater);
                var against = CapBucket(queue.HighWater, queue.Cap);
                if (Add(Tag.QueueHighWater, (long)hash, depth, against, 0))
{
Name($"queue '{kind}' high water {BucketText(depth)} {CapText(against)}");
}
            }
        }

        foreach (var (name, value) in report.ServerCounters)
        {
            AddCount("server", name, value);
        }

        foreach (var (name, value) in report.Network)
        {
            AddCount("net", name, value);
        }

        foreach (var (name, text) in report.ScenarioMetrics)
        {
            // Allocation figures depend on the runtime, not the run: they stay out, or features would differ by process.
            if (!name.StartsWith("alloc.", StringComparison.Ordinal) && !name.Contains("Allocated", StringComparison.Ordinal)
                && long.TryParse(text, NumberStyles.Integer, CultureInfo.InvariantCulture, out var value))
            {
                AddCount("scenario", name, value);
            }
        }

        AddCount("registry", "stagesHighWater", report.Registries.StagesHighWater);
        AddCount("registry", "actorsHighWater", report.Registries.ActorsHighWater);
    }

    public override void OnMailboxPosted(string nodeId, long stageId, int mailboxLength, int externalLength)
    {
        var (_, role) = Intern(nodeId);
        var stage = StageOf(nodeId, stageId);
        var faults = Faults();
        var depth = Log2Bucket(mailboxLength);
        var against = CapBucket(externalLength, _mailboxCapacity);
        var mode = stage.Mode;
        var kind = stage.Kind;
        if (Add(Tag.Post, RoleHash(role), depth, against, ((long)mode << 8) | (long)kind, faults))
{
Name($"post {role} depth {BucketText(depth)} {CapText(against)} stage {ModeText(mode, kind)} {FaultText(faults)}");
}
        stage.Depth = mailboxLength;
    }

    public override void OnTickPosted(string nodeId, long stageId, int pendingTicks)
    {
        var (_, role) = Intern(nodeId);
        var depth = Log2Bucket(pendingTicks);
        if (Add(Tag.Tick, RoleHash(role), depth, 0, 0))
{
Name($"tick {role} pending {BucketText(depth)}");
}
    }

    public override void OnHandlerEntered(string nodeId, long stageId, StageWorkKind kind, string? msgId)
    {
        var (_, role) = Intern(nodeId);
        var stage = StageOf(nodeId, stageId);
        var faults = Faults();
        var depth = Log2Bucket(stage.Depth);
        var mode = stage.Mode;
        var before = stage.Kind;
        if (Add(Tag.Turn, RoleHash(role), (long)kind, depth, ((long)mode << 8) | (long)before, faults))
{
Name($"turn {role} {kind} depth {BucketText(depth)} after {ModeText(mode, before)} {FaultText(faults)}");
}
        if (msgId is not null)
        {
            var (message, _) = Intern(msgId);
            if (Add(Tag.TurnMessage, RoleHash(role), (long)kind, (long)message, 0))
{
Name($"turn {role} {kind} '{msgId}'");
}
        }

        stage.Mode = StageMode.Running;
        stage.Kind = kind;
    }

    public override void OnHandlerExited(string nodeId, long stageId)
    {
        var stage = StageOf(nodeId, stageId);
        stage.Mode = StageMode.Suspended;
    }

    public override void OnMessageCompleted(string nodeId, long stageId, StageWorkKind kind, string? msgId)
    {
        var stage = StageOf(nodeId, stageId);
        stage.Mode = StageMode.Idle;
        stage.Kind = kind;
    }

    public override void OnLifecycle(string nodeId, long stageId, long actorInstance, long accountId, LifecycleEvent lifecycleEvent)
    {
        var (_, role) = Intern(nodeId);
        var key = (nodeId, stageId, actorInstance);
        var previous = _lastLifecycle.TryGetValue(key, out var last) ? (long)last + 1 : 0;
        _lastLifecycle[key] = lifecycleEvent;
        var faults = Faults();
        if (Add(Tag.Lifecycle, RoleHash(role), (long)lifecycleEvent, previous, actorInstance == 0 ? 0 : 1, faults))
{
Name($"lifecycle {role} {lifecycleEvent} after {(previous == 0 ? "nothing" : ((LifecycleEvent)(previous - 1)).ToString())} {FaultText(faults)}");
}
        if (lifecycleEvent == LifecycleEvent.ActorJoinStage)
        {
            var members = _lastLifecycle.Count(kv => kv.Key.NodeId == nodeId && kv.Key.StageId == stageId && kv.Key.Actor != 0 && kv.Value is not LifecycleEvent.ActorDestroy);
            var bucket = Log2Bucket(members);
            if (Add(Tag.StageMembers, RoleHash(role), bucket, 0, 0))
{
Name($"join into a stage of {BucketText(bucket)} actors");
}
        }
    }

    public override void OnRequestIssued(string nodeId, ulong msgSeq, string targetNodeId, long targetStageId, string msgId)
    {
        var (_, role) = Intern(nodeId);
        var (_, target) = Intern(targetNodeId);
        var pending = _pendingRequests.GetValueOrDefault(nodeId) + 1;
        _pendingRequests[nodeId] = pending;
        var (message, _) = Intern(msgId);
        var bucket = Log2Bucket(pending);
        if (Add(Tag.Issue, RoleHash(role), RoleHash(target), (long)message, bucket))
{
Name($"request {role} -> {target} '{msgId}' with {BucketText(bucket)} pending");
}
    }

    public override void OnRequestCompleted(string nodeId, ulong msgSeq, string targetNodeId, RequestOutcome outcome, ushort errorCode)
    {
        var (_, role) = Intern(nodeId);
        var (_, target) = Intern(targetNodeId);
        _pendingRequests[nodeId] = Math.Max(0, _pendingRequests.GetValueOrDefault(nodeId) - 1);
        var faults = Faults();
        if (Add(Tag.Completed, RoleHash(role), RoleHash(target), (long)outcome, errorCode, faults))
{
Name($"request {role} -> {target} {outcome} code {errorCode} {FaultText(faults)}");
}
    }

    public override void OnHandlerFailed(string nodeId, long stageId, StageWorkKind kind, string? msgId, Exception error)
    {
        ArgumentNullException.ThrowIfNull(error);
        var (_, role) = Intern(nodeId);
        var (type, _) = Intern(error.GetType().FullName ?? error.GetType().Name);
        if (Add(Tag.HandlerFailed, RoleHash(role), (long)kind, (long)type, 0))
{
Name($"handler failed {role} {kind} {error.GetType().Name}");
}
    }

    public override void OnDropped(string nodeId, string reason, string? msgId)
    {
        var (_, role) = Intern(nodeId);
        var (hash, _) = Intern(reason);
        var faults = Faults();
        if (Add(Tag.Dropped, RoleHash(role), (long)hash, 0, 0, faults))
{
Name($"drop {role} '{reason}' {FaultText(faults)}");
}
    }

    /// <summary>A power-of-two bucket: 0 for 0, then 1 + floor(log2 n) (1, 2-3, 4-7, ...).</summary>
    public static int Log2Bucket(long value) => value <= 0 ? 0 : 1 + BitOperations.Log2((ulong)value);

    /// <summary>Hit-count buckets as afl++ keeps them (0, 1, 2, 3, 4-7, 8-15, 16-31, 32-127, 128+).</summary>
    public static int CountBucket(long value) => value switch
    {
        <= 0 => 0,
        1 => 1,
        2 => 2,
        3 => 3,
        < 8 => 4,
        < 16 => 5,
        < 32 => 6,
        < 128 => 7,
        _ => 8,
    };

    /// <summary>Where a length stands against its cap: empty, within a quarter, a half, below, at, over.</summary>
    public static int CapBucket(long length, long cap) =>
        length <= 0 ? 0
        : cap <= 0 || cap == int.MaxValue ? 1
        : length * 4 <= cap ? 1
        : length * 2 <= cap ? 2
        : length < cap ? 3
        : length == cap ? 4
        : 5;

    /// <summary>The deterministic 64-bit FNV-1a hash of a string (ordinal chars).</summary>
    public static ulong Fnv1a(string text)
    {
        ArgumentNullException.ThrowIfNull(text);
        var hash = 14695981039346656037UL;
        foreach (var ch in text)
        {
            hash = (hash ^ ch) * 1099511628211UL;
        }

        return hash;
    }

    private void AddCount(string family, string name, long value)
    {
        var key = family + "." + name;
        var (hash, _) = Intern(key);
        var bucket = CountBucket(value);
        if (Add(Tag.Count, (long)hash, bucket, 0, 0))
{
Name($"{key} in count bucket {bucket}");
}
    }

    private ActiveFaults Faults() => _faults is null || _world is null ? ActiveFaults.None : _faults.MaskAt(_world.NowTicks);

    private bool Add(Tag tag, long a, long b, long c, long d) => Add(tag, a, b, c, d, ActiveFaults.None);

    /// <summary>Records a feature; true when it is new to this run and names are kept (the caller then names it).</summary>
    private bool Add(Tag tag, long a, long b, long c, long d, ActiveFaults faults)
    {
        var feature = Mix(Mix(Mix(Mix(Mix(Mix(0, (ulong)tag), (ulong)a), (ulong)b), (ulong)c), (ulong)d), (ulong)faults);
        if (!_features.Add(feature))
        {
            return false;
        }

        _sorted = null;
        _last = feature;
        return _names is not null;
    }

    private void Name(string name) => _names![_last] = name;

    private static ulong Mix(ulong hash, ulong value)
    {
        // SplitMix64's finaliser over the running hash: every input bit reaches every output bit.
        var z = hash + 0x9E3779B97F4A7C15UL + value;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9UL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBUL;
        return z ^ (z >> 31);
    }

    private (ulong Hash, string Role) Intern(string text)
    {
        if (!_strings.TryGetValue(text, out var entry))
        {
            entry = (Fnv1a(text), RoleOf(text));
            _strings.Add(text, entry);
        }

        return entry;
    }

    private long RoleHash(string role) => (long)Intern(role).Hash;

    /// <summary>A node's role without its number (play-754906 and play-1 are both 'play'); other strings stay whole.</summary>
    private static string RoleOf(string text)
    {
        var dash = text.IndexOf('-', StringComparison.Ordinal);
        return dash > 0 && dash + 1 < text.Length && text.AsSpan(dash + 1).IndexOfAnyExceptInRange('0', '9') < 0 ? text[..dash] : text;
    }

    /// <summary>A queue's name without the node, stage or client numbers in it, so the same queue of two runs is one kind.</summary>
    private static string QueueKind(string name)
    {
        var text = new System.Text.StringBuilder(name.Length);
        var inNumber = false;
        foreach (var ch in name)
        {
            if (char.IsAsciiDigit(ch))
            {
                if (!inNumber)
                {
                    text.Append('#');
                }

                inNumber = true;
            }
            else
            {
                inNumber = false;
                text.Append(ch);
            }
        }

        return text.ToString();
    }

    private StageState StageOf(string nodeId, long stageId)
    {
        if (!_stages.TryGetValue((nodeId, stageId), out var state))
        {
            state = new StageState();
            _stages.Add((nodeId, stageId), state);
        }

        return state;
    }

    /// <summary>The range of a <see cref="Log2Bucket"/>: 0, 1, 2-3, 4-7, ...</summary>
    private static string BucketText(int bucket) => bucket switch
    {
        0 => "0",
        1 => "1",
        _ => string.Create(CultureInfo.InvariantCulture, $"{1L << (bucket - 1)}-{(1L << bucket) - 1}"),
    };

    private static string CapText(int against) => against switch
    {
        0 => "empty",
        1 => "within a quarter of its cap",
        2 => "within half its cap",
        3 => "below its cap",
        4 => "at its cap",
        _ => "over its cap",
    };

    private static string ModeText(StageMode mode, StageWorkKind kind) => mode switch
    {
        StageMode.Idle => "idle",
        StageMode.Running => "running " + kind,
        _ => "suspended in " + kind,
    };

    private static string FaultText(ActiveFaults faults) => faults == ActiveFaults.None ? "no faults" : "faults " + faults.ToString().Replace(", ", "+", StringComparison.Ordinal);

    private enum Tag
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

    private enum StageMode
    {
        Idle,
        Running,
        Suspended,
    }

    private sealed class StageState
    {
        public StageMode Mode;
        public StageWorkKind Kind;
        public int Depth;
    }
}
