using System.Buffers.Binary;
using System.Diagnostics.CodeAnalysis;
using System.Text;
using System.Text.Unicode;
using PlayHouse.Core.Collections;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;

namespace PlayHouse.Core.Codec;

/// <summary>
/// Maps UTF-8 bytes (client msg ids, mesh server ids) to shared string instances, so a repeated id costs a lookup
/// instead of an allocation. Entries are keyed by the bytes themselves: a lookup compares the full byte sequence
/// of every candidate in its bucket, so two ids whose hashes collide can never be confused (PlayHouse's sender-id
/// cache, bug B4, trusted a 32-bit FNV-1a hash alone and returned "costarring" for "liquid").
/// The cache holds at most <see cref="Capacity"/> entries; when full it evicts with the CLOCK policy (an entry hit
/// since the hand last passed gets a second chance), so a flood of one-off ids cannot push out the hot ones.
/// </summary>
/// <remarks>
/// Thread-safe: one cache may serve every connection of a server. Lookups take a short lock, except a hit on the
/// caller's hinted entry, which reads the entry's immutable key and value without it (a connection's decoder sends
/// the same id again and again). Eviction is decided by slot order and hit bits, never by hash order, so results are
/// deterministic even though bucket hashes are seeded per process.
/// </remarks>
public sealed class Utf8StringCache
{
    public const int DefaultCapacity = 1024;

    public const int DefaultMaxKeyBytes = 1024;

    // Drawn from HashCode's per-process random seed, so short-key hashes differ from process to process as HashCode's do.
    private static readonly ulong ShortKeySeed = ((ulong)(uint)HashCode.Combine(0x5EED) << 32) | (uint)HashCode.Combine(0xC0DE);

    private readonly Entry[] _entries;
    private readonly int[] _buckets;
    private readonly int _bucketMask;
    private readonly KeyHasher? _hasher;
    private readonly Lock? _gate;
    private int _count;
    private int _clockHand;
    // Hits are counted per lookup on every connection's thread: single-threaded a plain count, otherwise per thread, so
    // that no line of the cache is written by every thread at every frame (docs/performance.md).
    private long _hits;
    private readonly StripedCounter? _threadHits;
    private long _misses;
    private long _evictions;
    private long _bypasses;
    private long _invalidInputs;

    /// <param name="capacity">The most entries held at once.</param>
    /// <param name="maxKeyBytes">Longer inputs are decoded but not cached (counted as bypasses).</param>
    /// <param name="singleThreaded">
    /// Every caller runs on one thread (a simulated cluster), so lookups take no lock; a shared cache on real
    /// threads must leave it false.
    /// </param>
    public Utf8StringCache(int capacity = DefaultCapacity, int maxKeyBytes = DefaultMaxKeyBytes, bool singleThreaded = false)
        : this(capacity, maxKeyBytes, hasher: null, singleThreaded)
    {
    }

    /// <summary>Lets tests force collisions (for example every key in one bucket) to exercise the equality check.</summary>
    internal Utf8StringCache(int capacity, int maxKeyBytes, KeyHasher? hasher, bool singleThreaded = false)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(capacity, 1);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(capacity, 1 << 24);
        ArgumentOutOfRangeException.ThrowIfLessThan(maxKeyBytes, 1);
        Capacity = capacity;
        MaxKeyBytes = maxKeyBytes;
        _hasher = hasher;
        _gate = singleThreaded ? null : new Lock();
        _threadHits = singleThreaded ? null : new StripedCounter(ThreadSlots.StripesPerMachine);
        _entries = new Entry[capacity];

