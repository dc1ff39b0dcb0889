using System.Globalization;
using FsCheck;
using FsCheck.Fluent;
using PlayHouse.Simulation.Runs;

namespace PlayHouse.Sample.Game.Tests;

/// <summary>
/// One generated run of the game: the seed, how many pairs play, the turn timer, how long players think, and the
/// network. It prints as one line (<see cref="ToString"/>) that <see cref="Parse"/> reads back, which is how a
/// failure is replayed: <c>SAMPLE_GAME_CASE="..." dotnet test ...</c>.
/// </summary>
public sealed record GameCase
{
    /// <summary>The environment variable the replay test reads a printed case from.</summary>
    public const string ReplayVariable = "SAMPLE_GAME_CASE";

    public ulong Seed { get; init; } = 1;

    public int Pairs { get; init; } = 2;

    public int TurnTimeMs { get; init; } = 500;

    public int ThinkMsMax { get; init; } = 300;

    public int LatencyMsMax { get; init; } = 80;

    public int LossPercent { get; init; }

    public PlantedBug Bug { get; init; }

    public GameOptions Game => new() { TurnTimeMs = TurnTimeMs, ThinkMsMax = ThinkMsMax, Bug = Bug };

    public SimOptions Options => new TurnGameScenario().Defaults with
    {
        Clients = Pairs * 2,
        LatencyMsMin = 0,
        LatencyMsMean = LatencyMsMax / 2.0,
        LatencyMsMax = LatencyMsMax,
        LossPercent = LossPercent,
    };

    /// <summary>Runs the case: a fresh scenario, a fresh world from the seed.</summary>
    public (SimReport Report, TurnGameScenario Scenario) Run()
    {
        var scenario = new TurnGameScenario(Game);
        return (SimRunner.Run(scenario, Seed, Options), scenario);
    }

    /// <summary>The command that replays this case from its test.</summary>
    public string ReplayCommand => $"{ReplayVariable}=\"{this}\" dotnet test tests/PlayHouse.Sample.Game.Tests -c Release --filter \"FullyQualifiedName~PrintedCase\"";

    public override string ToString() => string.Create(
        CultureInfo.InvariantCulture,
        $"seed={Seed} pairs={Pairs} turnTimeMs={TurnTimeMs} thinkMsMax={ThinkMsMax} latencyMsMax={LatencyMsMax} lossPercent={LossPercent} bug={Bug}");

    /// <summary>Reads a case as <see cref="ToString"/> prints it.</summary>
    public static GameCase Parse(string text)
    {
        ArgumentNullException.ThrowIfNull(text);
        var result = new GameCase();
        foreach (var pair in text.Split(' ', StringSplitOptions.RemoveEmptyEntries))
        {
            var parts = pair.Split('=', 2);
            var value = parts.Length == 2 ? parts[1] : throw new FormatException($"'{pair}' is not key=value in '{text}'.");
            result = parts[0] switch
            {
                "seed" => result with { Seed = ulong.Parse(value, CultureInfo.InvariantCulture) },
                "pairs" => result with { Pairs = int.Parse(value, CultureInfo.InvariantCulture) },
                "turnTimeMs" => result with { TurnTimeMs = int.Parse(value, CultureInfo.InvariantCulture) },
                "thinkMsMax" => result with { ThinkMsMax = int.Parse(value, CultureInfo.InvariantCulture) },
                "latencyMsMax" => result with { LatencyMsMax = int.Parse(value, CultureInfo.InvariantCulture) },
                "lossPercent" => result with { LossPercent = int.Parse(value, CultureInfo.InvariantCulture) },
                "bug" => result with { Bug = Enum.Parse<PlantedBug>(value) },
                _ => throw new FormatException($"Unknown key '{parts[0]}' in '{text}'; keys: seed, pairs, turnTimeMs, thinkMsMax, latencyMsMax, lossPercent, bug."),
            };
        }

        return result;
    }
}

/// <summary>The arbitrary type a <c>[Property(Arbitrary = [typeof(GameCases)])]</c> registers: cases of the correct game.</summary>
public static class GameCases
{
    public static Arbitrary<GameCase> Cases() => GameCaseGen.Of(PlantedBug.None);
}

/// <summary>Generates and shrinks <see cref="GameCase"/>s.</summary>
public static class GameCaseGen
{
    /// <summary>Cases of a game built with <paramref name="bug"/> (never shrunk away: it is the game under test).</summary>
    public static Arbitrary<GameCase> Of(PlantedBug bug) => Arb.From(Cases(bug), Shrink);

    // Players mostly answer within three quarters of the turn, so a move misses its turn only when the network is
    // slow as well (latency, or a lost segment's retransmission): late moves happen, but not in every run.
    private static Gen<GameCase> Cases(PlantedBug bug) =>
        from seed in Gen.Choose(1, int.MaxValue)
        from pairs in Gen.Choose(1, 4)
        from turnTimeMs in Gen.Choose(100, 1_000)
        from thinkMsMax in Gen.Choose(0, turnTimeMs * 3 / 4)
        from latencyMsMax in Gen.Choose(1, 100)
        from lossPercent in Gen.Frequency((3, Gen.Constant(0)), (1, Gen.Choose(1, 5)))
        select new GameCase { Seed = (ulong)seed, Pairs = pairs, TurnTimeMs = turnTimeMs, ThinkMsMax = thinkMsMax, LatencyMsMax = latencyMsMax, LossPercent = lossPercent, Bug = bug };

    /// <summary>Smaller cases: fewer pairs, a calmer network, then halved times. The seed stays (another seed is another run).</summary>
    public static IEnumerable<GameCase> Shrink(GameCase c)
    {
        ArgumentNullException.ThrowIfNull(c);
        if (c.Pairs > 1)
        {
            yield return c with { Pairs = 1 };
            yield return c with { Pairs = c.Pairs - 1 };
        }

        if (c.LossPercent > 0)
        {
            yield return c with { LossPercent = 0 };
        }

        if (c.LatencyMsMax > 1)
        {
            yield return c with { LatencyMsMax = c.LatencyMsMax / 2 };
        }

        if (c.ThinkMsMax > 0)
        {
            yield return c with { ThinkMsMax = c.ThinkMsMax / 2 };
        }

        if (c.TurnTimeMs > 100)
        {
            yield return c with { TurnTimeMs = Math.Max(100, c.TurnTimeMs / 2) };
        }
    }
}
