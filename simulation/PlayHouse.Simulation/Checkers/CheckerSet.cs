using PlayHouse.Core.Runtime;

namespace PlayHouse.Simulation.Checkers;

/// <summary>Settings of the standard checkers a <see cref="CheckerSet"/> builds.</summary>
public sealed record CheckerSetOptions
{
    /// <summary>How long after a heal every expected client has to progress.</summary>
    public TimeSpan LivenessWindow { get; init; } = TimeSpan.FromSeconds(10);

    /// <summary>
    /// Internal entries (ticks, reply callbacks, off-stage results, lifecycle messages) a mailbox may hold
    /// beyond <see cref="ServerOptions.MailboxCapacityMax"/>; see <see cref="QueueCapChecker.WatchMailboxes(string, int, int)"/>.
    /// </summary>
    public int MailboxInternalEntriesAllowance { get; init; } = 1_024;

    /// <summary>Leaked buffers a pool violation names.</summary>
    public int LeakedBuffersListedMax { get; init; } = 5;

    /// <summary>Violations each checker keeps in memory (all are counted).</summary>
    public int ViolationsKeptMax { get; init; } = 100;

    /// <summary>
    /// Every hook and check comes from one thread (the simulation's), so the checkers skip their locks. The
    /// simulation runner sets it; real mode, where hooks come from many threads, must not.
    /// </summary>
    public bool SingleThreaded { get; init; }
}

/// <summary>
/// All checkers of a run behind one <see cref="RuntimeObserver"/>: give it to every node as
/// <c>NodeSeams.Observer</c>, call <see cref="Watch"/> for each node, feed the workload checkers
/// (<see cref="Fifo"/>, the client side of <see cref="Requests"/>, <see cref="Liveness"/>, <see cref="Queues"/>)
/// from the workload, then call <see cref="CheckStep"/> after every simulated step and <see cref="CheckQuiescent"/>
/// when the world is quiet. Runtime hooks are fanned out to the observer-based checkers and, when a trace is
/// given, recorded in it as canonical lines.
/// <para>When each invariant is judged: <b>as events happen</b> (no polling): per-sender FIFO, a second handler
/// on a stage, request completions that are second or never issued, mis-paired client replies, queues over
/// their caps, lifecycle order. <b>After every step</b> (<see cref="CheckStep"/>, cheap): no handler is still
/// active between two steps of the single-threaded world; liveness windows that have ended. <b>At
/// quiescence</b> (<see cref="CheckQuiescent"/>): requests (node and client) never completed, pool leaks, stages
/// still creating, actors stuck mid-join, clients that can no longer progress.</para>
/// </summary>
/// <example>
/// <code>
/// var checkers = new CheckerSet(world.Time, trace: world.Trace);
/// // ... build nodes with Observer = checkers, then checkers.Watch(node) for each ...
/// while (world.Step()) { if (!checkers.CheckStep()) break; }
/// checkers.CheckQuiescent();
/// foreach (var verdict in checkers.Verdicts) Console.WriteLine(verdict);
/// </code>
/// </example>
/// <remarks>
/// Thread-safe: every checker locks its own state, and a lock guards the trace and the list of extra checkers;
/// with <see cref="CheckerSetOptions.SingleThreaded"/> (simulation only) the per-hook locks are skipped.
/// The trace is canonical only in simulation, where one thread makes the order of events deterministic.
/// </remarks>
public sealed class CheckerSet : RuntimeObserver, INodeCrashAware, IPoolFaultAware
{
    private const int StandardCheckerCount = 7;

    private readonly Lock _gate = new();
    private readonly List<IInvariantChecker> _checkers = [];
    private readonly List<RuntimeObserver> _extraObservers = [];

    // Replaced, never changed in place, under _gate: the run loop reads them after every step without the lock.
    // The per-step checkers added to the standard ones (which CheckStep calls directly).
    private IInvariantChecker[] _stepCheckers = [];
    private IInvariantChecker[] _extraCheckers = [];
    private readonly SimTrace? _trace;
    private readonly TraceText? _traceText;

