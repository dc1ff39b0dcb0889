using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using PlayHouse.Core.Runtime;

namespace PlayHouse.Simulation.Checkers;

/// <summary>
/// Every request completes exactly once, and with its own reply (B1, B8, B10, B12).
/// Node side (observer hooks, keyed by node and msg seq): an id issued while a request holding it is still pending,
/// a completion without an issue, a second completion, and (at quiescence) an issued request that never completed
/// are violations. Client side (called by simulated
/// clients, keyed by client and request key): a key reused while outstanding, a completion of a request never
/// sent, a second completion, a reply carrying another request's nonce (mis-paired), and (at quiescence) a
/// request never completed are violations.
/// </summary>
/// <remarks>
/// Thread-safe: one lock for the node ledger and one for the client ledger. The runtime registers a request
/// before it reports the issue, so on real threads a timeout far shorter than the send path could in principle
/// report the completion first; that shows here as a completion without an issue.
/// Completed node requests are compacted into a per-node prefix (request ids are assigned in order), so memory
/// follows the requests in flight, not the length of the run. Client requests stay remembered per (client, key)
/// Client requests are compacted the same way, per client: keys in (first key - 1, watermark] were all sent and
/// completed, and only keys that are outstanding, or completed ahead of an older outstanding key, are held one by
/// one, so memory follows the requests in flight, not the length of the run. A key below the watermark may be sent
/// again (a 16-bit key that wrapped); it is then held one by one again until it completes. The last few completions
/// each client compacted are kept in a small ring, so a late second completion still names the first one.
/// </remarks>
public sealed class ExactlyOnceRequestChecker : RuntimeInvariantChecker, INodeCrashAware
{
    public const string CheckerName = "ExactlyOnceRequest";

    private readonly Lock _nodeGate = new();
    private readonly Dictionary<string, NodeLedger> _nodes = new(StringComparer.Ordinal);
    private readonly Lock _clientGate = new();
    private readonly Dictionary<long, ClientLedger> _clients = [];
    private ClientLedger? _lastClient;
    private long _issued;
    private long _completed;
    private long _refusedBeforeIssue;
    private long _clientSent;
    private long _clientCompleted;
    private long _endedByCrash;

    public ExactlyOnceRequestChecker(CheckerContext context)
        : base(CheckerName, context)
    {
    }

    public ExactlyOnceRequestChecker(TimeProvider time)
        : this(new CheckerContext(time))
    {
    }

    /// <summary>Node requests issued so far.</summary>
    public long IssuedCount => Interlocked.Read(ref _issued);

    /// <summary>Node requests completed so far (each counted once, however often it was reported).</summary>
    public long CompletedCount => Interlocked.Read(ref _completed);

    /// <summary>Fail-fast completions of requests refused before registration (self request, pending cap); they are never issued.</summary>
    public long RefusedBeforeIssueCount => Interlocked.Read(ref _refusedBeforeIssue);

    public long ClientSentCount => Interlocked.Read(ref _clientSent);

    public long ClientCompletedCount => Interlocked.Read(ref _clientCompleted);

    /// <summary>Node requests that were pending when their node crashed: the requester is gone, so nobody completes them.</summary>
    public long EndedByCrashCount => Interlocked.Read(ref _endedByCrash);

    /// <summary>Node requests issued and not yet completed.</summary>
    public int PendingCount
    {
        get
        {
            using (Context.Enter(_nodeGate))
            {
                var pending = 0;
                foreach (var ledger in _nodes.Values)
                {
                    pending += ledger.Pending.Count;
                }

                return pending;
            }
        }
    }

    /// <summary>Client requests sent and not yet completed.</summary>
    public int ClientOutstandingCount
    {
        get
        {
            using (Context.Enter(_clientGate))
            {
                var outstanding = 0;
                foreach (var ledger in _clients.Values)
                {
                    foreach (var (_, request) in ledger.Held.Snapshot())
                    {
                        if (request.State == ClientRequestState.Outstanding)
                        {
                            outstanding++;
                        }
                    }
                }

                return outstanding;
            }
        }
    }

