using System.Diagnostics.CodeAnalysis;
using PlayHouse.Core.Codec;

namespace PlayHouse.Core.Mesh;

/// <summary>
/// Maps the UTF-8 bytes of a mesh frame's sender id (<c>RouteHeader.from</c>) to a shared string, so a node's steady
/// traffic from its peers allocates no string per frame. A server keeps one (<c>ServerNode.SenderIds</c>) and its mesh
/// decoders resolve every frame's sender through it. An entry must be found by the bytes themselves: a cache that
/// trusts a hash alone returns another peer's id for colliding ids, and replies go to the wrong server (PlayHouse's
/// 32-bit FNV-1a cache returned "play-8638" for "play-754906", B4).
/// </summary>
public interface ISenderIdCache
{
    /// <summary>Entries held now; bounded by the cache's capacity.</summary>
    int Count { get; }

    /// <summary>The id <paramref name="utf8"/> spells; false, caching nothing, for bytes that are not valid UTF-8.</summary>
    bool TryGetString(ReadOnlySpan<byte> utf8, [NotNullWhen(true)] out string? value);
}

/// <summary>
/// The standard sender-id cache: a bounded <see cref="Utf8StringCache"/>, keyed by the bytes and compared byte for
/// byte. A node hears from a few dozen peers; the capacity leaves room for peers that restart under new ids, and CLOCK
/// eviction keeps the ones that still send.
/// </summary>
public sealed class Utf8SenderIdCache(int capacity = Utf8SenderIdCache.DefaultCapacity, bool singleThreaded = false) : ISenderIdCache
{
    public const int DefaultCapacity = 256;

    // Node ids are short; a longer "id" is decoded without being cached.
    private const int MaxIdBytes = 255;

    private readonly Utf8StringCache _cache = new(capacity, MaxIdBytes, singleThreaded);

    public int Count => _cache.GetStatistics().Count;

    public int Capacity => _cache.Capacity;

    public bool TryGetString(ReadOnlySpan<byte> utf8, [NotNullWhen(true)] out string? value) => _cache.TryGetString(utf8, out value);
}