    public CheckerSet(TimeProvider time, CheckerSetOptions? options = null, SimTrace? trace = null)
    {
        ArgumentNullException.ThrowIfNull(time);
        Options = options ?? new CheckerSetOptions();
        Context = new CheckerContext(time, Options.ViolationsKeptMax, Options.SingleThreaded);
        _trace = trace;
        _traceText = trace is null ? null : new TraceText();
        Fifo = new FifoPerSenderChecker(Context);
        Handlers = new SingleActiveHandlerChecker(Context);
        Requests = new ExactlyOnceRequestChecker(Context);
        Pools = new PoolLedgerChecker(Context, Options.LeakedBuffersListedMax);
        Queues = new QueueCapChecker(Context);
        Lifecycle = new LifecycleChecker(Context);
        Liveness = new LivenessChecker(Context, Options.LivenessWindow);
        _checkers.AddRange([Fifo, Handlers, Requests, Pools, Queues, Lifecycle, Liveness]);
        if (_checkers.Count != StandardCheckerCount)
        {
            throw new InvalidOperationException("The standard checkers changed; update StandardCheckerCount.");
        }

        // The run loop calls the standard per-step checks directly (no interface dispatch per event), so the set of
        // standard checkers that check each step is pinned here like their count above.
        if (!_checkers.Where(ChecksEachStep).SequenceEqual([Handlers, Liveness]))
        {
            throw new InvalidOperationException("The standard per-step checkers changed; update CheckStep.");
        }
    }

    public CheckerSetOptions Options { get; }

    /// <summary>The context every checker of the set shares; build extra checkers with it so violations order across all.</summary>
    public CheckerContext Context { get; }

    public FifoPerSenderChecker Fifo { get; }

    public SingleActiveHandlerChecker Handlers { get; }

    public ExactlyOnceRequestChecker Requests { get; }

    public PoolLedgerChecker Pools { get; }

    public QueueCapChecker Queues { get; }

    public LifecycleChecker Lifecycle { get; }

    public LivenessChecker Liveness { get; }

    /// <summary>Node crashes seen so far.</summary>
    public int NodeCrashCount { get; private set; }

    /// <summary>
    /// A node crashed: every checker of the set that keys state by node (<see cref="INodeCrashAware"/>) forgets the
    /// lost incarnation. Simulated clusters call this from their crash verb when the set is their observer.
    /// </summary>
    public void OnNodeCrashed(string nodeId)
    {
        ArgumentException.ThrowIfNullOrEmpty(nodeId);
        NodeCrashCount++;
        foreach (var checker in Checkers)
        {
            (checker as INodeCrashAware)?.OnNodeCrashed(nodeId);
        }
    }

    /// <summary>A pool's ownership fault goes to the pool ledger, which records it as a violation.</summary>
    public void OnPoolOwnershipFault(string poolName, PlayHouse.Core.Pooling.PoolOwnershipException fault) => Pools.OnOwnershipFault(poolName, fault);

    /// <summary>Every checker, the standard ones first, in a fixed order.</summary>
    public IReadOnlyList<IInvariantChecker> Checkers
    {
        get
        {
            lock (_gate)
            {
                return [.. _checkers];
            }
        }
    }

    /// <summary>True once any checker of the set recorded a violation; the run loop polls this.</summary>
    public bool HasViolations
    {
        get
        {
            if (Context.HasViolations)
            {
                return true;
            }

            // Extra checkers built with another context report only through their own logs (the ones that share
            // this set's context set its flag themselves, so they are not polled).
            var extras = Volatile.Read(ref _extraCheckers);
            for (var i = 0; i < extras.Length; i++)
            {
                if (extras[i].HasViolations)
                {
                    return true;
                }
            }

            return false;
        }
    }

    /// <summary>The earliest violation of all checkers (by virtual time, then recording order), or null.</summary>
    public Violation? FirstViolation
    {
        get
        {
            Violation? first = null;
            foreach (var checker in Checkers)
            {
                var candidate = checker.FirstViolation;
                if (candidate is not null && (first is null || Compare(candidate, first) < 0))
                {
                    first = candidate;
                }
            }

            return first;
        }
    }

    /// <summary>The kept violations of all checkers, by virtual time then recording order.</summary>
    public IReadOnlyList<Violation> AllViolations
    {
        get
        {
            var all = new List<Violation>();
            foreach (var checker in Checkers)
            {
                all.AddRange(checker.Violations);
            }

            all.Sort(Compare);
            return all;
        }
    }

