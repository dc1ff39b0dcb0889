using System.Text;

namespace PlayHouse.Simulation.Checkers;

/// <summary>
/// After faults heal, every client expected to progress makes progress within a virtual window. A client's
/// baseline is the later of the last heal and its registration; it must report progress at or after the
/// baseline and no later than baseline + window. At quiescence nothing can progress any more, so a client
/// still waiting is stalled even before its window ends.
/// </summary>
/// <remarks>
/// Thread-safe (one lock per call). Deadlines wait in a priority queue, so <see cref="CheckStep"/> costs one
/// comparison until a deadline passes, and each client is judged once per heal.
/// </remarks>
public sealed class LivenessChecker : InvariantChecker
{
    public const string CheckerName = "Liveness";

    private const int StalledClientsListedMax = 20;

    private readonly Lock _gate = new();
    private readonly Dictionary<long, ClientProgress> _clients = [];
    private readonly PriorityQueue<(long ClientId, int ArmVersion), long> _deadlines = new();
    private long _healedAtTicks;
    private bool _healed;

    // The earliest deadline queued (long.MaxValue when none), written under the lock, so that a step before it
    // returns after one read without taking the lock. A stale entry only makes a step take the lock early.
    private long _earliestDeadlineTicks = long.MaxValue;

    public LivenessChecker(CheckerContext context, TimeSpan progressWindow)
        : base(CheckerName, context)
    {
        ArgumentOutOfRangeException.ThrowIfLessThanOrEqual(progressWindow, TimeSpan.Zero);
        ProgressWindow = progressWindow;
    }

    public LivenessChecker(TimeProvider time, TimeSpan progressWindow)
        : this(new CheckerContext(time), progressWindow)
    {
    }

    /// <summary>How long after the heal (or its registration) each client has to progress.</summary>
    public TimeSpan ProgressWindow { get; }

    public int ClientCount
    {
        get
        {
            using (Context.Enter(_gate))
            {
                return _clients.Count;
            }
        }
    }

    /// <summary>
    /// Registers a client at <paramref name="virtualTicks"/>, or re-arms one already registered (a client that
    /// starts a new phase of work). A client not expected to progress (idle by design) is never judged.
    /// </summary>
    public void Register(long clientId, long virtualTicks, bool expectsProgress = true)
    {
        using (Context.Enter(_gate))
        {
            var client = ClientOf(clientId, out _);
            client.RegisteredAtTicks = virtualTicks;
            client.ExpectsProgress = expectsProgress;
            Arm(clientId, client);
        }
    }

    /// <summary>The client finished its work: it is no longer expected to progress.</summary>
    public void StopExpecting(long clientId)
    {
        using (Context.Enter(_gate))
        {
            if (_clients.TryGetValue(clientId, out var client))
            {
                client.ExpectsProgress = false;
            }
        }
    }

    /// <summary>The client completed something useful at <paramref name="virtualTicks"/>; an unknown client is registered then.</summary>
    public void OnProgress(long clientId, long virtualTicks)
    {
        using (Context.Enter(_gate))
        {
            Progress(clientId, ClientOf(clientId, out var added), added, virtualTicks);
        }
    }

    /// <summary>
    /// A handle on one client, for a client that reports progress per request: <see cref="OnProgress(LivenessClient, long)"/>
    /// then finds it without a lookup by id. Taking a handle registers nothing.
    /// </summary>
    public LivenessClient ForClient(long clientId) => new(clientId);

    /// <summary>As <see cref="OnProgress(long, long)"/>, for the client of <paramref name="handle"/> (from <see cref="ForClient"/> of this checker).</summary>
    public void OnProgress(LivenessClient handle, long virtualTicks)
    {
        ArgumentNullException.ThrowIfNull(handle);
        using (Context.Enter(_gate))
        {
            var added = false;
            var client = handle.Progress ??= ClientOf(handle.ClientId, out added);
            Progress(handle.ClientId, client, added, virtualTicks);
        }
    }

    private ClientProgress ClientOf(long clientId, out bool added)
    {
        added = !_clients.TryGetValue(clientId, out var client);
        if (added)
        {
            client = new ClientProgress();
            _clients.Add(clientId, client);
        }

        return client!;
    }

    private void Progress(long clientId, ClientProgress client, bool added, long virtualTicks)
    {
        if (added)
        {
            client.RegisteredAtTicks = virtualTicks;
            client.ExpectsProgress = true;
            Arm(clientId, client);
        }

        client.LastProgressTicks = virtualTicks;
        client.EverProgressed = true;
        if (!client.ProgressedSinceBaseline && virtualTicks >= client.BaselineTicks)
        {
            client.ProgressedSinceBaseline = true;
            client.FirstProgressSinceBaselineTicks = virtualTicks;
        }
    }

    /// <summary>Every fault healed at <paramref name="virtualTicks"/>: every client's window starts again from here.</summary>
    public void FaultsHealedAt(long virtualTicks)
    {
        using (Context.Enter(_gate))
        {
            _healed = true;
            _healedAtTicks = virtualTicks;

            // Every client is re-armed below, so the deadlines queued for the previous baseline are dropped.
            _deadlines.Clear();
            Volatile.Write(ref _earliestDeadlineTicks, long.MaxValue);
            var ids = new List<long>(_clients.Keys);
            ids.Sort();
            foreach (var id in ids)
            {
                Arm(id, _clients[id]);
            }
        }
    }

