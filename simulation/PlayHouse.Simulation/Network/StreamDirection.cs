using PlayHouse.Core.Collections;

namespace PlayHouse.Simulation.Network;

/// <summary>The state of one directed path: its options, its faults, its link and what it holds.</summary>
/// <remarks>Not thread-safe; owned by <see cref="SimNetwork"/> on the simulation thread.</remarks>
internal sealed class PathState(string from, string to, PathOptions options)
{
    public string From { get; } = from;

    public string To { get; } = to;

    public PathOptions Options { get; set; } = options;

    public bool HasOwnOptions { get; set; }

    public bool Partitioned { get; set; }

    /// <summary>Bumped when a partition starts, so a reset check armed in an earlier partition is recognised as stale.</summary>
    public long PartitionEpoch { get; set; }

    public bool Clogged { get; set; }

    public bool IsBlocked => Clogged || Partitioned;

    /// <summary>When the link finishes transmitting what it has been given (bandwidth model).</summary>
    public long BusyUntilTicks { get; set; }

    public long DatagramSeq { get; set; }

    public long MaxDeliveredDatagramSeq { get; set; }

    /// <summary>Datagrams that came due while the path was clogged, in the order they came due.</summary>
    public List<IThreadPoolWorkItem> HeldDatagrams { get; } = [];

    /// <summary>Stream directions whose head came due while the path was blocked, in the order they blocked.</summary>
    public List<StreamDirection> Blocked { get; } = [];
}

internal enum SegmentKind
{
    /// <summary>The handshake: delivering it accepts the connection at the listener.</summary>
    Open,
    Data,

    /// <summary>A graceful close: delivering it tells the receiving end that its peer closed.</summary>
    Close,
}

/// <summary>
/// One queued unit of a stream direction: a handshake, a chunk of <c>Length</c> bytes, or a close. The bytes of the
/// data chunks sit in their direction's byte store in the same order as the chunks, and a close's reason in
/// <see cref="StreamDirection.CloseReason"/>, so a segment holds no reference and is stored without a GC write barrier.
/// <c>EndsSend</c> is true on the last chunk of one <see cref="SimConnection.Send"/>, so each send is counted once.
/// </summary>
internal readonly record struct StreamSegment(SegmentKind Kind, int Length, long ReadyTicks, bool EndsSend);

/// <summary>
/// One direction of a stream connection: what its sender has sent and the receiver has not yet got, in send
/// order. Only the head is ever delivered, by one pump event at a time, so bytes arrive in order whatever the
/// world does with events that share an instant, and a hold on the path holds everything behind the head.
/// </summary>
/// <remarks>Not thread-safe; owned by <see cref="SimNetwork"/> on the simulation thread.</remarks>
internal sealed class StreamDirection(SimConnection sender, PathState path) : IThreadPoolWorkItem
{
    private const int BytesStoreMin = 256;

    private const int BytesRetainedMax = 64 * 1024;

    public SimConnection Sender { get; } = sender;

    public PathState Path { get; } = path;

    // The receiving end, its closed flag and the sender's queued bytes live here too, so a send or a delivery reads
    // one cold object of the connection pair fewer (with 10,000 clients each is a cache miss).

    /// <summary>The end this direction delivers to (the sender's peer); set with the peer.</summary>
    public SimConnection? Target { get; set; }

    /// <summary>A copy of <see cref="Target"/>'s closed-notified flag, kept by the connection ends.</summary>
    public bool TargetClosedNotified { get; set; }

    /// <summary>The reason of the close queued in this direction (at most one, its last segment); null when none is.</summary>
    public string? CloseReason { get; set; }

    /// <summary>Bytes sent into this direction and not yet delivered (the sender's <see cref="SimConnection.QueuedBytes"/>).</summary>
    public int QueuedBytes { get; set; }

    // The segments in send order, as a ring kept in this object rather than a Queue<T> beside it: with 10,000
    // clients every send and pump touches a cold direction, and one object fewer per touch is a cache miss fewer.
    // Inline in the direction (not readonly: a mutable struct), so a hop reaches no second object for its queue.
    private RingQueue<StreamSegment> _segments = new(4);

