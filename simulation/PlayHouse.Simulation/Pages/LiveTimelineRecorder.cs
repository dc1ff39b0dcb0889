using System.Globalization;

namespace PlayHouse.Simulation.Pages;

/// <summary>
/// Records the timeline of a run in real time (a campaign against a live server, a real-socket run) from every thread
/// that observes it: lanes, messages sent and later delivered or lost, events, fault windows and violations, stamped
/// with timestamps of the run's <see cref="TimeProvider"/> and kept as ticks of 100 ns since the recorder was made.
/// </summary>
/// <remarks>
/// Invariant: at most <see cref="ItemsMax"/> events and messages and <see cref="MarksMax"/> faults and violations are
/// kept; whatever comes after is counted in <see cref="Dropped"/>, never kept, so a long run costs bounded memory.
/// A message the recorder dropped is returned as null, and delivering or losing null does nothing.
/// Thread-safe: every call takes one short lock (no I/O under it).
/// </remarks>
public sealed class LiveTimelineRecorder
{
    /// <summary>Events and messages kept by default: about 20 MB of memory and a page of a few MB.</summary>
    public const int ItemsMaxDefault = 200_000;

    /// <summary>Faults and violations kept at most (a schedule has few; a checker reports its first ones in full).</summary>
    public const int MarksMax = 10_000;

    private readonly Lock _gate = new();
    private readonly TimelineBuilder _builder = new();
    private readonly TimeProvider _time;
    private readonly long _startTimestamp;
    private int _items;
    private int _marks;
    private long _dropped;
    private long _endedTwice;

    /// <param name="time">The clock whose timestamps every call passes.</param>
    /// <param name="itemsMax">Events and messages kept at most (1 or more).</param>
    public LiveTimelineRecorder(TimeProvider time, int itemsMax = ItemsMaxDefault)
    {
        ArgumentNullException.ThrowIfNull(time);
        ArgumentOutOfRangeException.ThrowIfLessThan(itemsMax, 1);
        _time = time;
        ItemsMax = itemsMax;
        _startTimestamp = time.GetTimestamp();
    }

    public int ItemsMax { get; }

    /// <summary>Events, messages, faults and violations that came after the caps and were not kept.</summary>
    public long Dropped => Interlocked.Read(ref _dropped);

    /// <summary>Events and messages kept so far.</summary>
    public int Items
    {
        get
        {
            lock (_gate)
            {
                return _items;
            }
        }
    }

    /// <summary>The clock's timestamp now (what every other call takes).</summary>
    public long Now => _time.GetTimestamp();

    /// <summary>Timestamps per second of the clock.</summary>
    public long TimestampFrequency => _time.TimestampFrequency;

    /// <summary>Ticks of 100 ns from the recorder's start to <paramref name="timestamp"/> (0 for a time before it).</summary>
    public long TicksOf(long timestamp) =>
        timestamp <= _startTimestamp ? 0 : (long)((timestamp - _startTimestamp) * ((double)TimeSpan.TicksPerSecond / _time.TimestampFrequency));

    /// <summary>The index of the lane with this id, made on first use.</summary>
    public int Lane(string id, string label, LaneKind kind, int parent = -1)
    {
        lock (_gate)
        {
            return _builder.Lane(id, label, kind, parent);
        }
    }

    /// <summary>The index of the lane with this id, or -1 when there is none yet.</summary>
    public int FindLane(string id)
    {
        lock (_gate)
        {
            return _builder.FindLane(id);
        }
    }

    /// <summary>A message leaves <paramref name="from"/> for <paramref name="to"/> at <paramref name="timestamp"/>; null when the cap dropped it.</summary>
    public TimelineMessage? Send(int from, int to, long timestamp, string kind, int bytes, MessageFrame? frame = null)
    {
        var ticks = TicksOf(timestamp);
        lock (_gate)
        {
            return TakeItem() ? _builder.Send(from, to, ticks, kind, bytes, frame) : null;
        }
    }

    /// <summary>
    /// Sets what a message carried once it is known (a sequence number handed out as it was sent), unless it has ended
    /// already: its end told the frame then, and that one stays.
    /// </summary>
    public void Describe(TimelineMessage? message, MessageFrame frame)
    {
        if (message is null)
        {
            return;
        }

        lock (_gate)
        {
            if (message.DeliveredTicks is null && message.LostReason is null)
            {
                message.Frame = frame;
            }
        }
    }

