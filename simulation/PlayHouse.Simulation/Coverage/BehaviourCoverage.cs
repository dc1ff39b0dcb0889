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
/// same features in any process. The hooks allocate nothing once a run's nodes, stages, actors and message ids are
/// known (the sets are sized up front and names are made only when asked for): the allocation checkers count what
/// the simulation thread allocates, and a coverage collector must not be what they find. Not thread-safe: called only
/// from the simulation thread of its one run.
/// </remarks>
public sealed class BehaviourCoverage : RuntimeObserver
{
    // Room for the features, stages, actors and strings of a large run, so that the hooks do not grow the sets while a
    // performance checker measures the run's allocations (a few hundred features is typical; a set grows past this
    // only in a run far larger than any a search draws).
    private const int FeaturesCapacity = 4_096;
    private const int EntitiesCapacity = 1_024;

    private readonly HashSet<ulong> _features = new(FeaturesCapacity);
    private readonly List<FeatureParts>? _parts;
    private readonly Dictionary<(string NodeId, long StageId), StageState> _stages = new(EntitiesCapacity);
    private readonly Dictionary<(string NodeId, long StageId, long Actor), LifecycleEvent> _lastLifecycle = new(EntitiesCapacity);
    private readonly Dictionary<string, (ulong Hash, string Role)> _strings = new(EntitiesCapacity, StringComparer.Ordinal);
    private readonly Dictionary<string, int> _pendingRequests = new(EntitiesCapacity, StringComparer.Ordinal);
    private Dictionary<ulong, FeatureParts>? _partsByFeature;
    private SimWorld? _world;
    private FaultPhases? _faults;
    private int _mailboxCapacity = int.MaxValue;
    private ulong[]? _sorted;

    /// <param name="keepNames">Keep what each feature is made of, so <see cref="NameOf"/> can name it (reports that
    /// explain what a run reached first); off, nothing but the 64-bit features is kept.</param>
    public BehaviourCoverage(bool keepNames = false)
    {
        _parts = keepNames ? new List<FeatureParts>(FeaturesCapacity) : null;
    }

    /// <summary>The features reached, in ascending order (a stable order for hashing and for storage).</summary>
    public IReadOnlyList<ulong> Features => _sorted ??= [.. _features.Order()];

    /// <summary>A readable name of a feature this run reached, when names are kept; else null.</summary>
    public string? NameOf(ulong feature)
    {
        if (_parts is null)
        {
            return null;
        }

        _partsByFeature ??= _parts.ToDictionary(p => p.Feature);
        return _partsByFeature.TryGetValue(feature, out var parts) ? FeatureNames.Describe(parts, TextOf) : null;
    }

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
        Add(FeatureTag.Outcome, report.ExitCode, 0, 0, 0);
        foreach (var verdict in report.Verdicts.Where(v => !v.Passed))
        {
            Add(FeatureTag.Violated, Hash(verdict.CheckerName), 0, 0, 0);
        }

        if (checkers is not null)
        {
            foreach (var queue in checkers.Queues.GetHighWaters())
            {
                Add(FeatureTag.QueueHighWater, Hash(QueueKind(queue.Name)), Log2Bucket(queue.HighWater), CapBucket(queue.HighWater, queue.Cap), 0);
            }
        }

        foreach (var (name, value) in report.ServerCounters)
        {
            AddCount("server." + name, value);
        }

        foreach (var (name, value) in report.Network)
        {
            AddCount("net." + name, value);
        }

        foreach (var (name, text) in report.ScenarioMetrics)
        {
            // Allocation figures depend on the runtime, not the run: they stay out, or features would differ by process.
            if (!name.StartsWith("alloc.", StringComparison.Ordinal) && !name.Contains("Allocated", StringComparison.Ordinal)
                && long.TryParse(text, NumberStyles.Integer, CultureInfo.InvariantCulture, out var value))
            {
                AddCount("scenario." + name, value);
            }
        }

