using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Runtime.Intrinsics.X86;

namespace PlayHouse.Simulation;

/// <summary>
/// Software prefetch hints for the objects coming events will touch. With 10,000 clients every event lands on a cold
/// client's objects, and each first touch stalled the step on a cache miss; hints issued some dozens of events ahead,
/// many together instead of one after another, hide most of that wait (the event wheel issues them, see
/// <see cref="IPrefetchParts"/>).
/// </summary>
/// <remarks>
/// A hint never faults and never changes a value, so it cannot change what a run does: an object the collector moves
/// after its address was read is merely hinted at its old place. On processors without the instruction it does nothing.
/// </remarks>
internal static class Prefetch
{
    /// <summary>The deepest level <see cref="IPrefetchParts.PrefetchParts"/> is asked for.</summary>
    public const int DepthMax = 4;

    /// <summary>Hints the first <paramref name="lines"/> cache lines of <paramref name="value"/> (null: nothing).</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static unsafe void Object(object? value, int lines = 1)
    {
        if (!Sse.IsSupported || value is null)
        {
            return;
        }

        var address = (byte*)Unsafe.As<object, nint>(ref value);
        for (var i = 0; i < lines; i++)
        {
            Sse.Prefetch0(address + (i * 64));
        }
    }

    /// <summary>
    /// The cache lines of an array of <paramref name="length"/> elements of <typeparamref name="T"/>, its header included,
    /// at most <paramref name="linesMax"/>: what to hint for a small array whose used element depends on a key not known
    /// yet. The owner computes it once, so a hint never reads the array's length, the very line it is about to hint.
    /// </summary>
    public static int LinesOf<T>(int length, int linesMax = 8) => Math.Min(linesMax, 1 + ((length * Unsafe.SizeOf<T>()) + 15) / 64);

    /// <summary>
    /// Hints the cache line of element <paramref name="index"/> of <paramref name="array"/> (null: nothing) without
    /// reading the array's length, which would wait for the very miss the hint is meant to hide; an index past the end
    /// hints a line nothing reads, which is harmless.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static unsafe void ElementUnchecked<T>(T[]? array, int index)
    {
        if (!Sse.IsSupported || array is null)
        {
            return;
        }

        Sse.Prefetch0(Unsafe.AsPointer(ref Unsafe.Add(ref MemoryMarshal.GetArrayDataReference(array), index)));
    }
}

/// <summary>
/// An object whose parts a delivery reads after the object itself, hinted in stages: level 0 hints the objects it
/// refers to, level 1 what those refer to, and so on; a caller asks for a level only once the level before has had
/// time to arrive, since each level's addresses are read from the objects the level before hinted.
/// </summary>
internal interface IPrefetchParts
{
    /// <summary>Hints the parts <paramref name="depth"/> references away (0 to <see cref="Prefetch.DepthMax"/>).</summary>
    void PrefetchParts(int depth);
}
