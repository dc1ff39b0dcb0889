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
    private readonly PriorityQueue<IThreadPoolWorkItem, EventKey> _queue = new();
    private readonly List<(IThreadPoolWorkItem Item, EventKey Key)> _sameInstant = [];
    private readonly Xoshiro256StarStar _root;
    private readonly Xoshiro256StarStar _scheduleRandom;
    private readonly List<string> _escapes = [];
    private int _ownerThreadId;
    private long _nextSequence;

    public SimWorld(ulong seed, SimWorldOptions? options = null)
    {
        Seed = seed;
        Options = options ?? new SimWorldOptions();
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

        var key = new EventKey(Math.Max(atTicks, NowTicks), ++_nextSequence);
        _queue.Enqueue(item, key);
        if (_queue.Count > PendingEventHighWater)
        {
            PendingEventHighWater = _queue.Count;
        }
    }

    /// <summary>Queues a work item after a virtual delay.</summary>
    public void ScheduleAfter(TimeSpan delay, IThreadPoolWorkItem item) => ScheduleAt(NowTicks + Math.Max(0, delay.Ticks), item);

    /// <summary>Runs the next event; false when the queue is empty.</summary>
    public bool Step()
    {
        if (!TryDequeue(out var item, out var key))
        {
            return false;
        }

        NowTicks = key.TimeTicks;
        EventsExecuted++;
        if (EventsExecuted > Options.EventsMax)
        {
            throw new SimulationException($"Livelock: more than {Options.EventsMax} events ran (virtual time {Now}).");
        }

        var previous = System.Threading.SynchronizationContext.Current;
        if (ReferenceEquals(previous, SynchronizationContext))
        {
            // A caller that steps many times installs the world's context once (the runner does); nothing to swap.
            item.Execute();
            return true;
        }

        System.Threading.SynchronizationContext.SetSynchronizationContext(SynchronizationContext);
        try
        {
            item.Execute();
        }
        finally
        {
            System.Threading.SynchronizationContext.SetSynchronizationContext(previous);
        }

        return true;
    }

    /// <summary>Runs events due at or before <paramref name="untilTicks"/>, then sets time to it.</summary>
    public void RunUntil(long untilTicks)
    {
        while (_queue.TryPeek(out _, out var key) && key.TimeTicks <= untilTicks)
        {
            Step();
        }

        NowTicks = Math.Max(NowTicks, untilTicks);
    }

    /// <summary>Runs for a span of virtual time.</summary>
    public void RunFor(TimeSpan span) => RunUntil(NowTicks + span.Ticks);

    /// <summary>Runs until no event is left or <paramref name="limitTicks"/> is reached; true when the world went quiet.</summary>
    public bool RunUntilQuiet(long limitTicks = long.MaxValue)
    {
        while (_queue.TryPeek(out _, out var key))
        {
            if (key.TimeTicks > limitTicks)
            {
                NowTicks = Math.Max(NowTicks, limitTicks);
                return false;
            }

            Step();
        }

        return true;
    }

    /// <summary>Re-binds the world to the calling thread (a test that builds on one thread and runs on another).</summary>
    public void BindToCurrentThread() => _ownerThreadId = Environment.CurrentManagedThreadId;

    internal bool CheckThread(string action)
    {
        if (Environment.CurrentManagedThreadId == _ownerThreadId)
        {
            return true;
        }

        lock (_escapes)
        {
            _escapes.Add($"Thread {Environment.CurrentManagedThreadId} tried to {action} at virtual time {Now}; the simulation runs on thread {_ownerThreadId} only (a continuation escaped to the ThreadPool, or a real timer fired).");
        }

        return false;
    }

    private bool TryDequeue(out IThreadPoolWorkItem item, out EventKey key)
    {
        if (!_queue.TryDequeue(out item!, out key))
        {
            return false;
        }

        if (!Options.ExploreSchedules || !_queue.TryPeek(out _, out var next) || next.TimeTicks != key.TimeTicks)
        {
            return true;
        }

        // Several events share this instant: choose one with the PRNG and put the rest back in order.
        _sameInstant.Clear();
        _sameInstant.Add((item, key));
        while (_queue.TryPeek(out _, out next) && next.TimeTicks == key.TimeTicks)
        {
            _queue.TryDequeue(out var other, out var otherKey);
            _sameInstant.Add((other!, otherKey));
        }

        var pick = _scheduleRandom.NextInt(_sameInstant.Count);
        (item, key) = _sameInstant[pick];
        for (var i = 0; i < _sameInstant.Count; i++)
        {
            if (i != pick)
            {
                _queue.Enqueue(_sameInstant[i].Item, _sameInstant[i].Key);
            }
        }

        _sameInstant.Clear();
        return true;
    }

    private readonly record struct EventKey(long TimeTicks, long Sequence) : IComparable<EventKey>
    {
        public int CompareTo(EventKey other) => TimeTicks != other.TimeTicks ? TimeTicks.CompareTo(other.TimeTicks) : Sequence.CompareTo(other.Sequence);
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
