using System.Globalization;
using System.Text.RegularExpressions;
using PlayHouse.Core.Codec;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;
using PlayHouse.Simulation.Checkers;
using PlayHouse.Simulation.Cluster;
using PlayHouse.Simulation.Network;
using PlayHouse.Simulation.Runs;

namespace PlayHouse.Simulation.Pages;

/// <summary>
/// Turns a simulated run into a <see cref="Timeline"/>: every trace record becomes an event, a message, or the edge
/// of a fault window; the network's sends are matched to their deliveries byte for byte (each direction of a stream is
/// FIFO), and, in a live run, the frames of each send are decoded from the bytes the network carried. Plug it into a run
/// with <see cref="RunSettings.Recorder"/>, or feed it the records of a saved trace file with <see cref="OnRecord"/>
/// (the messages then show bytes without frame fields).
/// </summary>
/// <remarks>
/// Lanes: one per client, per network path (both directions of an endpoint pair), per server node and per stage (under
/// its node), and one for the run itself. A message goes from its sender's lane to the stage its frame names when that
/// stage has a lane, else to the receiving node. Not thread-safe; runs on the simulation thread.
/// </remarks>
public sealed partial class SimTimelineRecorder : IRunRecorder, ITraceListener, INetworkTap, IDisposable
{
    private const string RunLaneId = "run";

    private readonly TimelineBuilder _builder = new();
    private readonly Dictionary<long, Connection> _connections = [];
    private readonly Dictionary<long, TimelineMessage> _datagrams = [];
    private readonly Dictionary<int, OpenWindow> _partitions = [];
    private readonly Dictionary<int, OpenWindow> _stalls = [];
    private readonly Dictionary<string, OpenWindow> _crashes = new(StringComparer.Ordinal);
    private readonly Dictionary<int, Stack<int>> _openTurns = [];
    private readonly Dictionary<(string Kind, long A, long B, long C, string? Text), IReadOnlyList<KeyValuePair<string, string>>> _fieldCache = [];
    private readonly List<(TimelineMessage Message, long StageId, bool ToStage)> _stageTargets = [];
    private readonly MessagePool _pool = new();
    private readonly Utf8StringCache _msgIds = new(singleThreaded: true);
    private OpenWindow? _lossBurst;
    private SimCluster? _cluster;
    private long _lastTicks;

    /// <summary>Trace records read so far.</summary>
    public long Records { get; private set; }

    /// <summary>Messages whose frames were decoded from the bytes on the wire.</summary>
    public long DecodedMessages { get; private set; }

    void IRunRecorder.OnStart(SimCluster cluster)
    {
        _cluster = cluster;
        cluster.World.Trace.Listen(this);
        cluster.Network.Tap = this;
    }

    void IRunRecorder.OnEnd(SimCluster cluster, CheckerSet checkers)
    {
        cluster.World.Trace.Listen(null);
        cluster.Network.Tap = null;
        foreach (var violation in checkers.AllViolations)
        {
            AddViolation(violation.VirtualTime.Ticks, violation.CheckerName, violation.Message);
        }
    }

    /// <summary>Adds a broken invariant, on the lane its message names (a stage, a client or a node) when there is one.</summary>
    public void AddViolation(long timeTicks, string checker, string message)
    {
        ArgumentNullException.ThrowIfNull(checker);
        ArgumentNullException.ThrowIfNull(message);
        _builder.Violation(timeTicks, checker, message, LaneNamedIn(message));
    }

    /// <summary>
    /// The timeline so far, with what the page says about the run. Windows still open (a partition never healed, a node
    /// never restarted) end where the trace ends.
    /// </summary>
    public Timeline ToTimeline(TimelineMeta meta)
    {
        ArgumentNullException.ThrowIfNull(meta);
        var end = _lastTicks;
        foreach (var window in _partitions.Values.Concat(_stalls.Values).Concat(_crashes.Values).Append(_lossBurst).OfType<OpenWindow>())
        {
            _builder.Fault(window.Kind, window.StartTicks, Math.Max(window.StartTicks, end), window.Lanes, window.Label + " (still in force when the trace ended)");
        }

        _partitions.Clear();
        _stalls.Clear();
        _crashes.Clear();
        _lossBurst = null;
        ResolveStageTargets();
        _builder.Meta = meta;
        return _builder.Build(end);
    }

