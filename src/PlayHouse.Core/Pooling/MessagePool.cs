using System.Diagnostics;
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
public sealed partial class MessagePool
{
    private readonly int[] _classBytes;
    private readonly int _classCount;
    private readonly int _largestClassBytes;

    // Rents up to this size take the pooled fast path: the smaller of the largest class and MaxRentBytes.
    private readonly int _pooledLimitBytes;
    private readonly int _maxRentBytes;

    private readonly SizeClassIndex _classIndex;

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
    // Checked mode: the outstanding buffers and their owners. Null when not in checked mode.
    private readonly OutstandingLedger? _ledger;
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
        Options.Validate(_classBytes);

        _classCount = _classBytes.Length;
        _largestClassBytes = _classBytes[^1];
        _maxRentBytes = Options.MaxRentBytes;
        _pooledLimitBytes = Math.Min(_largestClassBytes, _maxRentBytes);
        _classIndex = new SizeClassIndex(_classBytes);
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

        _ledger = _checkedMode ? new OutstandingLedger(this, _singleThreaded) : null;
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
            ref var local = ref classes[_classIndex.Find(lengthBytes)];
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
        return lengthBytes <= _largestClassBytes ? _classIndex.Find(lengthBytes) : -1;
    }

    /// <summary>Buffers rented and not yet returned, in rent order (checked mode only).</summary>
    /// <exception cref="InvalidOperationException">The pool is not in checked mode.</exception>
    public IReadOnlyList<OutstandingBuffer> GetOutstanding()
    {
        if (_ledger is null)
        {
            throw new InvalidOperationException("The outstanding-buffer ledger exists only in checked mode (MessagePoolOptions.CheckedMode).");
        }

        return _ledger.GetOutstanding();
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
    internal long NoteMove(PooledBuffer buffer, string newOwner) => _ledger is null ? buffer.MoveTo(newOwner) : _ledger.NoteMove(buffer, newOwner);

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

    [MethodImpl(MethodImplOptions.NoInlining)]
    private Payload RentSlow(int lengthBytes, string owner)
    {
        if ((uint)lengthBytes > (uint)_pooledLimitBytes)
        {
            return RentUnpooled(lengthBytes, owner);
        }

        var sizeClass = _classIndex.Find(lengthBytes);
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
        var buffer = _global[sizeClass].TakeRefill(local.Items, _refillCount, out var moved);
        if (buffer is not null)
        {
            local.Count = moved;
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

        var items = local.Items;
        var moved = _localCapacity == 0
            ? _global[sizeClass].TakeOne(buffer, _globalCapacity)
            : _global[sizeClass].TakeSpill(items, _spillCount, _globalCapacity);

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
        if (_ledger is not null)
        {
            if (_clearOnReturn)
            {
                // Checked mode poisons on return; zero here so that ClearOnReturn still means "rents start zeroed".
                Array.Clear(buffer.Array);
            }

            _ledger.Add(buffer, owner);
        }
        else
        {
            buffer.Owner = owner;
        }

        return new Payload(buffer, generation);
    }

    /// <summary>The optional part of a return: the ledger and poison in checked mode, or clearing.</summary>
    private void PrepareReturn(PooledBuffer buffer)
    {
        if (!_checkedMode)
        {
            Array.Clear(buffer.Array);
            return;
        }

        _ledger!.Remove(buffer);

        // Poison so that a reader holding the raw array (a Memory taken before the return) sees 0xDD, not stale data.
        buffer.Array.AsSpan().Fill(MessagePoolOptions.PoisonByte);
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