    // The bytes of the queued data segments, back to back in send order in one buffer of this direction, so a hop
    // rents and returns no pooled buffer. Segments leave only from the head, so the head segment's bytes always
    // start at _bytesStart and no offsets need storing. While a delivery runs, its bytes (_pinnedBytes at
    // _bytesStart) are lent to the receiver: nothing moves them in place until the delivery ends.
    private byte[] _bytes = [];
    private int _bytesStart;
    private int _bytesEnd;
    private int _pinnedBytes;

    /// <summary>Bytes of queued data segments held in the direction's store (not counting a delivery running now).</summary>
    public int BytesHeld => _bytesEnd - _bytesStart - _pinnedBytes;

    /// <summary>Segments queued.</summary>
    public int Count => _segments.Count;

    /// <summary>The ready time of the last queued segment; a later segment is never ready before it.</summary>
    public long LastReadyTicks { get; set; }

    /// <summary>No segment is delivered before this instant; set when a hold ends, so held bytes leave after a fresh latency.</summary>
    public long ReleaseFloorTicks { get; set; }

    /// <summary>True while the head came due on a blocked path; the direction is then listed in <see cref="PathState.Blocked"/>.</summary>
    public bool IsBlocked { get; set; }

    /// <summary>The partition (by <see cref="PathState.PartitionEpoch"/>) for which a reset check is armed.</summary>
    public long ResetCheckEpoch { get; set; }

    /// <summary>The world sequence of the armed pump event; any other pump event of this direction is stale.</summary>
    public long PumpSequence { get; set; }

    public bool PumpArmed { get; set; }

    public long PumpAtTicks { get; set; }

    /// <summary>The direction's pump event: armed by the network, live while <see cref="PumpArmed"/> and its sequence is <see cref="PumpSequence"/>.</summary>
    public void Execute() => Sender.Network.RunPump(this);

    /// <summary>
    /// Hints into the cache what a pump of this direction reads after the direction itself: its head segment, the head
    /// segment's bytes and the receiving end. Issued together, their misses overlap instead of following one another.
    /// </summary>
    public void PrefetchParts()
    {
        var (items, head) = _segments.Storage;
        Prefetch.ElementUnchecked(items, head);
        Prefetch.ElementUnchecked(_bytes, _bytesStart);
        Prefetch.Object(Target);
    }

    /// <summary>
    /// Hints the object that receives this direction's bytes (a client or a server session) into the cache, and the
    /// receiving end's own outbound direction, which carries the answer the delivery usually causes.
    /// </summary>
    public void PrefetchReceiver()
    {
        var target = Target;
        if (target is not null)
        {
            Prefetch.Object(target.Receiver, 2);
            Prefetch.Object(target.Outbound, 2);
        }
    }

    /// <summary>
    /// Hints what a send on this direction writes: its path and the tail of its segment queue and byte store. A tail
    /// past the end of the ring (it wraps) hints a line nothing reads, which is harmless.
    /// </summary>
    public void PrefetchForSend()
    {
        var (items, head) = _segments.Storage;
        Prefetch.ElementUnchecked(items, head + _segments.Count);
        Prefetch.ElementUnchecked(_bytes, _bytesEnd);
        Prefetch.Object(Path);
    }

    public long DueTicks(in StreamSegment segment) => Math.Max(segment.ReadyTicks, ReleaseFloorTicks);

    /// <summary>The <paramref name="index"/>-th queued segment, 0 being the head.</summary>
    public ref readonly StreamSegment At(int index) => ref _segments.At(index);

    public void Enqueue(in StreamSegment segment) => _segments.Enqueue(segment);

    public bool TryPeek(out StreamSegment segment)
    {
        if (_segments.Count == 0)
        {
            segment = default;
            return false;
        }

        segment = _segments.PeekHead();
        return true;
    }

    public bool TryDequeue(out StreamSegment segment)
    {
        if (!TryPeek(out segment))
        {
            return false;
        }

        DropHead();
        return true;
    }

    /// <summary>Removes the head segment, which the caller has already read with <see cref="TryPeek"/>.</summary>
    public void DropHead() => _segments.DropHead();

