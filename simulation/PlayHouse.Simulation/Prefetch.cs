using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Runtime.Intrinsics.X86;

namespace PlayHouse.Simulation;

/// <summary>
/// Software prefetch hints for the objects the next event will touch. With 10,000 clients every event lands on a cold
/// client's objects, and each first touch stalled the step on a cache miss; a hint issued an event ahead (or several
/// issued together instead of one after another) hides most of that wait.
/// </summary>
/// <remarks>
/// A hint never faults and never changes a value, so it cannot change what a run does: an object the collector moves
/// after its address was read is merely hinted at its old place. On processors without the instruction it does nothing.
/// </remarks>
internal static class Prefetch
{
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
