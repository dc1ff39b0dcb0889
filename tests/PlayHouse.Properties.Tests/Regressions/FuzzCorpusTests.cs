using PlayHouse.Fixtures.Flawed.Pools;
using PlayHouse.Fixtures.Fuzzing;
using PlayHouse.Fixtures.Fuzzing.Pool;
using PlayHouse.Properties.Tests.Infrastructure;
using Shouldly;
using Xunit.Abstractions;

namespace PlayHouse.Properties.Tests.Regressions;

/// <summary>
/// Replays the committed fuzz corpora (fixtures/corpus/TARGET, minimised by afl-cmin) and every past failure
/// (fixtures/corpus/regressions/TARGET) through the same targets afl++ runs, so each run of the tests re-checks what
/// coverage-guided fuzzing once reached, without afl++.
/// </summary>
public sealed class FuzzCorpusTests(ITestOutputHelper output)
{
    public static TheoryData<string> Targets { get; } = [.. FuzzTargets.Names];

    [Theory]
    [MemberData(nameof(Targets))]
    public void Corpus_EveryFileAndPastFailure_PassesItsTarget(string target)
    {
        var files = Files(target);
        files.Count.ShouldBeGreaterThan(0, $"no corpus for {target} under fixtures/corpus");
        var fuzzTarget = FuzzTargets.Find(target)!;
        var failures = new List<string>();
        foreach (var file in files)
        {
            try
            {
                fuzzTarget(File.ReadAllBytes(file));
            }
            catch (Exception ex)
            {
                failures.Add($"{Path.GetRelativePath(RepositoryRoot.Path, file)}: {ex.GetType().Name}: {ex.Message}");
            }
        }

        output.WriteLine($"{target}: {files.Count} file(s) replayed");
        failures.ShouldBeEmpty();
    }

    [Theory]
    [MemberData(nameof(FlawNames))]
    public void PoolCorpus_ReplayedAgainstAFlawedPool_Fails(string flaw)
    {
        // The replay must be able to fail: the same files against each flawed pool break at least one check.
        var factory = FlawedPools.Find(flaw)!;
        var files = Files("pool");
        var firstFailing = files.FirstOrDefault(file =>
        {
            try
            {
                PoolInterpreter.Run(PoolProgram.Decode(File.ReadAllBytes(file)), factory);
                return false;
            }
            catch (FuzzViolationException)
            {
                return true;
            }
        });

        output.WriteLine($"{flaw}: first failing pool corpus file {firstFailing ?? "none"} of {files.Count}");
        firstFailing.ShouldNotBeNull();
    }

    public static TheoryData<string> FlawNames { get; } = [.. FlawedPools.FlawNames];

    private static List<string> Files(string target)
    {
        var files = new List<string>();
        foreach (var folder in new[] { Path.Combine("fixtures", "corpus", target), Path.Combine("fixtures", "corpus", "regressions", target) })
        {
            var path = RepositoryRoot.File(folder);
            if (Directory.Exists(path))
            {
                files.AddRange(Directory.GetFiles(path).Order(StringComparer.Ordinal));
            }
        }

        return files;
    }
}
