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

    Crash,
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
            if (fields.Length is not (2 or 6))
            {
                throw new FormatException($"Fault step '{part}' must be 'at:kind' or 'at:kind:target:other:value:duration'.");
            }

            if (!Enum.TryParse<FaultKind>(fields[1], ignoreCase: true, out var kind))
            {
                throw new FormatException($"Unknown fault kind '{fields[1]}' in '{part}'; kinds: {string.Join(", ", Enum.GetNames<FaultKind>())}.");
            }

            var at = ParseMs(fields[0], part);
            steps.Add(fields.Length == 2
                ? new FaultStep(at, kind)
                : new FaultStep(at, kind, fields[2], fields[3], double.Parse(fields[4], CultureInfo.InvariantCulture), ParseMs(fields[5], part)));
        }

        return new FaultPlan([.. steps.OrderBy(s => s.At)]);
    }

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
