using System.Text;
using PlayHouse.Core.Codec;

namespace PlayHouse.Core.Tests.Codec;

public sealed class Utf8StringCacheTests
{
    public static TheoryData<string, string> Fnv1aCollidingPairs() => new()
    {
        { "costarring", "liquid" },
        { "play-8638", "play-754906" },
    };

    [Theory]
    [MemberData(nameof(Fnv1aCollidingPairs))]
    public void GetString_InputsCollidingUnderFnv1a32_ReturnsEachInputsOwnString(string a, string b)
    {
        var aBytes = Encoding.UTF8.GetBytes(a);
        var bBytes = Encoding.UTF8.GetBytes(b);

        // The pair must really collide under the hash PlayHouse keyed on, or this test proves nothing.
        Assert.Equal(WireBytes.Fnv1a32(aBytes), WireBytes.Fnv1a32(bBytes));

        var cache = new Utf8StringCache();
        var firstA = cache.GetString(aBytes);
        var firstB = cache.GetString(bBytes);

        Assert.Equal(a, firstA);
        Assert.Equal(b, firstB);
        Assert.Same(firstA, cache.GetString(aBytes));
        Assert.Same(firstB, cache.GetString(bBytes));
        Assert.Equal(2, cache.GetStatistics().Count);
    }

    [Theory]
    [MemberData(nameof(Fnv1aCollidingPairs))]
    public void GetString_KeyedOnFnv1a32Itself_StillTellsTheCollidingPairApart(string a, string b)
    {
        // With B4's own hash as the bucket hash both ids share a bucket and a hash, so only the byte comparison separates them.
        var cache = new Utf8StringCache(16, 255, key => WireBytes.Fnv1a32(key));

        var gotB = cache.GetString(Encoding.UTF8.GetBytes(b));
        var gotA = cache.GetString(Encoding.UTF8.GetBytes(a));

        Assert.Equal(b, gotB);
        Assert.Equal(a, gotA);
        Assert.Equal(a, cache.GetString(Encoding.UTF8.GetBytes(a)));
        Assert.Equal(b, cache.GetString(Encoding.UTF8.GetBytes(b)));
    }

    [Fact]
    public void GetString_EveryKeyInOneBucket_ReturnsCorrectStringsThroughEvictions()
    {
        var cache = new Utf8StringCache(8, 255, _ => 42u);
        for (var round = 0; round < 3; round++)
        {
            for (var i = 0; i < 20; i++)
            {
                var id = $"server-{i}";
                Assert.Equal(id, cache.GetString(Encoding.UTF8.GetBytes(id)));
            }
        }

        Assert.Equal(8, cache.GetStatistics().Count);
    }

    [Fact]
    public void GetString_KeysOfEveryLengthUpTo40Bytes_EachHitsItsOwnCachedString()
    {
        // Every branch of the default hash (1-3, 4-7, 8-16 and longer keys), with keys that differ only in their
        // middle or last byte, so a hash that ignored part of a short key would merge them into long chains but
        // still has to return each key's own string.
        var cache = new Utf8StringCache(capacity: 256);
        var keys = new List<string>();
        for (var length = 1; length <= 40; length++)
        {
            keys.Add(new string('a', length));
            keys.Add(new string('a', length - 1) + "b");
            keys.Add(length > 2 ? new string('a', length / 2) + "c" + new string('a', length - (length / 2) - 1) : "c" + new string('a', length - 1));
        }

        var first = keys.Distinct().ToDictionary(k => k, k => cache.GetString(Encoding.UTF8.GetBytes(k)));
        foreach (var (key, cached) in first)
        {
            Assert.Equal(key, cached);
            Assert.Same(cached, cache.GetString(Encoding.UTF8.GetBytes(key)));
        }

        Assert.Equal(first.Count, cache.GetStatistics().Misses);
        Assert.Equal(first.Count, cache.GetStatistics().Hits);
    }

    [Fact]
    public void GetString_ManyDistinctIds_StaysWithinCapacityAndCountsEvictions()
    {
        var cache = new Utf8StringCache(capacity: 16);

        for (var i = 0; i < 1000; i++)
        {
            var id = $"msg-{i}";
            Assert.Equal(id, cache.GetString(Encoding.UTF8.GetBytes(id)));
            Assert.True(cache.GetStatistics().Count <= 16);
        }

        var stats = cache.GetStatistics();
        Assert.Equal(16, stats.Count);
        Assert.Equal(1000, stats.Misses);
        Assert.Equal(1000 - 16, stats.Evictions);
        Assert.Equal(0, stats.Hits);
    }