    /// <summary>Every violation recorded, kept or not.</summary>
    public long ViolationCount
    {
        get
        {
            long count = 0;
            foreach (var checker in Checkers)
            {
                count += checker.ViolationCount;
            }

            return count;
        }
    }

    /// <summary>One verdict per checker, in <see cref="Checkers"/> order, for the run report.</summary>
    public IReadOnlyList<CheckerVerdict> Verdicts
    {
        get
        {
            var checkers = Checkers;
            var verdicts = new CheckerVerdict[checkers.Count];
            for (var i = 0; i < checkers.Count; i++)
            {
                verdicts[i] = checkers[i].Verdict;
            }

            return verdicts;
        }
    }

    /// <summary>
    /// Adds a checker; one that is also a <see cref="RuntimeObserver"/> receives every runtime hook too. Add
    /// before the run starts: the hooks read the lists without the lock.
    /// </summary>
    public void Add(IInvariantChecker checker)
    {
        ArgumentNullException.ThrowIfNull(checker);
        lock (_gate)
        {
            _checkers.Add(checker);
            if (!SharesContext(checker))
            {
                Volatile.Write(ref _extraCheckers, [.. _extraCheckers, checker]);
            }

            if (ChecksEachStep(checker))
            {
                Volatile.Write(ref _stepCheckers, [.. _stepCheckers, checker]);
            }

            if (checker is RuntimeObserver observer)
            {
                _extraObservers.Add(observer);
            }
        }
    }

    /// <summary>
    /// Adds an observer that hears every runtime hook after the checkers (a coverage collector): it judges nothing.
    /// Add before the run starts: the hooks read the list without the lock.
    /// </summary>
    public void AddObserver(RuntimeObserver observer)
    {
        ArgumentNullException.ThrowIfNull(observer);
        lock (_gate)
        {
            _extraObservers.Add(observer);
        }
    }

    /// <summary>Watches a node: its mailboxes against its <see cref="ServerOptions.MailboxCapacityMax"/>, and its pool's ledger.</summary>
    public void Watch(ServerNode node)
    {
        ArgumentNullException.ThrowIfNull(node);
        Queues.WatchMailboxes(node, Options.MailboxInternalEntriesAllowance);
        Pools.Add($"pool of {node.NodeId}", node.Pool);
    }

    /// <summary>Runs the cheap checks that hold after every step; false when any violation is recorded (stop the run).</summary>
    public bool CheckStep()
    {
        // In the order of Checkers, as the added ones below.
        Handlers.CheckStep();
        Liveness.CheckStep();
        var checkers = Volatile.Read(ref _stepCheckers);
        for (var i = 0; i < checkers.Length; i++)
        {
            checkers[i].CheckStep();
        }

        return !HasViolations;
    }

    /// <summary>Runs every check, including the ones that hold only when the world is quiet; false when any violation is recorded.</summary>
    public bool CheckQuiescent()
    {
        foreach (var checker in Checkers)
        {
            checker.CheckStep();
            checker.CheckQuiescent();
        }

        return !HasViolations;
    }

    public void ThrowIfViolated()
    {
        if (!HasViolations)
        {
            return;
        }

        throw InvariantViolationException.From(AllViolations, ViolationCount);
    }

    // ---- Runtime hooks: fan out, then trace ----

    public override void OnHandlerEntered(string nodeId, long stageId, StageWorkKind kind, string? msgId)
    {
        Handlers.OnHandlerEntered(nodeId, stageId, kind, msgId);
        for (var i = 0; i < _extraObservers.Count; i++)
        {
            _extraObservers[i].OnHandlerEntered(nodeId, stageId, kind, msgId);
        }

        if (_trace is not null)
        {
            using (Context.Enter(_gate))
            {
                _trace.Record(Context.NowTicks, TraceText.Enter(kind), stageId, text: _traceText!.Get(nodeId, msgId));
            }
        }
    }

    public override void OnHandlerExited(string nodeId, long stageId)
    {
        Handlers.OnHandlerExited(nodeId, stageId);
        for (var i = 0; i < _extraObservers.Count; i++)
        {
            _extraObservers[i].OnHandlerExited(nodeId, stageId);
        }

        if (_trace is not null)
        {
            using (Context.Enter(_gate))
            {
                _trace.Record(Context.NowTicks, "exit", stageId, text: nodeId);
            }
        }
    }

