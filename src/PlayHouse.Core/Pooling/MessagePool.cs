namespace PlayHouse.Core.Pooling;

/// <summary>
/// A size-class pool of message buffers. Each rent hands out a <see cref="Payload"/> with exactly one owner;
/// in checked mode a ledger records every outstanding buffer and its owner so leaks can be named.
/// </summary>
/// <remarks>Thread-safe.</remarks>
public sealed class MessagePool
{
    private readonly int[] _classBytes;
    private readonly Stack<PooledBuffer>[] _global;
    private readonly Dictionary<long, PooledBuffer>? _ledger;
    private readonly Lock _gate = new();
    private long _nextId;
    private long _rents;
    private long _returns;
    private long _hits;
    private long _misses;
    private long _dropped;
    private long _oversizeRents;
    private long _outstanding;

    public MessagePool(MessagePoolOptions? options = null)
    {
        Options = options ?? new MessagePoolOptions();
        _classBytes = [.. Options.SizeClassBytes];
        for (var i = 1; i < _classBytes.Length; i++)
        {
            if (_classBytes[i] <= _classBytes[i - 1])
            {
                throw new ArgumentException($"Size classes must ascend: class {i} ({_classBytes[i]} B) <= class {i - 1} ({_classBytes[i - 1]} B).", nameof(options));
            }
        }

        _global = new Stack<PooledBuffer>[_classBytes.Length];
        for (var i = 0; i < _global.Length; i++)
        {
            _global[i] = new Stack<PooledBuffer>();
        }

        _ledger = Options.CheckedMode ? [] : null;
        PreWarm();
    }

    public MessagePoolOptions Options { get; }

    public IReadOnlyList<int> SizeClassBytes => _classBytes;

    /// <summary>Rents a buffer whose <see cref="Payload.Length"/> is <paramref name="lengthBytes"/>.</summary>
    public Payload Rent(int lengthBytes, string owner)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(lengthBytes);
        if (lengthBytes > Options.MaxRentBytes)
        {
            throw new ArgumentOutOfRangeException(nameof(lengthBytes), $"Rent of {lengthBytes} B exceeds MaxRentBytes ({Options.MaxRentBytes} B).");
        }

        var sizeClass = FindClass(lengthBytes);
        PooledBuffer buffer;
        lock (_gate)
        {
            _rents++;
            if (sizeClass < 0)
            {
                _oversizeRents++;
                _misses++;
                buffer = new PooledBuffer(this, new byte[lengthBytes], -1, ++_nextId);
            }
            else if (_global[sizeClass].TryPop(out var cached))
            {
                _hits++;
                buffer = cached;
            }
            else
            {
                _misses++;
                buffer = new PooledBuffer(this, new byte[_classBytes[sizeClass]], sizeClass, ++_nextId);
            }

            buffer.IsRented = true;
            buffer.Generation++;
            buffer.Length = lengthBytes;
            buffer.Owner = owner;
            _outstanding++;
            _ledger?.Add(buffer.Id, buffer);
        }

        return new Payload(buffer, buffer.Generation);
    }

    /// <summary>Rents a buffer and copies <paramref name="bytes"/> into it.</summary>
    public Payload Copy(ReadOnlySpan<byte> bytes, string owner)
    {
        var payload = Rent(bytes.Length, owner);
        bytes.CopyTo(payload.WritableSpan);
        return payload;
    }

    public MessagePoolStatistics GetStatistics()
    {
        lock (_gate)
        {
            return new MessagePoolStatistics(_rents, _returns, _hits, _misses, _dropped, _oversizeRents, _outstanding);
        }
    }

    /// <summary>Buffers rented and not yet returned, in rent order (checked mode only).</summary>
    public IReadOnlyList<OutstandingBuffer> GetOutstanding()
    {
        if (_ledger is null)
        {
            throw new InvalidOperationException("The outstanding-buffer ledger exists only in checked mode (MessagePoolOptions.CheckedMode).");
        }

        lock (_gate)
        {
            return [.. _ledger.Values.OrderBy(b => b.Id).Select(b => new OutstandingBuffer(b.Id, b.Array.Length, b.Length, b.Owner))];
        }
    }

    /// <summary>Throws naming every outstanding buffer and its owner when the ledger is not empty.</summary>
    public void ThrowIfLeaks()
    {
        var outstanding = GetOutstanding();
        if (outstanding.Count > 0)
        {
            var names = string.Join(", ", outstanding.Take(10).Select(b => $"#{b.BufferId} ({b.LengthBytes} B, owner '{b.Owner}')"));
            throw new PoolOwnershipException($"{outstanding.Count} pooled buffer(s) leaked: {names}{(outstanding.Count > 10 ? ", ..." : string.Empty)}.");
        }
    }

    internal void NoteMove(PooledBuffer buffer, string newOwner)
    {
        lock (_gate)
        {
            buffer.Generation++;
            buffer.Owner = newOwner;
        }
    }

    internal void Return(PooledBuffer buffer)
    {
        if (!ReferenceEquals(buffer.Pool, this))
        {
            throw new PoolOwnershipException($"Buffer #{buffer.Id} (owner '{buffer.Owner}') belongs to another pool.");
        }

        lock (_gate)
        {
            if (!buffer.IsRented)
            {
                throw new PoolOwnershipException($"Buffer #{buffer.Id} was returned twice (last owner '{buffer.LastOwner}').");
            }

            buffer.IsRented = false;
            buffer.Generation++;
            buffer.LastOwner = buffer.Owner;
            buffer.Owner = null;
            _returns++;
            _outstanding--;
            _ledger?.Remove(buffer.Id);
            if (buffer.SizeClass >= 0 && _global[buffer.SizeClass].Count < Options.GlobalCapacityPerClass)
            {
                _global[buffer.SizeClass].Push(buffer);
            }
            else
            {
                _dropped++;
            }
        }
    }

    private int FindClass(int lengthBytes)
    {
        var index = Array.BinarySearch(_classBytes, lengthBytes);
        if (index < 0)
        {
            index = ~index;
        }

        return index < _classBytes.Length ? index : -1;
    }

    private void PreWarm()
    {
        var count = Math.Min(Options.PreWarmCountPerClass, Options.GlobalCapacityPerClass);
        for (var c = 0; c < _classBytes.Length && _classBytes[c] <= Options.PreWarmMaxBytes; c++)
        {
            for (var i = 0; i < count; i++)
            {
                _global[c].Push(new PooledBuffer(this, new byte[_classBytes[c]], c, ++_nextId));
            }
        }
    }
}