    /// <summary>Client requests held one by one (outstanding, or completed ahead of an outstanding one); for tests of the compaction.</summary>
    internal int ClientHeldCount
    {
        get
        {
            using (Context.Enter(_clientGate))
            {
                var held = 0;
                foreach (var ledger in _clients.Values)
                {
                    held += ledger.Held.Count;
                }

                return held;
            }
        }
    }

    // ---- Node side (runtime hooks) ----

    public override void OnRequestIssued(string nodeId, ulong msgSeq, string targetNodeId, long targetStageId, string msgId)
    {
        using (Context.Enter(_nodeGate))
        {
            _issued++;
            var ledger = LedgerOf(nodeId);
            if (ledger.Pending.TryGetValue(msgSeq, out var holder))
            {
                // Two requests in flight under one id: whichever the table holds, a reply to either completes it, and
                // the other is completed by a reply (or a timeout) that is not its own (B8). An id that comes back after
                // its request completed is no hazard by itself; what it may still meet (a late reply) is judged where
                // the reply lands, by its nonce.
                ReportIssuedWhilePending(nodeId, msgSeq, msgId, targetNodeId, targetStageId, holder);
                return;
            }

            ledger.NoteIssued(msgSeq);
            ledger.Pending.Add(msgSeq, new IssuedRequest(targetNodeId, targetStageId, msgId, Context.NowTicks));
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private void ReportIssuedWhilePending(string nodeId, ulong msgSeq, string msgId, string targetNodeId, long targetStageId, in IssuedRequest holder) =>
        Log.Record($"node {nodeId}: request #{msgSeq} ('{msgId}' to {targetNodeId}/{targetStageId}) was issued twice: request #{msgSeq} ('{holder.MsgId}' to {holder.TargetNodeId}/{holder.TargetStageId}, issued at {TimeSpan.FromTicks(holder.IssuedAtTicks):c}) still holds the id, so a reply to either completes whichever the table holds");

    public override void OnRequestCompleted(string nodeId, ulong msgSeq, string targetNodeId, RequestOutcome outcome, ushort errorCode)
    {
        using (Context.Enter(_nodeGate))
        {
            var ledger = LedgerOf(nodeId);
            if (ledger.Pending.Remove(msgSeq, out var request))
            {
                _completed++;
                ledger.NoteCompleted(msgSeq);
                if (!string.Equals(request.TargetNodeId, targetNodeId, StringComparison.Ordinal))
                {
                    Log.Record($"node {nodeId}: request #{msgSeq} ('{request.MsgId}') was issued to {request.TargetNodeId} but completed as a request to {targetNodeId} ({outcome})");
                }

                return;
            }

            if (msgSeq == 0 && outcome == RequestOutcome.FailedFast)
            {
                // Self requests and requests over the pending cap fail before they get an id or are issued.
                _refusedBeforeIssue++;
                return;
            }

            var what = ledger.IsCompleted(msgSeq) ? "completed a second time" : "completed without having been issued";
            Log.Record($"node {nodeId}: request #{msgSeq} to {targetNodeId} {what} ({outcome}, error {errorCode})");
        }
    }

    /// <summary>
    /// The node's request table died with it: its pending requests end without a completion, and its restarted
    /// incarnation numbers requests afresh, so its ledger starts over.
    /// </summary>
    public void OnNodeCrashed(string nodeId)
    {
        using (Context.Enter(_nodeGate))
        {
            if (_nodes.Remove(nodeId, out var ledger))
            {
                _endedByCrash += ledger.Pending.Count;
            }
        }
    }

    // ---- Client side (simulated clients) ----

    /// <summary>A simulated client sent request <paramref name="requestKey"/> carrying <paramref name="nonce"/>, which its reply must echo.</summary>
    public void OnClientRequestSent(long clientId, long requestKey, long nonce)
    {
        using (Context.Enter(_clientGate))
        {
            Sent(ClientLedgerOf(clientId, requestKey), requestKey, nonce);
        }
    }

    /// <summary>
    /// A handle on one client's requests, for a client that reports each of its requests: the calls that take it
    /// find the client's ledger without a lookup by id. It judges exactly as the calls by id do, and may be mixed
    /// with them.
    /// </summary>
    public ClientRequests ForClient(long clientId) => new(clientId);

    /// <summary>As <see cref="OnClientRequestSent(long, long, long)"/>, for the client of <paramref name="client"/> (from <see cref="ForClient"/> of this checker).</summary>
    public void OnClientRequestSent(ClientRequests client, long requestKey, long nonce)
    {
        ArgumentNullException.ThrowIfNull(client);
        using (Context.Enter(_clientGate))
        {
            Sent(client.Ledger ??= ClientLedgerOf(client.ClientId, requestKey), requestKey, nonce);
        }
    }

    /// <summary>As <see cref="OnClientRequestCompleted(long, long, long)"/>, for the client of <paramref name="client"/>.</summary>
    public void OnClientRequestCompleted(ClientRequests client, long requestKey, long replyNonce)
    {
        ArgumentNullException.ThrowIfNull(client);
        using (Context.Enter(_clientGate))
        {
            Complete(client.ClientId, client.Ledger ??= _clients.GetValueOrDefault(client.ClientId), requestKey, replyNonce, failed: false, errorCode: 0);
        }
    }

    /// <summary>As <see cref="OnClientRequestFailed(long, long, ushort)"/>, for the client of <paramref name="client"/>.</summary>
    public void OnClientRequestFailed(ClientRequests client, long requestKey, ushort errorCode)
    {
        ArgumentNullException.ThrowIfNull(client);
        using (Context.Enter(_clientGate))
        {
            Complete(client.ClientId, client.Ledger ??= _clients.GetValueOrDefault(client.ClientId), requestKey, 0, failed: true, errorCode);
        }
    }

    private void Sent(ClientLedger ledger, long requestKey, long nonce)
    {
        _clientSent++;
        ref var request = ref ledger.Held.GetValueRefOrAddDefault(requestKey, out var seen);
        if (seen && request.State == ClientRequestState.Completed)
        {
            ledger.CompletedHeld--;
        }

        if (seen && request.State == ClientRequestState.Outstanding)
        {
            // The key wrapped (or was reused) while the old request was still waiting: its reply would now
            // complete the new request (B8).
            ReportReused(ledger.ClientId, requestKey, nonce, request.Nonce);
        }

        request = new ClientRequest { Nonce = nonce, SentAtTicks = Context.NowTicks, State = ClientRequestState.Outstanding };
    }

    // The violations of the per-request paths are built out of line: a message's formatting state would otherwise
    // widen the stack frame that every request sets up and clears.
    [MethodImpl(MethodImplOptions.NoInlining)]
    private void ReportReused(long clientId, long requestKey, long nonce, long outstandingNonce) =>
        Log.Record($"client {clientId}: request key {requestKey} reused for nonce {nonce} while nonce {outstandingNonce} was still outstanding");

    [MethodImpl(MethodImplOptions.NoInlining)]
    private void ReportMisPaired(long clientId, long requestKey, long nonce, long replyNonce) =>
        Log.Record($"client {clientId}: request key {requestKey} (nonce {nonce}) completed with the reply to nonce {replyNonce} (mis-paired reply)");

    /// <summary>A simulated client completed request <paramref name="requestKey"/> with a reply carrying <paramref name="replyNonce"/>.</summary>
    public void OnClientRequestCompleted(long clientId, long requestKey, long replyNonce) =>
        CompleteClientRequest(clientId, requestKey, replyNonce, failed: false, errorCode: 0);

    /// <summary>A simulated client completed request <paramref name="requestKey"/> with an error (an error reply or its own timeout).</summary>
    public void OnClientRequestFailed(long clientId, long requestKey, ushort errorCode) =>
        CompleteClientRequest(clientId, requestKey, 0, failed: true, errorCode);

    private void CompleteClientRequest(long clientId, long requestKey, long replyNonce, bool failed, ushort errorCode)
    {
        using (Context.Enter(_clientGate))
        {
            var ledger = _lastClient is { ClientId: var lastId } last && lastId == clientId ? last : _clients.GetValueOrDefault(clientId);

            // A completion is usually followed by the same client's next send.
            _lastClient = ledger ?? _lastClient;
            Complete(clientId, ledger, requestKey, replyNonce, failed, errorCode);
        }
    }

    private void Complete(long clientId, ClientLedger? ledger, long requestKey, long replyNonce, bool failed, ushort errorCode)
    {
        if (ledger is not null && ledger.TryCompleteNext(requestKey, out var next))
        {
            // The common case: the oldest open key completed, so it folds into the watermark at once.
            _clientCompleted++;
            if (!failed && replyNonce != next.Nonce)
            {
                ReportMisPaired(clientId, requestKey, next.Nonce, replyNonce);
            }

            next.State = ClientRequestState.Completed;
            next.CompletedFailed = failed;
            next.CompletedNonce = replyNonce;
            next.CompletedErrorCode = errorCode;
            ledger.FoldNext(requestKey, next);
            return;
        }

        CompleteHeld(clientId, ledger, requestKey, replyNonce, failed, errorCode);
    }

    /// <summary>Any completion but the oldest open key's: held ahead of it, a second one, or one never sent.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private void CompleteHeld(long clientId, ClientLedger? ledger, long requestKey, long replyNonce, bool failed, ushort errorCode)
    {
        ref var request = ref ledger is null ? ref Unsafe.NullRef<ClientRequest>() : ref ledger.Held.GetValueRefOrNullRef(requestKey);
        if (Unsafe.IsNullRef(ref request))
        {
            if (ledger is not null && ledger.IsCompacted(requestKey))
            {
                var earlier = ledger.FindCompacted(requestKey);
                var seconds = DescribeCompletion(failed, replyNonce, errorCode);
                Log.Record(earlier is { } first
                    ? $"client {clientId}: request key {requestKey} (nonce {first.Nonce}) completed a second time ({seconds}); it had completed with {DescribeCompletion(first.CompletedFailed, first.CompletedNonce, first.CompletedErrorCode)}"
                    : $"client {clientId}: request key {requestKey} completed a second time ({seconds}); it had completed before");
                return;
            }

            Log.Record($"client {clientId}: request key {requestKey} completed ({DescribeCompletion(failed, replyNonce, errorCode)}) but was never sent");
            return;
        }

        if (request.State == ClientRequestState.Completed)
        {
            var first = DescribeCompletion(request.CompletedFailed, request.CompletedNonce, request.CompletedErrorCode);
            Log.Record($"client {clientId}: request key {requestKey} (nonce {request.Nonce}) completed a second time ({DescribeCompletion(failed, replyNonce, errorCode)}); it had completed with {first}");
            return;
        }

        _clientCompleted++;
        ledger!.CompletedHeld++;
        request.State = ClientRequestState.Completed;
        request.CompletedFailed = failed;
        request.CompletedNonce = replyNonce;
        request.CompletedErrorCode = errorCode;
        if (!failed && replyNonce != request.Nonce)
        {
            Log.Record($"client {clientId}: request key {requestKey} (nonce {request.Nonce}) completed with the reply to nonce {replyNonce} (mis-paired reply)");
        }

        ledger.Compact(requestKey);
    }

    /// <summary>The ledger of a client, created at its first request (whose key starts the compacted range).</summary>
    private ClientLedger ClientLedgerOf(long clientId, long firstKey)
    {
        if (_lastClient is { } last && last.ClientId == clientId)
        {
            return last;
        }

        if (!_clients.TryGetValue(clientId, out var ledger))
        {
            ledger = new ClientLedger(clientId, firstKey);
            _clients.Add(clientId, ledger);
        }

        _lastClient = ledger;
        return ledger;
    }

    /// <summary>How a client request completed, as violations print it; built only when something is recorded.</summary>
    private static string DescribeCompletion(bool failed, long replyNonce, ushort errorCode) =>
        failed ? $"error {errorCode}" : $"reply nonce {replyNonce}";

    // ---- Quiescence ----

    /// <summary>At quiescence nothing is left to complete a request, so every open one is a violation (reported once).</summary>
    public override void CheckQuiescent()
    {
        using (Context.Enter(_nodeGate))
        {
            var nodeIds = new List<string>(_nodes.Keys);
            nodeIds.Sort(StringComparer.Ordinal);
            foreach (var nodeId in nodeIds)
            {
                var ledger = _nodes[nodeId];
                var seqs = new List<ulong>();
                foreach (var pair in ledger.Pending)
                {
                    if (!pair.Value.Reported)
                    {
                        seqs.Add(pair.Key);
                    }
                }

                seqs.Sort();
                foreach (var seq in seqs)
                {
                    ref var request = ref CollectionsMarshal.GetValueRefOrNullRef(ledger.Pending, seq);
                    request.Reported = true;
                    Log.Record($"node {nodeId}: request #{seq} ('{request.MsgId}' to {request.TargetNodeId}/{request.TargetStageId}, issued at {TimeSpan.FromTicks(request.IssuedAtTicks):c}) never completed: no reply, timeout or error");
                }
            }
        }

        using (Context.Enter(_clientGate))
        {
            var open = new List<(long ClientId, long RequestKey)>();
            foreach (var ledger in _clients.Values)
            {
                foreach (var (key, request) in ledger.Held.Snapshot())
                {
                    if (request.State == ClientRequestState.Outstanding && !request.Reported)
                    {
                        open.Add((ledger.ClientId, key));
                    }
                }
            }

            open.Sort();
            foreach (var key in open)
            {
                ref var request = ref _clients[key.ClientId].Held.GetValueRefOrNullRef(key.RequestKey);
                request.Reported = true;
                Log.Record($"client {key.ClientId}: request key {key.RequestKey} (nonce {request.Nonce}, sent at {TimeSpan.FromTicks(request.SentAtTicks):c}) never completed: no reply, error or timeout");
            }
        }
    }

    private NodeLedger LedgerOf(string nodeId)
    {
        if (!_nodes.TryGetValue(nodeId, out var ledger))
        {
            ledger = new NodeLedger();
            _nodes.Add(nodeId, ledger);
        }

        return ledger;
    }

    private struct IssuedRequest(string targetNodeId, long targetStageId, string msgId, long issuedAtTicks)
    {
        public readonly string TargetNodeId = targetNodeId;
        public readonly long TargetStageId = targetStageId;
        public readonly string MsgId = msgId;
        public readonly long IssuedAtTicks = issuedAtTicks;
        public bool Reported;
    }

    internal enum ClientRequestState : byte
    {
        Outstanding,
        Completed,
    }

    internal struct ClientRequest
    {
        public long Nonce;
        public long SentAtTicks;
        public ClientRequestState State;
        public bool Reported;
        public bool CompletedFailed;
        public ushort CompletedErrorCode;
        public long CompletedNonce;
    }

    /// <summary>
    /// The requests of one client: every key in (<c>_rangeStart</c>, <c>_watermark</c>] was sent and completed; the
    /// keys held one by one are outstanding, or completed ahead of an older outstanding key, or outside that range.
    /// </summary>
    internal sealed class ClientLedger(long clientId, long firstKey)
    {
        // The last completions compacted into the watermark, by key modulo the ring's length, for violation messages.
        private const int RecentCompactedMax = 8;
        private readonly (long Key, ClientRequest Request)[] _recentCompacted = new (long, ClientRequest)[RecentCompactedMax];
        private readonly long _rangeStart = firstKey - 1;
        private long _watermark = firstKey - 1;

        public long ClientId { get; } = clientId;

        public HeldRequests Held { get; } = new();

        public void PrefetchParts(int depth)
        {
            if (depth == 0)
            {
                Prefetch.Object(Held);
                Prefetch.Object(_recentCompacted, 2);
            }
            else
            {
                Held.PrefetchSlots();
            }
        }

        /// <summary>Requests held that completed (ahead of an outstanding key, or outside the range); none means no fold can happen.</summary>
        public int CompletedHeld { get; set; }

        /// <summary>
        /// Takes the outstanding request of <paramref name="key"/> out of the held ones when it is the key right above
        /// the watermark; false (nothing changed) for any other key or state.
        /// </summary>
        public bool TryCompleteNext(long key, out ClientRequest request)
        {
            if (key != _watermark + 1 || !Held.Remove(key, out request))
            {
                request = default;
                return false;
            }

            if (request.State != ClientRequestState.Outstanding)
            {
                Held.GetValueRefOrAddDefault(key, out _) = request;
                return false;
            }

            return true;
        }

        /// <summary>The request taken by <see cref="TryCompleteNext"/> completed: it moves the watermark, and so may later completions.</summary>
        public void FoldNext(long key, in ClientRequest completed)
        {
            _watermark = key;
            Remember(key, completed);
            FoldCompleted();
        }

        /// <summary>True when the key was sent and completed and has since been folded into the watermark.</summary>
        public bool IsCompacted(long key) => key > _rangeStart && key <= _watermark;

        /// <summary>The compacted key's request, when it is still in the ring of recent compactions.</summary>
        public ClientRequest? FindCompacted(long key)
        {
            var slot = (int)((ulong)key % RecentCompactedMax);
            ref var recent = ref _recentCompacted[slot];
            return recent.Key == key && recent.Request.State == ClientRequestState.Completed ? recent.Request : null;
        }

        /// <summary>Folds completed keys into the watermark after <paramref name="completedKey"/> completed.</summary>
        public void Compact(long completedKey)
        {
            if (completedKey <= _rangeStart)
            {
                // Outside the range the watermark covers: it stays held, completed, so a second completion is known.
                return;
            }

            if (completedKey <= _watermark)
            {
                // A reused key below the watermark completed: the watermark already says "completed" for it.
                Forget(completedKey);
                return;
            }

            FoldCompleted();
        }

        private void FoldCompleted()
        {
            while (CompletedHeld > 0 && Held.TryGetValue(_watermark + 1, out var next) && next.State == ClientRequestState.Completed)
            {
                _watermark++;
                Forget(_watermark);
            }
        }

        private void Forget(long key)
        {
            Held.Remove(key, out var request);
            CompletedHeld--;
            Remember(key, request);
        }

        private void Remember(long key, in ClientRequest request)
        {
            var slot = (int)((ulong)key % RecentCompactedMax);
            _recentCompacted[slot] = (key, request);
        }
    }

    /// <summary>
    /// The requests of one client held one by one, by key. Keys are sequential and only a few are open at once, so a
    /// key lives in the slot of its low bits when that slot is free, otherwise in an overflow map: the common send
    /// and completion cost no hashing, and any key pattern still works.
    /// </summary>
    internal sealed class HeldRequests
    {
        // Twice the workload's default window of four open requests: every client has a ledger for the whole run
        // (10,000 in the scale run), and a wider window only sends more keys to the overflow map.
        private const int SlotCount = 8;
        private static readonly int SlotLines = Prefetch.LinesOf<Slot>(SlotCount);
        private readonly Slot[] _slots = new Slot[SlotCount];

        // Made on the first collision only: every client has a ledger, and most never need the map.
        private Dictionary<long, ClientRequest>? _overflow;
        private int _slotsUsed;

        public int Count => _slotsUsed + (_overflow?.Count ?? 0);

        public void PrefetchSlots() => Prefetch.Object(_slots, SlotLines);

        /// <summary>The request of <paramref name="key"/>, or a null reference when it is not held.</summary>
        public ref ClientRequest GetValueRefOrNullRef(long key)
        {
            ref var slot = ref _slots[(int)(key & (SlotCount - 1))];
            if (slot.Used && slot.Key == key)
            {
                return ref slot.Value;
            }

            if (_overflow is not { Count: > 0 })
            {
                return ref Unsafe.NullRef<ClientRequest>();
            }

            return ref CollectionsMarshal.GetValueRefOrNullRef(_overflow, key);
        }

        /// <summary>The request of <paramref name="key"/>, added (as default) when it is not held.</summary>
        public ref ClientRequest GetValueRefOrAddDefault(long key, out bool exists)
        {
            ref var held = ref GetValueRefOrNullRef(key);
            if (!Unsafe.IsNullRef(ref held))
            {
                exists = true;
                return ref held;
            }

            exists = false;
            ref var slot = ref _slots[(int)(key & (SlotCount - 1))];
            if (!slot.Used)
            {
                slot.Used = true;
                slot.Key = key;
                slot.Value = default;
                _slotsUsed++;
                return ref slot.Value;
            }

            return ref CollectionsMarshal.GetValueRefOrAddDefault(_overflow ??= [], key, out _);
        }

        public bool TryGetValue(long key, out ClientRequest request)
        {
            ref var held = ref GetValueRefOrNullRef(key);
            if (Unsafe.IsNullRef(ref held))
            {
                request = default;
                return false;
            }

            request = held;
            return true;
        }

        public bool Remove(long key, out ClientRequest request)
        {
            ref var slot = ref _slots[(int)(key & (SlotCount - 1))];
            if (slot.Used && slot.Key == key)
            {
                request = slot.Value;
                slot = default;
                _slotsUsed--;
                return true;
            }

            if (_overflow is not { Count: > 0 })
            {
                request = default;
                return false;
            }

            return _overflow.Remove(key, out request);
        }

        /// <summary>A copy of every held request with its key, in no particular order (for reports, not per request).</summary>
        public List<(long Key, ClientRequest Request)> Snapshot()
        {
            var all = new List<(long, ClientRequest)>(Count);
            foreach (var slot in _slots)
            {
                if (slot.Used)
                {
                    all.Add((slot.Key, slot.Value));
                }
            }

            foreach (var pair in _overflow ?? [])
            {
                all.Add((pair.Key, pair.Value));
            }

            return all;
        }

        private struct Slot
        {
            public ClientRequest Value;
            public long Key;
            public bool Used;
        }
    }

    /// <summary>The requests of one node: the pending ones, and the completed ones as a prefix plus stragglers.</summary>
    private sealed class NodeLedger
    {
        private readonly HashSet<ulong> _completedAbovePrefix = [];
        private bool _anyIssued;

        // Every id in (_prefixStart, _completedPrefix] was issued and completed. Ids are assigned in order, so
        // the prefix advances as requests complete and the set holds only completions ahead of an open request.
        private ulong _prefixStart;
        private ulong _completedPrefix;

        public Dictionary<ulong, IssuedRequest> Pending { get; } = [];

        public void NoteIssued(ulong msgSeq)
        {
            if (_anyIssued)
            {
                return;
            }

            _anyIssued = true;
            _prefixStart = msgSeq == 0 ? 0 : msgSeq - 1;
            _completedPrefix = _prefixStart;
        }

        public bool IsCompleted(ulong msgSeq) =>
            (msgSeq > _prefixStart && msgSeq <= _completedPrefix) || _completedAbovePrefix.Contains(msgSeq);

        public void NoteCompleted(ulong msgSeq)
        {
            if (msgSeq > _prefixStart && msgSeq <= _completedPrefix)
            {
                // An id issued again after its first request completed (a wrapped id space): the prefix holds it already.
                return;
            }

            if (msgSeq != _completedPrefix + 1)
            {
                _completedAbovePrefix.Add(msgSeq);
                return;
            }

            _completedPrefix = msgSeq;
            while (_completedAbovePrefix.Remove(_completedPrefix + 1))
            {
                _completedPrefix++;
            }
        }
    }
}

/// <summary>One client's requests in an <see cref="ExactlyOnceRequestChecker"/>, found once and reported often.</summary>
/// <remarks>Not thread-safe on its own; the checker guards it with its lock.</remarks>
public sealed class ClientRequests : IPrefetchParts
{
    internal ClientRequests(long clientId) => ClientId = clientId;

    void IPrefetchParts.PrefetchParts(int depth)
    {
        if (depth == 0)
        {
            Prefetch.Object(Ledger, 2);
        }
        else
        {
            Ledger?.PrefetchParts(depth - 1);
        }
    }

    public long ClientId { get; }

    // Bound when the client's ledger first exists (its first send); ledgers are never dropped, so it stays valid.
    internal ExactlyOnceRequestChecker.ClientLedger? Ledger { get; set; }
}