    /// <summary>Judges every client whose window ended at or before <paramref name="nowTicks"/>.</summary>
    public void Check(long nowTicks) => Judge(nowTicks, quiescent: false);

    public override void CheckStep()
    {
        var nowTicks = Context.NowTicks;
        if (nowTicks < Volatile.Read(ref _earliestDeadlineTicks))
        {
            return;
        }

        Judge(nowTicks, quiescent: false);
    }

    public override void CheckQuiescent() => Judge(Context.NowTicks, quiescent: true);

    private void Arm(long clientId, ClientProgress client)
    {
        // A newer arm version makes any deadline still queued for this client stale; it is skipped when popped.
        client.ArmVersion++;
        client.BaselineTicks = _healed ? Math.Max(_healedAtTicks, client.RegisteredAtTicks) : client.RegisteredAtTicks;
        client.Judged = false;
        client.ProgressedSinceBaseline = client.EverProgressed && client.LastProgressTicks >= client.BaselineTicks;

        // Progress already reported at or after a baseline that lies in the past (a heal reported late) happened
        // somewhere in [baseline, last progress]; the earliest possible instant is taken, so this never blames a
        // client that may have been on time.
        client.FirstProgressSinceBaselineTicks = client.ProgressedSinceBaseline ? client.BaselineTicks : 0;
        var deadline = client.BaselineTicks + ProgressWindow.Ticks;
        _deadlines.Enqueue((clientId, client.ArmVersion), deadline);
        if (deadline < _earliestDeadlineTicks)
        {
            Volatile.Write(ref _earliestDeadlineTicks, deadline);
        }
    }

    private void Judge(long nowTicks, bool quiescent)
    {
        using (Context.Enter(_gate))
        {
            List<long>? stalled = null;
            while (_deadlines.TryPeek(out var entry, out var deadline) && (quiescent || deadline <= nowTicks))
            {
                _deadlines.Dequeue();
                var client = _clients[entry.ClientId];
                if (entry.ArmVersion != client.ArmVersion || client.Judged || !client.ExpectsProgress)
                {
                    // Re-armed since (a newer deadline is queued), already judged, or done with its work.
                    continue;
                }

                // A window that has ended needs progress inside it; at quiescence a window still open needs
                // progress already, because nothing will run any more.
                var onTime = deadline <= nowTicks
                    ? client.ProgressedSinceBaseline && client.FirstProgressSinceBaselineTicks <= deadline
                    : client.ProgressedSinceBaseline;
                client.Judged = true;
                if (!onTime)
                {
                    (stalled ??= []).Add(entry.ClientId);
                }
            }

            Volatile.Write(ref _earliestDeadlineTicks, _deadlines.TryPeek(out _, out var earliest) ? earliest : long.MaxValue);
            if (stalled is not null)
            {
                ReportStalled(stalled, nowTicks, quiescent);
            }
        }
    }

    private void ReportStalled(List<long> stalled, long nowTicks, bool quiescent)
    {
        stalled.Sort();
        var text = new StringBuilder();
        var since = _healed ? $"the heal at {TimeSpan.FromTicks(_healedAtTicks):c}" : "registration";
        text.Append($"{stalled.Count} client(s) made no progress within {ProgressWindow:c} of {since}");
        if (quiescent)
        {
            text.Append(" (the run went quiet; nothing is left to make them progress)");
        }

        text.Append(": ");
        for (var i = 0; i < stalled.Count && i < StalledClientsListedMax; i++)
        {
            var client = _clients[stalled[i]];
            text.Append(i == 0 ? string.Empty : ", ")
                .Append($"client {stalled[i]} ")
                .Append(client.EverProgressed ? $"(last progress at {TimeSpan.FromTicks(client.LastProgressTicks):c})" : "(never progressed)");
        }

        if (stalled.Count > StalledClientsListedMax)
        {
            text.Append($", and {stalled.Count - StalledClientsListedMax} more");
        }

        Log.RecordAt(nowTicks, text.ToString());
    }

    internal sealed class ClientProgress
    {
        public long RegisteredAtTicks;
        public long BaselineTicks;
        public long LastProgressTicks;
        public long FirstProgressSinceBaselineTicks;
        public int ArmVersion;
        public bool ExpectsProgress;
        public bool EverProgressed;
        public bool ProgressedSinceBaseline;
        public bool Judged;
    }
}

/// <summary>One client of a <see cref="LivenessChecker"/>, found once and reported often.</summary>
/// <remarks>Not thread-safe on its own; the checker guards it with its lock.</remarks>
public sealed class LivenessClient : IPrefetchParts
{
    internal LivenessClient(long clientId) => ClientId = clientId;

    void IPrefetchParts.PrefetchParts(int depth)
    {
        if (depth == 0)
        {
            Prefetch.Object(Progress);
        }
    }

    public long ClientId { get; }

    // Bound when the client is first known to the checker; clients are never dropped, so it stays valid.
    internal LivenessChecker.ClientProgress? Progress { get; set; }
}
