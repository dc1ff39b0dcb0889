namespace PlayHouse.Simulation.Pages;

/// <summary>
/// Collects a timeline from any source of timed events: lanes by id, then events, spans, messages (sent, later
/// delivered or lost), faults and violations, in any order; <see cref="Build"/> sorts lanes into their groups and
/// everything timed into time order.
/// </summary>
/// <example>
/// <code>
/// var timeline = new TimelineBuilder(new TimelineMeta { Title = "campaign 7", Clock = "wall" });
/// var client = timeline.Lane("client-1", "client-1", LaneKind.Client);
/// var server = timeline.Lane("server", "server", LaneKind.Server);
/// var request = timeline.Send(client, server, sentTicks, "request", bytes: 64, frame: new MessageFrame("Echo", 1, 0, 0, 1));
/// timeline.Deliver(request, deliveredTicks);
/// timeline.Violation(atTicks, "ExactlyOnce", "request 1 completed twice", client);
/// TimelinePage.Write(timeline.Build(), "timeline.html");
/// </code>
/// </example>
/// <remarks>Not thread-safe: one writer at a time (a campaign that records from several threads holds a lock).</remarks>
public sealed class TimelineBuilder(TimelineMeta? meta = null)
{
    private readonly Dictionary<string, int> _laneIndex = new(StringComparer.Ordinal);
    private readonly List<TimelineLane> _lanes = [];
    private readonly List<TimelineEvent> _events = [];
    private readonly List<TimelineMessage> _messages = [];
    private readonly List<TimelineFault> _faults = [];
    private readonly List<TimelineViolation> _violations = [];

    public TimelineMeta Meta { get; set; } = meta ?? new TimelineMeta();

    public int LaneCount => _lanes.Count;

    public int EventCount => _events.Count;

    public int MessageCount => _messages.Count;

    /// <summary>The index of the lane with this id, made on first use (later calls return it unchanged).</summary>
    /// <param name="id">Stable id (also what a filter matches).</param>
    /// <param name="label">What the page shows.</param>
    /// <param name="kind">Its group.</param>
    /// <param name="parent">The lane it belongs under (a stage's server), or -1.</param>
    public int Lane(string id, string label, LaneKind kind, int parent = -1)
    {
        ArgumentException.ThrowIfNullOrEmpty(id);
        if (_laneIndex.TryGetValue(id, out var index))
        {
            return index;
        }

        if (parent < -1 || parent >= _lanes.Count)
        {
            throw new ArgumentOutOfRangeException(nameof(parent), parent, $"Lane '{id}': parent {parent} is not a lane.");
        }

        index = _lanes.Count;
        _lanes.Add(new TimelineLane(id, label, kind, parent));
        _laneIndex.Add(id, index);
        return index;
    }

    /// <summary>The index of the lane with this id, or -1 when there is none.</summary>
    public int FindLane(string id) => _laneIndex.GetValueOrDefault(id, -1);

    public TimelineLane LaneAt(int lane) => _lanes[lane];

    /// <summary>An instant event; returns its number.</summary>
    public int Instant(int lane, long timeTicks, string kind, string label, IReadOnlyList<KeyValuePair<string, string>>? fields = null) =>
        Span(lane, timeTicks, timeTicks, kind, label, fields);

    /// <summary>An event that lasted from <paramref name="startTicks"/> to <paramref name="endTicks"/>; returns its number for <see cref="EndSpan"/>.</summary>
    public int Span(int lane, long startTicks, long endTicks, string kind, string label, IReadOnlyList<KeyValuePair<string, string>>? fields = null)
    {
        CheckLane(lane);
        ArgumentOutOfRangeException.ThrowIfLessThan(endTicks, startTicks);
        _events.Add(new TimelineEvent(startTicks, endTicks - startTicks, lane, kind, label, fields));
        return _events.Count - 1;
    }

