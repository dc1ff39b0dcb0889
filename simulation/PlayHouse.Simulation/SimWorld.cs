using System.Diagnostics.CodeAnalysis;
using System.Runtime.CompilerServices;
using PlayHouse.Core.Collections;
using PlayHouse.Core.Seams;

namespace PlayHouse.Simulation;

/// <summary>Options of the world itself (not of the network or the workload).</summary>
public sealed record SimWorldOptions
{
    /// <summary>
    /// When several events are due at the same instant, pick among them with the world's PRNG instead of
    /// FIFO, so different seeds explore different interleavings (still replayable). Off by default.
    /// </summary>
    public bool ExploreSchedules { get; init; }

    /// <summary>Events a run may execute before it is declared a livelock.</summary>
    public long EventsMax { get; init; } = 2_000_000_000;
}

/// <summary>
/// The deterministic world: one thread, virtual time, one seed. Every stage turn, continuation, timer and
/// network delivery is an event in one queue ordered by (time, sequence); time jumps to the next event.
/// Child seeds for the network, nodes, clients and workload are drawn once from the root PRNG.
/// </summary>
/// <remarks>
/// Not thread-safe by design: everything runs on the thread that calls <see cref="Step"/>. Work scheduled from
/// any other thread is an escape from the simulation; it is recorded and fails the run (see <see cref="Escapes"/>).
/// </remarks>
public sealed class SimWorld
{
    private readonly EventQueue _queue = new();
    private readonly List<EventEntry> _sameInstant = [];
    private readonly Xoshiro256StarStar _root;
    private readonly Xoshiro256StarStar _scheduleRandom;
    private readonly List<string> _escapes = [];

    // The options read on every step, copied out of the options record so a step need not load it first.
    private readonly bool _exploreSchedules;
    private readonly long _eventsMax;
    private int _ownerThreadId;
    private long _nextSequence;

    public SimWorld(ulong seed, SimWorldOptions? options = null)
    {
        Seed = seed;
        Options = options ?? new SimWorldOptions();
        _exploreSchedules = Options.ExploreSchedules;
        _eventsMax = Options.EventsMax;
        _root = new Xoshiro256StarStar(seed);
        _scheduleRandom = new Xoshiro256StarStar(_root.NextChildSeed());
        Trace = new SimTrace();
        Time = new SimTimeProvider(this);
        Executor = new SimExecutor(this);
        SynchronizationContext = new ExecutorSynchronizationContext(Executor);
        _ownerThreadId = Environment.CurrentManagedThreadId;
    }

    public ulong Seed { get; }

    public SimWorldOptions Options { get; }

    /// <summary>Virtual time in ticks of 100 ns since the start of the run.</summary>
    public long NowTicks { get; private set; }

    public TimeSpan Now => TimeSpan.FromTicks(NowTicks);

    public SimTimeProvider Time { get; }

    public SimExecutor Executor { get; }

    /// <summary>
    /// Current while an event runs, so an <c>await</c> anywhere in simulation code (scenarios, clients, API
    /// handlers) resumes through the simulation executor instead of on the ThreadPool.
    /// </summary>
    public ExecutorSynchronizationContext SynchronizationContext { get; }

    public SimTrace Trace { get; }

    /// <summary>Events executed so far.</summary>
    public long EventsExecuted { get; private set; }

    /// <summary>Events waiting in the queue (including cancelled timers not yet skipped).</summary>
    public int PendingEventCount => _queue.Count;

    /// <summary>How many times the event wheel hinted coming events' objects into the cache (only crowded wheels do).</summary>
    internal long BucketsHinted => _queue.BucketsHinted;

    /// <summary>The most events the queue held at once.</summary>
    public int PendingEventHighWater { get; private set; }

    /// <summary>Escapes from the simulation thread, each described; a run with any fails.</summary>
    public IReadOnlyList<string> Escapes => _escapes;

    /// <summary>Draws a seed for an independent stream (a node, a client, the network, the workload).</summary>
    public ulong NextChildSeed()
    {
        CheckThread("draw a child seed");
        return _root.NextChildSeed();
    }

    /// <summary>Creates an independent random source from a fresh child seed.</summary>
    public Xoshiro256StarStar CreateRandom() => new(NextChildSeed());

