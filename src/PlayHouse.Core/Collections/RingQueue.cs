using System.Runtime.CompilerServices;

namespace PlayHouse.Core.Collections;

/// <summary>
/// A growable FIFO ring of entries stored inline (a stage's mailbox, the simulation's lane of events due now, a
/// stream direction's segments). Unlike <see cref="Queue{T}"/> it hands out the head by reference and dequeues
/// straight into the caller's variable: Queue's Dequeue returns the entry through a temporary that is copied again,
/// and with large entries the second copy read the first one's stores back at once, stalling on every message.
/// </summary>
/// <remarks>
/// A mutable struct so that an owner keeps the ring's fields inside itself (one object fewer to reach per message);
/// keep it in a non-readonly field and never copy it. Vacated slots of entries holding references are cleared, so
/// the ring keeps nothing reachable that it no longer holds. Not thread-safe; the owner guards it.
/// </remarks>
public struct RingQueue<T>
{
    private T[]? _items;
    private int _head;
    private int _count;

    /// <param name="initialCapacity">Entries held before the first growth; rounded up to a power of two.</param>
    public RingQueue(int initialCapacity)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(initialCapacity, 1);
        _items = new T[System.Numerics.BitOperations.RoundUpToPowerOf2((uint)initialCapacity)];
    }

    public readonly int Count => _count;

    /// <summary>
    /// The array the entries live in (null before the first) and the index of the oldest, for a caller that hints the
    /// head into the cache before it reads it; the array is the ring's own: read nothing from it and never write to it.
    /// </summary>
    public readonly (T[]? Items, int Head) Storage => (_items, _head);

    public void Enqueue(in T item)
    {
        if (_items is null || _count == _items.Length)
        {
            Grow();
        }

        _items![(_head + _count) & (_items.Length - 1)] = item;
        _count++;
    }

    /// <summary>The oldest entry, by reference; the ring must not be empty.</summary>
    public readonly ref readonly T PeekHead()
    {
        if (_count == 0)
        {
            ThrowEmpty();
        }

        return ref _items![_head];
    }

    /// <summary>The <paramref name="index"/>-th entry, 0 being the oldest.</summary>
    public readonly ref readonly T At(int index)
    {
        if ((uint)index >= (uint)_count)
        {
            ThrowOutOfRange(index, _count);
        }

        return ref _items![(_head + index) & (_items.Length - 1)];
    }

    /// <summary>Moves the oldest entry into <paramref name="item"/>; the ring must not be empty.</summary>
    public void Dequeue(out T item)
    {
        item = PeekHead();
        DropHead();
    }

    /// <summary>Removes the oldest entry, which the caller has read through <see cref="PeekHead"/>; the ring must not be empty.</summary>
    public void DropHead()
    {
        if (_count == 0)
        {
            ThrowEmpty();
        }

        if (RuntimeHelpers.IsReferenceOrContainsReferences<T>())
        {
            _items![_head] = default!;
        }

        _head = (_head + 1) & (_items!.Length - 1);
        _count--;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void ThrowEmpty() => throw new InvalidOperationException("The ring is empty.");

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void ThrowOutOfRange(int index, int count) =>
        throw new ArgumentOutOfRangeException(nameof(index), index, $"Only {count} entr{(count == 1 ? "y is" : "ies are")} queued.");

    /// <summary>Lets go of the storage when nothing is queued, so an idle owner holds no array; the next entry allocates one.</summary>
    public void ReleaseIfEmpty()
    {
        if (_count == 0)
        {
            _items = null;
            _head = 0;
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private void Grow()
    {
        // Doubling; the entries are re-laid from the head so the ring starts at 0 again and the length stays a power of two.
        var old = _items ?? [];
        var grown = new T[Math.Max(4, old.Length * 2)];
        for (var i = 0; i < _count; i++)
        {
            grown[i] = old[(_head + i) & (old.Length - 1)];
        }

        _items = grown;
        _head = 0;
    }
}
