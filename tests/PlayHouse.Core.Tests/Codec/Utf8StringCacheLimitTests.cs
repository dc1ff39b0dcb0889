using System.Text;
using PlayHouse.Core.Codec;

namespace PlayHouse.Core.Tests.Codec;

/// <summary>
/// The limits and counters of <see cref="Utf8StringCache"/>: its capacity bound, the key length at which lookups bypass
/// the cache, the hinted lookup a connection's decoder makes, the hit bit that hinted hits set for CLOCK eviction, and
/// the statistics of every kind of lookup.
/// </summary>
public sealed class Utf8StringCacheLimitTests
{
    [Fact]
    public void Capacity_AboveSixteenMebientries_IsRefused()
    {
        var error = Assert.Throws<ArgumentOutOfRangeException>(() => new Utf8StringCache(capacity: (1 << 24) + 1));

        Assert.Equal("capacity", error.ParamName);
        Assert.Equal(1, new Utf8StringCache(capacity: 1).Capacity);
    }

    [Fact]
    public void KeyAtMaxKeyBytes_IsCached_AndOneByteLongerIsBypassed()
    {
        var cache = new Utf8StringCache(capacity: 4, maxKeyBytes: 8, singleThreaded: true);

        var atLimit = cache.GetString("12345678"u8);
        Assert.Same(atLimit, cache.GetString("12345678"u8));
        var over = cache.GetString("123456789"u8);

        Assert.Equal("123456789", over);
        Assert.Equal(new Utf8StringCacheStatistics(Hits: 1, Misses: 1, Evictions: 0, Bypasses: 1, InvalidInputs: 0, Count: 1, Capacity: 4), cache.GetStatistics());
    }

    [Fact]
    public void BypassedKeys_CountInvalidInputsOnlyForInvalidBytes_AndGiveNoStringForThem()
    {
        var cache = new Utf8StringCache(capacity: 4, maxKeyBytes: 2, singleThreaded: true);

        Assert.True(cache.TryGetString("abc"u8, out var valid));
        Assert.False(cache.TryGetString([0x61, 0x62, 0xFF], out var invalid));

        Assert.Equal("abc", valid);
        Assert.Null(invalid);
        var statistics = cache.GetStatistics();
        Assert.Equal(2, statistics.Bypasses);
        Assert.Equal(1, statistics.InvalidInputs);
        Assert.Equal(0, statistics.Count);
    }

    [Fact]
    public void EmptyKey_IsAHit_OnEitherThreadingMode()
    {
        foreach (var singleThreaded in new[] { true, false })
        {
            var cache = new Utf8StringCache(capacity: 4, singleThreaded: singleThreaded);

            Assert.Same(string.Empty, cache.GetString([]));
            Assert.Same(string.Empty, cache.GetString([]));

            Assert.Equal(2, cache.GetStatistics().Hits);
            Assert.Equal(0, cache.GetStatistics().Misses);
        }
    }

    [Fact]
    public void GetString_OfInvalidBytes_SaysWhichBytes()
    {
        var cache = new Utf8StringCache(capacity: 4, singleThreaded: true);

        var error = Assert.Throws<ArgumentException>(() => cache.GetString([0x41, 0xC3]));

        Assert.Equal("utf8", error.ParamName);
        Assert.StartsWith("The bytes 41C3 are not valid UTF-8.", error.Message, StringComparison.Ordinal);
        Assert.Equal(1, cache.GetStatistics().InvalidInputs);
    }

    [Fact]
    public void HintedLookup_OfAFreeSlotOrOnePastTheEnd_FallsBackToTheHashedLookup()
    {
        var cache = new Utf8StringCache(capacity: 4, singleThreaded: true);
        var ping = cache.GetString("Ping"u8);

        var free = 3;
        var pastEnd = 4;
        Assert.True(cache.TryGetString("Ping"u8, ref free, out var viaFree));
        Assert.True(cache.TryGetString("Ping"u8, ref pastEnd, out var viaPastEnd));

        Assert.Same(ping, viaFree);
        Assert.Same(ping, viaPastEnd);
        Assert.Equal(0, free);
        Assert.Equal(0, pastEnd);
    }

    [Fact]
    public void HintedLookup_ThatFindsNoEntry_LeavesNoHint()
    {
        var cache = new Utf8StringCache(capacity: 4, maxKeyBytes: 8, singleThreaded: true);
        cache.GetString("Ping"u8);
        cache.GetString("Pong"u8);

        var empty = 1;
        var tooLong = 1;
        var invalid = 1;
        Assert.True(cache.TryGetString([], ref empty, out _));
        Assert.True(cache.TryGetString("123456789"u8, ref tooLong, out _));
        Assert.False(cache.TryGetString([0xFF], ref invalid, out _));

        Assert.Equal(-1, empty);
        Assert.Equal(-1, tooLong);
        Assert.Equal(-1, invalid);
    }

    [Fact]
    public void AHintedHit_GivesItsEntryASecondChance_SoEvictionTakesAnother()
    {
        var cache = new Utf8StringCache(capacity: 2, singleThreaded: true);
        var first = -1;
        Assert.True(cache.TryGetString("first"u8, ref first, out var firstString));
        cache.GetString("second"u8);

        // Found through the hint alone, no hashed lookup: the hit must still mark it as recently used.
        var hint = first;
        Assert.True(cache.TryGetString("first"u8, ref hint, out _));
        cache.GetString("third"u8);

        Assert.Equal(1, cache.GetStatistics().Evictions);
        Assert.Same(firstString, cache.GetString("first"u8));
        var misses = cache.GetStatistics().Misses;
        cache.GetString("second"u8);
        Assert.Equal(misses + 1, cache.GetStatistics().Misses);
    }

    [Fact]
    public void AnEntryTheClockHandPassedOver_LosesItsHitBit_SoTheNextEvictionTakesIt()
    {
        var cache = new Utf8StringCache(capacity: 2, singleThreaded: true);
        cache.GetString("first"u8);
        cache.GetString("second"u8);
        cache.GetString("first"u8);

        // The hand passes over "first" (its bit cleared) and evicts "second"; the next eviction must take "first",
        // now without its bit, and keep "third", which came in after it.
        var third = cache.GetString("third"u8);
        cache.GetString("fourth"u8);

        Assert.Equal(2, cache.GetStatistics().Evictions);
        Assert.Same(third, cache.GetString("third"u8));
        var misses = cache.GetStatistics().Misses;
        cache.GetString("first"u8);
        Assert.Equal(misses + 1, cache.GetStatistics().Misses);
    }

    [Fact]
    public void HitsOnASingleThreadedCache_AreCounted()
    {
        var cache = new Utf8StringCache(capacity: 4, singleThreaded: true);

        for (var i = 0; i < 5; i++)
        {
            cache.GetString("Ping"u8);
        }

        Assert.Equal(4, cache.GetStatistics().Hits);
        Assert.Equal(1, cache.GetStatistics().Misses);
    }

    [Fact]
    public void AGivenHasher_IsTheOneLookupsUse()
    {
        var calls = 0;
        var cache = new Utf8StringCache(4, 255, key =>
        {
            calls++;
            return (uint)key.Length;
        }, singleThreaded: true);

        cache.GetString(Encoding.UTF8.GetBytes("Ping"));
        cache.GetString(Encoding.UTF8.GetBytes("Ping"));

        Assert.Equal(2, calls);
        Assert.Equal(1, cache.GetStatistics().Hits);
    }
}