    /// <summary>Queues a work item to run at an absolute virtual instant (never earlier than now).</summary>
    public void ScheduleAt(long atTicks, IThreadPoolWorkItem item)
    {
        ArgumentNullException.ThrowIfNull(item);
        if (!CheckThread("schedule work"))
        {
            return;
        }

        _queue.Enqueue(new EventEntry(Math.Max(atTicks, NowTicks), ++_nextSequence, item), NowTicks);
        if (_queue.Count > PendingEventHighWater)
        {
            PendingEventHighWater = _queue.Count;
        }
    }

    /// <summary>
    /// Queues <paramref name="item"/> and returns the sequence it reads back from <see cref="CurrentEventSequence"/>
    /// when it runs, so an owner that re-arms one event object (a stream direction's pump) needs no object or tag per
    /// arming to tell a live event from a stale one. Returns 0, which no event has, when the caller is on another thread.
    /// </summary>
    internal long ScheduleAtWithSequence(long atTicks, IThreadPoolWorkItem item)
    {
        if (!CheckThread("schedule work"))
        {
            return 0;
        }

        var sequence = ++_nextSequence;
        _queue.Enqueue(new EventEntry(Math.Max(atTicks, NowTicks), sequence, item), NowTicks);
        if (_queue.Count > PendingEventHighWater)
        {
            PendingEventHighWater = _queue.Count;
        }

        return sequence;
    }

    /// <summary>Queues a work item at the current instant for a caller that has already checked the thread.</summary>
    internal void ScheduleNowChecked(IThreadPoolWorkItem item)
    {
        _queue.Enqueue(new EventEntry(NowTicks, ++_nextSequence, item), NowTicks);
        if (_queue.Count > PendingEventHighWater)
        {
            PendingEventHighWater = _queue.Count;
        }
    }

    /// <summary>The sequence of the event running now (unique to one scheduling; see <see cref="ScheduleAtWithSequence"/>).</summary>
    internal long CurrentEventSequence { get; private set; }

    /// <summary>Queues a work item after a virtual delay.</summary>
    public void ScheduleAfter(TimeSpan delay, IThreadPoolWorkItem item) => ScheduleAt(NowTicks + Math.Max(0, delay.Ticks), item);

    /// <summary>Runs the next event; false when the queue is empty.</summary>
    public bool Step()
    {
        if (!TryDequeue(out var entry))
        {
            return false;
        }

        var item = entry.Item;
        NowTicks = entry.TimeTicks;
        CurrentEventSequence = entry.Sequence;
        EventsExecuted++;
        if (EventsExecuted > _eventsMax)
        {
            ThrowLivelock();
        }

        var previous = System.Threading.SynchronizationContext.Current;
        if (ReferenceEquals(previous, SynchronizationContext))
        {
            // A caller that steps many times installs the world's context once (the runner does); nothing to swap.
            Execute(item);
            return true;
        }

        System.Threading.SynchronizationContext.SetSynchronizationContext(SynchronizationContext);
        try
        {
            Execute(item);
        }
        finally
        {
            System.Threading.SynchronizationContext.SetSynchronizationContext(previous);
        }

        return true;
    }

    /// <summary>
    /// <see cref="Step"/> for a caller that has installed <see cref="SynchronizationContext"/> on this thread for as
    /// long as it steps (the runner's loop): the context is not read back per event, a thread-static read each time.
    /// Every code path that sets another context restores it before it returns, so it stays installed between events.
    /// </summary>
    internal bool StepInContext()
    {
        if (!TryDequeue(out var entry))
        {
            return false;
        }

        NowTicks = entry.TimeTicks;
        CurrentEventSequence = entry.Sequence;
        EventsExecuted++;
        if (EventsExecuted > _eventsMax)
        {
            ThrowLivelock();
        }

        Execute(entry.Item);
        return true;
    }

    /// <summary>
    /// Runs one event. A stream direction's pump, most of the events of a round trip, is called on its concrete type:
    /// the interface call site then sees mostly stage turns, not three or more classes that defeat its dispatch cache.
    /// </summary>
    private static void Execute(IThreadPoolWorkItem item)
    {
        if (item.GetType() == typeof(Network.StreamDirection))
        {
            Unsafe.As<Network.StreamDirection>(item).Execute();
            return;
        }

        item.Execute();
    }

