namespace PlayHouse.Simulation.Clients;

/// <summary>
/// A client's pending requests' slots by their 16-bit sequence: an open-addressed table (linear probing, at most half
/// full) keyed by the sequence itself, 0 marking a free entry since 0 is never a request's sequence. A client hands
/// sequences out in order, so their low bits spread them over the table and a lookup is nearly always one probe: no
/// hashing and no bucket chain, which a dictionary paid on every request's add, lookup and removal.
/// </summary>
/// <remarks>Not thread-safe; owned by one <see cref="SimClient"/> on the simulation thread.</remarks>
internal sealed class SeqSlotTable
{
    private readonly ushort[] _keys;
    private readonly int[] _slots;
    private readonly int _mask;
    private readonly int _capacity;

    /// <summary>A table for at most <paramref name="capacity"/> sequences pending at once.</summary>
    public SeqSlotTable(int capacity)
    {
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(capacity);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(capacity, ushort.MaxValue);
        var length = (int)System.Numerics.BitOperations.RoundUpToPowerOf2((uint)capacity * 2);
        _keys = new ushort[length];
        _slots = new int[length];
        _mask = length - 1;
        _capacity = capacity;
    }

    public int Count { get; private set; }

    public bool Contains(ushort seq) => IndexOf(seq) >= 0;

    /// <summary>Adds a sequence that is not pending; throws when it is, when it is 0, or when the table is full.</summary>
    public void Add(ushort seq, int slot)
    {
        if (seq == 0)
        {
            throw new ArgumentOutOfRangeException(nameof(seq), "Sequence 0 is never pending.");
        }

        if (Count == _capacity)
        {
            throw new InvalidOperationException($"All {_capacity} entries are taken.");
        }

        var i = seq & _mask;
        while (_keys[i] != 0)
        {
            if (_keys[i] == seq)
            {
                throw new ArgumentException($"Sequence {seq} is already pending.", nameof(seq));
            }

            i = (i + 1) & _mask;
        }

        _keys[i] = seq;
        _slots[i] = slot;
        Count++;
    }

    /// <summary>Removes a pending sequence and returns its slot; false when it is not pending.</summary>
    public bool Remove(ushort seq, out int slot)
    {
        var index = IndexOf(seq);
        if (index < 0)
        {
            slot = -1;
            return false;
        }

        slot = _slots[index];

        // Shift later entries of the probe run back into the hole, so every pending sequence stays reachable from its
        // home entry without tombstones. An entry may fill the hole only if the hole lies on its probe path.
        var keys = _keys;
        var hole = index;
        var next = index;
        while (true)
        {
            next = (next + 1) & _mask;
            var key = keys[next];
            if (key == 0)
            {
                break;
            }

            var home = key & _mask;
            if (((next - home) & _mask) >= ((next - hole) & _mask))
            {
                keys[hole] = key;
                _slots[hole] = _slots[next];
                hole = next;
            }
        }

        keys[hole] = 0;
        Count--;
        return true;
    }

    private int IndexOf(ushort seq)
    {
        var keys = _keys;
        var i = seq & _mask;
        while (true)
        {
            var key = keys[i];
            if (key == seq && key != 0)
            {
                return i;
            }

            if (key == 0)
            {
                return -1;
            }

            i = (i + 1) & _mask;
        }
    }
}