    /// <summary>The message arrived (with the frame it turned out to carry, when given); a second end is counted, not kept.</summary>
    public void Deliver(TimelineMessage? message, long timestamp, MessageFrame? frame = null) => End(message, timestamp, frame, lostReason: null);

    /// <summary>The message will never arrive (timed out, its connection closed); a second end is counted, not kept.</summary>
    public void Lose(TimelineMessage? message, long timestamp, string reason, MessageFrame? frame = null)
    {
        ArgumentNullException.ThrowIfNull(reason);
        End(message, timestamp, frame, reason);
    }

    /// <summary>An instant event on a lane.</summary>
    public void Instant(int lane, long timestamp, string kind, string label, IReadOnlyList<KeyValuePair<string, string>>? fields = null)
    {
        var ticks = TicksOf(timestamp);
        lock (_gate)
        {
            if (TakeItem())
            {
                _builder.Instant(lane, ticks, kind, label, fields);
            }
        }
    }

    /// <summary>A fault from <paramref name="startTimestamp"/> to <paramref name="endTimestamp"/> (equal: an instant) over <paramref name="lanes"/> (none: every lane).</summary>
    public void Fault(string kind, long startTimestamp, long endTimestamp, IReadOnlyList<int> lanes, string label)
    {
        var start = TicksOf(startTimestamp);
        var end = Math.Max(start, TicksOf(endTimestamp));
        lock (_gate)
        {
            if (TakeMark())
            {
                _builder.Fault(kind, start, end, lanes, label);
            }
        }
    }

    /// <summary>A checker's violation at <paramref name="timestamp"/>, on the lane it names (or -1).</summary>
    public void Violation(long timestamp, string checker, string message, int lane = -1)
    {
        var ticks = TicksOf(timestamp);
        lock (_gate)
        {
            if (TakeMark())
            {
                _builder.Violation(ticks, checker, message, lane);
            }
        }
    }

    /// <summary>
    /// The timeline so far, with <paramref name="meta"/> (its clock set to wall time) and, as notes, what the caps
    /// dropped; messages still open end at <paramref name="endTimestamp"/> (or at the last thing recorded).
    /// </summary>
    public Timeline Build(TimelineMeta meta, long? endTimestamp = null)
    {
        ArgumentNullException.ThrowIfNull(meta);
        lock (_gate)
        {
            var notes = new List<KeyValuePair<string, string>>(meta.Notes)
            {
                new("recorded", string.Create(CultureInfo.InvariantCulture, $"{_items} events and messages (at most {ItemsMax}); {Dropped} dropped past the cap")),
            };
            if (Interlocked.Read(ref _endedTwice) > 0)
            {
                notes.Add(new("messages ended twice", Interlocked.Read(ref _endedTwice).ToString(CultureInfo.InvariantCulture)));
            }

            _builder.Meta = meta with { Clock = "wall", Notes = notes };
            return _builder.Build(endTimestamp is { } end ? TicksOf(end) : null);
        }
    }

    private void End(TimelineMessage? message, long timestamp, MessageFrame? frame, string? lostReason)
    {
        if (message is null)
        {
            return;
        }

        var ticks = TicksOf(timestamp);
        lock (_gate)
        {
            if (EndedAlready(message))
            {
                return;
            }

            // A clock read on another thread may stand a hair before the send's: the end never precedes the start.
            var at = Math.Max(ticks, message.SentTicks);
            if (lostReason is null)
            {
                _builder.Deliver(message, at);
            }
            else
            {
                _builder.Lose(message, at, lostReason);
            }

            if (frame is not null)
            {
                message.Frame = frame;
            }
        }
    }

    private bool TakeItem()
    {
        if (_items >= ItemsMax)
        {
            Interlocked.Increment(ref _dropped);
            return false;
        }

        _items++;
        return true;
    }

    private bool TakeMark()
    {
        if (_marks >= MarksMax)
        {
            Interlocked.Increment(ref _dropped);
            return false;
        }

        _marks++;
        return true;
    }

    private bool EndedAlready(TimelineMessage message)
    {
        if (message.DeliveredTicks is null && message.LostReason is null)
        {
            return false;
        }

        // A reply racing its own timeout is the client's to settle; the page keeps the first end and says how many came twice.
        Interlocked.Increment(ref _endedTwice);
        return true;
    }
}
