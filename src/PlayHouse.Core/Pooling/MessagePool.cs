using System.Diagnostics;
using System.Numerics;
using System.Runtime.CompilerServices;

namespace PlayHouse.Core.Pooling;

/// <summary>
/// A size-class pool of message buffers. Each rent hands out a <see cref="Payload"/> with exactly one owner;
/// in checked mode a ledger records every outstanding buffer and its owner so leaks can be named.
/// </summary>
/// <remarks>
/// <para>
/// Thread-safe: rent and return may happen on any thread, and a buffer may be rented on one thread and returned on
/// another. Each pool keeps two tiers per size class. The local tier is one small stack per thread, indexed by the
/// thread's <see cref="ThreadSlots"/> index; only its thread touches it, so a rent or return that hits it takes no
/// lock, no interlocked operation and allocates nothing. The global tier is one bounded stack per class under its
/// own lock.
/// </para>
/// <para>
/// A buffer's ownership state (its generation, length and owner label) is plain fields, also in unchecked mode.
/// That is enough because a buffer has one owner at a time, and an owner hands a payload to another thread only
/// through something that gives happens-before (a queue, a lock, a thread start or join); the pool's own hand-offs
/// go through the global tier's lock. Two threads disposing copies of one handle at the same moment break that rule:
/// unchecked mode cannot see it, checked mode fails the second return on the ledger.
/// </para>
/// <para>
/// Why per-thread caches live in the pool (an array indexed by a small thread index) rather than in a
/// <c>[ThreadStatic]</c> array indexed by a pool id: nothing static then references a pool, so a pool (one per
/// simulated node, thousands over a swarm run) is collected like any object without needing Dispose, and the pool
/// can walk its own caches to sum the per-thread counters. Reading the <c>[ThreadStatic]</c> index costs the same as
/// reading a <c>[ThreadStatic]</c> array; <c>ThreadLocal&lt;T&gt;.Value</c> measured about 1 ns slower per access
/// on the development machine, and enumerating its values for statistics would need <c>trackAllValues</c>.
/// </para>
/// <para>
/// Why transfers are batched: a full local stack moves its older half to the global tier under one lock, and an
/// empty one refills half a stack under one lock. A producer thread that only rents and a consumer thread that
/// only returns (the B2 pattern) then take the global lock once per half a stack instead of once per message, and
/// the buffers kept locally stay the recently used, cache-warm ones. Returns that fit in neither tier are dropped to
/// the GC and counted as Dropped, so the memory held per thread and per pool stays bounded.
/// </para>
/// <para>
/// Statistics are per-thread counters summed on read: exact once every thread using the pool is quiescent (and
/// the reader has synchronised with them), possibly slightly behind while they run.
/// </para>
/// <para>
/// Checked mode adds one lock around a ledger of outstanding buffers on rent, move and return, and poisons returned
/// buffers with <see cref="MessagePoolOptions.PoisonByte"/>.
/// </para>
/// </remarks>
public sealed class MessagePool
{
    private readonly int[] _classBytes;
    private readonly int _classCount;
    private readonly int _smallestClassBytes;
    private readonly int _largestClassBytes;

    // Rents up to this size take the pooled fast path: the smaller of the largest class and MaxRentBytes.
    private readonly int _pooledLimitBytes;
    private readonly int _maxRentBytes;

    // _octaveFirstClass[k] is the first class larger than 2^k: the class of any length in (2^k, 2^(k+1)] is at or after it.
    private readonly int[] _octaveFirstClass;

    // Set when the classes are SizeClasses.Build(min, 2^_stepsPerOctaveLog2, n), the default family: the class is then
    // computed from the length's top bits with no search. Other class lists use the octave table and a short scan.
    private readonly bool _isLogLinear;
    private readonly int _stepsPerOctaveLog2;
    private readonly int _smallestClassLog2;

    private readonly int _localCapacity;
    private readonly int _globalCapacity;

    // A refill takes the renter's buffer plus enough to half-fill the local stack; a spill moves half of it.
    private readonly int _refillCount;
    private readonly int _spillCount;

    private readonly bool _checkedMode;
    private readonly bool _singleThreaded;
    private readonly bool _clearOnReturn;

