using System.Globalization;

namespace PlayHouse.Properties.Tests.Infrastructure;

/// <summary>
/// How many cases a property runs. The default keeps the whole project within the CI budget; the environment
/// variable <c>PLAYHOUSE_SIM_DEEP=1</c> multiplies every count by <see cref="DeepFactor"/> (the properties carry the
/// trait <c>Category=Deep</c>, so <c>dotnet test --filter Category=Deep</c> runs just them). The same test runs at
/// either depth: at normal depth it still checks its invariant over every case it generates.
/// </summary>
public static class PropertyDepth
{
    public const string DeepVariable = "PLAYHOUSE_SIM_DEEP";

    /// <summary>Replays one FsCheck run: <c>PLAYHOUSE_SIM_REPLAY="seed,gamma"</c> as printed by a failure.</summary>
    public const string ReplayVariable = "PLAYHOUSE_SIM_REPLAY";

    public const int DeepFactor = 100;

    public static bool IsDeep { get; } = Environment.GetEnvironmentVariable(DeepVariable) is "1" or "true" or "TRUE" or "True";

    /// <summary>The case count at the current depth.</summary>
    public static int Cases(int normal) => IsDeep ? normal * DeepFactor : normal;

    /// <summary>The FsCheck seed and gamma to replay, when <see cref="ReplayVariable"/> names one.</summary>
    public static (ulong Seed, ulong Gamma)? ReplayFromEnvironment()
    {
        var text = Environment.GetEnvironmentVariable(ReplayVariable);
        if (string.IsNullOrWhiteSpace(text))
        {
            return null;
        }

        var parts = text.Trim().Trim('(', ')').Split(',', StringSplitOptions.TrimEntries);
        if (parts.Length != 2
            || !ulong.TryParse(parts[0], NumberStyles.None, CultureInfo.InvariantCulture, out var seed)
            || !ulong.TryParse(parts[1], NumberStyles.None, CultureInfo.InvariantCulture, out var gamma))
        {
            throw new FormatException($"{ReplayVariable}='{text}' is not 'seed,gamma' as a failure prints it.");
        }

        return (seed, gamma);
    }
}
