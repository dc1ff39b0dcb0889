using System.Diagnostics;
using System.Net;
using System.Net.Sockets;
using System.Text.Json;
using PlayHouse.Conformance;
using PlayHouse.Conformance.Flawed;

namespace PlayHouse.Sim.Cli.Tests;

public sealed class CampaignCommandTests
{
    private const string Target = "tcp://127.0.0.1:34001";
    private const string Http = "http://127.0.0.1:8080";

    [Theory]
    [InlineData("--target tcp://127.0.0.1 --http " + Http, "tcp://HOST:PORT")]
    [InlineData("--target http://127.0.0.1:1 --http " + Http, "tcp://HOST:PORT")]
    [InlineData("--target " + Target + " --http ftp://x:1", "http://HOST:PORT")]
    [InlineData("--http " + Http, "tcp://HOST:PORT")]
    [InlineData("--target " + Target + " --http " + Http + " --duration soon", "ms, s, m or h")]
    [InlineData("--target " + Target + " --http " + Http + " --duration 10ms", "50ms..24h")]
    [InlineData("--target " + Target + " --http " + Http + " --transports tls", "--tls-port")]
    [InlineData("--target " + Target + " --http " + Http + " --transports ws", "--ws-path")]
    [InlineData("--target " + Target + " --http " + Http + " --transports udp", "tcp, tls, ws")]
    [InlineData("--target " + Target + " --http " + Http + " --faults chaos", "none")]
    [InlineData("--target " + Target + " --http " + Http + " --workload idle", "mixed")]
    [InlineData("--target " + Target + " --http " + Http + " --profile other", "playhouse-test-stage")]
    [InlineData("--target " + Target + " --http " + Http + " --broadcast-scope world", "sender")]
    [InlineData("--target " + Target + " --http " + Http + " --seeds 0", "1..1000000")]
    [InlineData("--target " + Target + " --http " + Http + " --reruns 0", "1..100")]
    [InlineData("--target " + Target + " --http " + Http + " --clients 0", "1..4096")]
    [InlineData("--target " + Target + " --http " + Http + " --request-timeout-ms 5", "100..600000")]
    [InlineData("--target " + Target + " --http " + Http + " --tls-port 70000", "1..65535")]
    [InlineData("--target " + Target + " --http " + Http + " --ws-path ws", "starting with '/'")]
    [InlineData("--target " + Target + " --http " + Http + " --target-pid 0", "at least 1")]
    [InlineData("--target " + Target + " --http " + Http + " --replay /nonexistent/schedule.json", "cannot read")]
    [InlineData("--target " + Target + " --http " + Http + " --replay x.json --seeds 3", "takes none of")]
    [InlineData("--target " + Target + " --http " + Http + " --stage-ids 9..2", "FIRST..LAST")]
    [InlineData("--target " + Target + " --http " + Http + " --stage-ids 0..65535", "1 <= FIRST")]
    [InlineData("--target " + Target + " --http " + Http + " --stage-ids 7", "FIRST..LAST")]
    [InlineData("--target " + Target + " --http " + Http + " --html /proc/no-such-folder/x.html", "--html")]
    public void Campaign_BadOption_Exits64WithOneErrorLineNamingTheChoices(string arguments, string named)
    {
        var result = CliHarness.Run(["campaign", .. arguments.Split(' ')]);

        Assert.Equal(SimCli.UsageErrorExitCode, result.ExitCode);
        var line = Assert.Single(result.Error.Split('\n', StringSplitOptions.RemoveEmptyEntries));
        Assert.StartsWith("error: ", line, StringComparison.Ordinal);
        Assert.Contains(named, line, StringComparison.Ordinal);
    }

    [Fact]
    public void Campaign_ReplayOfAMalformedSchedule_Exits64NamingTheField()
    {
        var path = Path.GetTempFileName();
        File.WriteAllText(path, "{\"profile\":\"playhouse-test-stage\",\"seed\":1,\"durationMs\":0}");
        try
        {
            var result = CliHarness.Run("campaign", "--target", Target, "--http", Http, "--replay", path);

            Assert.Equal(SimCli.UsageErrorExitCode, result.ExitCode);
            Assert.Contains("error: ", result.Error, StringComparison.Ordinal);
        }
        finally
        {
            File.Delete(path);
        }
    }