    /// <summary>Appends the bytes of a data segment queued (or about to be queued) at the tail.</summary>
    public void AppendBytes(ReadOnlySpan<byte> data)
    {
        if (_bytes.Length - _bytesEnd < data.Length)
        {
            MakeRoom(data.Length);
        }

        data.CopyTo(_bytes.AsSpan(_bytesEnd));
        _bytesEnd += data.Length;
    }

    /// <summary>Lends the head segment's <paramref name="length"/> bytes to a delivery until <see cref="EndDelivery"/>.</summary>
    public ReadOnlySpan<byte> BeginDelivery(int length)
    {
        if (_pinnedBytes != 0 || length > _bytesEnd - _bytesStart)
        {
            throw new InvalidOperationException($"A delivery of {length} byte(s) began with {_pinnedBytes} pinned and {_bytesEnd - _bytesStart} held.");
        }

        _pinnedBytes = length;
        return new ReadOnlySpan<byte>(_bytes, _bytesStart, length);
    }

    /// <summary>Drops the bytes of the delivery that just ended; returns how many.</summary>
    public int EndDelivery()
    {
        var delivered = _pinnedBytes;
        _bytesStart += _pinnedBytes;
        _pinnedBytes = 0;
        if (_bytesStart == _bytesEnd)
        {
            // Empty: the next send starts at 0 again, so the store rarely needs compacting. A store grown by a burst
            // (up to the send-queue cap) is let go rather than kept by an idle connection.
            _bytesStart = 0;
            _bytesEnd = 0;
            if (_bytes.Length > BytesRetainedMax)
            {
                // Back to the network's pool rather than to the GC: the next burst, here or on another connection (or
                // in the next run on this thread), takes it again instead of allocating a large object.
                Sender.Network.StreamStores.Return(_bytes);
                _bytes = [];
            }
        }

        return delivered;
    }

    /// <summary>Drops the bytes of every queued segment (a delivery running now keeps its own until it ends); returns how many.</summary>
    public int DiscardBytes()
    {
        var discarded = BytesHeld;
        _bytesEnd = _bytesStart + _pinnedBytes;
        if (_pinnedBytes == 0)
        {
            _bytesStart = 0;
            _bytesEnd = 0;

            // A direction is emptied when its connection closes or resets: whatever it still sends is discarded or
            // starts a new store, so the store goes back to the pool instead of dying with the connection.
            if (_bytes.Length > 0)
            {
                Sender.Network.StreamStores.Return(_bytes);
                _bytes = [];
            }
        }

        return discarded;
    }

    /// <summary>Segments at the head that came due at or before <paramref name="nowTicks"/>.</summary>
    public int CountDue(long nowTicks)
    {
        var count = 0;
        while (count < Count && DueTicks(At(count)) <= nowTicks)
        {
            count++;
        }

        return count;
    }

    /// <summary>
    /// Makes room for <paramref name="length"/> more bytes at the end: compacts in place when the live bytes fill at
    /// most half the store (so each compaction is paid for by at least as many appended bytes), else grows. The
    /// store stays within a small multiple of the send-queue cap, which bounds the live bytes.
    /// </summary>
    private void MakeRoom(int length)
    {
        var live = _bytesEnd - _bytesStart;
        var needed = live + length;
        if (_pinnedBytes == 0 && needed <= _bytes.Length / 2)
        {
            _bytes.AsSpan(_bytesStart, live).CopyTo(_bytes);
        }
        else
        {
            // A delivery running now reads the old array, which it keeps (the GC frees it after); the new one gets a copy.
            // An old array nothing reads goes back to the pool. Pooled arrays are powers of two and may hold another
            // connection's (or run's) old bytes: only the bytes between _bytesStart and _bytesEnd are ever read, and
            // each of them was written here first.
            var stores = Sender.Network.StreamStores;
            var grown = stores.Rent(Math.Max(BytesStoreMin, (int)Math.Min(Array.MaxLength, Math.Max(2L * _bytes.Length, 2L * needed))));
            _bytes.AsSpan(_bytesStart, live).CopyTo(grown);
            if (_pinnedBytes == 0 && _bytes.Length > 0)
            {
                stores.Return(_bytes);
            }

            _bytes = grown;
        }

        _bytesStart = 0;
        _bytesEnd = live;
    }
}
