using System.Buffers;
using System.Text.Json;

namespace PlayHouse.Simulation.Pages;

/// <summary>
/// Writes a <see cref="Timeline"/> as one self-contained HTML page: lanes, arrows from send to delivery, faults shaded
/// over their windows, the first violation marked and linked to its checker's message, zoom, filters and a panel with
/// the fields of a clicked event. Docs: docs/timeline.md (the page, its data layout, the figures for large traces).
/// </summary>
/// <remarks>
/// The data is columnar: one array per field, times as differences from the previous item, every text once in a
/// string table, identical field sets once. A million events then cost tens of bytes each before compression.
/// Stateless; safe from any thread.
/// </remarks>
public static class TimelinePage
{
    /// <summary>The version of the data layout the page's script reads.</summary>
    public const int DataVersion = 1;

    public static void Write(Timeline timeline, string path)
    {
        ArgumentNullException.ThrowIfNull(timeline);
        PageDocument.WriteFile(path, stream => Write(timeline, stream));
    }

    public static void Write(Timeline timeline, Stream output)
    {
        ArgumentNullException.ThrowIfNull(timeline);
        ArgumentNullException.ThrowIfNull(output);
        var json = ToJson(timeline);
        PageDocument.Write(output, timeline.Meta.Title, "timeline", json.WrittenSpan, "timeline.js");
    }

    /// <summary>The page's data as UTF-8 JSON (the layout is described in docs/timeline.md).</summary>
    public static ArrayBufferWriter<byte> ToJson(Timeline timeline)
    {
        ArgumentNullException.ThrowIfNull(timeline);
        var strings = new StringTable();
        var fieldSets = new FieldSetTable(strings);
        var buffer = new ArrayBufferWriter<byte>(1 << 16);
        using (var json = new Utf8JsonWriter(buffer))
        {
            json.WriteStartObject();
            json.WriteNumber("v", DataVersion);
            WriteMeta(json, timeline);

            json.WriteStartArray("lanes");
            foreach (var lane in timeline.Lanes)
            {
                json.WriteStartArray();
                json.WriteNumberValue(strings.Id(lane.Id));
                json.WriteNumberValue(strings.Id(lane.Label));
                json.WriteNumberValue((int)lane.Kind);
                json.WriteNumberValue(lane.Parent);
                json.WriteEndArray();
            }

            json.WriteEndArray();
            WriteEvents(json, timeline.Events, strings, fieldSets);
            WriteMessages(json, timeline.Messages, strings, fieldSets);

            json.WriteStartArray("faults");
            foreach (var fault in timeline.Faults)
            {
                json.WriteStartObject();
                json.WriteString("k", fault.Kind);
                json.WriteNumber("s", fault.StartTicks);
                json.WriteNumber("e", fault.EndTicks);
                json.WriteString("n", fault.Label);
                json.WriteStartArray("lanes");
                foreach (var lane in fault.Lanes)
                {
                    json.WriteNumberValue(lane);
                }

                json.WriteEndArray();
                json.WriteEndObject();
            }

            json.WriteEndArray();
            json.WriteStartArray("violations");
            foreach (var violation in timeline.Violations)
            {
                json.WriteStartObject();
                json.WriteNumber("t", violation.TimeTicks);
                json.WriteString("checker", violation.Checker);
                json.WriteString("msg", violation.Message);
                json.WriteNumber("lane", violation.Lane);
                json.WriteEndObject();
            }

            json.WriteEndArray();

            // Written last: every text above went into the table as it was met.
            json.WriteStartArray("fieldSets");
            foreach (var set in fieldSets.Sets)
            {
                json.WriteStartArray();
                foreach (var id in set)
                {
                    json.WriteNumberValue(id);
                }

                json.WriteEndArray();
            }

            json.WriteEndArray();
            json.WriteStartArray("strings");
            foreach (var text in strings.Texts)
            {
                json.WriteStringValue(text);
            }

            json.WriteEndArray();
            json.WriteEndObject();
        }

        return buffer;
    }

    private static void WriteMeta(Utf8JsonWriter json, Timeline timeline)
    {
        var meta = timeline.Meta;
        json.WriteStartObject("meta");
        json.WriteString("title", meta.Title);
        json.WriteString("traceHash", meta.TraceHash);
        json.WriteString("seed", meta.Seed);
        json.WriteString("replay", meta.ReplayCommand);
        json.WriteString("clock", meta.Clock);
        json.WriteStartArray("notes");
        foreach (var (key, value) in meta.Notes)
        {
            json.WriteStartArray();
            json.WriteStringValue(key);
            json.WriteStringValue(value);
            json.WriteEndArray();
        }

        json.WriteEndArray();
        json.WriteEndObject();
    }