    [Fact]
    public void Campaign_AgainstAClosedPort_Exits69AndSaysTheTargetRefused()
    {
        int port;
        using (var listener = new TcpListener(IPAddress.Loopback, 0))
        {
            listener.Start();
            port = ((IPEndPoint)listener.LocalEndpoint).Port;
        }

        var result = CliHarness.Run("campaign", "--target", $"tcp://127.0.0.1:{port}", "--http", $"http://127.0.0.1:{port}", "--seeds", "2", "--start-seed", "1", "--duration", "200ms");

        Assert.Equal(69, result.ExitCode);
        Assert.Equal("target-refused", result.Value("outcome"));
        Assert.Contains(result.Lines, l => l.StartsWith("target=refused", StringComparison.Ordinal));
        Assert.Contains(result.Lines, l => l.StartsWith("campaign seeds-run=1 ", StringComparison.Ordinal));
    }

    [Fact]
    public async Task Campaign_StoppedDuringTheRerunsOfAFailingSeed_LeavesAJsonReportWithEveryFindingOfItsFirstRun()
    {
        var options = new ConformanceServerOptions { TcpPort = 0, HttpPort = 0, EnableTls = false, Flaws = ConformanceFlaws.Parse("drop-reply:100") };
        await using var server = await ConformanceServer.StartAsync(options, TimeProvider.System);
        var folder = Path.Combine(Path.GetTempPath(), "playhouse-campaign-cli-tests", Guid.NewGuid().ToString("N"));
        var json = Path.Combine(folder, "report.json");
        using var stop = new CancellationTokenSource();

        // The signal comes while the first failing seed is rerun: after its findings are printed, within its first rerun.
        var output = new LineWatcher(line =>
        {
            if (line.StartsWith("seed=1 finding ", StringComparison.Ordinal))
            {
                stop.CancelAfter(TimeSpan.FromMilliseconds(300));
            }
        });
        var error = new StringWriter();
        var code = SimCli.Run(
            ["campaign", "--target", "tcp://" + server.TcpEndPoint, "--http", server.HttpAddress.ToString().TrimEnd('/'), "--seeds", "3", "--start-seed", "1",
                "--duration", "300ms", "--transports", "tcp", "--workload", "storm", "--clients", "2", "--request-timeout-ms", "500", "--reruns", "3",
                "--schedule-out", Path.Combine(folder, "schedules"), "--json", json],
            output,
            error,
            interactive: false,
            stop.Token);

        var text = output.ToString();
        Assert.True(code == 2, text + error);
        var lines = text.Split('\n');
        Assert.Contains(lines, l => l.StartsWith("stopped=by-signal runs-kept=1 ", StringComparison.Ordinal));
        Assert.Contains(lines, l => l.StartsWith("failure seed=1 checker=ExactlyOnceReply ", StringComparison.Ordinal) && l.EndsWith(" stopped=by-signal", StringComparison.Ordinal));
        using var report = JsonDocument.Parse(await File.ReadAllTextAsync(json));
        Assert.True(report.RootElement.GetProperty("stopped").GetBoolean());
        var run = Assert.Single(report.RootElement.GetProperty("runs").EnumerateArray());
        var findings = run.GetProperty("findings").EnumerateArray().Select(f => f.GetString()!).ToList();
        var counted = run.GetProperty("findingsByChecker").EnumerateObject().Sum(p => p.Value.GetInt32());
        Assert.True(findings.Count > 10, text);
        Assert.Equal(counted, findings.Count);

        // The console shows the first ten and names the file that holds every one.
        var printed = lines.Where(l => l.StartsWith("seed=1 finding ", StringComparison.Ordinal)).Select(l => l["seed=1 finding ".Length..]).ToList();
        Assert.Equal(findings.Take(printed.Count), printed);
        var file = Path.Combine(Path.GetFullPath(Path.Combine(folder, "schedules")), "seed-1.findings.txt");
        Assert.Contains($"seed=1 {findings.Count - printed.Count} more finding(s) in {file}", lines);
        Assert.Equal(findings, File.ReadAllLines(file).Skip(1).TakeWhile(l => !l.StartsWith("count ", StringComparison.Ordinal)));
        Directory.Delete(folder, recursive: true);
    }

