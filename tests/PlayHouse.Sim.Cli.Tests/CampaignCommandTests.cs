using System.Net;
using System.Net.Sockets;

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
}
