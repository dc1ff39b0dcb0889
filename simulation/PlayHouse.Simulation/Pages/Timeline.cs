namespace PlayHouse.Simulation.Pages;

/// <summary>What a lane of a timeline stands for; the page groups lanes by it, in this order.</summary>
public enum LaneKind
{
    /// <summary>A client (a simulated client, or a real connection of a campaign).</summary>
    Client,

    /// <summary>A network path between two endpoints, both directions: its faults, resets, retransmits and holds.</summary>
    Path,

    /// <summary>A server node (play or API server).</summary>
    Server,

    /// <summary>A stage of a play server; it follows its server.</summary>
    Stage,

    /// <summary>Anything else (the run as a whole, a scenario's own events).</summary>
    Other,
}

/// <summary>One lane: a stable id, what the page shows, its kind and the lane it belongs under (a stage's server), or -1.</summary>
public sealed record TimelineLane(string Id, string Label, LaneKind Kind, int Parent);

/// <summary>
/// The fields of the wire frame(s) a message carried, as PlayHouse's client protocol and server-to-server header name
/// them; a send that carried several frames keeps the first and counts the rest in <see cref="Frames"/>.
/// </summary>
public sealed record MessageFrame(string MsgId, long MsgSeq, long StageId, int ErrorCode, int Frames)
{
    /// <summary>Extra fields of the frame (the server-to-server header's from, account, is-reply ...), or none.</summary>
    public IReadOnlyList<KeyValuePair<string, string>> Extra { get; init; } = [];
}

/// <summary>
/// One event on a lane: an instant (<see cref="DurationTicks"/> 0) or a span; a kind the page colours and filters by,
/// a short label, and the fields shown when it is clicked.
/// </summary>
public readonly record struct TimelineEvent(long TimeTicks, long DurationTicks, int Lane, string Kind, string Label, IReadOnlyList<KeyValuePair<string, string>>? Fields);

/// <summary>
/// One message: sent from a lane at an instant and delivered to a lane later (an arrow showing its latency), or lost
/// (<see cref="DeliveredTicks"/> null) at <see cref="EndTicks"/>.
/// </summary>
public sealed record TimelineMessage(long SentTicks, string Kind, int Bytes)
{
    /// <summary>The sender's lane.</summary>
    public required int From { get; set; }

    /// <summary>The receiver's lane.</summary>
    public required int To { get; set; }

    public long? DeliveredTicks { get; set; }

    /// <summary>When the message was delivered or, when it never was, when it was lost (or the trace ended).</summary>
    public long EndTicks { get; set; }

    /// <summary>Why it was never delivered (discarded, lost with a reset, still in flight when the trace ended).</summary>
    public string? LostReason { get; set; }

    public MessageFrame? Frame { get; set; }
}

/// <summary>
/// A fault over a window of time (partition, loss burst, crash, reset, stall ...), shaded over the lanes it hit; no
/// lanes means all of them. <see cref="EndTicks"/> equal to <see cref="StartTicks"/> marks an instant fault.
/// </summary>
public sealed record TimelineFault(string Kind, long StartTicks, long EndTicks, IReadOnlyList<int> Lanes, string Label);

/// <summary>A broken invariant: when, which checker, its message, and the lane it names (or -1).</summary>
public sealed record TimelineViolation(long TimeTicks, string Checker, string Message, int Lane);

/// <summary>What the page says about where the timeline came from: title, trace hash, seed, the replay command, notes.</summary>
public sealed record TimelineMeta
{
    public string Title { get; init; } = "timeline";

    /// <summary>The run's trace hash (simulation), or null where there is none (real sockets).</summary>
    public string? TraceHash { get; init; }

    public string? Seed { get; init; }

    /// <summary>The command that replays the run, or null.</summary>
    public string? ReplayCommand { get; init; }

    /// <summary>"virtual" (simulated time from 0) or "wall" (real time since the run started).</summary>
    public string Clock { get; init; } = "virtual";

    /// <summary>Further lines shown under the title (outcome, banner, flaws ...).</summary>
    public IReadOnlyList<KeyValuePair<string, string>> Notes { get; init; } = [];
}

/// <summary>
/// A whole timeline: lanes, events and messages in time order, faults and violations, and what it came from. Made by
/// a <see cref="TimelineBuilder"/> (from a simulated run by <see cref="SimTimelineRecorder"/>, or by any other source
/// of timed events such as a campaign against a real server) and written by <see cref="TimelinePage"/>.
/// </summary>
public sealed record Timeline(
    TimelineMeta Meta,
    IReadOnlyList<TimelineLane> Lanes,
    IReadOnlyList<TimelineEvent> Events,
    IReadOnlyList<TimelineMessage> Messages,
    IReadOnlyList<TimelineFault> Faults,
    IReadOnlyList<TimelineViolation> Violations)
{
    /// <summary>The earliest violation (by time, then order of recording), or null.</summary>
    public TimelineViolation? FirstViolation => Violations.Count == 0 ? null : Violations.MinBy(v => v.TimeTicks);
}