    public override void OnMessageCompleted(string nodeId, long stageId, StageWorkKind kind, string? msgId)
    {
        Lifecycle.OnMessageCompleted(nodeId, stageId, kind, msgId);
        for (var i = 0; i < _extraObservers.Count; i++)
        {
            _extraObservers[i].OnMessageCompleted(nodeId, stageId, kind, msgId);
        }
    }

    public override void OnLifecycle(string nodeId, long stageId, long actorInstance, long accountId, LifecycleEvent lifecycleEvent)
    {
        Lifecycle.OnLifecycle(nodeId, stageId, actorInstance, accountId, lifecycleEvent);
        for (var i = 0; i < _extraObservers.Count; i++)
        {
            _extraObservers[i].OnLifecycle(nodeId, stageId, actorInstance, accountId, lifecycleEvent);
        }

        if (_trace is not null)
        {
            using (Context.Enter(_gate))
            {
                _trace.Record(Context.NowTicks, TraceText.Lifecycle(lifecycleEvent), stageId, actorInstance, accountId, nodeId);
            }
        }
    }

    public override void OnRequestIssued(string nodeId, ulong msgSeq, string targetNodeId, long targetStageId, string msgId)
    {
        Requests.OnRequestIssued(nodeId, msgSeq, targetNodeId, targetStageId, msgId);
        for (var i = 0; i < _extraObservers.Count; i++)
        {
            _extraObservers[i].OnRequestIssued(nodeId, msgSeq, targetNodeId, targetStageId, msgId);
        }

        if (_trace is not null)
        {
            using (Context.Enter(_gate))
            {
                _trace.Record(Context.NowTicks, "request.issued", (long)msgSeq, targetStageId, text: _traceText!.Get(nodeId, targetNodeId, msgId));
            }
        }
    }

    public override void OnRequestCompleted(string nodeId, ulong msgSeq, string targetNodeId, RequestOutcome outcome, ushort errorCode)
    {
        Requests.OnRequestCompleted(nodeId, msgSeq, targetNodeId, outcome, errorCode);
        for (var i = 0; i < _extraObservers.Count; i++)
        {
            _extraObservers[i].OnRequestCompleted(nodeId, msgSeq, targetNodeId, outcome, errorCode);
        }

        if (_trace is not null)
        {
            using (Context.Enter(_gate))
            {
                _trace.Record(Context.NowTicks, TraceText.Completed(outcome), (long)msgSeq, errorCode, text: _traceText!.Get(nodeId, targetNodeId, null));
            }
        }
    }

    public override void OnMailboxPosted(string nodeId, long stageId, int mailboxLength, int externalLength)
    {
        Queues.OnMailboxPosted(nodeId, stageId, mailboxLength, externalLength);
        for (var i = 0; i < _extraObservers.Count; i++)
        {
            _extraObservers[i].OnMailboxPosted(nodeId, stageId, mailboxLength, externalLength);
        }
    }

    public override void OnTickPosted(string nodeId, long stageId, int pendingTicks)
    {
        Queues.OnTickPosted(nodeId, stageId, pendingTicks);
        for (var i = 0; i < _extraObservers.Count; i++)
        {
            _extraObservers[i].OnTickPosted(nodeId, stageId, pendingTicks);
        }
    }

    public override void OnHandlerFailed(string nodeId, long stageId, StageWorkKind kind, string? msgId, Exception error)
    {
        for (var i = 0; i < _extraObservers.Count; i++)
        {
            _extraObservers[i].OnHandlerFailed(nodeId, stageId, kind, msgId, error);
        }
    }

    public override void OnDropped(string nodeId, string reason, string? msgId)
    {
        for (var i = 0; i < _extraObservers.Count; i++)
        {
            _extraObservers[i].OnDropped(nodeId, reason, msgId);
        }

        if (_trace is not null)
        {
            using (Context.Enter(_gate))
            {
                _trace.Record(Context.NowTicks, "drop", text: _traceText!.Get(nodeId, reason, msgId));
            }
        }
    }

