using PlayHouse.Core.Pooling;

namespace PlayHouse.Core.Runtime;

/// <summary>
/// Picks the id of a stage created without one (a create with stage id 0, <see cref="IApiLink.CreateStage(string, string, string, Payload, TimeSpan?)"/>):
/// the component <see cref="NodeParts.StageIds"/> builds, one per play server. The play server allocates because it
/// owns the registry the id must be free in, so an id is unique by construction, whatever the number of creators and
/// however many creates arrive at one instant (PlayHouse took stage ids from the millisecond clock, and two stages
/// created in the same millisecond got the same id, B16).
/// </summary>
/// <remarks>Not thread-safe by itself; the play server calls it under its registry lock.</remarks>
internal interface IStageIdAllocator
{
    /// <summary>A new stage id; <paramref name="isTaken"/> tells an id a stage holds now (ids callers chose included).</summary>
    long Next(Func<long, bool> isTaken);
}

/// <summary>The standard allocator: a 64-bit counter per server that skips ids in use and never hands out 0.</summary>
internal sealed class SequentialStageIds : IStageIdAllocator
{
    private long _last;

    public long Next(Func<long, bool> isTaken)
    {
        do
        {
            _last = _last == long.MaxValue ? 1 : _last + 1;
        }
        while (isTaken(_last));

        return _last;
    }
}
