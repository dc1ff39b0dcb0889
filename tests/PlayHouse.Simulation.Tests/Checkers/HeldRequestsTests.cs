using PlayHouse.Simulation.Checkers;

namespace PlayHouse.Simulation.Tests.Checkers;

/// <summary>
/// The exactly-once checker's per-client held requests: a key in the slot of its low bits or, when another key holds
/// that slot, in an overflow map made on the first such collision. Whatever the keys, it must behave as a map.
/// </summary>
public sealed class HeldRequestsTests
{
    [Fact]
    public void HeldRequests_KeysSharingOneSlot_AreEachHeldListedAndRemovedOnce()
    {
        // Arrange: keys 3, 19 and 35 share one of the 8 slots, so the last two go to the overflow map.
        var held = new ExactlyOnceRequestChecker.HeldRequests();
        long[] keys = [3, 19, 35];
        foreach (var key in keys)
        {
            held.GetValueRefOrAddDefault(key, out var existed).Nonce = key * 10;
            Assert.False(existed);
        }

        // Act
        var listed = held.Snapshot().Select(pair => (pair.Key, pair.Request.Nonce)).OrderBy(pair => pair.Key).ToArray();
        var removedOverflowed = held.Remove(19, out var overflowed);
        var removedSlotted = held.Remove(3, out var slotted);

        // Assert
        Assert.Equal([(3L, 30L), (19L, 190L), (35L, 350L)], listed);
        Assert.True(removedOverflowed);
        Assert.Equal(190, overflowed.Nonce);
        Assert.True(removedSlotted);
        Assert.Equal(30, slotted.Nonce);
        Assert.False(held.Remove(19, out _));
        Assert.True(held.TryGetValue(35, out var remaining));
        Assert.Equal(350, remaining.Nonce);
        Assert.Equal(1, held.Count);
    }

    [Fact]
    public void HeldRequests_NothingEverHeld_FindsAndRemovesNothing()
    {
        // Arrange
        var held = new ExactlyOnceRequestChecker.HeldRequests();

        // Act
        var found = held.TryGetValue(7, out var request);
        var removed = held.Remove(7, out _);

        // Assert
        Assert.False(found);
        Assert.Equal(0, request.Nonce);
        Assert.False(removed);
        Assert.Equal(0, held.Count);
        Assert.Empty(held.Snapshot());
    }
}