    /// <summary>Runs events due at or before <paramref name="untilTicks"/>, then sets time to it.</summary>
    public void RunUntil(long untilTicks)
    {
        while (_queue.Count > 0 && _queue.PeekTimeTicks() <= untilTicks)
        {
            Step();
        }

        NowTicks = Math.Max(NowTicks, untilTicks);
    }

    /// <summary>Runs for a span of virtual time.</summary>
    public void RunFor(TimeSpan span) => RunUntil(NowTicks + span.Ticks);

    /// <summary>Runs until no event is left or <paramref name="limitTicks"/> is reached; true when the world went quiet.</summary>
    public bool RunUntilQuiet(long limitTicks = long.MaxValue) => RunUntilQuiet(limitTicks, long.MaxValue);

    /// <summary>
    /// Runs until no event is left, <paramref name="limitTicks"/> is reached or <see cref="EventsExecuted"/> reaches
    /// <paramref name="eventsExecutedMax"/> (a run's event budget: events that keep coming at one instant never reach a
    /// time limit); true when the world went quiet.
    /// </summary>
    public bool RunUntilQuiet(long limitTicks, long eventsExecutedMax)
    {
        while (_queue.Count > 0)
        {
            if (_queue.PeekTimeTicks() > limitTicks)
            {
                NowTicks = Math.Max(NowTicks, limitTicks);
                return false;
            }

            if (EventsExecuted >= eventsExecutedMax)
            {
                return false;
            }

            Step();
        }

        return true;
    }

    /// <summary>Re-binds the world to the calling thread (a test that builds on one thread and runs on another).</summary>
    public void BindToCurrentThread() => _ownerThreadId = Environment.CurrentManagedThreadId;

    // Small enough to inline at every schedule, which then reads the thread id without a call; the escape is out of line.
    internal bool CheckThread(string action) => Environment.CurrentManagedThreadId == _ownerThreadId || RecordEscape(action);