    /// <summary>Moves the end of an event made by <see cref="Span"/> or <see cref="Instant"/> (a turn that ended later than it began).</summary>
    public void EndSpan(int index, long endTicks)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(index);
        ArgumentOutOfRangeException.ThrowIfGreaterThanOrEqual(index, _events.Count);
        var item = _events[index];
        ArgumentOutOfRangeException.ThrowIfLessThan(endTicks, item.TimeTicks);
        _events[index] = item with { DurationTicks = endTicks - item.TimeTicks };
    }

    /// <summary>A message leaves <paramref name="from"/> for <paramref name="to"/>; returns it for <see cref="Deliver"/> or <see cref="Lose"/>.</summary>
    public TimelineMessage Send(int from, int to, long sentTicks, string kind, int bytes, MessageFrame? frame = null)
    {
        CheckLane(from);
        CheckLane(to);
        var message = new TimelineMessage(sentTicks, kind, bytes) { From = from, To = to, Frame = frame, EndTicks = sentTicks };
        _messages.Add(message);
        return message;
    }

    /// <summary>Moves a message's ends to other lanes (a stage found later to be its true receiver).</summary>
    public void Reroute(TimelineMessage message, int from, int to)
    {
        ArgumentNullException.ThrowIfNull(message);
        CheckLane(from);
        CheckLane(to);
        message.From = from;
        message.To = to;
    }

    /// <summary>The message arrived; it must not have arrived or been lost before.</summary>
    public void Deliver(TimelineMessage message, long deliveredTicks)
    {
        ArgumentNullException.ThrowIfNull(message);
        CheckOpen(message);
        ArgumentOutOfRangeException.ThrowIfLessThan(deliveredTicks, message.SentTicks);
        message.DeliveredTicks = deliveredTicks;
        message.EndTicks = deliveredTicks;
    }

    /// <summary>The message will never arrive; it must not have arrived or been lost before.</summary>
    public void Lose(TimelineMessage message, long atTicks, string reason)
    {
        ArgumentNullException.ThrowIfNull(message);
        CheckOpen(message);
        ArgumentOutOfRangeException.ThrowIfLessThan(atTicks, message.SentTicks);
        message.EndTicks = atTicks;
        message.LostReason = reason;
    }

    /// <summary>A fault over a window (equal ends: an instant) on the given lanes, or on all lanes when none are given.</summary>
    public void Fault(string kind, long startTicks, long endTicks, IReadOnlyList<int> lanes, string label)
    {
        ArgumentNullException.ThrowIfNull(lanes);
        ArgumentOutOfRangeException.ThrowIfLessThan(endTicks, startTicks);
        foreach (var lane in lanes)
        {
            CheckLane(lane);
        }

        _faults.Add(new TimelineFault(kind, startTicks, endTicks, lanes, label));
    }

    /// <summary>A broken invariant, on the lane it names (or -1).</summary>
    public void Violation(long timeTicks, string checker, string message, int lane = -1)
    {
        if (lane != -1)
        {
            CheckLane(lane);
        }

        _violations.Add(new TimelineViolation(timeTicks, checker, message, lane));
    }

    /// <summary>
    /// The finished timeline: lanes grouped by kind (each stage right after its server, numbers in ids in numeric
    /// order), events and messages by time (ties keep the order they were added in), every lane index renumbered to
    /// match. Messages still open are marked lost at <paramref name="endTicks"/> ("in flight when the trace ended").
    /// </summary>
    public Timeline Build(long? endTicks = null)
    {
        var order = LaneOrder();
        var renumber = new int[_lanes.Count];
        for (var i = 0; i < order.Count; i++)
        {
            renumber[order[i]] = i;
        }

        int Map(int lane) => lane < 0 ? lane : renumber[lane];
        var lanes = order.Select(i => _lanes[i] with { Parent = Map(_lanes[i].Parent) }).ToList();
        var events = _events.Select(e => e with { Lane = Map(e.Lane) }).ToList();
        var end = endTicks ?? Math.Max(events.Count == 0 ? 0 : events.Max(e => e.TimeTicks + e.DurationTicks), _messages.Count == 0 ? 0 : _messages.Max(m => m.EndTicks));
        var messages = new List<TimelineMessage>(_messages.Count);
        foreach (var m in _messages)
        {
            var copy = m with { From = Map(m.From), To = Map(m.To) };
            if (copy.DeliveredTicks is null && copy.LostReason is null)
            {
                copy.EndTicks = Math.Max(copy.SentTicks, end);
                copy.LostReason = "in flight when the trace ended";
            }

            messages.Add(copy);
        }

        return new Timeline(
            Meta,
            lanes,
            [.. events.OrderBy(e => e.TimeTicks)],
            [.. messages.OrderBy(m => m.SentTicks)],
            [.. _faults.Select(f => f with { Lanes = [.. f.Lanes.Select(Map)] }).OrderBy(f => f.StartTicks)],
            [.. _violations.Select(v => v with { Lane = Map(v.Lane) }).OrderBy(v => v.TimeTicks)]);
    }

    private List<int> LaneOrder()
    {
        // Top-level lanes by kind and natural id order; each lane's children follow it, in the same order.
        var children = new Dictionary<int, List<int>>();
        var roots = new List<int>();
        for (var i = 0; i < _lanes.Count; i++)
        {
            var parent = _lanes[i].Parent;
            if (parent < 0)
            {
                roots.Add(i);
            }
            else
            {
                (children.TryGetValue(parent, out var list) ? list : children[parent] = []).Add(i);
            }
        }

        var comparer = Comparer<int>.Create((a, b) =>
        {
            var byKind = _lanes[a].Kind.CompareTo(_lanes[b].Kind);
            return byKind != 0 ? byKind : NaturalComparer.Instance.Compare(_lanes[a].Id, _lanes[b].Id);
        });
        var order = new List<int>(_lanes.Count);
        void Visit(int lane)
        {
            order.Add(lane);
            if (children.TryGetValue(lane, out var list))
            {
                list.Sort(comparer);
                foreach (var child in list)
                {
                    Visit(child);
                }
            }
        }

        roots.Sort(comparer);
        foreach (var root in roots)
        {
            Visit(root);
        }

        return order;
    }

    private void CheckLane(int lane)
    {
        if (lane < 0 || lane >= _lanes.Count)
        {
            throw new ArgumentOutOfRangeException(nameof(lane), lane, $"Lane {lane} does not exist (there are {_lanes.Count}).");
        }
    }

    private static void CheckOpen(TimelineMessage message)
    {
        if (message.DeliveredTicks is not null || message.LostReason is not null)
        {
            throw new InvalidOperationException($"The message sent at {message.SentTicks} from lane {message.From} was already {(message.DeliveredTicks is not null ? "delivered" : "lost")}.");
        }
    }

    /// <summary>Orders "client-2" before "client-10": runs of digits compare as numbers.</summary>
    private sealed class NaturalComparer : IComparer<string>
    {
        public static readonly NaturalComparer Instance = new();

        public int Compare(string? x, string? y)
        {
            if (x is null || y is null)
            {
                return x is null ? (y is null ? 0 : -1) : 1;
            }

            int i = 0, j = 0;
            while (i < x.Length && j < y.Length)
            {
                if (char.IsAsciiDigit(x[i]) && char.IsAsciiDigit(y[j]))
                {
                    var si = i;
                    var sj = j;
                    while (i < x.Length && char.IsAsciiDigit(x[i]))
                    {
                        i++;
                    }

                    while (j < y.Length && char.IsAsciiDigit(y[j]))
                    {
                        j++;
                    }

                    var a = x.AsSpan(si, i - si).TrimStart('0');
                    var b = y.AsSpan(sj, j - sj).TrimStart('0');
                    var byLength = a.Length.CompareTo(b.Length);
                    if (byLength != 0)
                    {
                        return byLength;
                    }

                    var byDigits = a.SequenceCompareTo(b);
                    if (byDigits != 0)
                    {
                        return byDigits;
                    }
                }
                else
                {
                    var byChar = x[i].CompareTo(y[j]);
                    if (byChar != 0)
                    {
                        return byChar;
                    }

                    i++;
                    j++;
                }
            }

            return (x.Length - i).CompareTo(y.Length - j);
        }
    }
}