    [Fact]
    public void GetString_HotIdDuringAScanOfOneOffIds_IsNeverEvicted()
    {
        var cache = new Utf8StringCache(capacity: 4);
        var hot = "Move"u8.ToArray();
        var hotString = cache.GetString(hot);

        for (var i = 0; i < 200; i++)
        {
            cache.GetString(Encoding.UTF8.GetBytes($"junk-{i}"));
            Assert.Same(hotString, cache.GetString(hot));
        }

        Assert.Equal(200, cache.GetStatistics().Hits);
    }

    [Fact]
    public void GetString_RepeatedId_ReturnsTheSameInstanceWithoutAllocating()
    {
        var cache = new Utf8StringCache();
        var bytes = "로그인요청"u8.ToArray();
        var first = cache.GetString(bytes);
        cache.GetString(bytes);

        var before = GC.GetAllocatedBytesForCurrentThread();
        for (var i = 0; i < 1000; i++)
        {
            Assert.Same(first, cache.GetString(bytes));
        }

        Assert.Equal(0, GC.GetAllocatedBytesForCurrentThread() - before);
        Assert.Equal(1001, cache.GetStatistics().Hits);
    }

    [Fact]
    public void TryGetString_InvalidUtf8_ReturnsFalseAndCachesNothing()
    {
        var cache = new Utf8StringCache();

        Assert.False(cache.TryGetString([0x61, 0xFF], out var value));

        Assert.Null(value);
        Assert.Equal(0, cache.GetStatistics().Count);
        Assert.Equal(1, cache.GetStatistics().InvalidInputs);
        Assert.Throws<ArgumentException>(() => cache.GetString([0xC0, 0x80]));
    }

    [Fact]
    public void GetString_KeyLongerThanTheCap_IsDecodedButBypassesTheCache()
    {
        var cache = new Utf8StringCache(capacity: 4, maxKeyBytes: 8);
        var longId = "a-rather-long-server-id"u8.ToArray();

        Assert.Equal("a-rather-long-server-id", cache.GetString(longId));

        var stats = cache.GetStatistics();
        Assert.Equal(1, stats.Bypasses);
        Assert.Equal(0, stats.Count);
        Assert.False(cache.TryGetString([0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF], out _));
    }

    [Fact]
    public void GetString_EmptyInput_IsTheEmptyString()
    {
        var cache = new Utf8StringCache();

        Assert.Same(string.Empty, cache.GetString([]));
        Assert.Equal(0, cache.GetStatistics().Count);
    }

    [Fact]
    public void GetString_IdsThatArePrefixesOfEachOther_AreDistinct()
    {
        var cache = new Utf8StringCache(8, 255, _ => 1u);

        Assert.Equal("play", cache.GetString("play"u8));
        Assert.Equal("play-1", cache.GetString("play-1"u8));
        Assert.Equal("play", cache.GetString("play"u8));
    }

    [Fact]
    public void GetString_FromManyThreadsAtOnce_AlwaysReturnsTheRightString()
    {
        var cache = new Utf8StringCache(capacity: 32);
        var ids = Enumerable.Range(0, 64).Select(i => $"play-{i * 7919}").ToArray();
        var wrong = 0;

        Parallel.For(0, 8, worker =>
        {
            for (var i = 0; i < 5000; i++)
            {
                var id = ids[((i * 13) + worker) % ids.Length];
                if (cache.GetString(Encoding.UTF8.GetBytes(id)) != id)
                {
                    Interlocked.Increment(ref wrong);
                }
            }
        });

        Assert.Equal(0, wrong);
        Assert.True(cache.GetStatistics().Count <= 32);
    }

    [Fact]
    public void Constructor_CapacityBelowOne_IsRejected()
    {
        Assert.Throws<ArgumentOutOfRangeException>(() => new Utf8StringCache(capacity: 0));
        Assert.Throws<ArgumentOutOfRangeException>(() => new Utf8StringCache(maxKeyBytes: 0));
    }
}
