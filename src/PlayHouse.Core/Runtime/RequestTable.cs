namespace PlayHouse.Core.Runtime;

/// <summary>One outstanding request issued by this node.</summary>
internal sealed class PendingRequest
{
    public ulong MsgSeq;
    public string TargetNodeId = string.Empty;
    public long TargetStageId;
    public string MsgId = string.Empty;
    public long DeadlineTimestamp;
    public int HeapIndex = -1;
    public TaskCompletionSource<Response>? Completion;
    public Action<Response>? Callback;

    /// <summary>The stage that issued the request: callbacks run there and cycle detection reads it.</summary>
    public StageHost? Stage;
    public bool SenderAwaits;
}

/// <summary>
/// A node's table of outstanding requests: it assigns each request its id, completes it exactly once (reply,
/// timeout or fail-fast error) and is the node's reply path, so it also decides what becomes of a reply that
/// answers no request. A node builds its table through <see cref="NodeParts.RequestTable"/>.
/// </summary>
/// <remarks>Implementations are thread-safe: replies, timeouts and new requests arrive on any thread.</remarks>
internal interface IRequestTable : IDisposable
{
    /// <summary>Requests registered and not yet completed.</summary>
    int PendingCount { get; }

    /// <summary>Registers a request and assigns its id (<see cref="PendingRequest.MsgSeq"/>); false refuses it (the table is at its cap) and the request is not sent.</summary>
    bool TryRegister(PendingRequest request, TimeSpan timeout);

    /// <summary>An inbound reply: completes the request it answers; ownership of its payload passes here.</summary>
    void CompleteWithReply(in MeshMessage reply);

    /// <summary>Completes a registered request with an error before any reply (the send failed).</summary>
    void FailFast(PendingRequest request, ushort errorCode);

    /// <summary>Fails every outstanding request (server stopping).</summary>
    void FailAll(ushort errorCode);

    /// <summary>Delivers a completion to its awaiter or callback; called exactly once per request.</summary>
    void Deliver(PendingRequest request, RequestOutcome outcome, Response response);
}

/// <summary>
/// The node's table of outstanding requests. Ids are 64-bit and never reused, so a reply can only complete
/// the request that caused it (PlayHouse's 16-bit counter wrapped). Each request completes exactly once: by
/// its reply, by its timeout, or by a fail-fast error; whichever removes it from the table first wins.
/// </summary>
/// <remarks>Thread-safe. One <see cref="ITimer"/> serves every deadline: it is armed for the earliest one.</remarks>
internal sealed class RequestTable : IRequestTable
{
    private readonly ServerNode _node;
    private readonly Lock? _gate;
    private readonly Dictionary<ulong, PendingRequest> _pending = [];

    // A min-heap on (deadline, seq) with each entry's index stored in the entry, so a reply removes its
    // deadline eagerly and the heap never holds more than the pending requests.
    private readonly List<PendingRequest> _deadlines = [];
    private readonly RecentCompletions _recent;
    private readonly ITimer _timer;
    private ulong _lastMsgSeq;
    private long _armedDeadline = long.MaxValue;

    public RequestTable(ServerNode node)
    {
        _node = node;
        _gate = NodeLock.Create(node.Options);
        _recent = new RecentCompletions(node.Options.RecentCompletionsMax);
        _timer = node.Time.CreateTimer(static s => ((RequestTable)s!).OnTimer(), this, Timeout.InfiniteTimeSpan, Timeout.InfiniteTimeSpan);
    }

    public int PendingCount
    {
        get
        {
            using (NodeLock.Enter(_gate))
            {
                return _pending.Count;
            }
        }
    }

    /// <summary>Registers a request and assigns its id; false when the table is at its cap.</summary>
    public bool TryRegister(PendingRequest request, TimeSpan timeout)
    {
        var now = _node.Time.GetTimestamp();
        request.DeadlineTimestamp = now + ToTimestampDelta(timeout);
        var rearm = false;
        using (NodeLock.Enter(_gate))
        {
            if (_pending.Count >= _node.Options.PendingRequestsMax)
            {
                return false;
            }

            request.MsgSeq = ++_lastMsgSeq;
            _pending.Add(request.MsgSeq, request);
            HeapPush(request);
            if (request.DeadlineTimestamp < _armedDeadline)
            {
                _armedDeadline = request.DeadlineTimestamp;
                rearm = true;
            }
        }

        if (rearm)
        {
            ArmTimer(request.DeadlineTimestamp, now);
        }

        return true;
    }

