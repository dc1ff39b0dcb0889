using PlayHouse.Fixtures.Workload;

namespace PlayHouse.Scenarios.Tests;

/// <summary>
/// <see cref="SmallKeyMap{TValue}"/>, the per-request map of the workload driver: a key in the slot of its low bits
/// or, when another key holds that slot, in an overflow map. Whatever the pattern of keys, it must behave as a map.
/// </summary>
public sealed class SmallKeyMapTests
{
    [Fact]
    public void SmallKeyMap_SetThenRemove_GivesTheValueOnceAndThenNothing()
    {
        // Arrange
        var map = new SmallKeyMap<int>(4);
        map.Set(5, 50);
        map.Set(5, 51);

        // Act
        var removed = map.Remove(5, out var value);
        var removedAgain = map.Remove(5, out var valueAgain);

        // Assert
        Assert.True(removed);
        Assert.Equal(51, value);
        Assert.False(removedAgain);
        Assert.Equal(0, valueAgain);
        Assert.False(new SmallKeyMap<string>(4).Remove(9, out var missing));
        Assert.Null(missing);
    }

    [Fact]
    public void SmallKeyMap_CollidingKeyStaysInTheOverflowMapAfterItsSlotFrees_IsReplacedNotDuplicated()
    {
        // Arrange: 16 slots (the least); key 17 shares key 1's slot and goes to the overflow map.
        var map = new SmallKeyMap<int>(1);
        map.Set(1, 10);
        map.Set(17, 170);
        Assert.True(map.Remove(1, out var first));

        // Act: key 17 is set again while its slot is free; key 33 then takes the slot.
        map.Set(17, 171);
        map.Set(33, 330);

        // Assert: one value per key, the latest.
        Assert.Equal(10, first);
        Assert.True(map.Remove(17, out var replaced));
        Assert.Equal(171, replaced);
        Assert.False(map.Remove(17));
        Assert.True(map.Remove(33, out var slotted));
        Assert.Equal(330, slotted);
        Assert.False(map.Remove(33));
        Assert.False(map.Remove(1));
    }

    [Fact]
    public void SmallKeyMap_FarMoreKeysThanSlotsIncludingTheExtremes_KeepsEveryValue()
    {
        // Arrange: 16 slots, 3,000 keys held at once (most in the overflow map), 0 and 65_535 among them.
        var map = new SmallKeyMap<int>(2);
        var keys = Enumerable.Range(0, 3_000).Select(i => (ushort)(i * 21 % 65_536)).Append((ushort)65_535).Distinct().ToList();
        foreach (var key in keys)
        {
            map.Set(key, key + 1);
        }

        // Act: removed in another order, then every key is reused with a new value.
        var shuffled = keys.OrderBy(k => (k * 7_919) % 3_001).ToList();
        var firstRound = shuffled.Select(k => map.Remove(k, out var v) ? v : -1).ToList();
        foreach (var key in keys)
        {
            map.Set(key, -key);
        }

        var secondRound = keys.Select(k => map.Remove(k, out var v) ? v : 1).ToList();

        // Assert
        Assert.Equal(shuffled.Select(k => k + 1), firstRound);
        Assert.Equal(keys.Select(k => -k), secondRound);
        Assert.All(keys, k => Assert.False(map.Remove(k), $"key {k} was still held"));
    }

    [Theory]
    [InlineData(1, 4)]
    [InlineData(2, 16)]
    [InlineData(3, 100)]
    public void SmallKeyMap_SeededSetsAndRemoves_BehaveAsADictionary(int seed, int expectedCount)
    {
        // Arrange: keys sequential like request sequences, plus colliding and random ones.
        var random = new Random(seed);
        var map = new SmallKeyMap<int>(expectedCount);
        var model = new Dictionary<ushort, int>();
        ushort next = 65_500;

        // Act / Assert: every removal gives what the dictionary gives.
        for (var step = 0; step < 50_000; step++)
        {
            var roll = random.Next(100);
            var key = roll switch
            {
                < 40 => next++,
                < 60 => (ushort)(next - random.Next(1, 3 * expectedCount)),
                < 80 => (ushort)((next & 0xF) + (random.Next(8) * 64)),
                _ => (ushort)random.Next(65_536),
            };

            if (random.Next(100) < 55)
            {
                map.Set(key, step);
                model[key] = step;
                continue;
            }

            var removed = map.Remove(key, out var value);
            var expected = model.Remove(key, out var expectedValue);
            Assert.True(expected == removed, $"step {step}: Remove({key}) gave {removed}, the dictionary {expected}");
            Assert.Equal(expectedValue, value);
        }

        foreach (var (key, value) in model)
        {
            Assert.True(map.Remove(key, out var held), $"key {key} was lost");
            Assert.Equal(value, held);
        }
    }
}
