using System.Numerics;
using System.Runtime.CompilerServices;

namespace PlayHouse.Core.Pooling;

/// <summary>
/// Finds the size class of a length: the first class at least that long. For the default family of classes
/// (<see cref="SizeClasses.Build"/>: a power of two first, a power-of-two number of steps per octave) the class is
/// computed from the length's top bits with no search; any other ascending list uses a table of each octave's first
/// class and at most one step per class in the octave.
/// </summary>
/// <remarks>
/// Invariant: for every length in [0, largest class], <see cref="Find"/> returns the smallest class whose size is at
/// least the length (the constructor checks the formula against the list before using it).
/// Threading: immutable after construction; safe from any thread. A struct, kept inline in its pool, so a rent reads
/// the index's fields from the pool's own cache lines.
/// </remarks>
internal readonly struct SizeClassIndex
{
    private readonly int[] _classBytes;
    private readonly int _smallestClassBytes;

    // _octaveFirstClass[k] is the first class larger than 2^k: the class of any length in (2^k, 2^(k+1)] is at or after it.
    private readonly int[] _octaveFirstClass;

    // Set when the classes are SizeClasses.Build(min, 2^_stepsPerOctaveLog2, n), the default family.
    private readonly bool _isLogLinear;
    private readonly int _stepsPerOctaveLog2;
    private readonly int _smallestClassLog2;

    /// <summary>Indexes <paramref name="classBytes"/>: positive and ascending (validated by the pool).</summary>
    public SizeClassIndex(int[] classBytes)
    {
        _classBytes = classBytes;
        _smallestClassBytes = classBytes[0];
        _octaveFirstClass = BuildOctaveTable(classBytes);
        _isLogLinear = TryMatchLogLinear(classBytes, out _stepsPerOctaveLog2);
        _smallestClassLog2 = BitOperations.Log2((uint)_smallestClassBytes);
    }

    /// <summary>The class of a length in [0, largest class]; at most one step per class in the length's octave.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public int Find(int lengthBytes)
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
}