    /// <summary>A timeline page's notes for a run report: outcome, failure, options.</summary>
    public static TimelineMeta MetaOf(SimReport report, string title, string replayCommand)
    {
        ArgumentNullException.ThrowIfNull(report);
        var notes = new List<KeyValuePair<string, string>>
        {
            new("outcome", report.Outcome),
            new("scenario", report.Scenario),
            new("options", report.Banner),
        };
        if (report.Failure is { } failure)
        {
            notes.Add(new("failure", failure));
        }

        return new TimelineMeta
        {
            Title = title,
            TraceHash = report.TraceHash,
            Seed = report.Seed.ToString(CultureInfo.InvariantCulture),
            ReplayCommand = replayCommand,
            Clock = "virtual",
            Notes = notes,
        };
    }

    public void Dispose()
    {
        foreach (var connection in _connections.Values)
        {
            connection.Tap?.Dispose();
        }

        _connections.Clear();
    }

    void INetworkTap.OnStreamSend(long connectionId, ReadOnlySpan<byte> bytes)
    {
        if (_connections.TryGetValue(connectionId, out var connection) && connection.Tap is { } tap)
        {
            connection.PendingFrame = tap.Read(bytes);
        }
    }

    /// <summary>Reads one trace record (from a live run through <see cref="SimTrace.Listen"/>, or parsed from a trace file).</summary>
    public void OnRecord(in TraceRecord record)
    {
        Records++;
        var t = record.TimeTicks;
        _lastTicks = Math.Max(_lastTicks, t);
        var kind = record.Kind;
        if (kind.StartsWith("net.", StringComparison.Ordinal))
        {
            OnNetwork(record);
        }
        else if (kind.StartsWith("enter.", StringComparison.Ordinal))
        {
            var (node, msgId) = SplitTwo(record.Text);
            var lane = StageLane(node, record.A);
            var work = kind["enter.".Length..];
            var eventKind = work switch { nameof(StageWorkKind.Timer) => "timer", nameof(StageWorkKind.GameLoop) => "tick", _ => "turn" };
            var index = _builder.Instant(lane, t, eventKind, msgId is null or "-" ? work : work + " " + msgId, Fields(record, "stage", "-", "-", "node msgId"));
            (_openTurns.TryGetValue(lane, out var stack) ? stack : _openTurns[lane] = new Stack<int>()).Push(index);
        }
        else if (kind == "exit")
        {
            // The turn began with its enter record; its end makes it a span (in simulation both fall on one instant).
            var lane = StageLane(record.Text ?? "?", record.A);
            if (_openTurns.TryGetValue(lane, out var stack) && stack.Count > 0)
            {
                _builder.EndSpan(stack.Pop(), t);
            }
            else
            {
                _builder.Instant(lane, t, "turn", "exit without enter", Fields(record, "stage", "-", "-", "node"));
            }
        }
        else if (kind.StartsWith("lifecycle.", StringComparison.Ordinal))
        {
            var lane = StageLane(record.Text ?? "?", record.A);
            _builder.Instant(lane, t, "lifecycle", kind["lifecycle.".Length..] + (record.B != 0 ? $" actor #{record.B}" : string.Empty), Fields(record, "stage", "actor", "account", "node"));
        }
        else if (kind == "request.issued")
        {
            var (node, rest) = SplitTwo(record.Text);
            _builder.Instant(NodeLane(node), t, "request", $"request #{record.A} to {rest}", Fields(record, "seq", "targetStage", "-", "node target msgId"));
        }
        else if (kind.StartsWith("request.", StringComparison.Ordinal))
        {
            var (node, _) = SplitTwo(record.Text);
            _builder.Instant(NodeLane(node), t, "request", $"#{record.A} {kind["request.".Length..]}", Fields(record, "seq", "error", "-", "node target"));
        }
        else if (kind == "drop")
        {
            var (node, rest) = SplitTwo(record.Text);
            _builder.Instant(NodeLane(node), t, "drop", "drop " + rest, Fields(record, "-", "-", "-", "node reason msgId"));
        }
        else if (kind is "fault" or "fault.end")
        {
            OnFault(record, ending: kind == "fault.end");
        }
        else if (kind is "node.crash" or "node.restart")
        {
            OnNode(record, crashed: kind == "node.crash");
        }
        else if (kind == "flaws")
        {
            _builder.Instant(RunLane(), t, "config", "flaws " + record.Text, Fields(record, "-", "-", "-", "flaws"));
        }
        else
        {
            // A scenario's own records, and any kind added later: on the node the text names, else on the run's lane.
            var (first, _) = SplitTwo(record.Text);
            var lane = first is not null && _builder.FindLane(first) is var found and >= 0 ? found : RunLane();
            _builder.Instant(lane, t, "other", kind, Fields(record, "a", "b", "c", "text"));
        }
    }