    /// <summary>
    /// False for a checker whose <see cref="IInvariantChecker.CheckStep"/> is the empty one of the common base
    /// classes: the run loop then skips it after every step (its quiescent checks still run).
    /// </summary>
    private static bool ChecksEachStep(IInvariantChecker checker)
    {
        if (checker is IWrappingChecker wrapping)
        {
            return ChecksEachStep(wrapping.Inner);
        }

        var declaring = checker.GetType().GetMethod(nameof(IInvariantChecker.CheckStep), Type.EmptyTypes)?.DeclaringType;
        return declaring != typeof(InvariantChecker) && declaring != typeof(RuntimeInvariantChecker);
    }

    /// <summary>True when a violation of <paramref name="checker"/> raises <see cref="CheckerContext.HasViolations"/> of this set.</summary>
    private bool SharesContext(IInvariantChecker checker) => checker switch
    {
        IWrappingChecker wrapping => SharesContext(wrapping.Inner),
        InvariantChecker c => ReferenceEquals(c.Context, Context),
        RuntimeInvariantChecker c => ReferenceEquals(c.Context, Context),
        _ => false,
    };

    private static int Compare(Violation a, Violation b)
    {
        var byTime = a.VirtualTime.CompareTo(b.VirtualTime);
        return byTime != 0 ? byTime : a.Sequence.CompareTo(b.Sequence);
    }

    /// <summary>
    /// The text fields of trace records. Kinds come from tables built once; composite texts are cached per
    /// distinct (node, peer, msg id), so tracing allocates only the first time a combination appears.
    /// </summary>
    /// <remarks>Not thread-safe; used under the set's lock.</remarks>
    private sealed class TraceText
    {
        private const int CachedTextsMax = 4_096;
        private static readonly string[] LifecycleKinds = BuildKinds<LifecycleEvent>("lifecycle.");
        private static readonly string[] EnterKinds = BuildKinds<StageWorkKind>("enter.");
        private static readonly string[] CompletedKinds = BuildKinds<RequestOutcome>("request.");
        private readonly Dictionary<(string A, string? B, string? C), string> _texts = [];
        private string? _lastA;
        private string? _lastB;
        private string? _lastC;
        private string? _lastText;

        public static string Lifecycle(LifecycleEvent value) => Kind(LifecycleKinds, (int)value, "lifecycle.", value);

        public static string Enter(StageWorkKind value) => Kind(EnterKinds, (int)value, "enter.", value);

        public static string Completed(RequestOutcome value) => Kind(CompletedKinds, (int)value, "request.", value);

        /// <summary>The fields joined by single spaces, null ones left out ("-" stands for a missing msg id).</summary>
        public string Get(string a, string? b) => Get(a, b ?? "-", null);

        public string Get(string a, string? b, string? c)
        {
            // Hooks pass the same string instances over and over (a node's id, a cached msg id), so the last text
            // asked for is found by reference before any string is hashed.
            if (ReferenceEquals(a, _lastA) && ReferenceEquals(b, _lastB) && ReferenceEquals(c, _lastC))
            {
                return _lastText!;
            }

            var found = Lookup(a, b, c);
            (_lastA, _lastB, _lastC, _lastText) = (a, b, c, found);
            return found;
        }

        private string Lookup(string a, string? b, string? c)
        {
            if (_texts.TryGetValue((a, b, c), out var text))
            {
                return text;
            }

            text = c is null ? $"{a} {b}" : $"{a} {b} {c}";
            if (_texts.Count < CachedTextsMax)
            {
                _texts.Add((a, b, c), text);
            }

            return text;
        }

        private static string Kind<T>(string[] table, int index, string prefix, T value)
            where T : struct, Enum =>
            (uint)index < (uint)table.Length ? table[index] : prefix + value.ToString();

        private static string[] BuildKinds<T>(string prefix)
            where T : struct, Enum
        {
            var values = Enum.GetValues<T>();
            var max = 0;
            foreach (var value in values)
            {
                max = Math.Max(max, Convert.ToInt32(value, System.Globalization.CultureInfo.InvariantCulture));
            }

            var table = new string[max + 1];
            foreach (var value in values)
            {
                table[Convert.ToInt32(value, System.Globalization.CultureInfo.InvariantCulture)] = prefix + value.ToString();
            }

            return table;
        }
    }
}
