using System.Buffers;
using PlayHouse.Simulation.Network;

namespace PlayHouse.Simulation.Tests.Network;

/// <summary>
/// Where a stream direction keeps the bytes in flight: one store from the network's pool, compacted in place while the
/// live bytes fill at most half of it, grown (the old store given back) when they would not, kept while small once
/// the direction empties and given back when it grew past 64 KiB or its connection was reset. Every rented store goes back
/// exactly once.
/// </summary>
public sealed class StreamStoreTests
{
    private static readonly TimeSpan Latency = TimeSpan.FromMilliseconds(10);

    [Fact]
    public void SmallStore_IsKeptByAnEmptiedDirection_AndGivenBackWhenTheConnectionIsReset()
    {
        var (h, stores, pair) = Connected();

        Assert.True(pair.Client.Send(new byte[100]));
        h.RunQuiet();
        Assert.Equal((1, 0), (stores.Rented, stores.Returned));
        Assert.Equal(256, stores.RentedLengths.Single());

        pair.Client.Connection.Reset("done");
        h.RunQuiet();

        Assert.Equal((1, 1), (stores.Rented, stores.Returned));
        Assert.Equal(100, pair.Server.Received.Count);
    }

    [Fact]
    public void StorePast64KiB_GoesBackToThePool_AsSoonAsItsDirectionEmpties()
    {
        var (h, stores, pair) = Connected();

        Assert.True(pair.Client.Send(new byte[(64 * 1024) + 1]));
        h.RunQuiet();

        Assert.Equal((1, 1), (stores.Rented, stores.Returned));
        Assert.Equal(2 * ((64 * 1024) + 1), stores.RentedLengths.Single());
        Assert.Equal((64 * 1024) + 1, pair.Server.Received.Count);
    }

    [Fact]
    public void StoreOfExactly64KiB_IsKept_WhenItsDirectionEmpties()
    {
        var (h, stores, pair) = Connected();

        // 32 KiB in flight asks for a store of twice that: 64 KiB, the most an idle direction keeps.
        Assert.True(pair.Client.Send(new byte[32 * 1024]));
        h.RunQuiet();

        Assert.Equal((1, 0), (stores.Rented, stores.Returned));
        Assert.Equal(64 * 1024, stores.RentedLengths.Single());
    }

    [Fact]
    public void LiveBytesThatFitInHalfTheStore_AreCompactedInPlace_AndMoreGrowsTheStore_GivingTheOldOneBack()
    {
        var (h, stores, pair) = Connected();
        Assert.True(pair.Client.Send(Filled(100, 1)));
        Assert.True(pair.Client.Send(Filled(60, 2)));
        h.RunFor(Latency / 2);
        Assert.True(pair.Client.Send(Filled(10, 3)));
        h.RunFor(Latency / 2);
        Assert.Equal(160, pair.Server.Received.Count);

        // 10 bytes live at offset 160 of a 256-byte store: 90 more do not fit behind them, but 100 fit in half the
        // store, so the live bytes move to the front and nothing is rented.
        Assert.True(pair.Client.Send(Filled(90, 4)));
        Assert.Equal((1, 0), (stores.Rented, stores.Returned));

        // 100 live and 160 more need 260 > 128: a new store of twice that, and the old one goes back.
        Assert.True(pair.Client.Send(Filled(160, 5)));
        Assert.Equal((2, 1), (stores.Rented, stores.Returned));
        Assert.Equal([256, 520], stores.RentedLengths);
        h.RunQuiet();

        Assert.Equal([.. Filled(100, 1), .. Filled(60, 2), .. Filled(10, 3), .. Filled(90, 4), .. Filled(160, 5)], pair.Server.Received);
        Assert.Equal(0, h.Network.StreamBytesInFlight);
    }

    private static byte[] Filled(int length, byte value) => Enumerable.Repeat(value, length).ToArray();

    private static (NetworkHarness Harness, CountingPool Stores, StreamPair Pair) Connected()
    {
        var stores = new CountingPool();
        var h = new NetworkHarness(seed: 1, new PathOptions { Latency = LatencyModel.Fixed(Latency), SplitProbability = 0 }, streamStores: stores);
        h.Listen("server");
        var pair = h.Connect("client", "server");
        h.RunQuiet();
        Assert.True(pair.IsAccepted);
        return (h, stores, pair);
    }

    /// <summary>Counts what the directions rent and give back; hands out arrays of exactly the length asked.</summary>
    private sealed class CountingPool : ArrayPool<byte>
    {
        public int Rented { get; private set; }

        public int Returned { get; private set; }

        public List<int> RentedLengths { get; } = [];

        public override byte[] Rent(int minimumLength)
        {
            Rented++;
            RentedLengths.Add(minimumLength);
            return new byte[minimumLength];
        }

        public override void Return(byte[] array, bool clearArray = false) => Returned++;
    }
}
