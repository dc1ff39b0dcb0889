namespace PlayHouse.Simulation.Checkers;

/// <summary>
/// What the checkers of one run share: the clock that stamps violations, the sequence that orders violations
/// across checkers, how many violations each keeps in memory, and a flag the run loop polls.
/// </summary>
/// <remarks>Thread-safe. The clock is read only when something is recorded or a checker needs the time.</remarks>
public sealed class CheckerContext
{
    // A clock's frequency never changes; read once, it saves a virtual call per reading of the time.
    private readonly long _frequency;

    // The world's clock, when it is the one: read directly (it counts in ticks), not through a virtual call, since
    // the checks after every event and every traced hook read the time.
    private readonly SimTimeProvider? _simTime;
    private long _sequence;
    private volatile bool _hasViolations;

    /// <param name="time">The run's clock: the world's <c>SimTimeProvider</c>, a <c>FakeTimeProvider</c> in unit tests,
    /// or the host's clock in real mode (picked by the composition root).</param>
    /// <param name="violationsKeptMax">Violations each checker keeps in memory; later ones are only counted, so a
    /// runaway bug cannot grow memory without bound.</param>
    /// <param name="singleThreaded">Every hook and check comes from one thread (the simulation's), so the checkers
    /// may skip their locks; see <see cref="Enter"/>. Never set it in real mode.</param>
    public CheckerContext(TimeProvider time, int violationsKeptMax = 100, bool singleThreaded = false)
    {
        ArgumentNullException.ThrowIfNull(time);
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(violationsKeptMax);
        Time = time;
        _frequency = time.TimestampFrequency;
        _simTime = time as SimTimeProvider;
        ViolationsKeptMax = violationsKeptMax;
        SingleThreaded = singleThreaded;
    }

    public TimeProvider Time { get; }

    /// <summary>True when the checkers sharing this context are only ever called from one thread.</summary>
    public bool SingleThreaded { get; }

    public int ViolationsKeptMax { get; }

    /// <summary>True once any checker sharing this context recorded a violation.</summary>
    public bool HasViolations => _hasViolations;

    /// <summary>The clock now, in ticks of 100 ns.</summary>
    public long NowTicks
    {
        get
        {
            if (_simTime is { } simTime)
            {
                return simTime.GetTimestamp();
            }

            var timestamp = Time.GetTimestamp();
            var frequency = _frequency;

            // The virtual clocks count in ticks already; only a real clock needs the conversion.
            return frequency == TimeSpan.TicksPerSecond
                ? timestamp
                : (long)((Int128)timestamp * TimeSpan.TicksPerSecond / frequency);
        }
    }

    /// <summary>
    /// Takes <paramref name="gate"/> for the scope, or nothing when the context is single-threaded: in simulation
    /// every hook runs on the world's thread, and an uncontended lock per hook measured as a tenth of the run.
    /// </summary>
    /// <example><c>using (Context.Enter(_gate)) { ... }</c></example>
    public GateScope Enter(Lock gate)
    {
        if (SingleThreaded)
        {
            return default;
        }

        gate.Enter();
        return new GateScope(gate);
    }

    internal long NextSequence()
    {
        _hasViolations = true;
        return Interlocked.Increment(ref _sequence);
    }
}

/// <summary>A lock held for a <c>using</c> scope, or none (see <see cref="CheckerContext.Enter"/>).</summary>
public readonly ref struct GateScope
{
    private readonly Lock? _held;

    internal GateScope(Lock held) => _held = held;

    public void Dispose() => _held?.Exit();
}

/// <summary>The violations of one checker: the first ones kept, all of them counted.</summary>
/// <remarks>Thread-safe (one lock, taken only to record or read).</remarks>
public sealed class ViolationLog
{
    private readonly Lock _gate = new();
    private readonly List<Violation> _kept = [];
    private long _count;
    private Violation? _first;

    public ViolationLog(string checkerName, CheckerContext context)
    {
        ArgumentException.ThrowIfNullOrEmpty(checkerName);
        ArgumentNullException.ThrowIfNull(context);
        CheckerName = checkerName;
        Context = context;
    }

    public string CheckerName { get; }

    public CheckerContext Context { get; }

    // A volatile read, not Interlocked.Read: that is a locked compare-exchange on x64, and the run loop asks
    // every extra checker after every step. A 64-bit volatile read is atomic on every platform .NET supports.
    public long Count => Volatile.Read(ref _count);

    public bool HasViolations => Count > 0;

    public Violation? First
    {
        get
        {
            lock (_gate)
            {
                return _first;
            }
        }
    }

    public CheckerVerdict Verdict
    {
        get
        {
            lock (_gate)
            {
                return new CheckerVerdict(CheckerName, _count == 0, _first?.Message, _count);
            }
        }
    }

    /// <summary>A copy of the kept violations, in recording order.</summary>
    public IReadOnlyList<Violation> Snapshot()
    {
        lock (_gate)
        {
            return [.. _kept];
        }
    }

    /// <summary>Records a violation stamped with the clock now.</summary>
    public Violation Record(string message) => RecordAt(Context.NowTicks, message);

    /// <summary>Records a violation stamped with an explicit virtual instant.</summary>
    public Violation RecordAt(long timeTicks, string message)
    {
        ArgumentException.ThrowIfNullOrEmpty(message);
        var violation = new Violation(CheckerName, TimeSpan.FromTicks(timeTicks), message) { Sequence = Context.NextSequence() };
        lock (_gate)
        {
            _count++;
            _first ??= violation;
            if (_kept.Count < Context.ViolationsKeptMax)
            {
                _kept.Add(violation);
            }
        }

        return violation;
    }

    public void ThrowIfViolated()
    {
        IReadOnlyList<Violation> kept;
        long count;
        lock (_gate)
        {
            if (_count == 0)
            {
                return;
            }

            kept = [.. _kept];
            count = _count;
        }

        throw InvariantViolationException.From(kept, count);
    }
}