        // Twice as many buckets as entries keeps chains short at full capacity; a power of two makes the index a mask.
        var bucketCount = (int)Math.Max(2, System.Numerics.BitOperations.RoundUpToPowerOf2((uint)capacity * 2));
        _buckets = new int[bucketCount];
        _bucketMask = bucketCount - 1;
    }

    internal delegate uint KeyHasher(ReadOnlySpan<byte> key);

    public int Capacity { get; }

    public int MaxKeyBytes { get; }

    /// <summary>
    /// Returns the string for <paramref name="utf8"/>: the cached instance when these exact bytes were seen before,
    /// otherwise a new string that is cached (evicting one entry when full). Returns false, caching nothing, when
    /// the bytes are not valid UTF-8.
    /// </summary>
    public bool TryGetString(ReadOnlySpan<byte> utf8, [NotNullWhen(true)] out string? value)
    {
        var slot = -1;
        return TryGetString(utf8, ref slot, out value);
    }

    /// <summary>
    /// <see cref="TryGetString(ReadOnlySpan{byte}, out string?)"/> for a caller that sees the same id again and again
    /// (a connection's decoder): <paramref name="slot"/> is the entry the caller's last lookup found or made (-1 for
    /// none), tried first without hashing, and is updated to the entry this lookup found or made.
    /// </summary>
    /// <remarks>
    /// Keys are unique in the cache and every slot below the count holds a live entry, so when the hinted entry's
    /// bytes match it is the very entry the hashed lookup would find: the hit is counted and marked the same way.
    /// </remarks>
    internal bool TryGetString(ReadOnlySpan<byte> utf8, ref int slot, [NotNullWhen(true)] out string? value)
    {
        var hinted = slot;
        if ((uint)hinted < (uint)_entries.Length && !utf8.IsEmpty && utf8.Length <= MaxKeyBytes)
        {
            // No lock: the slot's node is replaced whole by an eviction, never changed, so the key and value read here
            // belong together; a node evicted meanwhile still maps its bytes to its string, which is the same answer.
            var candidate = Volatile.Read(ref _entries[hinted].Node);
            if (candidate is not null && utf8.SequenceEqual(candidate.Key))
            {
                candidate.MarkReferenced();
                CountHit();
                value = candidate.Value;
                return true;
            }
        }

        slot = -1;
        if (utf8.IsEmpty)
        {
            value = string.Empty;
            CountHit();
            return true;
        }

        if (utf8.Length > MaxKeyBytes)
        {
            return Bypass(utf8, out value);
        }

        var hash = _hasher is null ? DefaultHash(utf8) : _hasher(utf8);
        using (NodeLock.Enter(_gate))
        {
            var bucket = (int)(hash & (uint)_bucketMask);
            for (var i = _buckets[bucket] - 1; i >= 0; i = _entries[i].Next - 1)
            {
                ref var entry = ref _entries[i];
                if (entry.Hash == hash && utf8.SequenceEqual(entry.Node!.Key))
                {
                    entry.Node.MarkReferenced();
                    CountHit();
                    value = entry.Node.Value;
                    slot = i;
                    return true;
                }
            }

            _misses++;
            if (!Utf8.IsValid(utf8))
            {
                _invalidInputs++;
                value = null;
                return false;
            }

            value = Encoding.UTF8.GetString(utf8);
            slot = _count < Capacity ? _count++ : Evict();

            // New entries start without the hit bit: an id seen once is the first to go, a repeated one earns a second chance.
            _entries[slot].Hash = hash;
            _entries[slot].Next = _buckets[bucket];
            Volatile.Write(ref _entries[slot].Node, new Node(utf8.ToArray(), value));
            _buckets[bucket] = slot + 1;
            return true;
        }
    }

    /// <summary>Like <see cref="TryGetString(ReadOnlySpan{byte}, out string?)"/>, throwing <see cref="ArgumentException"/> for invalid UTF-8.</summary>
    public string GetString(ReadOnlySpan<byte> utf8)
    {
        if (!TryGetString(utf8, out var value))
        {
            throw new ArgumentException($"The bytes {Convert.ToHexString(utf8)} are not valid UTF-8.", nameof(utf8));
        }

        return value;
    }

    public Utf8StringCacheStatistics GetStatistics()
    {
        using (NodeLock.Enter(_gate))
        {
            return new Utf8StringCacheStatistics(_threadHits?.Value ?? _hits, _misses, _evictions, _bypasses, _invalidInputs, _count, Capacity);
        }
    }

    private static uint DefaultHash(ReadOnlySpan<byte> key)
    {
        // Seeded per process (from HashCode's own random seed), which keeps crafted colliding ids from degrading
        // every lookup into a chain walk; correctness never depends on it because candidates are compared byte for
        // byte. Msg ids are short, so keys up to 16 bytes take two overlapping 8-byte reads and one 128-bit
        // multiply instead of HashCode's per-4-byte rounds, which cost a lookup per frame more than the rest of it.
        if (key.Length > 16)
        {
            var hasher = default(HashCode);
            hasher.AddBytes(key);
            return (uint)hasher.ToHashCode();
        }

        ulong low;
        ulong high;
        if (key.Length >= 8)
        {
            low = BinaryPrimitives.ReadUInt64LittleEndian(key);
            high = BinaryPrimitives.ReadUInt64LittleEndian(key[^8..]);
        }
        else if (key.Length >= 4)
        {
            low = BinaryPrimitives.ReadUInt32LittleEndian(key);
            high = BinaryPrimitives.ReadUInt32LittleEndian(key[^4..]);
        }
        else if (key.IsEmpty)
        {
            return 0;
        }
        else
        {
            // 1 to 3 bytes: first, middle and last byte (some repeat), as wyhash reads short keys.
            low = ((ulong)key[0] << 16) | ((ulong)key[key.Length >> 1] << 8) | key[^1];
            high = 0;
        }

        var product = Math.BigMul(low ^ ShortKeySeed ^ 0xA0761D6478BD642FUL, high ^ (ulong)key.Length ^ 0xE7037ED1A0B428DBUL, out var productLow);
        return (uint)((product ^ productLow) >> 16);
    }

    private bool Bypass(ReadOnlySpan<byte> utf8, [NotNullWhen(true)] out string? value)
    {
        var valid = Utf8.IsValid(utf8);
        using (NodeLock.Enter(_gate))
        {
            _bypasses++;
            if (!valid)
            {
                _invalidInputs++;
            }
        }

        value = valid ? Encoding.UTF8.GetString(utf8) : null;
        return valid;
    }

    private int Evict()
    {
        // CLOCK: clear hit bits as the hand passes and take the first entry without one. The loop ends within two
        // turns because the first turn clears every bit.
        while (_entries[_clockHand].Node!.Referenced)
        {
            _entries[_clockHand].Node!.Referenced = false;
            _clockHand = (_clockHand + 1) % Capacity;
        }

        var victim = _clockHand;
        _clockHand = (_clockHand + 1) % Capacity;
        Unlink(victim);
        _evictions++;
        return victim;
    }

    private void Unlink(int slot)
    {
        var bucket = (int)(_entries[slot].Hash & (uint)_bucketMask);
        ref var link = ref _buckets[bucket];
        while (link - 1 != slot)
        {
            if (link == 0)
            {
                throw new InvalidOperationException($"Cache slot {slot} is missing from its bucket chain {bucket}.");
            }

            link = ref _entries[link - 1].Next;
        }

        link = _entries[slot].Next;
        _entries[slot] = default;
    }

    /// <summary>Counts a hit: lookups on the hinted entry count it without the lock, so it is atomic on real threads.</summary>
    private void CountHit()
    {
        if (_threadHits is null)
        {
            _hits++;
        }
        else
        {
            _threadHits.Increment();
        }
    }

    private struct Entry
    {
        /// <summary>The key and its string, replaced whole (never changed) when the slot is reused; null in a free slot.</summary>
        public Node? Node;
        public uint Hash;

        /// <summary>The next entry in the bucket chain as index + 1; 0 ends the chain.</summary>
        public int Next;
    }

    private sealed class Node(byte[] key, string value)
    {
        public byte[] Key { get; } = key;

        public string Value { get; } = value;

        /// <summary>The CLOCK hit bit. Set without the lock by hinted hits: a lost or late set only changes which entry is evicted.</summary>
        public bool Referenced { get; set; }

        /// <summary>
        /// Sets the hit bit unless it is set: a hot id's node is read by every connection at every frame, and storing the
        /// same value again would still take its cache line from the other cores.
        /// </summary>
        public void MarkReferenced()
        {
            if (!Referenced)
            {
                Referenced = true;
            }
        }
    }
}

/// <summary>
/// Counters of a <see cref="Utf8StringCache"/>. Hits + Misses + Bypasses == lookups. Evictions counts entries
/// dropped to make room; Bypasses counts inputs longer than MaxKeyBytes, decoded without caching.
/// </summary>
public readonly record struct Utf8StringCacheStatistics(
    long Hits,
    long Misses,
    long Evictions,
    long Bypasses,
    long InvalidInputs,
    int Count,
    int Capacity);
