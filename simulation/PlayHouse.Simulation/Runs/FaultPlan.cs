using System.Globalization;
using System.Text;

namespace PlayHouse.Simulation.Runs;

/// <summary>The kinds of fault step a plan can hold.</summary>
public enum FaultKind
{
    /// <summary>Sets the mean one-way latency of every path to <see cref="FaultStep.Value"/> ms.</summary>
    LatencyChange,

    /// <summary>Sets loss to <see cref="FaultStep.Value"/> percent for <see cref="FaultStep.Duration"/>.</summary>
    LossBurst,

    /// <summary>Cuts the mesh between two nodes (or a node and everyone when Other is empty), both ways.</summary>
    Partition,

    /// <summary>Heals every partition and clog.</summary>
    Heal,

    /// <summary>Breaks a client's connection (Target = client index, 1-based, or "all").</summary>
    Disconnect,

    /// <summary>Reconnects a disconnected client, which authenticates again.</summary>
    Reconnect,

    /// <summary>Crashes a node (Target = node id): its stages, sessions and mesh links are gone at once, nothing is drained.</summary>
    Crash,

    /// <summary>Starts a fresh, empty incarnation of a crashed node (Target = node id).</summary>
    Restart,

    /// <summary>Holds all mesh traffic between two nodes for <see cref="FaultStep.Duration"/>.</summary>
    Clog,
}

/// <summary>One timed step of a fault plan.</summary>
public sealed record FaultStep(TimeSpan At, FaultKind Kind, string Target = "", string Other = "", double Value = 0, TimeSpan Duration = default)
{
    /// <summary>The canonical text form, parsed back by <see cref="FaultPlan.Parse"/>.</summary>
    public override string ToString()
    {
        var text = new StringBuilder()
            .Append(((long)At.TotalMilliseconds).ToString(CultureInfo.InvariantCulture)).Append("ms:")
            .Append(Kind.ToString().ToLowerInvariant());
        if (Target.Length > 0 || Other.Length > 0 || Value != 0 || Duration != default)
        {
            text.Append(':').Append(Target).Append(':').Append(Other)
                .Append(':').Append(Value.ToString(CultureInfo.InvariantCulture))
                .Append(':').Append(((long)Duration.TotalMilliseconds).ToString(CultureInfo.InvariantCulture)).Append("ms");
        }

        return text.ToString();
    }
}

/// <summary>
/// A fault plan as data: timed steps that a run applies at their virtual instants, that a swarm draws at random,
/// and that property tests generate and shrink. The text form is <c>at:kind[:target:other:value:duration]</c>
/// steps joined by ';', e.g. <c>2000ms:partition:play-1:api-1;5000ms:heal</c>.
/// </summary>
public sealed record FaultPlan(IReadOnlyList<FaultStep> Steps)
{
    public static FaultPlan None { get; } = new([]);

    public bool IsEmpty => Steps.Count == 0;

    /// <summary>The virtual instant after which no fault is active any more (the last heal, restart or end of a burst).</summary>
    public TimeSpan HealedAt => Steps.Count == 0 ? TimeSpan.Zero : Steps.Max(s => s.At + s.Duration);

    public override string ToString() => Steps.Count == 0 ? "none" : string.Join(';', Steps.Select(s => s.ToString()));

    public static FaultPlan Parse(string text)
    {
        ArgumentNullException.ThrowIfNull(text);
        if (text.Length == 0 || text == "none")
        {
            return None;
        }

        var steps = new List<FaultStep>();
        foreach (var part in text.Split(';', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries))
        {
            var fields = part.Split(':');
            if (fields.Length is < 2 or > 6)
            {
                throw new FormatException($"Fault step '{part}' must be 'at:kind' followed by up to four optional fields ':target:other:value:duration'.");
            }

            if (!Enum.TryParse<FaultKind>(fields[1], ignoreCase: true, out var kind))
            {
                throw new FormatException($"Unknown fault kind '{fields[1]}' in '{part}'; kinds: {string.Join(", ", Enum.GetNames<FaultKind>())}.");
            }

            var at = ParseMs(fields[0], part);
            // Trailing fields are optional, so '900ms:restart:play-1' needs no empty placeholders.
            var target = fields.Length > 2 ? fields[2] : "";
            var other = fields.Length > 3 ? fields[3] : "";
            var value = fields.Length > 4 && fields[4].Length > 0 ? ParseValue(fields[4], part) : 0;
            var duration = fields.Length > 5 && fields[5].Length > 0 ? ParseMs(fields[5], part) : TimeSpan.Zero;
            steps.Add(new FaultStep(at, kind, target, other, value, duration));
        }

        return new FaultPlan([.. steps.OrderBy(s => s.At)]);
    }

    private static double ParseValue(string text, string part) =>
        double.TryParse(text, NumberStyles.Float, CultureInfo.InvariantCulture, out var value) && double.IsFinite(value)
            ? value
            : throw new FormatException($"Bad value '{text}' in fault step '{part}'; write a number like 25 or 0.5.");

    private static TimeSpan ParseMs(string text, string part)
    {
        var digits = text.EndsWith("ms", StringComparison.Ordinal) ? text[..^2] : text;
        if (!long.TryParse(digits, NumberStyles.Integer, CultureInfo.InvariantCulture, out var ms) || ms < 0)
        {
            throw new FormatException($"Bad time '{text}' in fault step '{part}'; write milliseconds like 2500ms.");
        }

        return TimeSpan.FromMilliseconds(ms);
    }
}