    // One flag for the return path's only optional work (ledger, poison or clear, or a store to return to), so the
    // common case tests once.
    private readonly bool _returnNeedsWork;
    private readonly bool _prepareOnReturn;

    // A replaced storage of free buffers (MessagePoolOptions.Store), or null for the standard tiers. With a store the
    // local stacks stay empty, so the inline fast paths never hit and every rent and return goes through the slow paths.
    private readonly MessagePoolStore? _store;
    private readonly GlobalClass[] _global;
    // Checked mode: the outstanding buffers, densely packed; each knows its slot (PooledBuffer.LedgerSlot), so an
    // entry is added and removed without hashing. Null when not in checked mode.
    private PooledBuffer?[]? _ledger;
    private int _ledgerCount;
    private readonly Lock _ledgerGate = new();
    private readonly Lock _localsGate = new();

    // Indexed by ThreadSlots index: each thread's per-class caches, one row per class plus one for oversize counts.
    // Replaced (copied, larger) under _localsGate when a thread with a higher index arrives.
    private LocalClass[]?[] _locals = [];

    // The caches of the one thread of a single-threaded pool, set when that thread first uses the pool.
    private LocalClass[]? _singleThreadLocals;
    private long _nextId;

    public MessagePool(MessagePoolOptions? options = null)
    {
        Options = options ?? new MessagePoolOptions();
        _classBytes = [.. Options.SizeClassBytes];
        Validate(Options, _classBytes);

        _classCount = _classBytes.Length;
        _smallestClassBytes = _classBytes[0];
        _largestClassBytes = _classBytes[^1];
        _maxRentBytes = Options.MaxRentBytes;
        _pooledLimitBytes = Math.Min(_largestClassBytes, _maxRentBytes);
        _octaveFirstClass = BuildOctaveTable(_classBytes);
        _isLogLinear = TryMatchLogLinear(_classBytes, out _stepsPerOctaveLog2);
        _smallestClassLog2 = BitOperations.Log2((uint)_smallestClassBytes);
        _localCapacity = Options.LocalCacheCapacityPerClass;
        _globalCapacity = Options.GlobalCapacityPerClass;
        _refillCount = 1 + (_localCapacity / 2);
        _spillCount = Math.Max(1, _localCapacity / 2);
        _checkedMode = Options.CheckedMode;
        _singleThreaded = Options.SingleThreaded;
        _clearOnReturn = Options.ClearOnReturn;
        _prepareOnReturn = _checkedMode || _clearOnReturn;
        DisplayName = Options.Name is null ? "(unnamed)" : $"'{Options.Name}'";

        _global = new GlobalClass[_classCount];
        for (var i = 0; i < _global.Length; i++)
        {
            _global[i] = new GlobalClass();
        }

        _ledger = _checkedMode ? new PooledBuffer?[64] : null;
        if (Options.Store is { } makeStore)
        {
            if (Options.PreWarmCountPerClass > 0)
            {
                throw new ArgumentException("Pre-warming fills the pool's standard tiers; it cannot be combined with a replaced store (MessagePoolOptions.Store).", nameof(options));
            }

            _store = makeStore(this) ?? throw new ArgumentException("MessagePoolOptions.Store made no store.", nameof(options));
        }

        _returnNeedsWork = _prepareOnReturn || _store is not null;
        PreWarm();
    }

    public MessagePoolOptions Options { get; }

    public IReadOnlyList<int> SizeClassBytes => _classBytes;

    /// <summary>The pool's name in quotes, or "(unnamed)"; used in error messages.</summary>
    internal string DisplayName { get; }