        AddCount("registry.stagesHighWater", report.Registries.StagesHighWater);
        AddCount("registry.actorsHighWater", report.Registries.ActorsHighWater);
    }

    public override void OnMailboxPosted(string nodeId, long stageId, int mailboxLength, int externalLength)
    {
        var stage = StageOf(nodeId, stageId);
        Add(FeatureTag.Post, RoleHash(nodeId), Log2Bucket(mailboxLength), CapBucket(externalLength, _mailboxCapacity), FeatureNames.PackMode(stage.Mode, stage.Kind), Faults());
        stage.Depth = mailboxLength;
    }

    public override void OnTickPosted(string nodeId, long stageId, int pendingTicks) =>
        Add(FeatureTag.Tick, RoleHash(nodeId), Log2Bucket(pendingTicks), 0, 0);

    public override void OnHandlerEntered(string nodeId, long stageId, StageWorkKind kind, string? msgId)
    {
        var stage = StageOf(nodeId, stageId);
        var role = RoleHash(nodeId);
        Add(FeatureTag.Turn, role, (long)kind, Log2Bucket(stage.Depth), FeatureNames.PackMode(stage.Mode, stage.Kind), Faults());
        if (msgId is not null)
        {
            Add(FeatureTag.TurnMessage, role, (long)kind, Hash(msgId), 0);
        }

        stage.Mode = StageMode.Running;
        stage.Kind = kind;
    }

    public override void OnHandlerExited(string nodeId, long stageId) => StageOf(nodeId, stageId).Mode = StageMode.Suspended;

    public override void OnMessageCompleted(string nodeId, long stageId, StageWorkKind kind, string? msgId)
    {
        var stage = StageOf(nodeId, stageId);
        stage.Mode = StageMode.Idle;
        stage.Kind = kind;
    }

    public override void OnLifecycle(string nodeId, long stageId, long actorInstance, long accountId, LifecycleEvent lifecycleEvent)
    {
        var role = RoleHash(nodeId);
        var key = (nodeId, stageId, actorInstance);
        var seen = _lastLifecycle.TryGetValue(key, out var last);
        _lastLifecycle[key] = lifecycleEvent;
        Add(FeatureTag.Lifecycle, role, (long)lifecycleEvent, seen ? (long)last + 1 : 0, actorInstance == 0 ? 0 : 1, Faults());
        if (actorInstance == 0)
        {
            return;
        }

        // The actors of the stage that have had a callback and are not destroyed, kept as a count per stage.
        var stage = StageOf(nodeId, stageId);
        stage.Members += (lifecycleEvent != LifecycleEvent.ActorDestroy ? 1 : 0) - (seen && last != LifecycleEvent.ActorDestroy ? 1 : 0);
        if (lifecycleEvent == LifecycleEvent.ActorJoinStage)
        {
            Add(FeatureTag.StageMembers, role, Log2Bucket(stage.Members), 0, 0);
        }
    }

    public override void OnRequestIssued(string nodeId, ulong msgSeq, string targetNodeId, long targetStageId, string msgId)
    {
        var pending = _pendingRequests.GetValueOrDefault(nodeId) + 1;
        _pendingRequests[nodeId] = pending;
        Add(FeatureTag.Issue, RoleHash(nodeId), RoleHash(targetNodeId), Hash(msgId), Log2Bucket(pending));
    }

    public override void OnRequestCompleted(string nodeId, ulong msgSeq, string targetNodeId, RequestOutcome outcome, ushort errorCode)
    {
        _pendingRequests[nodeId] = Math.Max(0, _pendingRequests.GetValueOrDefault(nodeId) - 1);
        Add(FeatureTag.Completed, RoleHash(nodeId), RoleHash(targetNodeId), (long)outcome, errorCode, Faults());
    }

    public override void OnHandlerFailed(string nodeId, long stageId, StageWorkKind kind, string? msgId, Exception error)
    {
        ArgumentNullException.ThrowIfNull(error);
        Add(FeatureTag.HandlerFailed, RoleHash(nodeId), (long)kind, Hash(error.GetType().FullName ?? error.GetType().Name), 0);
    }

    public override void OnDropped(string nodeId, string reason, string? msgId) =>
        Add(FeatureTag.Dropped, RoleHash(nodeId), Hash(reason), 0, 0, Faults());

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

    private void AddCount(string key, long value) => Add(FeatureTag.Count, Hash(key), CountBucket(value), 0, 0);

    private ActiveFaults Faults() => _faults is null || _world is null ? ActiveFaults.None : _faults.MaskAt(_world.NowTicks);

    private void Add(FeatureTag tag, long a, long b, long c, long d, ActiveFaults faults = ActiveFaults.None)
    {
        var feature = Mix(Mix(Mix(Mix(Mix(Mix(0, (ulong)tag), (ulong)a), (ulong)b), (ulong)c), (ulong)d), (ulong)faults);
        if (_features.Add(feature))
        {
            _sorted = null;
            _parts?.Add(new FeatureParts(feature, tag, a, b, c, d, faults));
        }
    }

    private static ulong Mix(ulong hash, ulong value)
    {
        // SplitMix64's finaliser over the running hash: every input bit reaches every output bit.
        var z = hash + 0x9E3779B97F4A7C15UL + value;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9UL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBUL;
        return z ^ (z >> 31);
    }

    private long Hash(string text) => (long)Intern(text).Hash;

    private long RoleHash(string nodeId) => Hash(Intern(nodeId).Role);

    private (ulong Hash, string Role) Intern(string text)
    {
        if (!_strings.TryGetValue(text, out var entry))
        {
            entry = (Fnv1a(text), RoleOf(text));
            _strings.Add(text, entry);
        }

        return entry;
    }

    /// <summary>The string a hash in a feature stands for (names only: a linear search over the strings seen).</summary>
    private string TextOf(long hash)
    {
        foreach (var (text, entry) in _strings)
        {
            if ((long)entry.Hash == hash)
            {
                return text;
            }
        }

        return ((ulong)hash).ToString("x16", CultureInfo.InvariantCulture);
    }

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

    private sealed class StageState
    {
        public StageMode Mode;
        public StageWorkKind Kind;
        public int Depth;
        public int Members;
    }
}
