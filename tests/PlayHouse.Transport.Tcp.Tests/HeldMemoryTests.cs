using System.Runtime.CompilerServices;
using PlayHouse.Sim.Tcp;

namespace PlayHouse.Transport.Tcp.Tests;

/// <summary>What the soak samples as memory the process holds.</summary>
public sealed class HeldMemoryTests
{
    [Fact]
    public void HeldMemory_AfterALargeHeapIsDropped_ShowsTheWorkingSetFallBack()
    {
        var whileHeld = MeasureWhileHolding(arrays: 4096, arrayBytes: 64 * 1024);

        var afterward = HeldMemory.Measure();

        // 256 MB were held; what the soak samples afterwards must show most of it gone, not the peak.
        Assert.True(whileHeld.LiveHeapMb - afterward.LiveHeapMb > 200, $"live heap {whileHeld.LiveHeapMb:0} -> {afterward.LiveHeapMb:0} MB");
        Assert.True(whileHeld.WorkingSetMb - afterward.WorkingSetMb > 150, $"working set {whileHeld.WorkingSetMb:0} -> {afterward.WorkingSetMb:0} MB");
    }

    // Not inlined, so nothing of the held arrays stays reachable from the caller's frame.
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static (double WorkingSetMb, double GcHeapMb, double LiveHeapMb) MeasureWhileHolding(int arrays, int arrayBytes)
    {
        var held = new List<byte[]>(arrays);
        for (var i = 0; i < arrays; i++)
        {
            // Written through, so every page is in the working set.
            var array = new byte[arrayBytes];
            array.AsSpan().Fill((byte)i);
            held.Add(array);
        }

        var measured = HeldMemory.Measure();
        GC.KeepAlive(held);
        return measured;
    }
}