    /// <summary>Rents a buffer whose <see cref="Payload.Length"/> is <paramref name="lengthBytes"/>.</summary>
    /// <exception cref="ArgumentOutOfRangeException">The length is negative or above <see cref="MessagePoolOptions.MaxRentBytes"/>.</exception>
    public Payload Rent(int lengthBytes, string owner)
    {
        // The fast path is only a local-stack hit in unchecked mode; everything else is in RentSlow. Keeping this
        // method small (no calls but the thread-static read and the write barrier) keeps its register saves few,
        // which measured as a third of the cost of rent + return before the split.
        var classes = LocalClassesOrNull();

        // One unsigned compare also sends negative, oversize and too-large lengths to the slow path. (Testing checked
        // mode before the thread-static read saved checked mode a read but cost the unchecked path 3 ns of 8.)
        if ((uint)lengthBytes <= (uint)_pooledLimitBytes && classes is not null && !_checkedMode)
        {
            ref var local = ref classes[FindClassInRange(lengthBytes)];
            var items = local.Items;
            var slot = local.Count - 1;

            // The unsigned compare covers "empty" (slot -1) and lets the JIT drop the bounds check on items.
            if ((uint)slot < (uint)items.Length)
            {
                // The slot is not cleared: entries at or above Count are dead and overwritten by the next return. A
                // dead entry can keep a buffer that was later dropped reachable, but no more than a full stack would
                // hold, so the memory bound per thread is unchanged and the rent saves a store.
                var buffer = items[slot]!;
                local.Count = slot;
                local.Hits++;

                // Even to odd: the buffer is rented, and every handle from an earlier rent or move is stale.
                var generation = buffer.Generation + 1;
                buffer.Generation = generation;
                buffer.RentGeneration = generation;
                buffer.Length = lengthBytes;
                buffer.Owner = owner;
                return new Payload(buffer, generation);
            }
        }

        return RentSlow(lengthBytes, owner);
    }

    /// <summary>Rents a buffer and copies <paramref name="bytes"/> into it.</summary>
    public Payload Copy(ReadOnlySpan<byte> bytes, string owner)
    {
        var payload = Rent(bytes.Length, owner);
        bytes.CopyTo(payload.WritableSpan);
        return payload;
    }

    /// <summary>
    /// Returns <paramref name="payload"/> to this pool, like <see cref="Payload.Dispose"/>, and also asserts that the
    /// buffer came from this pool. The empty payload is ignored.
    /// </summary>
    /// <exception cref="PoolOwnershipException">The handle is stale, or the buffer belongs to another pool.</exception>
    public void Return(Payload payload)
    {
        var buffer = payload.Buffer;
        if (buffer is null)
        {
            return;
        }

        if (!ReferenceEquals(buffer.Pool, this))
        {
            throw Fault(PoolOwnershipException.Foreign(buffer, DisplayName));
        }

        // The payload's own checks (stale handle, double return) apply unchanged.
        payload.Dispose();
    }

