using System.Diagnostics;
using System.Net;
using System.Text.RegularExpressions;
using PlayHouse.Conformance;
using PlayHouse.Conformance.Flawed;

namespace PlayHouse.Campaign.Tests;

/// <summary>A conformance server in the test's process, on OS-chosen loopback ports, with or without a flawed profile.</summary>
internal sealed class InProcessTarget : IAsyncDisposable
{
    private InProcessTarget(ConformanceServer server)
    {
        Server = server;
        Target = new CampaignTarget
        {
            Host = "127.0.0.1",
            Tcp = server.TcpEndPoint,
            Http = server.HttpAddress,
            TlsPort = server.TcpTlsEndPoint?.Port,
            WebSocketPath = server.Options.WebSocketPath,
        };
    }

    public ConformanceServer Server { get; }

    public CampaignTarget Target { get; }

    /// <summary>Starts a server; short frame and slow-reader timeouts keep the hostile rows quick.</summary>
    public static async Task<InProcessTarget> StartAsync(string flaws = "none")
    {
        var options = new ConformanceServerOptions
        {
            TcpPort = 0,
            HttpPort = 0,
            TcpTlsPort = 0,
            HttpsPort = 0,
            Flaws = ConformanceFlaws.Parse(flaws),
        };
        options = options with
        {
            Transport = options.Transport with { FrameTimeout = TimeSpan.FromSeconds(1), SlowReaderTimeout = TimeSpan.FromSeconds(1) },
        };
        return new InProcessTarget(await ConformanceServer.StartAsync(options, TimeProvider.System));
    }

    public ValueTask DisposeAsync() => Server.DisposeAsync();
}

/// <summary>
/// The conformance server as a process of its own (<c>dotnet PlayHouse.Conformance.dll</c>), so that <c>/proc</c>
/// readings are the server's alone and the test can kill it.
/// </summary>
internal sealed partial class ChildTarget : IAsyncDisposable
{
    private readonly Process _process;

    private ChildTarget(Process process, CampaignTarget target)
    {
        _process = process;
        Target = target;
    }

    public CampaignTarget Target { get; }

    public int Pid => _process.Id;

    public static async Task<ChildTarget> StartAsync(string flaws = "none")
    {
        var start = new ProcessStartInfo("dotnet", typeof(ConformanceServer).Assembly.Location)
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        foreach (var (name, value) in new[] { ("TCP_PORT", "0"), ("HTTP_PORT", "0"), ("ENABLE_TLS", "false"), ("ENABLE_WEBSOCKET", "false"), ("CONFORMANCE_FLAW", flaws) })
        {
            start.Environment[name] = value;
        }

        var process = Process.Start(start) ?? throw new InvalidOperationException("dotnet did not start");
        using var timeout = new CancellationTokenSource(TimeSpan.FromMinutes(2));
        while (await process.StandardOutput.ReadLineAsync(timeout.Token) is { } line)
        {
            var match = Listening().Match(line);
            if (match.Success)
            {
                var tcp = IPEndPoint.Parse(match.Groups["tcp"].Value);
                var target = new CampaignTarget { Host = "127.0.0.1", Tcp = tcp, Http = new Uri(match.Groups["http"].Value), Pid = process.Id };
                return new ChildTarget(process, target);
            }
        }

        throw new InvalidOperationException("the conformance server exited before it listened: " + await process.StandardError.ReadToEndAsync());
    }

    public void Kill() => _process.Kill(entireProcessTree: true);

    public async ValueTask DisposeAsync()
    {
        if (!_process.HasExited)
        {
            _process.Kill(entireProcessTree: true);
        }

        await _process.WaitForExitAsync();
        _process.Dispose();
    }

    [GeneratedRegex(@"tcp (?<tcp>[0-9.]+:[0-9]+), http (?<http>http://[^ ,;]+)")]
    private static partial Regex Listening();
}

/// <summary>Sessions and runners over a target, with the short bounds tests use.</summary>
internal static class Campaigns
{
    private static long _stageIdBase = 5_000_000;

    public static CampaignSession Session(CampaignTarget target, BroadcastScope scope = BroadcastScope.Stage, TargetMonitor? monitor = null, ResourceBounds? bounds = null) =>
        new(target, TimeProvider.System, CampaignNetworks.For, Interlocked.Add(ref _stageIdBase, 1_000_000))
        {
            Scope = scope,
            Monitor = monitor,
            Bounds = bounds ?? new ResourceBounds(),
        };

    public static CampaignOptions Replaying(CampaignSchedule schedule, int reruns = 2, bool shrink = true, int shrinkRunsMax = 16) => new()
    {
        Replay = schedule,
        Reruns = reruns,
        Shrink = shrink,
        ShrinkRunsMax = shrinkRunsMax,
        ScheduleDirectory = Path.Combine(Path.GetTempPath(), "playhouse-campaign-tests", Guid.NewGuid().ToString("N")),
    };

    public static async Task<CampaignReport> RunAsync(CampaignSession session, CampaignOptions options, List<string>? lines = null)
    {
        var sink = lines ?? [];
        var runner = new CampaignRunner(session, options, l =>
        {
            lock (sink)
            {
                sink.Add(l);
            }
        }, path => "replay " + path);
        return await runner.RunAsync();
    }

    /// <summary>Two seeds drawn within <paramref name="shape"/> from <paramref name="startSeed"/>, without shrinking.</summary>
    public static async Task<CampaignReport> DrawnSeedsAsync(InProcessTarget target, ulong startSeed, ScheduleShape shape)
    {
        await using var session = Session(target.Target);
        var report = await RunAsync(session, new CampaignOptions { Seeds = 2, StartSeed = startSeed, Shrink = false, Reruns = 1, Shape = shape });
        Assert.Equal(2, report.Runs.Count);
        return report;
    }

    /// <summary>A schedule written by hand: every client's plan, no faults.</summary>
    public static CampaignSchedule Schedule(int durationMs, int requestTimeoutMs, int stages, params CampaignClientPlan[] clients) =>
        new(CampaignSchedule.TestStageProfile, 1, durationMs, requestTimeoutMs, stages, Math.Max(1, clients.Max(c => c.Group) + 1), clients, []);

    public static CampaignClientPlan Client(int id, CampaignTransport transport, int stage, params CampaignOperation[] operations) =>
        new(id, transport, stage, 0, operations);

    public static CampaignOperation Op(OperationKind kind, int count = 1, int window = 1, int value = 0) => new(kind, count, window, value);

    public static string Describe(CampaignReport report) =>
        string.Join('\n', report.Runs.SelectMany(r => r.Ledger.Findings.Take(5).Select(f => f.ToString()).Prepend(r.Summary())));
}