    [Fact]
    public async Task Campaign_SentSigtermDuringAnHourLongRun_EndsItEarlyWritesItsJsonAndSaysItWasStopped()
    {
        var options = new ConformanceServerOptions { TcpPort = 0, HttpPort = 0, EnableTls = false };
        await using var server = await ConformanceServer.StartAsync(options, TimeProvider.System);
        var folder = Path.Combine(Path.GetTempPath(), "playhouse-campaign-cli-tests", Guid.NewGuid().ToString("N"));
        Directory.CreateDirectory(folder);
        var json = Path.Combine(folder, "report.json");
        var start = new ProcessStartInfo("dotnet") { UseShellExecute = false, RedirectStandardOutput = true, RedirectStandardError = true };
        foreach (var arg in new[]
        {
            typeof(SimCli).Assembly.Location, "campaign", "--target", "tcp://" + server.TcpEndPoint, "--http", server.HttpAddress.ToString().TrimEnd('/'),
            "--seeds", "2", "--start-seed", "1", "--duration", "1h", "--transports", "tcp", "--workload", "storm", "--clients", "2", "--json", json,
        })
        {
            start.ArgumentList.Add(arg);
        }

        using var runner = Process.Start(start)!;
        using var patience = new CancellationTokenSource(TimeSpan.FromMinutes(2));
        var output = new List<string>();
        while (await runner.StandardOutput.ReadLineAsync(patience.Token) is { } line)
        {
            output.Add(line);
            if (line.StartsWith("schedule seed=1 ", StringComparison.Ordinal))
            {
                break;
            }
        }

        // Its clients are storming now; the signal comes as a service manager's stop would.
        await Task.Delay(TimeSpan.FromSeconds(2), patience.Token);
        using (var kill = Process.Start(new ProcessStartInfo("kill") { ArgumentList = { "-TERM", runner.Id.ToString(System.Globalization.CultureInfo.InvariantCulture) }, UseShellExecute = false }))
        {
            await kill!.WaitForExitAsync(patience.Token);
        }

        output.AddRange((await runner.StandardOutput.ReadToEndAsync(patience.Token)).Split('\n'));
        await runner.WaitForExitAsync(patience.Token);
        var text = string.Join('\n', output) + await runner.StandardError.ReadToEndAsync(patience.Token);

        Assert.True(runner.ExitCode == 130, text);
        Assert.Contains("outcome=stopped", output);
        Assert.Contains(output, l => l.StartsWith("seed=1 outcome=pass stopped=by-signal ", StringComparison.Ordinal));
        Assert.Contains("stopped by a signal after 1 seed(s)", output);
        using var report = JsonDocument.Parse(await File.ReadAllTextAsync(json, patience.Token));
        Assert.True(report.RootElement.GetProperty("stopped").GetBoolean());
        var run = Assert.Single(report.RootElement.GetProperty("runs").EnumerateArray());
        Assert.True(run.GetProperty("stopped").GetBoolean());
        Assert.True(run.GetProperty("roundTrips").GetInt64() > 0, text);
        Assert.True(report.RootElement.GetProperty("operationsSeconds").GetDouble() < 3600, text);
        Directory.Delete(folder, recursive: true);
    }

    /// <summary>A writer that tells of every line written, as the command writes it.</summary>
    private sealed class LineWatcher(Action<string> seen) : StringWriter
    {
        public override void WriteLine(string? value)
        {
            base.WriteLine(value);
            seen(value ?? string.Empty);
        }
    }
}