    private static void WriteEvents(Utf8JsonWriter json, IReadOnlyList<TimelineEvent> events, StringTable strings, FieldSetTable fieldSets)
    {
        json.WriteStartObject("events");
        WriteDeltas(json, "t", events, e => e.TimeTicks);
        WriteColumn(json, "d", events, e => e.DurationTicks);
        WriteColumn(json, "l", events, e => e.Lane);
        WriteColumn(json, "k", events, e => strings.Id(e.Kind));
        WriteColumn(json, "n", events, e => strings.Id(e.Label));
        WriteColumn(json, "f", events, e => fieldSets.Id(e.Fields));
        json.WriteEndObject();
    }

    private static void WriteMessages(Utf8JsonWriter json, IReadOnlyList<TimelineMessage> messages, StringTable strings, FieldSetTable fieldSets)
    {
        json.WriteStartObject("messages");
        WriteDeltas(json, "t", messages, m => m.SentTicks);

        // Latency for a delivered message; for a lost one, minus one minus the time until it was lost.
        WriteColumn(json, "lat", messages, m => m.DeliveredTicks is { } at ? at - m.SentTicks : -1 - (m.EndTicks - m.SentTicks));
        WriteColumn(json, "a", messages, m => m.From);
        WriteColumn(json, "b", messages, m => m.To);
        WriteColumn(json, "k", messages, m => strings.Id(m.Kind));
        WriteColumn(json, "bytes", messages, m => m.Bytes);
        WriteColumn(json, "lost", messages, m => m.LostReason is null ? -1 : strings.Id(m.LostReason));
        WriteColumn(json, "id", messages, m => m.Frame is null ? -1 : strings.Id(m.Frame.MsgId));
        WriteColumn(json, "seq", messages, m => m.Frame?.MsgSeq ?? -1);
        WriteColumn(json, "st", messages, m => m.Frame?.StageId ?? -1);
        WriteColumn(json, "err", messages, m => m.Frame?.ErrorCode ?? -1);
        WriteColumn(json, "fr", messages, m => m.Frame?.Frames ?? 0);
        WriteColumn(json, "f", messages, m => fieldSets.Id(m.Frame?.Extra));
        json.WriteEndObject();
    }

    private static void WriteDeltas<T>(Utf8JsonWriter json, string name, IReadOnlyList<T> items, Func<T, long> time)
    {
        json.WriteStartArray(name);
        long previous = 0;
        foreach (var item in items)
        {
            var value = time(item);
            json.WriteNumberValue(value - previous);
            previous = value;
        }

        json.WriteEndArray();
    }

    private static void WriteColumn<T>(Utf8JsonWriter json, string name, IReadOnlyList<T> items, Func<T, long> value)
    {
        json.WriteStartArray(name);
        foreach (var item in items)
        {
            json.WriteNumberValue(value(item));
        }

        json.WriteEndArray();
    }

    /// <summary>Each distinct text once, numbered in the order first met.</summary>
    private sealed class StringTable
    {
        private readonly Dictionary<string, int> _ids = new(StringComparer.Ordinal);

        public List<string> Texts { get; } = [];

        public int Id(string text)
        {
            if (!_ids.TryGetValue(text, out var id))
            {
                id = Texts.Count;
                Texts.Add(text);
                _ids.Add(text, id);
            }

            return id;
        }
    }

    /// <summary>Each distinct list of fields once, as string ids key, value, key, value ...; -1 for none.</summary>
    private sealed class FieldSetTable(StringTable strings)
    {
        private readonly Dictionary<object, int> _byInstance = new(ReferenceEqualityComparer.Instance);
        private readonly Dictionary<string, int> _byContent = new(StringComparer.Ordinal);

        public List<int[]> Sets { get; } = [];

        public int Id(IReadOnlyList<KeyValuePair<string, string>>? fields)
        {
            if (fields is null || fields.Count == 0)
            {
                return -1;
            }

            // Sources share one list between many events, so most lookups end at the instance.
            if (_byInstance.TryGetValue(fields, out var id))
            {
                return id;
            }

            var key = string.Join('\u0001', fields.Select(f => f.Key + "\u0002" + f.Value));
            if (!_byContent.TryGetValue(key, out id))
            {
                id = Sets.Count;
                var set = new int[fields.Count * 2];
                for (var i = 0; i < fields.Count; i++)
                {
                    set[2 * i] = strings.Id(fields[i].Key);
                    set[(2 * i) + 1] = strings.Id(fields[i].Value);
                }

                Sets.Add(set);
                _byContent.Add(key, id);
            }

            _byInstance[fields] = id;
            return id;
        }
    }
}