    private void OnFault(in TraceRecord record, bool ending)
    {
        var t = record.TimeTicks;
        var kind = (FaultKind)record.A;
        var step = record.Text ?? kind.ToString();
        _builder.Instant(RunLane(), t, "fault", (ending ? "end of " : "fault ") + step, Fields(record, "kind", "-", "-", "step"));
        switch (kind)
        {
            case FaultKind.LossBurst when !ending:
                _lossBurst ??= new OpenWindow("loss", t, [], "loss burst " + step);
                break;
            case FaultKind.LossBurst:
                if (_lossBurst is { } burst)
                {
                    _builder.Fault(burst.Kind, burst.StartTicks, t, burst.Lanes, burst.Label);
                    _lossBurst = null;
                }

                break;
            case FaultKind.Heal:
                // The network's own heal records close each path's window; this is the step that asked for it.
                _builder.Fault("heal", t, t, [], step);
                break;
            case FaultKind.Disconnect:
                {
                    var target = StepTarget(step);
                    var lanes = _builder.LaneCount == 0 ? [] : ClientLanes(target);
                    _builder.Fault("reset", t, t, lanes, "disconnect " + step);
                    break;
                }

            case FaultKind.LatencyChange:
                _builder.Fault("latency", t, t, [], "latency change " + step);
                break;
            default:
                // Partitions, clogs, crashes and restarts draw their windows from the records that carry them out.
                break;
        }
    }

    private void OnNode(in TraceRecord record, bool crashed)
    {
        var t = record.TimeTicks;
        var node = record.Text ?? "?";
        var lane = NodeLane(node);
        _builder.Instant(lane, t, "fault", (crashed ? "crash " : "restart ") + node, Fields(record, "incarnation", "-", "-", "node"));
        if (crashed)
        {
            _crashes.TryAdd(node, new OpenWindow("crash", t, [lane], $"{node} crashed"));
        }
        else if (_crashes.Remove(node, out var window))
        {
            _builder.Fault(window.Kind, window.StartTicks, t, window.Lanes, window.Label + ", then restarted");
        }
    }

    /// <summary>Points each client message at the stage its frame names (and each reply away from it), where that stage has a lane.</summary>
    private void ResolveStageTargets()
    {
        foreach (var (message, stageId, toStage) in _stageTargets)
        {
            var node = _builder.LaneAt(toStage ? message.To : message.From).Id;
            var stage = _builder.FindLane(StageLaneId(node, stageId));
            if (stage < 0)
            {
                continue;
            }

            _builder.Reroute(message, toStage ? message.From : stage, toStage ? stage : message.To);
        }

        _stageTargets.Clear();
    }

    /// <summary>The lane of an endpoint: a client's own, or the node behind "play:", "ws:" and "mesh:" endpoints.</summary>
    private int EndpointLane(string endpoint)
    {
        var colon = endpoint.IndexOf(':', StringComparison.Ordinal);
        if (colon < 0)
        {
            return endpoint.StartsWith("client", StringComparison.Ordinal)
                ? _builder.Lane(endpoint, endpoint, LaneKind.Client)
                : NodeLane(endpoint);
        }

        return NodeLane(endpoint[(colon + 1)..]);
    }

    private int PathLane(string a, string b)
    {
        var x = ShortName(a);
        var y = ShortName(b);
        if (string.CompareOrdinal(x, y) > 0)
        {
            (x, y) = (y, x);
        }

        var id = $"path {x} <-> {y}";
        return _builder.Lane(id, $"{x} <-> {y}", LaneKind.Path);
    }

    private static string ShortName(string endpoint)
    {
        var colon = endpoint.IndexOf(':', StringComparison.Ordinal);
        return colon < 0 ? endpoint : endpoint[(colon + 1)..];
    }

    private int NodeLane(string? node)
    {
        node ??= "?";
        return node.StartsWith("client", StringComparison.Ordinal)
            ? _builder.Lane(node, node, LaneKind.Client)
            : _builder.Lane(node, node, LaneKind.Server);
    }