    [MethodImpl(MethodImplOptions.NoInlining)]
    private bool RecordEscape(string action)
    {
        lock (_escapes)
        {
            _escapes.Add($"Thread {Environment.CurrentManagedThreadId} tried to {action} at virtual time {Now}; the simulation runs on thread {_ownerThreadId} only (a continuation escaped to the ThreadPool, or a real timer fired).");
        }

        return false;
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private bool TryDequeue(out EventEntry entry)
    {
        if (_queue.Count == 0)
        {
            entry = default;
            return false;
        }

        entry = _queue.Dequeue();
        if (_exploreSchedules)
        {
            PickSameInstant(ref entry);
        }

        return true;
    }

    /// <summary>When exploring schedules, swaps <paramref name="entry"/> for a PRNG pick among the events due at its instant.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private void PickSameInstant(ref EventEntry entry)
    {
        if (_queue.Count == 0 || _queue.PeekTimeTicks() != entry.TimeTicks)
        {
            return;
        }

        // Several events share this instant: choose one with the PRNG and put the rest back in order.
        _sameInstant.Clear();
        _sameInstant.Add(entry);
        while (_queue.Count > 0 && _queue.PeekTimeTicks() == entry.TimeTicks)
        {
            _sameInstant.Add(_queue.Dequeue());
        }

        var pick = _scheduleRandom.NextInt(_sameInstant.Count);
        entry = _sameInstant[pick];
        for (var i = 0; i < _sameInstant.Count; i++)
        {
            if (i != pick)
            {
                _queue.Enqueue(_sameInstant[i], NowTicks);
            }
        }

        _sameInstant.Clear();
    }

    [DoesNotReturn]
    [MethodImpl(MethodImplOptions.NoInlining)]
    private void ThrowLivelock() =>
        throw new SimulationException($"Livelock: more than {_eventsMax} events ran (virtual time {Now}).");

    /// <summary>One queued event: its instant, its sequence (unique, so the order is total) and the work; 24 bytes.</summary>
    private readonly record struct EventEntry(long TimeTicks, long Sequence, IThreadPoolWorkItem Item)
    {
        public bool RunsBefore(in EventEntry other) => RunsBefore(TimeTicks, Sequence, other.TimeTicks, other.Sequence);

        public static bool RunsBefore(long timeTicks, long sequence, long otherTimeTicks, long otherSequence) =>
            timeTicks != otherTimeTicks ? timeTicks < otherTimeTicks : sequence < otherSequence;
    }

    /// <summary>
    /// The world's queue: events due at the current instant (stage turns, continuations) in a FIFO lane, events due
    /// within the next few tens of milliseconds (a network hop's latency) in a timing wheel, other events due within
    /// <see cref="NearHorizonTicks"/> of now in one heap, later ones (timeouts, heartbeats, idle timers) in another, and
    /// each dequeue takes the earliest of the four heads. With 10,000 clients some 20,000 of the 25,000 queued events
    /// are such timers; kept apart, the heap and wheel every network hop goes through stay small and in cache. An event
    /// queued for the current instant has a higher sequence than everything already queued, so the lane is in (time,
    /// sequence) order by construction and costs no sift at all. The order is the (time, sequence) order either way.
    /// </summary>
    private sealed class EventQueue
    {
        private const long NearHorizonTicks = 100 * TimeSpan.TicksPerMillisecond;
        private readonly EventHeap _near = new();
        private readonly EventHeap _far = new();
        // Events due at the current instant, in (time, sequence) order by construction (not readonly: a mutable struct).
        private RingQueue<EventEntry> _now = new(256);
        private readonly EventWheel _wheel = new();

        public long BucketsHinted => _wheel.BucketsHinted;

        private enum Source
        {
            Lane,
            Wheel,
            Near,
            Far,
        }

        // Kept here rather than summed over the four parts: every schedule reads it for the high-water mark and every
        // step for emptiness.
        public int Count { get; private set; }

        // The earliest event outside the lane, its part and its (time, sequence) (long.MaxValue for none), while
        // _restKnown. An enqueue outside the lane updates it by one comparison and a lane dequeue leaves it as it is, so
        // only a dequeue from the wheel or a heap has it found again across the three parts.
        private bool _restKnown = true;
        private Source _restSource = Source.Far;
        private long _restTime = long.MaxValue;
        private long _restSequence = long.MaxValue;

        public long PeekTimeTicks() => HeadSource() switch
        {
            Source.Lane => _now.PeekHead().TimeTicks,
            Source.Wheel => _wheel.Peek().TimeTicks,
            Source.Near => _near.Peek().TimeTicks,
            _ => _far.Peek().TimeTicks,
        };

        /// <summary>Queues <paramref name="entry"/>; one due at <paramref name="nowTicks"/> must be later in (time, sequence) than every queued one due then.</summary>
        public void Enqueue(in EventEntry entry, long nowTicks)
        {
            Count++;
            if (entry.TimeTicks == nowTicks)
            {
                _now.Enqueue(entry);
                return;
            }

            Source source;
            if (_wheel.TryEnqueue(entry, nowTicks))
            {
                source = Source.Wheel;
            }
            else if (entry.TimeTicks - nowTicks > NearHorizonTicks)
            {
                _far.Enqueue(entry);
                source = Source.Far;
            }
            else
            {
                _near.Enqueue(entry);
                source = Source.Near;
            }

            if (_restKnown && EventEntry.RunsBefore(entry.TimeTicks, entry.Sequence, _restTime, _restSequence))
            {
                (_restSource, _restTime, _restSequence) = (source, entry.TimeTicks, entry.Sequence);
            }
        }

        public EventEntry Dequeue()
        {
            Count--;
            var source = HeadSource();
            if (source == Source.Lane)
            {
                _now.Dequeue(out var entry);
                return entry;
            }

            _restKnown = false;
            return source switch
            {
                Source.Wheel => _wheel.Dequeue(),
                Source.Near => _near.Dequeue(),
                _ => _far.Dequeue(),
            };
        }

        /// <summary>
        /// Which part holds the earliest event in (time, sequence). The lane holds only events of the current instant;
        /// an event queued elsewhere and due at that instant was queued before time reached it and so precedes the
        /// lane, which the comparison tells as well.
        /// </summary>
        private Source HeadSource()
        {
            if (!_restKnown)
            {
                FindRest();
            }

            if (_now.Count > 0)
            {
                ref readonly var lane = ref _now.PeekHead();
                if (EventEntry.RunsBefore(lane.TimeTicks, lane.Sequence, _restTime, _restSequence))
                {
                    return Source.Lane;
                }
            }

            return _restSource;
        }

        /// <summary>Finds the earliest event of the wheel and the two heaps.</summary>
        private void FindRest()
        {
            var source = Source.Far;
            long time = long.MaxValue, sequence = long.MaxValue;
            if (_wheel.Count > 0)
            {
                _wheel.PeekKey(out time, out sequence);
                source = Source.Wheel;
            }

            if (_near.Count > 0)
            {
                ref readonly var near = ref _near.Peek();
                if (EventEntry.RunsBefore(near.TimeTicks, near.Sequence, time, sequence))
                {
                    (source, time, sequence) = (Source.Near, near.TimeTicks, near.Sequence);
                }
            }

            if (_far.Count > 0)
            {
                ref readonly var far = ref _far.Peek();
                if (EventEntry.RunsBefore(far.TimeTicks, far.Sequence, time, sequence))
                {
                    (source, time, sequence) = (Source.Far, far.TimeTicks, far.Sequence);
                }
            }

            (_restKnown, _restSource, _restTime, _restSequence) = (true, source, time, sequence);
        }
    }

    /// <summary>
    /// A timing wheel for the events due within the next <see cref="BucketCount"/> buckets of <see cref="BucketTicks"/>
    /// (some 26 ms: a network hop's latency): a queued event lands in its bucket at once, and the earliest is the least
    /// (time, sequence) of the first occupied bucket, found through a bitmap. Each bucket holds a handful of events, so
    /// a dequeue compares a few where a heap sifted through several levels of unpredictable branches.
    /// </summary>
    private sealed class EventWheel
    {
        private const int BucketShift = 8;
        private const long BucketTicks = 1L << BucketShift;
        private const int BucketCount = 1024;
        private const int Mask = BucketCount - 1;
        private const int Words = BucketCount / 64;
        // Each bucket's entries and count side by side, so a bucket costs one array access and one bounds check.
        private readonly Bucket[] _buckets = new Bucket[BucketCount];
        private readonly ulong[] _occupied = new ulong[Words];

        // Every queued event's bucket (its time divided by BucketTicks) lies in [_baseBucket, _baseBucket + BucketCount),
        // so the buckets taken circularly from _baseBucket are in time order.
        private long _baseBucket;
        private int _minBucket = -1;
        private int _minIndex;

        // Below this many queued events the objects they touch stay in the cache from one round to the next, and the
        // hints would only cost time (see HintAhead): a run of 1,000 clients queues some hundreds, one of 10,000 some thousands.
        private const int HintEventsMin = 2048;

        // The bucket whose event objects were last hinted into the cache (see FindMin).
        private int _hintedBucket = -1;

        // The key of the earliest event while _minBucket is set, so a peek or an enqueue compares against two fields
        // instead of loading the bucket's array and its entry.
        private long _minTime;
        private long _minSequence;

        public int Count { get; private set; }

        public long BucketsHinted { get; private set; }

        /// <summary>Queues <paramref name="entry"/> when it is due within the wheel's span; false otherwise.</summary>
        public bool TryEnqueue(in EventEntry entry, long nowTicks)
        {
            // Every queued event is due at or after now, so the base may follow now and the span with it.
            var nowBucket = nowTicks >> BucketShift;
            if (_baseBucket < nowBucket)
            {
                _baseBucket = nowBucket;
            }

            var bucket = entry.TimeTicks >> BucketShift;
            if (bucket - _baseBucket >= BucketCount)
            {
                return false;
            }

            var index = (int)(bucket & Mask);
            ref var slot = ref _buckets[index];
            var entries = slot.Entries;
            var count = slot.Count;
            if (entries is null || count == entries.Length)
            {
                entries = Grow(ref slot);
            }

            entries[count] = entry;
            slot.Count = count + 1;
            _occupied[index >> 6] |= 1UL << (index & 63);
            Count++;
            if (_minBucket >= 0 && EventEntry.RunsBefore(entry.TimeTicks, entry.Sequence, _minTime, _minSequence))
            {
                (_minBucket, _minIndex, _minTime, _minSequence) = (index, count, entry.TimeTicks, entry.Sequence);
            }

            return true;
        }

        public ref readonly EventEntry Peek()
        {
            if (_minBucket < 0)
            {
                FindMin();
            }

            return ref _buckets[_minBucket].Entries![_minIndex];
        }

        // Out of line, so the enqueue that rarely needs it keeps its bucket array in a register, not in a stack slot.
        [MethodImpl(MethodImplOptions.NoInlining)]
        private static EventEntry[] Grow(ref Bucket slot)
        {
            var entries = slot.Entries;
            if (entries is null)
            {
                entries = new EventEntry[4];
            }
            else
            {
                Array.Resize(ref entries, slot.Count * 2);
            }

            slot.Entries = entries;
            return entries;
        }

        /// <summary>The (time, sequence) of the earliest event, as <see cref="Peek"/> would read them.</summary>
        public void PeekKey(out long timeTicks, out long sequence)
        {
            if (_minBucket < 0)
            {
                FindMin();
            }

            timeTicks = _minTime;
            sequence = _minSequence;
        }

        public EventEntry Dequeue()
        {
            if (_minBucket < 0)
            {
                FindMin();
            }

            var index = _minBucket;
            ref var slot = ref _buckets[index];
            var entries = slot.Entries!;
            var count = --slot.Count;
            var entry = entries[_minIndex];

            // The order within a bucket does not matter: the last entry fills the hole, and the vacated slot is
            // cleared so the wheel holds no work item it no longer owns.
            if (_minIndex != count)
            {
                entries[_minIndex] = entries[count];
            }

            entries[count] = default;
            if (count == 0)
            {
                _occupied[index >> 6] &= ~(1UL << (index & 63));
            }

            Count--;
            _minBucket = -1;
            return entry;
        }

        private void FindMin()
        {
            var index = FirstOccupiedFrom((int)(_baseBucket & Mask));
            var entries = _buckets[index].Entries!;
            var count = _buckets[index].Count;
            var best = 0;
            for (var i = 1; i < count; i++)
            {
                if (entries[i].RunsBefore(entries[best]))
                {
                    best = i;
                }
            }

            (_minBucket, _minIndex, _minTime, _minSequence) = (index, best, entries[best].TimeTicks, entries[best].Sequence);
            if (index != _hintedBucket)
            {
                _hintedBucket = index;
                if (Count >= HintEventsMin)
                {
                    BucketsHinted++;
                    HintAhead(index);
                }
            }
        }

        /// <summary>
        /// The wheel reached bucket <paramref name="index"/>, whose events run over the next few dozen steps. A cold
        /// client's objects form a chain (a stream direction, its receiving connection, the client or session behind
        /// it, that one's decoder and driver, the driver's tracker and ledgers), and each link's address is known only
        /// once the link before is in the cache. So the hints run as a pipeline one occupied bucket apart: the
        /// farthest bucket gets its event objects hinted, the next nearer their parts, then their receivers, then the
        /// receivers' parts level by level, this bucket the deepest level. Each stage reads only what the stage
        /// before brought in, a bucket (some dozens of events) earlier.
        /// </summary>
        private void HintAhead(int index)
        {
            var next = index;
            for (var stage = HintStage.ReceiverParts + Prefetch.DepthMax; stage >= HintStage.Objects && next >= 0; stage--)
            {
                HintBucket(next, stage);
                next = NextOccupiedAfter(next);
            }
        }

        private void HintBucket(int index, HintStage stage)
        {
            ref var slot = ref _buckets[index];
            var entries = slot.Entries;
            if (entries is null)
            {
                return;
            }

            for (var i = 0; i < slot.Count; i++)
            {
                var item = entries[i].Item;
                if (stage == HintStage.Objects)
                {
                    Prefetch.Object(item, 3);
                }
                else if (item.GetType() == typeof(Network.StreamDirection))
                {
                    var direction = Unsafe.As<Network.StreamDirection>(item);
                    switch (stage)
                    {
                        case HintStage.Parts:
                            direction.PrefetchParts();
                            break;
                        case HintStage.Receivers:
                            direction.PrefetchReceiver();
                            break;
                        case HintStage.ReceiverParts:
                            direction.Target?.Outbound.PrefetchForSend();
                            direction.Target?.Receiver?.PrefetchParts(0);
                            break;
                        default:
                            direction.Target?.Receiver?.PrefetchParts(stage - HintStage.ReceiverParts);
                            break;
                    }
                }
            }
        }

        /// <summary>The next occupied bucket after <paramref name="index"/> within the span, or -1 when there is none.</summary>
        private int NextOccupiedAfter(int index)
        {
            var baseIndex = (int)(_baseBucket & Mask);
            var distance = (index - baseIndex) & Mask;
            for (var d = distance + 1; d < BucketCount;)
            {
                var at = (baseIndex + d) & Mask;
                var bits = _occupied[at >> 6] >> (at & 63);
                if (bits != 0)
                {
                    var step = System.Numerics.BitOperations.TrailingZeroCount(bits);
                    return d + step < BucketCount ? (at + step) & Mask : -1;
                }

                d += 64 - (at & 63);
            }

            return -1;
        }

        private int FirstOccupiedFrom(int start)
        {
            var word = start >> 6;
            var bits = _occupied[word] & (ulong.MaxValue << (start & 63));
            for (var n = 0; n <= Words; n++)
            {
                if (bits != 0)
                {
                    return (word << 6) + System.Numerics.BitOperations.TrailingZeroCount(bits);
                }

                // Past the last word the circle continues at the first: those buckets are the latest of the span.
                word = (word + 1) & (Words - 1);
                bits = _occupied[word];
            }

            throw new InvalidOperationException("The wheel counts events but no bucket is occupied.");
        }

        // In pipeline order, farthest ahead first; the receivers' parts take one stage per level from ReceiverParts on.
        private enum HintStage
        {
            Objects,
            Parts,
            Receivers,
            ReceiverParts,
        }

        private struct Bucket
        {
            public EventEntry[]? Entries;
            public int Count;
        }
    }

    /// <summary>
    /// A 4-ary min-heap of events ordered by (time, sequence), the entries stored inline in one array. Keys are
    /// unique, so the dequeue order is the same as any correct priority queue's; this one saves the generic
    /// queue's comparer and tuple indirections on the hottest path of the world.
    /// </summary>
    private sealed class EventHeap
    {
        private const int Arity = 4;
        private EventEntry[] _entries = new EventEntry[256];

        public int Count { get; private set; }

        public ref readonly EventEntry Peek() => ref _entries[0];

        public void Enqueue(in EventEntry entry)
        {
            if (Count == _entries.Length)
            {
                Array.Resize(ref _entries, _entries.Length * 2);
            }

            var entries = _entries;
            var i = Count++;
            while (i > 0)
            {
                var parent = (i - 1) / Arity;
                if (!entry.RunsBefore(entries[parent]))
                {
                    break;
                }

                entries[i] = entries[parent];
                i = parent;
            }

            entries[i] = entry;
        }

        public EventEntry Dequeue()
        {
            var entries = _entries;
            var root = entries[0];
            var count = --Count;
            var last = entries[count];

            // Clear the vacated slot so the heap holds no work item it no longer owns.
            entries[count] = default;
            if (count == 0)
            {
                return root;
            }

            var i = 0;
            while (true)
            {
                var first = (i * Arity) + 1;
                if (first >= count)
                {
                    break;
                }

                var best = first;
                var end = Math.Min(first + Arity, count);
                for (var c = first + 1; c < end; c++)
                {
                    if (entries[c].RunsBefore(entries[best]))
                    {
                        best = c;
                    }
                }

                if (!entries[best].RunsBefore(last))
                {
                    break;
                }

                entries[i] = entries[best];
                i = best;
            }

            entries[i] = last;
            return root;
        }
    }
}

/// <summary>The simulation itself failed (livelock, escape, misuse), as opposed to an invariant of the system under test.</summary>
public sealed class SimulationException : Exception
{
    public SimulationException()
    {
    }

    public SimulationException(string message)
        : base(message)
    {
    }

    public SimulationException(string message, Exception innerException)
        : base(message, innerException)
    {
    }
}
