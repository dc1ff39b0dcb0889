using System.Text;
using PlayHouse.Core.Pooling;

namespace PlayHouse.Simulation.Checkers;

/// <summary>
/// No pooled buffer leaks (B7): at quiescence every watched pool has nothing outstanding and as many returns as
/// rents, in total and in every size class, and its checked-mode ledger agrees with its counters. A leak names
/// the first leaked buffers and their owners. Uses the pool totals (<see cref="MessagePool.GetStatistics"/>), the
/// per-class counters (<see cref="MessagePool.GetClassStatistics"/>) and the ledger
/// (<see cref="MessagePool.GetOutstanding"/>). Byte stores that are not pools (the network's stream bytes in flight)
/// are watched too: each must hold nothing at quiescence.
/// </summary>
/// <remarks>
/// Thread-safe (the pools are, and a lock guards the watch list). Add pools before the run starts: a buffer
/// rented before <see cref="Add"/> counts as well.
/// </remarks>
public sealed class PoolLedgerChecker : InvariantChecker
{
    public const string CheckerName = "PoolLedger";

    private readonly Lock _gate = new();
    private readonly List<WatchedPool> _pools = [];
    private readonly List<WatchedStore> _stores = [];

    // The faults recorded, by reference, so a run that the same exception ended is judged by its record (bounded).
    private readonly List<PoolOwnershipException> _faults = [];
    private const int FaultsKeptMax = 16;

    /// <param name="context">The run's checker context.</param>
    /// <param name="leakedBuffersListedMax">Leaked buffers a violation names before it says "and N more".</param>
    public PoolLedgerChecker(CheckerContext context, int leakedBuffersListedMax = 5)
        : base(CheckerName, context)
    {
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(leakedBuffersListedMax);
        LeakedBuffersListedMax = leakedBuffersListedMax;
    }

    public PoolLedgerChecker(TimeProvider time, int leakedBuffersListedMax = 5)
        : this(new CheckerContext(time), leakedBuffersListedMax)
    {
    }

    public int LeakedBuffersListedMax { get; }

    /// <summary>Pools watched, in the order they were added.</summary>
    public int PoolCount
    {
        get
        {
            using (Context.Enter(_gate))
            {
                return _pools.Count;
            }
        }
    }

    /// <summary>Watches a pool; it must be in checked mode, since only the ledger can name a leak's owner.</summary>
    /// <returns>False when this pool is already watched (under any name).</returns>
    public bool Add(string poolName, MessagePool pool)
    {
        ArgumentException.ThrowIfNullOrEmpty(poolName);
        ArgumentNullException.ThrowIfNull(pool);
        if (!pool.Options.CheckedMode)
        {
            throw new ArgumentException($"Pool '{poolName}' is not in checked mode (MessagePoolOptions.CheckedMode); its leaks could not be named.", nameof(pool));
        }

        using (Context.Enter(_gate))
        {
            foreach (var watched in _pools)
            {
                if (ReferenceEquals(watched.Pool, pool))
                {
                    return false;
                }
            }

            _pools.Add(new WatchedPool(poolName, pool));
            return true;
        }
    }

    /// <summary>
    /// Watches a byte store that is not a pool (the simulated network keeps stream bytes in flight in per-direction
    /// stores): at quiescence <paramref name="bytesHeld"/> must read 0, as a pool must have nothing outstanding.
    /// </summary>
    public void AddByteStore(string storeName, Func<long> bytesHeld)
    {
        ArgumentException.ThrowIfNullOrEmpty(storeName);
        ArgumentNullException.ThrowIfNull(bytesHeld);
        using (Context.Enter(_gate))
        {
            _stores.Add(new WatchedStore(storeName, bytesHeld));
        }
    }

    /// <summary>Ownership faults recorded so far (every one, also those past the kept list).</summary>
    public long OwnershipFaults { get; private set; }

    /// <summary>
    /// A pool or one of its handles detected an ownership fault: a stale handle used (a buffer read, moved or returned
    /// after its owner let it go), a buffer returned twice or to another pool, a ledger that disagrees. Recorded as a
    /// violation at once, with the buffer and its owners as the pool names them, whether or not the code that meets
    /// the exception catches it.
    /// </summary>
    public void OnOwnershipFault(string poolName, PoolOwnershipException fault)
    {
        ArgumentException.ThrowIfNullOrEmpty(poolName);
        ArgumentNullException.ThrowIfNull(fault);
        using (Context.Enter(_gate))
        {
            OwnershipFaults++;
            if (_faults.Count < FaultsKeptMax)
            {
                _faults.Add(fault);
            }

            Log.Record($"pool '{poolName}': ownership fault: {fault.Message}");
        }
    }