    private int StageLane(string? node, long stageId)
    {
        node ??= "?";
        var parent = NodeLane(node);
        var id = StageLaneId(node, stageId);
        return _builder.Lane(id, $"{node} stage {stageId.ToString(CultureInfo.InvariantCulture)}", LaneKind.Stage, parent);
    }

    private static string StageLaneId(string node, long stageId) => node + "/" + stageId.ToString(CultureInfo.InvariantCulture);

    private int RunLane() => _builder.Lane(RunLaneId, "run", LaneKind.Other);

    private int[] ClientLanes(string target)
    {
        if (target is "all" or "")
        {
            return [.. Enumerable.Range(0, _builder.LaneCount).Where(i => _builder.LaneAt(i).Kind == LaneKind.Client)];
        }

        var lane = _builder.FindLane("client-" + target);
        return lane < 0 ? [] : [lane];
    }

    /// <summary>The lane a checker's message names: "stage node/id", "client N" or "node X", else -1.</summary>
    private int LaneNamedIn(string message)
    {
        var stage = StagePattern().Match(message);
        if (stage.Success && _builder.FindLane(stage.Groups[1].Value + "/" + stage.Groups[2].Value) is var s and >= 0)
        {
            return s;
        }

        var client = ClientPattern().Match(message);
        if (client.Success)
        {
            var id = client.Groups[1].Value;
            var lane = _builder.FindLane(id.StartsWith("client", StringComparison.Ordinal) ? id : "client-" + id);
            if (lane >= 0)
            {
                return lane;
            }
        }

        var node = NodePattern().Match(message);
        return node.Success ? _builder.FindLane(node.Groups[1].Value) : -1;
    }

    [GeneratedRegex(@"stage ([A-Za-z0-9_.:-]+)/(\d+)")]
    private static partial Regex StagePattern();

    [GeneratedRegex(@"client (client-\d+|\d+)")]
    private static partial Regex ClientPattern();

    [GeneratedRegex(@"(?:node |^)([A-Za-z]+-\d+)")]
    private static partial Regex NodePattern();

    private static string StepTarget(string step)
    {
        // "1200ms:disconnect:3::0:0ms": the target is the third field.
        var fields = step.Split(':');
        return fields.Length > 2 ? fields[2] : string.Empty;
    }

    private static (string From, string To) Route(string? text)
    {
        var route = text ?? "?->?";
        var space = route.IndexOf(' ', StringComparison.Ordinal);
        if (space >= 0)
        {
            route = route[..space];
        }

        var arrow = route.IndexOf("->", StringComparison.Ordinal);
        return arrow < 0 ? (route, "?") : (route[..arrow], route[(arrow + 2)..]);
    }

    private static (string? Head, string? Tail) SplitTwo(string? text)
    {
        if (text is null)
        {
            return (null, null);
        }

        var space = text.IndexOf(' ', StringComparison.Ordinal);
        return space < 0 ? (text, null) : (text[..space], text[(space + 1)..]);
    }

    /// <summary>
    /// The fields shown for a record: its numbers under the given names ("-" leaves one out) and its text split into
    /// the named words (the last takes the rest). Records repeat, so the lists are shared.
    /// </summary>
    private IReadOnlyList<KeyValuePair<string, string>> Fields(in TraceRecord record, string a, string b, string c, string textNames)
    {
        var key = (record.Kind, record.A, record.B, record.C, record.Text);
        if (_fieldCache.TryGetValue(key, out var cached))
        {
            return cached;
        }

        var fields = new List<KeyValuePair<string, string>> { new("kind", record.Kind) };
        void Number(string name, long value)
        {
            if (name != "-")
            {
                fields.Add(new(name, value.ToString(CultureInfo.InvariantCulture)));
            }
        }

        Number(a, record.A);
        Number(b, record.B);
        Number(c, record.C);
        if (record.Text is { } text)
        {
            var names = textNames.Split(' ');
            var words = text.Split(' ', names.Length);
            for (var i = 0; i < words.Length; i++)
            {
                fields.Add(new(names[Math.Min(i, names.Length - 1)], words[i]));
            }
        }

        // Bounded: past this many distinct records, lists are made afresh instead of kept.
        if (_fieldCache.Count < 1 << 16)
        {
            _fieldCache.Add(key, fields);
        }

        return fields;
    }

    private sealed record OpenWindow(string Kind, long StartTicks, IReadOnlyList<int> Lanes, string Label);
}
