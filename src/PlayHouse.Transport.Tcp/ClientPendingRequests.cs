namespace PlayHouse.Transport.Tcp;

/// <summary>
/// The requests a <see cref="TcpPlayClient"/> has sent and not yet seen end: each under its 16-bit sequence (a
/// sequence still pending is never handed out again, so a wrapped sequence never pairs with an old request), in a
/// fixed table of <see cref="TcpPlayClientOptions.InFlightMax"/> slots, linked in send order, which is deadline order
/// because every request of a client has the same timeout.
/// </summary>
/// <remarks>
/// Invariant: a request is pending from <see cref="TryAdd"/> until exactly one of <see cref="TryCancel"/>,
/// <see cref="TryComplete"/>, <see cref="TakeExpired"/> or <see cref="Close"/> takes it out; the slots in use plus the
/// free ones are always the table's size, and a closed table takes no request.
/// Threading: thread-safe under one lock; the handlers of the requests taken out run outside it, in the caller.
/// </remarks>
internal sealed class ClientPendingRequests
{
    private const int NoSlot = -1;
    private readonly Lock _gate = new();
    private readonly Dictionary<ushort, int> _slotBySeq;
    private readonly PendingRequest[] _slots;
    private readonly int[] _freeSlots;
    private int _freeCount;
    private ushort _lastSeq;
    private int _head = NoSlot;
    private int _tail = NoSlot;
    private long _armedDeadlineTimestamp = long.MaxValue;
    private bool _closed;

    public ClientPendingRequests(int inFlightMax)
    {
        _slots = new PendingRequest[inFlightMax];
        _freeSlots = new int[inFlightMax];
        for (var i = 0; i < inFlightMax; i++)
        {
            _freeSlots[i] = inFlightMax - 1 - i;
        }

        _freeCount = inFlightMax;
        _slotBySeq = new Dictionary<ushort, int>(inFlightMax);
    }

    /// <summary>Requests pending now.</summary>
    public int Count
    {
        get
        {
            lock (_gate)
            {
                return _slotBySeq.Count;
            }
        }
    }

    /// <summary>The most requests pending at once.</summary>
    public int HighWater { get; private set; }

    /// <summary>The deadline the timeout timer is to be armed for; <see cref="long.MaxValue"/> when nothing is pending.</summary>
    public long ArmedDeadlineTimestamp
    {
        get
        {
            lock (_gate)
            {
                return _armedDeadlineTimestamp;
            }
        }
    }

    /// <summary>
    /// Registers a request due at <paramref name="deadlineTimestamp"/> under a fresh sequence; false when the table is
    /// closed or full. <paramref name="arm"/> says its deadline is earlier than the one the timer is armed for.
    /// </summary>
    public bool TryAdd(long deadlineTimestamp, ClientReplyHandler handler, object? state, out ushort seq, out bool arm)
    {
        lock (_gate)
        {
            seq = 0;
            arm = false;
            if (_closed || _freeCount == 0)
            {
                return false;
            }

            seq = NextSeqLocked();
            var slot = _freeSlots[--_freeCount];
            _slots[slot] = new PendingRequest { Seq = seq, DeadlineTimestamp = deadlineTimestamp, Handler = handler, State = state, Prev = _tail, Next = NoSlot };
            LinkLocked(slot);
            _slotBySeq.Add(seq, slot);
            if (_slotBySeq.Count > HighWater)
            {
                HighWater = _slotBySeq.Count;
            }

            arm = deadlineTimestamp < _armedDeadlineTimestamp;
            if (arm)
            {
                _armedDeadlineTimestamp = deadlineTimestamp;
            }

            return true;
        }
    }

    /// <summary>Takes back a request whose send was refused; false when something else (the close) took it out first.</summary>
    public bool TryCancel(ushort seq) => TryComplete(seq, out _);

    /// <summary>Takes out the request a reply answers; false for a sequence not pending (late, or never sent).</summary>
    public bool TryComplete(ushort seq, out PendingRequest pending)
    {
        lock (_gate)
        {
            if (!_slotBySeq.Remove(seq, out var slot))
            {
                pending = default;
                return false;
            }

            pending = _slots[slot];
            ReleaseLocked(slot);
            return true;
        }
    }

    /// <summary>Takes out the requests due at <paramref name="nowTimestamp"/> into <paramref name="into"/>; returns how many.</summary>
    public int TakeExpired(long nowTimestamp, PendingRequest[] into)
    {
        var count = 0;
        lock (_gate)
        {
            // One timeout per client, so send order is deadline order: expire from the head.
            while (_head != NoSlot && _slots[_head].DeadlineTimestamp <= nowTimestamp)
            {
                var slot = _head;
                into[count++] = _slots[slot];
                _slotBySeq.Remove(_slots[slot].Seq);
                ReleaseLocked(slot);
            }

            _armedDeadlineTimestamp = _head == NoSlot ? long.MaxValue : _slots[_head].DeadlineTimestamp;
        }

        return count;
    }

    /// <summary>The connection closed: every pending request is taken out, in send order, and no new one is taken.</summary>
    public List<PendingRequest> Close()
    {
        lock (_gate)
        {
            _closed = true;
            var failed = new List<PendingRequest>(_slotBySeq.Count);
            while (_head != NoSlot)
            {
                var slot = _head;
                failed.Add(_slots[slot]);
                _slotBySeq.Remove(_slots[slot].Seq);
                ReleaseLocked(slot);
            }

            _armedDeadlineTimestamp = long.MaxValue;
            if (_freeCount != _slots.Length)
            {
                throw new InvalidOperationException($"The client's request table holds {_slots.Length - _freeCount} slots after taking every request out.");
            }

            return failed;
        }
    }

    private ushort NextSeqLocked()
    {
        // Skip 0 (one-way) and any sequence still pending.
        do
        {
            _lastSeq = (ushort)(_lastSeq == ushort.MaxValue ? 1 : _lastSeq + 1);
        }
        while (_slotBySeq.ContainsKey(_lastSeq));

        return _lastSeq;
    }

    private void LinkLocked(int slot)
    {
        if (_tail != NoSlot)
        {
            _slots[_tail].Next = slot;
        }
        else
        {
            _head = slot;
        }

        _tail = slot;
    }

    private void ReleaseLocked(int slot)
    {
        var s = _slots[slot];
        if (s.Prev != NoSlot)
        {
            _slots[s.Prev].Next = s.Next;
        }
        else
        {
            _head = s.Next;
        }

        if (s.Next != NoSlot)
        {
            _slots[s.Next].Prev = s.Prev;
        }
        else
        {
            _tail = s.Prev;
        }

        _slots[slot] = default;
        _freeSlots[_freeCount++] = slot;
    }

    /// <summary>One pending request: its sequence, deadline, handler and state, and its neighbours in send order.</summary>
    internal struct PendingRequest
    {
        public ushort Seq;
        public long DeadlineTimestamp;
        public ClientReplyHandler? Handler;
        public object? State;
        public int Prev;
        public int Next;
    }
}
