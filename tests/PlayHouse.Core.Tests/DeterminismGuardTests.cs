using System.Text.RegularExpressions;

namespace PlayHouse.Core.Tests;

/// <summary>
/// The source-level half of the determinism guard (the banned-API analyzer is the build-level half): no
/// file under src/ or simulation/ reads the wall clock, unseeded randomness or the ThreadPool, except inside
/// an explicit RS0030 suppression, and every such suppression carries its reason.
/// </summary>
public sealed partial class DeterminismGuardTests
{
    [Fact]
    public void SourcesOutsideSeams_UseNoBannedApi()
    {
        var root = FindRepositoryRoot();
        var violations = new List<string>();
        foreach (var file in GuardedSources(root))
        {
            var suppressed = false;
            var lines = File.ReadAllLines(file);
            for (var i = 0; i < lines.Length; i++)
            {
                var line = lines[i];
                if (line.Contains("#pragma warning disable RS0030", StringComparison.Ordinal))
                {
                    suppressed = true;
                    continue;
                }

                if (line.Contains("#pragma warning restore RS0030", StringComparison.Ordinal))
                {
                    suppressed = false;
                    continue;
                }

                if (!suppressed && !line.TrimStart().StartsWith("//", StringComparison.Ordinal) && BannedPattern().IsMatch(line))
                {
                    violations.Add($"{Path.GetRelativePath(root, file)}:{i + 1}: {line.Trim()}");
                }
            }
        }

        Assert.True(violations.Count == 0, "Nondeterminism outside a seam:\n" + string.Join('\n', violations));
    }

    [Fact]
    public void EverySuppression_SaysWhy()
    {
        var root = FindRepositoryRoot();
        var bare = GuardedSources(root)
            .SelectMany(f => File.ReadAllLines(f).Select((l, i) => (File: f, Line: l, Number: i + 1)))
            .Where(x => x.Line.Contains("#pragma warning disable RS0030", StringComparison.Ordinal) && !x.Line.Contains("//", StringComparison.Ordinal))
            .Select(x => $"{Path.GetRelativePath(root, x.File)}:{x.Number}")
            .ToList();

        Assert.Empty(bare);
        Assert.NotEmpty(GuardedSources(root));
    }

    [Fact]
    public void GuardedFolders_ImportTheBannedApiAnalyzer()
    {
        var root = FindRepositoryRoot();
        foreach (var folder in new[] { "src", "simulation" })
        {
            var props = File.ReadAllText(Path.Combine(root, folder, "Directory.Build.props"));
            Assert.Contains("Microsoft.CodeAnalysis.BannedApiAnalyzers", props, StringComparison.Ordinal);
            Assert.Contains("BannedSymbols.txt", props, StringComparison.Ordinal);
        }

        var banned = File.ReadAllText(Path.Combine(root, "BannedSymbols.txt"));
        foreach (var symbol in new[] { "System.DateTime.UtcNow", "System.Diagnostics.Stopwatch", "System.Random.Shared", "System.Guid.NewGuid", "System.Threading.ThreadPool", "Task.Run", "Thread.Sleep", "Task.Delay(System.TimeSpan)" })
        {
            Assert.Contains(symbol, banned, StringComparison.Ordinal);
        }
    }

    private static List<string> GuardedSources(string root) =>
        [.. new[] { "src", "simulation" }
            .Select(d => Path.Combine(root, d))
            .Where(Directory.Exists)
            .SelectMany(d => Directory.EnumerateFiles(d, "*.cs", SearchOption.AllDirectories))
            .Where(f => !f.Contains($"{Path.DirectorySeparatorChar}obj{Path.DirectorySeparatorChar}", StringComparison.Ordinal)
                && !f.Contains($"{Path.DirectorySeparatorChar}bin{Path.DirectorySeparatorChar}", StringComparison.Ordinal))
            .Order(StringComparer.Ordinal)];

    internal static string FindRepositoryRoot()
    {
        var dir = new DirectoryInfo(AppContext.BaseDirectory);
        while (dir is not null && !File.Exists(Path.Combine(dir.FullName, "PlayHouse.Sim.sln")))
        {
            dir = dir.Parent;
        }

        return dir?.FullName ?? throw new InvalidOperationException($"PlayHouse.Sim.sln not found above {AppContext.BaseDirectory}.");
    }

    [GeneratedRegex(@"DateTime(Offset)?\.(Utc)?Now|\bStopwatch\b|Environment\.TickCount|Random\.Shared|new Random\(\)|Guid\.NewGuid|Task\.Run\(|ThreadPool\.|Thread\.Sleep|Task\.Delay\([^,)]*\)|RandomNumberGenerator\.|TimeProvider\.System")]
    private static partial Regex BannedPattern();
}