    /// <summary>The size class a rent of <paramref name="lengthBytes"/> uses, or -1 when it is oversize (unpooled).</summary>
    public int FindSizeClass(int lengthBytes)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(lengthBytes);
        return lengthBytes <= _largestClassBytes ? FindClassInRange(lengthBytes) : -1;
    }

    /// <summary>Totals over all classes and threads; allocates nothing, so a checker may call it after every step.</summary>
    public MessagePoolStatistics GetStatistics()
    {
        long returns = 0, hits = 0, misses = 0, dropped = 0, oversizeRents = 0;
        foreach (var classes in SnapshotLocals())
        {
            if (classes is null)
            {
                continue;
            }

            for (var c = 0; c < classes.Length; c++)
            {
                hits += Volatile.Read(ref classes[c].Hits);
                misses += Volatile.Read(ref classes[c].Misses);
                returns += Volatile.Read(ref classes[c].Returns);
                dropped += Volatile.Read(ref classes[c].Dropped);
            }

            oversizeRents += Volatile.Read(ref classes[_classCount].Misses);
        }

        var rents = hits + misses;
        return new MessagePoolStatistics(rents, returns, hits, misses, dropped, oversizeRents, rents - returns);
    }

    /// <summary>
    /// One row per size class, in class order (row i is class i), then one last row for oversize rents
    /// (<see cref="MessagePoolClassStatistics.SizeClass"/> == -1).
    /// </summary>
    public IReadOnlyList<MessagePoolClassStatistics> GetClassStatistics()
    {
        var rows = new MessagePoolClassStatistics[_classCount + 1];
        var sums = new LocalClass[_classCount + 1];
        foreach (var classes in SnapshotLocals())
        {
            if (classes is null)
            {
                continue;
            }

            for (var c = 0; c <= _classCount; c++)
            {
                ref var from = ref classes[c];
                sums[c].Hits += Volatile.Read(ref from.Hits);
                sums[c].Misses += Volatile.Read(ref from.Misses);
                sums[c].Returns += Volatile.Read(ref from.Returns);
                sums[c].Dropped += Volatile.Read(ref from.Dropped);
                sums[c].Count += Volatile.Read(ref from.Count);
            }
        }

        for (var c = 0; c <= _classCount; c++)
        {
            var isOversize = c == _classCount;
            long preWarmed = 0, globalCached = 0;
            if (!isOversize)
            {
                var global = _global[c];
                lock (global.Gate)
                {
                    preWarmed = global.PreWarmed;
                    globalCached = global.Count;
                }

                if (_store is not null)
                {
                    // A replaced store is the pool's only cache; its buffers count as the shared tier's.
                    globalCached += _store.RetainedIn(c);
                }
            }

            rows[c] = new MessagePoolClassStatistics(
                SizeClass: isOversize ? -1 : c,
                CapacityBytes: isOversize ? 0 : _classBytes[c],
                Rents: sums[c].Hits + sums[c].Misses,
                sums[c].Returns,
                sums[c].Hits,
                sums[c].Misses,
                sums[c].Dropped,
                preWarmed,
                LocalCached: sums[c].Count,
                globalCached);
        }

        return rows;
    }

    /// <summary>Free buffers the pool holds now, over every size class, thread cache and tier (or its replaced store).</summary>
    public long RetainedBuffers
    {
        get
        {
            long retained = 0;
            foreach (var row in GetClassStatistics())
            {
                retained += row.LocalCached + row.GlobalCached;
            }

            return retained;
        }
    }

    /// <summary>
    /// The most free buffers one size class may hold for one thread: the thread's local stack and the shared tier, or
    /// the replaced store's bound per class (<see cref="long.MaxValue"/> when the store is unbounded).
    /// </summary>
    public long RetainedMaxPerClassPerThread => _store?.RetainedMaxPerClass ?? (long)_localCapacity + _globalCapacity;

    /// <summary>Buffers rented and not yet returned, in rent order (checked mode only).</summary>
    /// <exception cref="InvalidOperationException">The pool is not in checked mode.</exception>
    public IReadOnlyList<OutstandingBuffer> GetOutstanding()
    {
        if (_ledger is null)
        {
            throw new InvalidOperationException("The outstanding-buffer ledger exists only in checked mode (MessagePoolOptions.CheckedMode).");
        }

        lock (_ledgerGate)
        {
            return [.. _ledger.Take(_ledgerCount).Select(b => b!).OrderBy(b => b.Id).Select(b => new OutstandingBuffer(b.Id, b.Array.Length, b.Length, b.Owner))];
        }
    }

    /// <summary>
    /// Throws naming every outstanding buffer and its owner when the ledger is not empty. Without checked mode there is
    /// no ledger: it then throws when the counters show outstanding buffers, without names.
    /// </summary>
    /// <exception cref="PoolOwnershipException">Buffers are outstanding.</exception>
    public void ThrowIfLeaks()
    {
        if (_ledger is null)
        {
            var outstandingCount = GetStatistics().Outstanding;
            if (outstandingCount != 0)
            {
                throw new PoolOwnershipException($"Pool {DisplayName}: {outstandingCount} pooled buffer(s) leaked; enable MessagePoolOptions.CheckedMode to name them and their owners.");
            }

            return;
        }

        var outstanding = GetOutstanding();
        if (outstanding.Count > 0)
        {
            const int NamesMax = 10;
            var names = string.Join(", ", outstanding.Take(NamesMax).Select(b => $"#{b.BufferId} ({b.CapacityBytes} B, length {b.LengthBytes} B, owner '{b.Owner}')"));
            var more = outstanding.Count > NamesMax ? $", and {outstanding.Count - NamesMax} more" : string.Empty;
            throw new PoolOwnershipException($"Pool {DisplayName}: {outstanding.Count} pooled buffer(s) leaked: {names}{more}.") { BufferId = outstanding[0].BufferId };
        }
    }

    /// <summary>Records a move of <paramref name="buffer"/> to <paramref name="newOwner"/>; returns the new generation.</summary>
    internal long NoteMove(PooledBuffer buffer, string newOwner)
    {
        if (_checkedMode && !_singleThreaded)
        {
            // Under the ledger lock so that GetOutstanding on another thread never sees a half-made move.
            lock (_ledgerGate)
            {
                return ApplyMove(buffer, newOwner);
            }
        }

        return ApplyMove(buffer, newOwner);
    }

    /// <summary>
    /// Takes back a buffer through a handle whose generation the caller has just matched: that proves the buffer is
    /// rented and is this pool's (a buffer only ever knows its own pool), so nothing is checked again.
    /// </summary>
    internal void ReturnOwned(PooledBuffer buffer)
    {
        Debug.Assert(ReferenceEquals(buffer.Pool, this) && buffer.IsRented, "Only a current handle may return a buffer.");

        // As in Rent: only a push onto a local stack with room, in unchecked mode without clearing, is inline.
        var classes = LocalClassesOrNull();
        if (classes is not null && !_returnNeedsWork)
        {
            ref var local = ref classes[buffer.CounterRow];
            var items = local.Items;
            var count = local.Count;

            // The oversize row never has a stack, so oversize returns always take the slow path and are dropped there.
            if ((uint)count < (uint)items.Length)
            {
                // Odd to even: not rented, and every handle to it is now stale.
                buffer.Generation++;
                local.Returns++;
                items[count] = buffer;
                local.Count = count + 1;
                return;
            }
        }

        ReturnSlow(buffer);
    }

    /// <summary>Tells <see cref="MessagePoolOptions.OnOwnershipFault"/> about a fault about to be thrown, and returns it.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    internal PoolOwnershipException Fault(PoolOwnershipException fault)
    {
        Options.OnOwnershipFault?.Invoke(fault);
        return fault;
    }

    /// <summary>This thread's cache in this pool, for tests: the number of buffers it holds in a class.</summary>
    internal int LocalCountForCurrentThread(int sizeClass) => GetLocalClasses()[sizeClass].Count;

    private static void Validate(MessagePoolOptions options, int[] classBytes)
    {
        if (classBytes.Length == 0)
        {
            throw new ArgumentException("At least one size class is required.", nameof(options));
        }

        if (classBytes[0] <= 0)
        {
            throw new ArgumentException($"Size classes must be positive: class 0 is {classBytes[0]} B.", nameof(options));
        }

        for (var i = 1; i < classBytes.Length; i++)
        {
            if (classBytes[i] <= classBytes[i - 1])
            {
                throw new ArgumentException($"Size classes must ascend: class {i} ({classBytes[i]} B) <= class {i - 1} ({classBytes[i - 1]} B).", nameof(options));
            }
        }

        ArgumentOutOfRangeException.ThrowIfNegative(options.LocalCacheCapacityPerClass, nameof(options.LocalCacheCapacityPerClass));
        ArgumentOutOfRangeException.ThrowIfNegative(options.GlobalCapacityPerClass, nameof(options.GlobalCapacityPerClass));
        ArgumentOutOfRangeException.ThrowIfNegative(options.PreWarmCountPerClass, nameof(options.PreWarmCountPerClass));
        ArgumentOutOfRangeException.ThrowIfNegative(options.MaxRentBytes, nameof(options.MaxRentBytes));

        // Each thread allocates classes x capacity stack slots up front; refuse a product that overflows.
        _ = checked(classBytes.Length * options.LocalCacheCapacityPerClass);
    }

    private static int[] BuildOctaveTable(int[] classBytes)
    {
        var table = new int[32];
        var c = 0;
        for (var k = 0; k < table.Length; k++)
        {
            var octaveBytes = 1L << k;
            while (c < classBytes.Length - 1 && classBytes[c] <= octaveBytes)
            {
                c++;
            }

            table[k] = c;
        }

        return table;
    }

    private static bool TryMatchLogLinear(int[] classBytes, out int stepsPerOctaveLog2)
    {
        stepsPerOctaveLog2 = 0;
        if (!int.IsPow2(classBytes[0]))
        {
            return false;
        }

        // The formula needs a whole power of two as the first class and at most that many steps per octave.
        for (var log2 = 0; (1 << log2) <= classBytes[0] && log2 < 16; log2++)
        {
            var expected = SizeClasses.Build(classBytes[0], 1 << log2, classBytes.Length);
            if (expected.AsSpan().SequenceEqual(classBytes))
            {
                stepsPerOctaveLog2 = log2;
                return true;
            }
        }

        return false;
    }

    private static long ApplyMove(PooledBuffer buffer, string newOwner)
    {
        // By two, so the generation stays odd ("rented") while every older handle becomes stale.
        var generation = buffer.Generation + 2;
        buffer.Generation = generation;
        buffer.Owner = newOwner;
        return generation;
    }

    /// <summary>The class of a length in [0, largest class]; at most one step per class in the length's octave.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private int FindClassInRange(int lengthBytes)
    {
        if (lengthBytes <= _smallestClassBytes)
        {
            return 0;
        }

        // lengthBytes - 1 >= 1 here, so Log2 is the k with 2^k <= lengthBytes - 1 < 2^(k+1).
        var lastByte = (uint)(lengthBytes - 1);
        var octave = BitOperations.Log2(lastByte);
        if (_isLogLinear)
        {
            // The bits just below the top bit pick the step within the octave; lengths at a step's upper edge round
            // down to it because lastByte excludes the edge itself. The constructor checked this against the list.
            var step = (int)(lastByte >> (octave - _stepsPerOctaveLog2)) & ((1 << _stepsPerOctaveLog2) - 1);
            return ((octave - _smallestClassLog2) << _stepsPerOctaveLog2) + step + 1;
        }

        var sizeClass = _octaveFirstClass[octave];
        var classBytes = _classBytes;
        while (classBytes[sizeClass] < lengthBytes)
        {
            sizeClass++;
        }

        return sizeClass;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private Payload RentSlow(int lengthBytes, string owner)
    {
        if ((uint)lengthBytes > (uint)_pooledLimitBytes)
        {
            return RentUnpooled(lengthBytes, owner);
        }

        var sizeClass = FindClassInRange(lengthBytes);
        ref var local = ref GetLocalClasses()[sizeClass];
        if (_store is not null)
        {
            return HandOut(RentFromStore(ref local, sizeClass), lengthBytes, owner);
        }

        var items = local.Items;
        var slot = local.Count - 1;
        PooledBuffer buffer;
        if ((uint)slot < (uint)items.Length)
        {
            buffer = items[slot]!;
            local.Count = slot;
            local.Hits++;
        }
        else
        {
            buffer = RentFromGlobal(ref local, sizeClass);
        }

        return HandOut(buffer, lengthBytes, owner);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private void ReturnSlow(PooledBuffer buffer)
    {
        if (_prepareOnReturn)
        {
            PrepareReturn(buffer);
        }

        buffer.Generation++;
        ref var local = ref GetLocalClasses()[buffer.CounterRow];
        local.Returns++;
        if (_store is not null)
        {
            // Oversize arrays are never cached, whatever the storage.
            if (buffer.SizeClass < 0 || !_store.TryAdd(buffer))
            {
                local.Dropped++;
            }

            return;
        }

        var items = local.Items;
        var count = local.Count;
        if ((uint)count < (uint)items.Length)
        {
            items[count] = buffer;
            local.Count = count + 1;
            return;
        }

        ReturnToGlobal(ref local, buffer);
    }

    /// <summary>This thread's caches in this pool, or null when the thread has none yet (the slow path creates them).</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private LocalClass[]? LocalClassesOrNull()
    {
        var index = ThreadSlots.CurrentOrMinusOne;
        var locals = _locals;
        return (uint)index < (uint)locals.Length ? locals[index] : null;
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private LocalClass[] GetLocalClasses() => _singleThreadLocals ?? LocalClassesOrNull() ?? CreateLocalClasses();

    [MethodImpl(MethodImplOptions.NoInlining)]
    private LocalClass[] CreateLocalClasses()
    {
        var index = ThreadSlots.AssignCurrent();
        lock (_localsGate)
        {
            var locals = _locals;
            if (index >= locals.Length)
            {
                Array.Resize(ref locals, Math.Max(index + 1, locals.Length * 2));
            }

            // Caches already at this index belonged to a thread that has exited; this thread adopts them, counters and all.
            var classes = locals[index];
            if (classes is null)
            {
                classes = new LocalClass[_classCount + 1];

                // Stacks are allocated up front (classes x capacity references, about 7 KB with the defaults) so that
                // the first return of each class already takes the fast path. The oversize row never gets one.
                for (var c = 0; c < classes.Length; c++)
                {
                    classes[c].Items = c < _classCount && _localCapacity > 0 ? new PooledBuffer?[_localCapacity] : [];
                }

                locals[index] = classes;
            }

            if (_singleThreaded)
            {
                // One thread uses this pool, so its caches are found without the thread-static lookup from now on.
                _singleThreadLocals = classes;
            }

            Volatile.Write(ref _locals, locals);
            return classes;
        }
    }

    private LocalClass[]?[] SnapshotLocals()
    {
        lock (_localsGate)
        {
            return _locals;
        }
    }

    private PooledBuffer RentFromStore(ref LocalClass local, int sizeClass)
    {
        var buffer = _store!.TryTake(sizeClass);
        if (buffer is not null)
        {
            if (!ReferenceEquals(buffer.Pool, this) || buffer.SizeClass != sizeClass || buffer.IsRented)
            {
                throw new PoolOwnershipException($"Pool {DisplayName}: its store handed out buffer #{buffer.Id} ({buffer.Array.Length} B), which is rented, foreign or of another size class than {sizeClass}.") { BufferId = buffer.Id };
            }

            local.Hits++;
            return buffer;
        }

        local.Misses++;
        return new PooledBuffer(this, new byte[_classBytes[sizeClass]], sizeClass, sizeClass, Interlocked.Increment(ref _nextId));
    }

    private PooledBuffer RentFromGlobal(ref LocalClass local, int sizeClass)
    {
        var global = _global[sizeClass];
        PooledBuffer? buffer = null;
        lock (global.Gate)
        {
            var take = Math.Min(global.Count, _refillCount);
            if (take > 0)
            {
                var moved = take - 1;

                // The renter gets the most recently pushed buffer; the rest half-fill the (empty) local stack.
                var top = global.Count - 1;
                buffer = global.Items[top];
                global.Items[top] = null;
                var from = global.Count - take;
                Array.Copy(global.Items, from, local.Items, 0, moved);
                Array.Clear(global.Items, from, moved);
                global.Count -= take;
                local.Count = moved;
            }
        }

        if (buffer is not null)
        {
            local.Hits++;
            return buffer;
        }

        local.Misses++;
        return new PooledBuffer(this, new byte[_classBytes[sizeClass]], sizeClass, sizeClass, Interlocked.Increment(ref _nextId));
    }

    /// <summary>
    /// The local stack of the buffer's class is full: spill its older half to the global tier, or drop the buffer
    /// when both tiers are full (always, for an oversize buffer).
    /// </summary>
    private void ReturnToGlobal(ref LocalClass local, PooledBuffer buffer)
    {
        var sizeClass = buffer.SizeClass;
        if (sizeClass < 0)
        {
            // Oversize arrays are exact-size and never cached: the return is counted and the array left to the GC.
            local.Dropped++;
            return;
        }

        var global = _global[sizeClass];
        var items = local.Items;
        int moved;
        lock (global.Gate)
        {
            var room = _globalCapacity - global.Count;
            if (_localCapacity == 0)
            {
                moved = Math.Min(room, 1);
                if (moved > 0)
                {
                    global.EnsureCapacity(global.Count + 1, _globalCapacity);
                    global.Items[global.Count++] = buffer;
                }
            }
            else
            {
                // Move the older (bottom) entries, so the local stack keeps the cache-warm buffers it used last.
                moved = Math.Min(room, _spillCount);
                if (moved > 0)
                {
                    global.EnsureCapacity(global.Count + moved, _globalCapacity);
                    Array.Copy(items, 0, global.Items, global.Count, moved);
                    global.Count += moved;
                }
            }
        }

        if (moved == 0)
        {
            // Both tiers are full: the buffer goes to the GC, which bounds what the pool holds.
            local.Dropped++;
            return;
        }

        if (_localCapacity == 0)
        {
            return;
        }

        var remaining = _localCapacity - moved;
        Array.Copy(items, moved, items, 0, remaining);
        Array.Clear(items, remaining, moved);
        items[remaining] = buffer;
        local.Count = remaining + 1;
    }

    private Payload RentUnpooled(int lengthBytes, string owner)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(lengthBytes);
        if (lengthBytes > _maxRentBytes)
        {
            throw new ArgumentOutOfRangeException(nameof(lengthBytes), lengthBytes, $"A rent of {lengthBytes} B exceeds MaxRentBytes ({_maxRentBytes} B) of pool {DisplayName}; split the message or raise MessagePoolOptions.MaxRentBytes.");
        }

        // Above the largest class: an exact array, counted as a miss and never cached.
        GetLocalClasses()[_classCount].Misses++;
        var buffer = new PooledBuffer(this, new byte[lengthBytes], -1, _classCount, Interlocked.Increment(ref _nextId));
        return HandOut(buffer, lengthBytes, owner);
    }

    /// <summary>The rent's bookkeeping on the slow path; Rent's fast path does the same inline.</summary>
    private Payload HandOut(PooledBuffer buffer, int lengthBytes, string owner)
    {
        // Even to odd: the buffer is rented, and every handle from an earlier rent or move is stale.
        var generation = buffer.Generation + 1;
        buffer.Generation = generation;
        buffer.RentGeneration = generation;
        buffer.Length = lengthBytes;
        if (_checkedMode)
        {
            RentToLedger(buffer, owner);
        }
        else
        {
            buffer.Owner = owner;
        }

        return new Payload(buffer, generation);
    }

    private void RentToLedger(PooledBuffer buffer, string owner)
    {
        if (_clearOnReturn)
        {
            // Checked mode poisons on return; zero here so that ClearOnReturn still means "rents start zeroed".
            Array.Clear(buffer.Array);
        }

        if (_singleThreaded)
        {
            AddToLedger(buffer, owner);
            return;
        }

        lock (_ledgerGate)
        {
            AddToLedger(buffer, owner);
        }
    }

    /// <summary>Lists a rented buffer in the ledger; under the ledger's lock unless the pool is single-threaded.</summary>
    private void AddToLedger(PooledBuffer buffer, string owner)
    {
        buffer.PreviousOwner = buffer.Owner;
        buffer.Owner = owner;
        if (buffer.LedgerSlot >= 0)
        {
            throw Fault(new PoolOwnershipException($"Pool {DisplayName} handed out buffer #{buffer.Id} ({buffer.Array.Length} B) to '{buffer.Owner}' while its ledger still lists it as outstanding.") { BufferId = buffer.Id });
        }

        if (_ledgerCount == _ledger!.Length)
        {
            Array.Resize(ref _ledger, _ledger.Length * 2);
        }

        _ledger[_ledgerCount] = buffer;
        buffer.LedgerSlot = _ledgerCount++;
    }

    /// <summary>The optional part of a return: the ledger and poison in checked mode, or clearing.</summary>
    private void PrepareReturn(PooledBuffer buffer)
    {
        if (!_checkedMode)
        {
            Array.Clear(buffer.Array);
            return;
        }

        if (_singleThreaded)
        {
            RemoveFromLedger(buffer);
        }
        else
        {
            lock (_ledgerGate)
            {
                RemoveFromLedger(buffer);
            }
        }

        // Poison so that a reader holding the raw array (a Memory taken before the return) sees 0xDD, not stale data.
        buffer.Array.AsSpan().Fill(MessagePoolOptions.PoisonByte);
    }

    /// <summary>Takes a returned buffer off the ledger; under the ledger's lock unless the pool is single-threaded.</summary>
    private void RemoveFromLedger(PooledBuffer buffer)
    {
        var slot = buffer.LedgerSlot;
        if (slot < 0 || !ReferenceEquals(_ledger![slot], buffer))
        {
            throw Fault(PoolOwnershipException.NotInLedger(buffer, DisplayName));
        }

        // The last entry fills the hole, so the ledger stays dense.
        var last = _ledger[--_ledgerCount]!;
        _ledger[slot] = last;
        last.LedgerSlot = slot;
        _ledger[_ledgerCount] = null;
        buffer.LedgerSlot = -1;
    }

    private void PreWarm()
    {
        if (_store is not null)
        {
            return;
        }

        var count = Math.Min(Options.PreWarmCountPerClass, _globalCapacity);
        for (var c = 0; c < _classCount && _classBytes[c] <= Options.PreWarmMaxBytes; c++)
        {
            var global = _global[c];
            global.EnsureCapacity(count, _globalCapacity);
            for (var i = 0; i < count; i++)
            {
                global.Items[global.Count++] = new PooledBuffer(this, new byte[_classBytes[c]], c, c, ++_nextId);
            }

            global.PreWarmed = count;
        }
    }
}
