using System.Reflection;
using PlayHouse.Fixtures.Scenarios;
using PlayHouse.Fixtures.Zoo;
using PlayHouse.Simulation.Runs;

namespace PlayHouse.Sim.Cli;

/// <summary>Bad input from the user: reported as one line and exit code <see cref="SimCli.UsageErrorExitCode"/>, never as a stack trace.</summary>
internal sealed class UsageException : Exception
{
    public UsageException()
    {
    }

    public UsageException(string message)
        : base(message)
    {
    }

    public UsageException(string message, Exception innerException)
        : base(message, innerException)
    {
    }
}

/// <summary>Turns the user's scenario name and <c>--set key=value</c> pairs into a scenario and its options.</summary>
internal static class CliInputs
{
    private static readonly string[] OptionKeys = [.. new SimOptions().ToKeyValues().Select(kv => kv.Key).Where(k => k != "scenario")];

    public static string ScenarioList => string.Join(", ", ScenarioCatalog.Names);

    public static string OptionKeyList => string.Join(", ", OptionKeys);

    /// <summary>A fresh scenario instance (one per run), or a usage error naming the scenarios.</summary>
    public static IScenario CreateScenario(string? name)
    {
        if (string.IsNullOrWhiteSpace(name))
        {
            throw new UsageException($"--scenario is required. Scenarios: {ScenarioList}.");
        }

        if (!ScenarioCatalog.Names.Contains(name, StringComparer.Ordinal))
        {
            throw new UsageException($"Unknown scenario '{name}'. Scenarios: {ScenarioList}.");
        }

        return ScenarioCatalog.Create(name);
    }

    /// <summary>Applies <c>key=value</c> overrides to a scenario's defaults; every mistake is a usage error naming the valid choices.</summary>
    public static SimOptions ApplySets(SimOptions defaults, IReadOnlyList<string>? sets)
    {
        ArgumentNullException.ThrowIfNull(defaults);
        var pairs = new List<KeyValuePair<string, string>>();
        foreach (var set in sets ?? [])
        {
            var eq = set.IndexOf('=', StringComparison.Ordinal);
            if (eq <= 0)
            {
                throw new UsageException($"--set expects key=value, got '{set}'. Keys: {OptionKeyList}.");
            }

            var key = set[..eq].Trim();
            var value = set[(eq + 1)..].Trim();
            if (string.Equals(key, "scenario", StringComparison.OrdinalIgnoreCase))
            {
                throw new UsageException($"Choose the scenario with --scenario, not --set scenario=. Scenarios: {ScenarioList}.");
            }

            if (!OptionKeys.Contains(key, StringComparer.OrdinalIgnoreCase))
            {
                throw new UsageException($"Unknown option '{key}'. Options: {OptionKeyList}.");
            }

            pairs.Add(new(key, value));
        }

        try
        {
            return defaults.With(pairs);
        }
        catch (ArgumentException ex)
        {
            throw new UsageException(OneLine(ex.Message) + ExpectedHint(ex.Message), ex);
        }
    }

    /// <summary>
    /// Checks the flaws named by <c>--flaw</c> and by <c>--set flaws=</c> and puts them in catalogue order; an unknown id
    /// is a usage error listing the known ones.
    /// </summary>
    public static SimOptions ApplyFlaws(SimOptions options, IReadOnlyList<string>? flaws)
    {
        ArgumentNullException.ThrowIfNull(options);
        try
        {
            return options with { Flaws = FlawRegistry.Normalize([.. options.FlawIds, .. flaws ?? []]) };
        }
        catch (ArgumentException ex)
        {
            throw new UsageException(OneLine(ex.Message), ex);
        }
    }

    public static string OneLine(string text) => text.ReplaceLineEndings(" ").Trim();

    private static string ExpectedHint(string message)
    {
        // SimOptions.With reports a value it cannot parse as "Option 'key' cannot take the value ...": add what it takes.
        const string Marker = "Option '";
        if (!message.StartsWith(Marker, StringComparison.Ordinal))
        {
            return string.Empty;
        }

        var end = message.IndexOf('\'', Marker.Length);
        var key = end > Marker.Length ? message[Marker.Length..end] : string.Empty;
        var property = typeof(SimOptions).GetProperties(BindingFlags.Public | BindingFlags.Instance)
            .FirstOrDefault(p => string.Equals(p.Name, key, StringComparison.OrdinalIgnoreCase));
        return property is null ? string.Empty : $" Expected {Describe(property.PropertyType)}.";
    }

    private static string Describe(Type type) => type switch
    {
        _ when type.IsEnum => "one of: " + string.Join(", ", Enum.GetNames(type)),
        _ when type == typeof(bool) => "true or false",
        _ when type == typeof(int) || type == typeof(long) => "an integer",
        _ when type == typeof(double) => "a number",
        _ when type == typeof(FaultPlan) => "a fault plan: none, or steps 'at:kind[:target:other:value:duration]' joined by ';' with kinds " + string.Join(", ", Enum.GetNames<FaultKind>()),
        _ => "a " + type.Name,
    };
}
