using PlayHouse.Core.Seams;
using PlayHouse.Simulation.Clients;

namespace PlayHouse.Simulation.Tests.Clients;

public sealed class SeqSlotTableTests
{
    [Theory]
    [InlineData(1, 1UL)]
    [InlineData(3, 2UL)]
    [InlineData(5, 3UL)]
    [InlineData(16, 4UL)]
    [InlineData(100, 5UL)]
    public void RandomAddsAndRemoves_AgreeWithADictionary_IncludingCollidingSequences(int capacity, ulong seed)
    {
        var table = new SeqSlotTable(capacity);
        var model = new Dictionary<ushort, int>();
        var random = new Xoshiro256StarStar(seed);
        for (var step = 0; step < 50_000; step++)
        {
            // Few distinct sequences, many sharing low bits, so probe runs form, wrap the table's end and get removed
            // from the middle; plus any sequence at all now and then.
            var seq = random.NextInt(4) == 0 ? (ushort)(1 + random.NextInt(ushort.MaxValue)) : (ushort)(1 + (random.NextInt(8) * 64) + random.NextInt(4));
            if (model.Count < capacity && random.NextInt(2) == 0 && !model.ContainsKey(seq))
            {
                table.Add(seq, step);
                model.Add(seq, step);
            }
            else
            {
                var removed = table.Remove(seq, out var slot);
                Assert.Equal(model.Remove(seq, out var expected), removed);
                if (removed)
                {
                    Assert.Equal(expected, slot);
                }
            }

            Assert.Equal(model.Count, table.Count);
            foreach (var key in model.Keys)
            {
                Assert.True(table.Contains(key));
            }
        }
    }

    [Fact]
    public void Add_RefusesZeroADuplicateAndAFullTable()
    {
        var table = new SeqSlotTable(2);
        Assert.Throws<ArgumentOutOfRangeException>(() => table.Add(0, 0));
        table.Add(7, 0);
        Assert.Throws<ArgumentException>(() => table.Add(7, 1));
        table.Add(11, 1);
        Assert.Throws<InvalidOperationException>(() => table.Add(12, 2));
        Assert.False(table.Contains(0));
        Assert.False(table.Remove(0, out _));
        Assert.True(table.Remove(7, out var slot));
        Assert.Equal(0, slot);
        Assert.False(table.Contains(7));
        Assert.True(table.Contains(11));
    }
}