    /// <summary>Completes a request with the reply that arrived for it; late, duplicate and unknown replies are dropped and counted.</summary>
    public void CompleteWithReply(in MeshMessage reply)
    {
        if (!TryCompleteWithReply(reply))
        {
            // A reply never becomes a new message: it is released here and never dispatched or answered.
            _node.Observer.OnDropped(_node.NodeId, "reply-without-request", reply.MsgId);
            reply.Payload.DisposeIfOwner();
        }
    }

    /// <summary>
    /// Completes the request a reply answers and takes its payload; false, with the reply counted (late, duplicate,
    /// unknown or misaddressed) and its payload still the caller's, when it answers no request of this table.
    /// </summary>
    public bool TryCompleteWithReply(in MeshMessage reply)
    {
        PendingRequest? request;
        using (NodeLock.Enter(_gate))
        {
            if (_pending.TryGetValue(reply.MsgSeq, out request))
            {
                if (!string.Equals(request.TargetNodeId, reply.From, StringComparison.Ordinal))
                {
                    request = null;
                    _node.Counters.AddMisaddressedReply();
                }
                else
                {
                    Remove(request);
                    _recent.Add(reply.MsgSeq, RequestOutcome.Replied);
                }
            }
            else
            {
                switch (_recent.Find(reply.MsgSeq))
                {
                    case RequestOutcome.TimedOut:
                        _node.Counters.AddLateReply();
                        break;
                    case RequestOutcome.Replied:
                        _node.Counters.AddDuplicateReply();
                        break;
                    default:
                        _node.Counters.AddUnknownReply();
                        break;
                }
            }
        }

        if (request is null)
        {
            return false;
        }

        Deliver(request, RequestOutcome.Replied, new Response(reply.ErrorCode, reply.MsgId, reply.Payload) { StageId = reply.StageId });
        return true;
    }

    /// <summary>Completes a registered request with an error before any reply (the send failed).</summary>
    public void FailFast(PendingRequest request, ushort errorCode)
    {
        using (NodeLock.Enter(_gate))
        {
            if (!_pending.ContainsKey(request.MsgSeq))
            {
                return;
            }

            Remove(request);
            _recent.Add(request.MsgSeq, RequestOutcome.TimedOut);
        }

        Deliver(request, RequestOutcome.FailedFast, Response.Error(errorCode, request.MsgId));
    }

    /// <summary>Fails every outstanding request (server stopping).</summary>
    public void FailAll(ushort errorCode)
    {
        List<PendingRequest> all;
        using (NodeLock.Enter(_gate))
        {
            all = [.. _pending.Values.OrderBy(r => r.MsgSeq)];
            foreach (var request in all)
            {
                Remove(request);
                _recent.Add(request.MsgSeq, RequestOutcome.TimedOut);
            }
        }

        foreach (var request in all)
        {
            Deliver(request, RequestOutcome.FailedFast, Response.Error(errorCode, request.MsgId));
        }
    }

    public void Dispose() => _timer.Dispose();

    /// <summary>Delivers a completion to its awaiter or callback; called exactly once per request.</summary>
    public void Deliver(PendingRequest request, RequestOutcome outcome, Response response) => DeliverTo(_node, request, outcome, response);

    /// <summary>Hands a request's one completion to <paramref name="node"/>'s observer and to the requester (every table's delivery).</summary>
    internal static void DeliverTo(ServerNode node, PendingRequest request, RequestOutcome outcome, Response response)
    {
        node.Observer.OnRequestCompleted(node.NodeId, request.MsgSeq, request.TargetNodeId, outcome, response.ErrorCode);
        request.Stage?.OnRequestCompleted(request);
        if (request.Completion is not null)
        {
            // Continuations run asynchronously (the source was created so): the awaiting stage resumes on its own executor.
            request.Completion.SetResult(response);
        }
        else if (request.Callback is not null)
        {
            node.DeliverCallback(request, response);
        }
        else
        {
            response.Dispose();
        }
    }