    /// <summary>
    /// True when <paramref name="exception"/> (or one it wraps) is an ownership fault this checker recorded: a run
    /// that it ended failed this invariant, loudly where the fault was detected, rather than crashing.
    /// </summary>
    public bool HasRecorded(Exception? exception)
    {
        using (Context.Enter(_gate))
        {
            return IsRecordedLocked(exception);
        }
    }

    public override void CheckQuiescent()
    {
        using (Context.Enter(_gate))
        {
            foreach (var watched in _pools)
            {
                Check(watched);
            }

            foreach (var store in _stores)
            {
                // A store that holds the same bytes across quiescent checks is one leak, reported once.
                var held = store.BytesHeld();
                if (held != 0 && held != store.LastReportedBytes)
                {
                    store.LastReportedBytes = held;
                    Log.Record($"store '{store.Name}': {held} byte(s) still held at quiescence (nothing is left to deliver or discard them)");
                }
            }
        }
    }

    private void Check(WatchedPool watched)
    {
        var statistics = watched.Pool.GetStatistics();
        var outstanding = watched.Pool.GetOutstanding();
        var unbalancedClass = FirstUnbalancedClass(watched.Pool);
        var balanced = statistics.Outstanding == 0 && statistics.Rents == statistics.Returns && outstanding.Count == 0 && unbalancedClass is null;

        // A pool that stays unbalanced in the same way across quiescent checks is one leak, reported once.
        if (balanced || statistics == watched.LastReported)
        {
            return;
        }

        watched.LastReported = statistics;
        var text = new StringBuilder();
        text.Append($"pool '{watched.Name}': {statistics.Outstanding} buffer(s) outstanding at quiescence (rents {statistics.Rents}, returns {statistics.Returns})");
        if (unbalancedClass is { } row)
        {
            // Totals can balance while classes do not (a buffer returned into the wrong class), so each class is named.
            text.Append(row.IsOversize
                ? $"; oversize rents {row.Rents}, returns {row.Returns}"
                : $"; size class {row.SizeClass} ({row.CapacityBytes} B): rents {row.Rents}, returns {row.Returns}");
        }

        if (outstanding.Count != statistics.Outstanding)
        {
            text.Append($"; the ledger lists {outstanding.Count}, which disagrees with the counters");
        }

        if (outstanding.Count > 0)
        {
            text.Append("; first leaked: ");
            var listed = Math.Min(outstanding.Count, LeakedBuffersListedMax);
            for (var i = 0; i < listed; i++)
            {
                var buffer = outstanding[i];
                text.Append(i == 0 ? string.Empty : ", ")
                    .Append($"#{buffer.BufferId} ({buffer.LengthBytes} B, owner '{buffer.Owner ?? "?"}')");
            }

            if (outstanding.Count > listed)
            {
                text.Append($", and {outstanding.Count - listed} more");
            }
        }

        Log.Record(text.ToString());
    }

    private bool IsRecordedLocked(Exception? exception) => exception switch
    {
        null => false,
        PoolOwnershipException fault when _faults.Contains(fault) => true,
        AggregateException aggregate => aggregate.InnerExceptions.Any(IsRecordedLocked),
        _ => IsRecordedLocked(exception.InnerException),
    };

    /// <summary>The first size class (or the oversize row) whose rents and returns differ, or null.</summary>
    private static MessagePoolClassStatistics? FirstUnbalancedClass(MessagePool pool)
    {
        foreach (var row in pool.GetClassStatistics())
        {
            if (row.Rents != row.Returns)
            {
                return row;
            }
        }

        return null;
    }

    private sealed class WatchedStore(string name, Func<long> bytesHeld)
    {
        public string Name { get; } = name;

        public Func<long> BytesHeld { get; } = bytesHeld;

        public long LastReportedBytes { get; set; }
    }

    private sealed class WatchedPool(string name, MessagePool pool)
    {
        public string Name { get; } = name;

        public MessagePool Pool { get; } = pool;

        public MessagePoolStatistics? LastReported { get; set; }
    }
}
