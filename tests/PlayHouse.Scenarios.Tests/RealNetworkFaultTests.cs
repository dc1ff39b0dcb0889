using PlayHouse.Fixtures.Scenarios;
using PlayHouse.Sim.Tcp;
using PlayHouse.Simulation.Runs;

namespace PlayHouse.Scenarios.Tests;

/// <summary>
/// Fault plans over real sockets: every link through a fault proxy, each step realised and counted, the same checkers
/// judging the run. The correct core passes latency, stalls (clogs and loss stalls), resets and partitions; a flawed
/// twin that misbehaves only when the network makes replies late is caught by the same case.
/// </summary>
public sealed class RealNetworkFaultTests
{
    private static readonly TcpRunSettings Settings = new() { Time = TimeProvider.System, TimeLimit = TimeSpan.FromSeconds(60) };

    /// <summary>A mesh latency spike past the server's request timeout, then back: every mesh reply in it comes late.</summary>
    private const string LatencySpike = "faults=100ms:latencychange:::300;900ms:latencychange:::5";

    [Fact]
    public async Task StagePeers_UnderLatencyClogLossPartitionAndHealOverRealSockets_PassesEveryCheckerAndRealisesEveryStep()
    {
        // The loss burst drops every chunk in its window: how many chunks cross the window depends on the machine's
        // speed, so a partial rate could leave a slow machine with none lost and the stall unexercised.
        var report = await RunAsync(
            "stage-peers",
            "playServers=2",
            "requestTimeoutMs=1000",
            "faults=50ms:latencychange:::40;150ms:clog:play-1:play-2:0:300ms;300ms:lossburst:::100:300ms;500ms:partition:play-1:play-2;800ms:heal;900ms:latencychange:::5");

        Assert.True(report.Passed, report.ToText());
        Assert.True(report.Proxied);
        Assert.Empty(report.SkippedFaults);
        Assert.True(report.FaultsRealized, report.ToText());
        Assert.Equal(["clog", "heal", "latency", "partition", "split", "stream-loss"], report.Faults.Where(f => f.Relevant).Select(f => f.Kind).Order(StringComparer.Ordinal));
        Assert.True(Counter(report, "clog.windows") == 2, report.ToText());
        Assert.True(Counter(report, "partition.windows") == 2, report.ToText());
        Assert.True(Counter(report, "loss.retransmitStalls") > 0, report.ToText());
    }

    [Fact]
    public async Task Echo_WithEveryLostSegmentResettingItsConnection_ClientsReconnectAndEveryCheckerPasses()
    {
        var report = await RunAsync("echo", "clients=4", "requestsPerClient=40", "streamLoss=Reset", "faults=50ms:lossburst:::10:400ms");

        Assert.True(report.Passed, report.ToText());
        Assert.True(Counter(report, "reset.connections") > 0, report.ToText());
        Assert.Equal(Counter(report, "loss.resets"), Counter(report, "reset.connections"));
    }

    [Fact]
    public async Task Echo_OnAPathWhereLostSegmentsResetTheirConnection_WithoutAPlan_PassesEveryCheckerAndResets()
    {
        // Loss that resets is a fault without any plan: requests in flight on a reset connection fail by design.
        var report = await RunAsync("echo", "clients=4", "requestsPerClient=60", "inFlight=4", "streamLoss=Reset", "lossPercent=3");

        Assert.True(report.Passed, report.ToText());
        Assert.True(Counter(report, "reset.connections") > 0, report.ToText());
    }

    [Fact]
    public async Task Echo_WhenItsPlayServerCrashesAndRestartsOnTheSamePort_ClientsComeBackAndEveryCheckerPasses()
    {
        var report = await RunAsync("echo", "clients=4", "requestsPerClient=40", "faults=50ms:crash:play-1;400ms:restart:play-1");

        Assert.True(report.Passed, report.ToText());
        Assert.Equal("asked 1, took effect 1", report.Faults.Single(f => f.Kind == "crash").ToString());
        Assert.Equal("asked 1, took effect 1", report.Faults.Single(f => f.Kind == "restart").ToString());
        Assert.True(Counter(report, "connections.accepted") > 4, report.ToText());
    }

    [Fact]
    public async Task StrayRepliesDispatchedTwin_UnderARealMeshLatencySpike_IsCaughtWhereTheCorrectCorePasses()
    {
        var correct = await RunAsync("stage-peers", "playServers=2", "requestTimeoutMs=400", LatencySpike);
        var flawed = await RunAsync("stage-peers", "playServers=2", "requestTimeoutMs=400", LatencySpike, "flaws=B12a");

        Assert.True(correct.Passed, correct.ToText());
        Assert.False(flawed.Passed);
        Assert.StartsWith("StrayReply: ", flawed.Failure, StringComparison.Ordinal);
        Assert.Equal(RunExitCodes.InvariantViolation, flawed.ExitCode);
    }

    [Fact]
    public async Task StrayRepliesDispatchedTwin_OnAQuietLoopback_Passes()
    {
        // The flaw needs a late reply: without the spike every reply beats its timeout, so only the fault shows it.
        var report = await RunAsync("stage-peers", "playServers=2", "requestTimeoutMs=400", "flaws=B12a");

        Assert.True(report.Passed, report.ToText());
        Assert.False(report.Proxied);
    }

    [Fact]
    public void RealSocketFlaws_AnIdWithoutARealSocketTwin_IsRefusedNamingThoseThereAre()
    {
        var error = Assert.Throws<ArgumentException>(() => RealSocketFlaws.PartsFor(["B1"]));

        Assert.Contains("B12a", error.Message, StringComparison.Ordinal);
    }

    private static long Counter(TcpScenarioReport report, string name) => report.ProxyCounters.SingleOrDefault(kv => kv.Key == name).Value;

    private static Task<TcpScenarioReport> RunAsync(string scenarioName, params string[] sets)
    {
        var scenario = ScenarioCatalog.Create(scenarioName);
        var options = scenario.Defaults.With(sets.Select(s => new KeyValuePair<string, string>(s[..s.IndexOf('=', StringComparison.Ordinal)], s[(s.IndexOf('=', StringComparison.Ordinal) + 1)..])));
        return TcpScenarioRunner.RunAsync(scenario, options, Settings);
    }
}
