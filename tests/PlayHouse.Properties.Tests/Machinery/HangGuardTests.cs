using System.Diagnostics;
using System.Text;
using PlayHouse.Properties.Tests.Infrastructure;
using Shouldly;
using Xunit.Abstractions;

namespace PlayHouse.Properties.Tests.Machinery;

/// <summary>
/// A hang is a red test, not a stuck CI: the repository's run settings (<c>PlayHouse.Sim.runsettings</c>, which
/// Directory.Build.props hands to every <c>dotnet test</c> as RunSettingsFilePath) end a test that runs past its time
/// and fail the run, naming the test. Shown on a deliberately hanging test project (<c>tests/hang-guard</c>, not in the
/// solution) run through <c>dotnet test</c> with a copy of the settings whose per-test timeout is 30 s instead of 15
/// minutes; everything else in the copy is the repository's file.
/// </summary>
public sealed class HangGuardTests(ITestOutputHelper output)
{
    private const string HangingProject = "tests/hang-guard/PlayHouse.HangingTests.csproj";

    [Fact]
    [Trait("Category", "Slow")]
    public void HangingTest_UnderTheRepositoryRunSettings_EndsTheRunAsAFailureNamingTheTest()
    {
        var settings = File.ReadAllText(RepositoryRoot.File("PlayHouse.Sim.runsettings"));
        settings.ShouldContain("TestTimeout=\"15min\"");
        var shortSettings = Path.Combine(Path.GetTempPath(), $"playhouse-hang-guard-{Environment.ProcessId}.runsettings");
        File.WriteAllText(shortSettings, settings.Replace("TestTimeout=\"15min\"", "TestTimeout=\"30s\"", StringComparison.Ordinal));
        try
        {
            // The settings file goes in as the MSBuild property Directory.Build.props sets, the same way every project
            // of the solution gets it; the outer limit only keeps this test from hanging if the guard does not work.
            var (exitCode, text, finished) = Dotnet(TimeSpan.FromMinutes(5), "test", HangingProject, "-c", "Release", $"-p:RunSettingsFilePath={shortSettings}");
            output.WriteLine(text);

            finished.ShouldBeTrue("the hanging test project was still running after 5 minutes: the hang guard did not end it");
            exitCode.ShouldNotBe(0);
            text.ShouldContain("Test Run Aborted");
            text.ShouldContain("inactivity time of 30 seconds has elapsed");

            // The collector names the test in flight. On a machine so loaded that the test host needs longer than the
            // timeout to start its first test, it fires with none in flight and says so; the run still fails.
            if (!text.Contains("Sequence file will not be generated", StringComparison.Ordinal))
            {
                text.ShouldContain("The test running when the crash occurred:");
                text.ShouldContain("PlayHouse.HangingTests.HangingTests.NeverReturns_WaitsForASignalNobodySends");
            }
            else
            {
                output.WriteLine("note: the hang guard fired before the test host started a test (a heavily loaded machine); the run failed as it should, unnamed");
            }
        }
        finally
        {
            File.Delete(shortSettings);
        }
    }

    [Fact]
    public void TestProjects_OfTheSolution_AllGetTheRepositoryRunSettings()
    {
        // Directory.Build.props sets the property for every project; none of the solution's projects overrides it.
        File.ReadAllText(RepositoryRoot.File("Directory.Build.props")).ShouldContain("<RunSettingsFilePath>$(MSBuildThisFileDirectory)PlayHouse.Sim.runsettings</RunSettingsFilePath>");
        var projects = Directory.GetFiles(RepositoryRoot.Path, "*.csproj", SearchOption.AllDirectories)
            .Concat(Directory.GetFiles(RepositoryRoot.Path, "Directory.Build.*", SearchOption.AllDirectories))
            .Where(p => !p.Contains($"{Path.DirectorySeparatorChar}obj{Path.DirectorySeparatorChar}", StringComparison.Ordinal))
            .Where(p => Path.GetFullPath(p) != Path.GetFullPath(RepositoryRoot.File("Directory.Build.props")));
        projects.Where(p => File.ReadAllText(p).Contains("RunSettingsFilePath", StringComparison.Ordinal)).ShouldBeEmpty();

        var (exitCode, text, finished) = Dotnet(TimeSpan.FromMinutes(2), "msbuild", "tests/PlayHouse.Properties.Tests/PlayHouse.Properties.Tests.csproj", "-getProperty:RunSettingsFilePath");
        finished.ShouldBeTrue();
        exitCode.ShouldBe(0, text);
        Path.GetFullPath(text.Trim()).ShouldBe(Path.GetFullPath(RepositoryRoot.File("PlayHouse.Sim.runsettings")));
    }

    /// <summary>Runs the dotnet CLI in the repository root; kills it (and only it, with its children) past <paramref name="limit"/>.</summary>
    private static (int ExitCode, string Output, bool Finished) Dotnet(TimeSpan limit, params string[] arguments)
    {
        var start = new ProcessStartInfo(Environment.GetEnvironmentVariable("DOTNET_HOST_PATH") is { Length: > 0 } host ? host : "dotnet")
        {
            WorkingDirectory = RepositoryRoot.Path,
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        foreach (var argument in arguments)
        {
            start.ArgumentList.Add(argument);
        }

        // The test host runs under the outer `dotnet test`, whose MSBuild and test platform variables would steer the
        // inner one; it starts clean, without build servers that would outlive it.
        foreach (var key in start.Environment.Keys.Where(k => k.StartsWith("MSBUILD", StringComparison.OrdinalIgnoreCase) || k.StartsWith("VSTEST", StringComparison.OrdinalIgnoreCase)).ToList())
        {
            start.Environment.Remove(key);
        }

        start.Environment["MSBUILDDISABLENODEREUSE"] = "1";
        start.Environment["DOTNET_CLI_TELEMETRY_OPTOUT"] = "1";
        start.Environment["DOTNET_NOLOGO"] = "1";

        var text = new StringBuilder();
        using var process = new Process { StartInfo = start };
        process.OutputDataReceived += (_, e) => Append(text, e.Data);
        process.ErrorDataReceived += (_, e) => Append(text, e.Data);
        process.Start();
        process.BeginOutputReadLine();
        process.BeginErrorReadLine();
        if (!process.WaitForExit(limit))
        {
            process.Kill(entireProcessTree: true);
            process.WaitForExit();
            return (-1, Read(text), false);
        }

        process.WaitForExit();
        return (process.ExitCode, Read(text), true);
    }

    private static void Append(StringBuilder text, string? line)
    {
        if (line is null)
        {
            return;
        }

        lock (text)
        {
            text.Append(line).Append('\n');
        }
    }

    private static string Read(StringBuilder text)
    {
        lock (text)
        {
            return text.ToString();
        }
    }
}