    private void OnTimer()
    {
        var now = _node.Time.GetTimestamp();
        List<PendingRequest>? expired = null;
        long next;
        using (NodeLock.Enter(_gate))
        {
            while (_deadlines.Count > 0 && _deadlines[0].DeadlineTimestamp <= now)
            {
                var request = _deadlines[0];
                Remove(request);
                _recent.Add(request.MsgSeq, RequestOutcome.TimedOut);
                (expired ??= []).Add(request);
            }

            next = _deadlines.Count > 0 ? _deadlines[0].DeadlineTimestamp : long.MaxValue;
            _armedDeadline = next;
        }

        if (next != long.MaxValue)
        {
            ArmTimer(next, now);
        }

        if (expired is null)
        {
            return;
        }

        foreach (var request in expired)
        {
            _node.Counters.AddRequestTimeout();
            Deliver(request, RequestOutcome.TimedOut, Response.Error(ErrorCodes.RequestTimeout, request.MsgId));
        }
    }

    private void ArmTimer(long deadline, long now)
    {
        var dueTicks = Math.Max(0, (deadline - now) * TimeSpan.TicksPerSecond / _node.Time.TimestampFrequency);

        // Round up so the timer never fires a tick before the deadline and finds nothing expired.
        if ((deadline - now) * TimeSpan.TicksPerSecond % _node.Time.TimestampFrequency != 0)
        {
            dueTicks++;
        }

        _timer.Change(TimeSpan.FromTicks(dueTicks), Timeout.InfiniteTimeSpan);
    }

    private long ToTimestampDelta(TimeSpan timeout) => TimestampSpan.ToDelta(timeout, _node.Time.TimestampFrequency);

    private void Remove(PendingRequest request)
    {
        _pending.Remove(request.MsgSeq);
        HeapRemove(request);
    }

    private static bool Less(PendingRequest a, PendingRequest b) =>
        a.DeadlineTimestamp < b.DeadlineTimestamp || (a.DeadlineTimestamp == b.DeadlineTimestamp && a.MsgSeq < b.MsgSeq);

    private void HeapPush(PendingRequest request)
    {
        request.HeapIndex = _deadlines.Count;
        _deadlines.Add(request);
        SiftUp(request.HeapIndex);
    }

    private void HeapRemove(PendingRequest request)
    {
        var index = request.HeapIndex;
        if (index < 0)
        {
            return;
        }

        var last = _deadlines.Count - 1;
        if (index != last)
        {
            Swap(index, last);
        }

        _deadlines.RemoveAt(last);
        request.HeapIndex = -1;
        if (index < _deadlines.Count)
        {
            SiftDown(index);
            SiftUp(index);
        }
    }

    private void SiftUp(int index)
    {
        while (index > 0)
        {
            var parent = (index - 1) / 2;
            if (!Less(_deadlines[index], _deadlines[parent]))
            {
                break;
            }

            Swap(index, parent);
            index = parent;
        }
    }

    private void SiftDown(int index)
    {
        while (true)
        {
            var left = (2 * index) + 1;
            if (left >= _deadlines.Count)
            {
                return;
            }

            var smallest = left + 1 < _deadlines.Count && Less(_deadlines[left + 1], _deadlines[left]) ? left + 1 : left;
            if (!Less(_deadlines[smallest], _deadlines[index]))
            {
                return;
            }

            Swap(index, smallest);
            index = smallest;
        }
    }

    private void Swap(int a, int b)
    {
        (_deadlines[a], _deadlines[b]) = (_deadlines[b], _deadlines[a]);
        _deadlines[a].HeapIndex = a;
        _deadlines[b].HeapIndex = b;
    }

    /// <summary>A ring of recently completed request ids, to tell a late reply from a duplicate or unknown one.</summary>
    private sealed class RecentCompletions(int capacity)
    {
        private readonly Dictionary<ulong, RequestOutcome> _outcomes = [];
        private readonly Queue<ulong> _order = new();

        public void Add(ulong msgSeq, RequestOutcome outcome)
        {
            if (capacity == 0)
            {
                return;
            }

            if (_order.Count >= capacity)
            {
                _outcomes.Remove(_order.Dequeue());
            }

            _order.Enqueue(msgSeq);
            _outcomes[msgSeq] = outcome;
        }

        public RequestOutcome? Find(ulong msgSeq) => _outcomes.TryGetValue(msgSeq, out var outcome) ? outcome : null;
    }
}
