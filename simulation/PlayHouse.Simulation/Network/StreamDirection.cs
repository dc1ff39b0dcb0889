using PlayHouse.Core.Pooling;

namespace PlayHouse.Simulation.Network;

/// <summary>The state of one directed path: its options, its faults, its link and what it holds.</summary>
/// <remarks>Not thread-safe; owned by <see cref="SimNetwork"/> on the simulation thread.</remarks>
internal sealed class PathState(string from, string to, PathOptions options)
{
    public string From { get; } = from;

    public string To { get; } = to;

    public PathOptions Options { get; set; } = options;

    public bool HasOwnOptions { get; set; }

    public bool Partitioned { get; set; }

    /// <summary>Bumped when a partition starts, so a reset check armed in an earlier partition is recognised as stale.</summary>
    public long PartitionEpoch { get; set; }

    public bool Clogged { get; set; }

    public bool IsBlocked => Clogged || Partitioned;

    /// <summary>When the link finishes transmitting what it has been given (bandwidth model).</summary>
    public long BusyUntilTicks { get; set; }

    public long DatagramSeq { get; set; }

    public long MaxDeliveredDatagramSeq { get; set; }

    /// <summary>Datagrams that came due while the path was clogged, in the order they came due.</summary>
    public List<IThreadPoolWorkItem> HeldDatagrams { get; } = [];

    /// <summary>Stream directions whose head came due while the path was blocked, in the order they blocked.</summary>
    public List<StreamDirection> Blocked { get; } = [];
}

internal enum SegmentKind
{
    /// <summary>The handshake: delivering it accepts the connection at the listener.</summary>
    Open,
    Data,

    /// <summary>A graceful close: delivering it tells the receiving end that its peer closed.</summary>
    Close,
}

/// <summary>
/// One queued unit of a stream direction: a handshake, a chunk of bytes, or a close with its reason.
/// <c>EndsSend</c> is true on the last chunk of one <see cref="SimConnection.Send"/>, so each send is counted once.
/// </summary>
internal readonly record struct StreamSegment(SegmentKind Kind, Payload Data, long ReadyTicks, bool EndsSend, string? Reason);

/// <summary>
/// One direction of a stream connection: what its sender has sent and the receiver has not yet got, in send
/// order. Only the head is ever delivered, by one pump event at a time, so bytes arrive in order whatever the
/// world does with events that share an instant, and a hold on the path holds everything behind the head.
/// </summary>
/// <remarks>Not thread-safe; owned by <see cref="SimNetwork"/> on the simulation thread.</remarks>
internal sealed class StreamDirection(SimConnection sender, PathState path)
{
    public SimConnection Sender { get; } = sender;

    public PathState Path { get; } = path;

    public Queue<StreamSegment> Segments { get; } = new();

    /// <summary>The ready time of the last queued segment; a later segment is never ready before it.</summary>
    public long LastReadyTicks { get; set; }

    /// <summary>No segment is delivered before this instant; set when a hold ends, so held bytes leave after a fresh latency.</summary>
    public long ReleaseFloorTicks { get; set; }

    /// <summary>True while the head came due on a blocked path; the direction is then listed in <see cref="PathState.Blocked"/>.</summary>
    public bool IsBlocked { get; set; }

    /// <summary>The partition (by <see cref="PathState.PartitionEpoch"/>) for which a reset check is armed.</summary>
    public long ResetCheckEpoch { get; set; }

    /// <summary>Bumped on every arm and disarm, so at most one pump event per direction is live.</summary>
    public long PumpGeneration { get; set; }

    public bool PumpArmed { get; set; }

    public long PumpAtTicks { get; set; }

    public long DueTicks(in StreamSegment segment) => Math.Max(segment.ReadyTicks, ReleaseFloorTicks);

    /// <summary>Segments at the head that came due at or before <paramref name="nowTicks"/>.</summary>
    public int CountDue(long nowTicks)
    {
        var count = 0;
        foreach (var segment in Segments)
        {
            if (DueTicks(segment) > nowTicks)
            {
                break;
            }

            count++;
        }

        return count;
    }
}
