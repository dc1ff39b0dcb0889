using System.Buffers.Binary;
using System.Globalization;
using System.Net;
using System.Net.Sockets;
using System.Text;
using System.Text.Json;
using PlayHouse.Core.Codec;
using PlayHouse.Core.Runtime;
using PlayHouse.Fixtures.Scenarios;
using PlayHouse.Sim.Tcp;
using PlayHouse.Transport.Tcp;

namespace PlayHouse.Sim.Cli.Tests;

/// <summary>The real-socket commands: run --mode tcp, serve and bench tcp (loopback only; no wall-clock assertions).</summary>
public sealed class TcpCommandTests
{
    private static readonly TimeSpan Patience = TimeSpan.FromSeconds(60);

    [Fact]
    public void RunTcp_Echo_PassesWithTheSubstrateInTheBannerAndEveryCheckerJudging()
    {
        var result = CliHarness.Run("run", "--scenario", "echo", "--mode", "tcp", "--seed", "5", "--set", "clients=4", "requestsPerClient=20");

        Assert.True(result.ExitCode == 0, result.ToString());
        Assert.StartsWith("SEED=5 scenario=echo ", result.Lines[0], StringComparison.Ordinal);
        Assert.EndsWith(" substrate=tcp transport=tcp time-limit-s=60", result.Lines[0], StringComparison.Ordinal);
        Assert.Equal("tcp", result.Value("mode"));
        Assert.Equal("pass", result.Value("outcome"));
        Assert.Equal("80", result.Value("requests.succeeded"));
        Assert.Equal("pass", result.Value("checker.ExactlyOnceRequest"));
        Assert.Equal("pass", result.Value("checker.PoolLedger"));
        Assert.StartsWith("latencyShape,", result.Value("tcp.ignores"), StringComparison.Ordinal);
        Assert.Null(result.Value("replay"));
    }

    [Theory]
    [InlineData("tls", "--mode", "tcp", "--tls")]
    [InlineData("ws", "--mode", "ws")]
    [InlineData("wss", "--mode", "ws", "--tls")]
    public void RunTcp_OverTlsOrWebSocket_PassesWithTheTransportInTheBanner(string transport, params string[] modeArguments)
    {
        var result = CliHarness.Run(["run", "--scenario", "echo", "--seed", "5", "--set", "clients=4", "requestsPerClient=20", .. modeArguments]);

        Assert.True(result.ExitCode == 0, result.ToString());
        Assert.EndsWith($" substrate=tcp transport={transport} time-limit-s=60", result.Lines[0], StringComparison.Ordinal);
        Assert.Equal("pass", result.Value("outcome"));
        Assert.Equal("80", result.Value("requests.succeeded"));
        Assert.Equal("4", result.Value("tcp.ConnectionsAccepted"));
        Assert.Null(result.Value("tcp.CallbackFaults"));
        Assert.Equal("pass", result.Value("checker.PoolLedger"));
    }

    [Fact]
    public void RunTcp_WithRefusedRequests_Exits2WithTheReasonAndAReplayLineThatRunsOverTcpAgain()
    {
        // A mailbox of one under sixteen requests in flight per client refuses most of them: a checker must fail the run.
        var result = CliHarness.Run("run", "--scenario", "echo", "--mode", "tcp", "--seed", "7", "--set", "mailboxCapacity=1", "inFlight=16");

        Assert.True(result.ExitCode == 2, result.ToString());
        Assert.Equal("invariant-violation", result.Value("outcome"));
        Assert.Contains("failed on a loopback run without faults", result.Value("failure"), StringComparison.Ordinal);
        Assert.True(long.Parse(result.Value("server.MailboxRefused")!, CultureInfo.InvariantCulture) > 0, result.ToString());
        var replay = result.Value("replay")!;
        Assert.Contains("-- run --scenario echo --mode tcp --seed 7 ", replay, StringComparison.Ordinal);
        Assert.Contains("not bit-for-bit replayable", result.Value("replay-note"), StringComparison.Ordinal);

        var rerun = CliHarness.Run(CliHarness.ReplayArguments(replay));
        Assert.True(rerun.ExitCode == 2, rerun.ToString());
        Assert.Equal(result.Lines[0], rerun.Lines[0]);
    }

    [Fact]
    public void RunTcp_PastItsTimeLimit_Exits3AsALivenessFailure()
    {
        // Ten million round trips cannot finish in one second on any machine; the limit must end the run, not hang it.
        var result = CliHarness.Run("run", "--scenario", "echo", "--mode", "tcp", "--seed", "3", "--set", "requestsPerClient=1000000", "--time-limit-s", "1");

        Assert.True(result.ExitCode == 3, result.ToString());
        Assert.Equal("liveness-failure", result.Value("outcome"));
        Assert.StartsWith("the workload did not finish within 00:00:01", result.Value("failure"), StringComparison.Ordinal);
        Assert.EndsWith(" --time-limit-s 1", result.Value("replay"), StringComparison.Ordinal);
    }

    [Fact]
    public void RunTcp_WithNetworkFaultsAndShapes_AppliesThemThroughProxiesAndStatesWhatItIgnores()
    {
        var result = CliHarness.Run(
            "run", "--scenario", "send-push", "--mode", "tcp", "--seed", "2",
            "--set", "clients=2", "requestsPerClient=10", "latencyMsMean=9", "lossPercent=3", "duplicatePercent=2", "mode=RequestAsync", "faults=10ms:partition:play-1:api-1:0:0ms;20ms:heal");

        Assert.True(result.ExitCode == 0, result.ToString());
        Assert.DoesNotContain(result.Lines, l => l.StartsWith("fault.skipped=", StringComparison.Ordinal));
        Assert.Equal("proxy", result.Value("network"));
        Assert.Equal("asked 2, took effect 2", result.Value("fault.partition"));
        Assert.Equal("pass", result.Value("faults-realized"));
        Assert.DoesNotContain("latencyMsMean", result.Value("tcp.ignores"), StringComparison.Ordinal);
        var ignored = result.Lines.Where(l => l.StartsWith("option.ignored=", StringComparison.Ordinal)).ToList();
        Assert.DoesNotContain("option.ignored=latencyMsMean=9", ignored);
        Assert.DoesNotContain("option.ignored=lossPercent=3", ignored);
        Assert.Contains("option.ignored=duplicatePercent=2", ignored);
        Assert.Contains(ignored, l => l.StartsWith("option.ignored=mode=RequestAsync (the send-push scenario runs mode=Send", StringComparison.Ordinal));
    }

    [Fact]
    public void RunTcp_WithJson_WritesTheTcpReport()
    {
        var path = Path.Combine(Path.GetTempPath(), $"playhouse-sim-{Environment.ProcessId}-{Guid.NewGuid():N}.json");
        try
        {
            var result = CliHarness.Run("run", "--scenario", "echo", "--mode", "tcp", "--seed", "11", "--set", "clients=2", "requestsPerClient=5", "--json", path);

            Assert.True(result.ExitCode == 0, result.ToString());
            using var json = JsonDocument.Parse(File.ReadAllText(path));
            var root = json.RootElement;
            Assert.Equal("tcp", root.GetProperty("Mode").GetString());
            Assert.Equal("pass", root.GetProperty("Outcome").GetString());
            Assert.Equal(0, root.GetProperty("ExitCode").GetInt32());
            Assert.Equal(10, root.GetProperty("Requests").GetProperty("Succeeded").GetInt64());
            Assert.Equal("json-file=" + path, result.Lines.Single(l => l.StartsWith("json-file=", StringComparison.Ordinal)));
        }
        finally
        {
            File.Delete(path);
        }
    }

    [Theory]
    [InlineData("'tcp'", "run", "--scenario", "echo", "--mode", "udp")]
    [InlineData("--mode sim", "run", "--scenario", "echo", "--mode", "tcp", "--trace", "trace.txt")]
    [InlineData("--mode tcp", "run", "--scenario", "echo", "--time-limit-s", "5")]
    [InlineData("--tls needs --mode tcp", "run", "--scenario", "echo", "--tls")]
    [InlineData("at least 1", "run", "--scenario", "echo", "--mode", "tcp", "--time-limit-s", "0")]
    [InlineData("--mode", "replay", "--scenario", "echo", "--seed", "1", "--trace", "t.txt", "--mode", "tcp")]
    [InlineData("echo, send-push", "serve", "--scenario", "nope")]
    [InlineData("run --scenario timers --mode tcp", "serve", "--scenario", "timers")]
    [InlineData("0..65535", "serve", "--port", "70000")]
    [InlineData("--port", "serve", "--port", "eighty")]
    [InlineData("--compress-above-bytes must be 0 (never compress) or a payload size", "serve", "--compress-above-bytes", "-1")]
    [InlineData("even", "bench", "tcp", "--repeats", "3")]
    [InlineData("--connections", "bench", "tcp", "--connections", "0")]
    [InlineData("even", "bench", "churn", "--repeats", "3")]
    [InlineData("--parallel", "bench", "churn", "--parallel", "16,x")]
    [InlineData("--duration-ms", "bench", "churn", "--duration-ms", "0")]
    public void TcpCommands_BadInput_Exit64WithOneLineNamingTheProblem(string named, params string[] args)
    {
        var result = CliHarness.Run(args);

        Assert.True(result.ExitCode == SimCli.UsageErrorExitCode, result.ToString());
        var lines = result.Error.Split('\n', StringSplitOptions.RemoveEmptyEntries);
        Assert.True(lines.Length == 1 && lines[0].StartsWith("error: ", StringComparison.Ordinal), result.ToString());
        Assert.Contains(named, lines[0], StringComparison.Ordinal);
        Assert.DoesNotContain("outcome=", result.Output, StringComparison.Ordinal);
    }

    [Fact]
    public void Serve_PortAlreadyTaken_Exits64NamingThePort()
    {
        using var taken = new TcpListener(IPAddress.Loopback, 0);
        taken.Start();
        var port = ((IPEndPoint)taken.LocalEndpoint).Port.ToString(CultureInfo.InvariantCulture);

        var result = CliHarness.Run("serve", "--port", port);

        Assert.True(result.ExitCode == SimCli.UsageErrorExitCode, result.ToString());
        Assert.Contains("127.0.0.1:" + port, result.Error, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Serve_OnPortZero_PrintsThePortServesAnEchoClientAndStopsCleanlyOnCancel()
    {
        var output = new PortWatchingWriter();
        var error = new StringWriter();
        using var stop = new CancellationTokenSource();
        var serve = Task.Run(() => SimCli.Run(["serve", "--port", "0", "--scenario", "echo"], output, error, interactive: false, stop.Token));

        var port = await output.Port.WaitAsync(Patience);
        Assert.InRange(port, 1, 65_535);
        Assert.Contains($"listening=127.0.0.1:{port} scenario=echo stage-type=echo", output.Text, StringComparison.Ordinal);
        Assert.Contains("EchoRequest (request)", output.Text, StringComparison.Ordinal);

        using (var client = await TcpPlayClient.ConnectAsync(new IPEndPoint(IPAddress.Loopback, port), new TcpPlayClientOptions { RequestTimeout = Patience }))
        {
            var pushed = new TaskCompletionSource<string>(TaskCreationOptions.RunContinuationsAsynchronously);
            client.PushReceived = (TcpPlayClient _, in ServerFrame push) => pushed.TrySetResult(push.MsgId + ":" + Encoding.UTF8.GetString(push.Payload.Span));
            var account = new byte[8];
            BinaryPrimitives.WriteInt64LittleEndian(account, 42);
            var auth = await client.AuthenticateAsync(1, account).WaitAsync(Patience);
            Assert.True(auth.IsSuccess, $"authenticate: error {auth.ErrorCode}");
            Assert.Equal(42L, BinaryPrimitives.ReadInt64LittleEndian(auth.Payload));

            var echo = await client.RequestAsync(EchoMsgIds.Echo, 1, "hello"u8).WaitAsync(Patience);
            Assert.True(echo.IsSuccess, $"echo: error {echo.ErrorCode}");
            Assert.Equal(EchoMsgIds.EchoReply, echo.MsgId);
            Assert.Equal("hello", Encoding.UTF8.GetString(echo.Payload));

            Assert.True(client.Send(EchoMsgIds.SendPush, 1, "ping"u8));
            Assert.Equal("Push:ping", await pushed.Task.WaitAsync(Patience));
        }

        await stop.CancelAsync();
        var exit = await serve.WaitAsync(Patience);

        Assert.True(exit == 0, $"exit {exit}\n{output.Text}\n{error}");
        Assert.Contains("serve.connections=1 ", output.Text, StringComparison.Ordinal);
        Assert.Contains("serve.buffersOutstanding=0", output.Text, StringComparison.Ordinal);

        // The client's actor waits out its reconnect window (a minute by default), so the stop finds it still held.
        Assert.Contains("serve.registry=live-stages=1 live-actors=1 stages-high-water=1 actors-high-water=1", output.Text, StringComparison.Ordinal);
        Assert.Equal(string.Empty, error.ToString());
    }

    [Fact]
    public async Task Serve_WithCompressAboveBytes_SendsLargeRepliesCompressed_AndSmallOnesRaw()
    {
        var output = new PortWatchingWriter();
        var error = new StringWriter();
        using var stop = new CancellationTokenSource();
        var serve = Task.Run(() => SimCli.Run(["serve", "--port", "0", "--compress-above-bytes", "256"], output, error, interactive: false, stop.Token));
        var port = await output.Port.WaitAsync(Patience);
        var large = Enumerable.Range(0, 10_000).Select(i => (byte)(i % 13)).ToArray();

        using (var client = await TcpPlayClient.ConnectAsync(new IPEndPoint(IPAddress.Loopback, port), new TcpPlayClientOptions { RequestTimeout = Patience, Decompressor = Lz4PayloadDecompressor.Instance }))
        {
            Assert.True((await client.AuthenticateAsync(1, [7]).WaitAsync(Patience)).IsSuccess);
            var largeEcho = await client.RequestAsync(EchoMsgIds.Echo, 1, large).WaitAsync(Patience);
            var smallEcho = await client.RequestAsync(EchoMsgIds.Echo, 1, "hello"u8).WaitAsync(Patience);

            Assert.Equal(large, largeEcho.Payload);
            Assert.Equal("hello", Encoding.UTF8.GetString(smallEcho.Payload));
        }

        await stop.CancelAsync();
        var exit = await serve.WaitAsync(Patience);

        Assert.True(exit == 0, $"exit {exit}\n{output.Text}\n{error}");
        Assert.Contains("compress-above-bytes=256 (LZ4Pickler format", output.Text, StringComparison.Ordinal);
        // Only the 10,000-byte echo went compressed; the authentication and the small echo were below the threshold.
        Assert.Contains("tcp.FramesCompressed=1\n", output.Text, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Serve_WithStagesMaxOne_RefusesASecondStageWithTooManyStages_AndCountsIt()
    {
        var output = new PortWatchingWriter();
        var error = new StringWriter();
        using var stop = new CancellationTokenSource();
        var serve = Task.Run(() => SimCli.Run(["serve", "--port", "0", "--stages-max", "1", "--actor-expiry-ms", "0"], output, error, interactive: false, stop.Token));
        var port = await output.Port.WaitAsync(Patience);
        var endPoint = new IPEndPoint(IPAddress.Loopback, port);

        using (var first = await TcpPlayClient.ConnectAsync(endPoint, new TcpPlayClientOptions { RequestTimeout = Patience }))
        using (var second = await TcpPlayClient.ConnectAsync(endPoint, new TcpPlayClientOptions { RequestTimeout = Patience }))
        {
            var admitted = await first.AuthenticateAsync(1, [1]).WaitAsync(Patience);
            var refused = await second.AuthenticateAsync(2, [2]).WaitAsync(Patience);

            Assert.True(admitted.IsSuccess, $"first stage: error {admitted.ErrorCode}");
            Assert.Equal(ErrorCodes.TooManyStages, refused.ErrorCode);
        }

        await stop.CancelAsync();
        var exit = await serve.WaitAsync(Patience);

        Assert.True(exit == 0, $"exit {exit}\n{output.Text}\n{error}");
        Assert.Contains("registry-options actor-expiry-ms=off idle-stage-close-ms=60000 stages-max=1 actors-per-stage-max=20000", output.Text, StringComparison.Ordinal);
        Assert.Contains("server.StagesRefusedAtCap=1\n", output.Text, StringComparison.Ordinal);
        Assert.Contains("serve.registry=live-stages=1 ", output.Text, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Serve_WithDisconnectedActorsMaxOne_EvictsTheEarlierDisconnectedActors_AndCountsThem()
    {
        // Three accounts come and go in stage 1.
        var output = await ServeThreeComingAndGoing(["--disconnected-actors-max", "1"], i => (1, i));

        Assert.Contains("disconnected-actors-max=1", output, StringComparison.Ordinal);
        Assert.Contains("server.DisconnectedActorsEvictedAtCap=2\n", output, StringComparison.Ordinal);
        Assert.Contains(" waiting-actors=1 waiting-high-water=1", output, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Serve_WithEmptyStagesMaxOne_ClosesTheEarlierEmptyStages_AndCountsThem()
    {
        // One account each in stages 1, 2 and 3, none waiting after it goes, so each stage is empty once its client left.
        var output = await ServeThreeComingAndGoing(["--disconnected-actors-max", "0", "--empty-stages-max", "1"], i => (i, i));

        Assert.Contains("empty-stages-max=1", output, StringComparison.Ordinal);
        Assert.Contains("server.EmptyStagesClosedAtCap=2\n", output, StringComparison.Ordinal);
        Assert.Contains("serve.registry=live-stages=1 ", output, StringComparison.Ordinal);
    }

    /// <summary>Serves with <paramref name="options"/> while three clients in turn authenticate (stage and account of each) and leave; returns what serve printed.</summary>
    private static async Task<string> ServeThreeComingAndGoing(string[] options, Func<byte, (long StageId, byte Account)> place)
    {
        var output = new PortWatchingWriter();
        var error = new StringWriter();
        using var stop = new CancellationTokenSource();
        var serve = Task.Run(() => SimCli.Run(["serve", "--port", "0", .. options], output, error, interactive: false, stop.Token));
        var endPoint = new IPEndPoint(IPAddress.Loopback, await output.Port.WaitAsync(Patience));
        for (byte i = 1; i <= 3; i++)
        {
            var (stageId, account) = place(i);
            using (var client = await TcpPlayClient.ConnectAsync(endPoint, new TcpPlayClientOptions { RequestTimeout = Patience }))
            {
                var joined = await client.AuthenticateAsync(stageId, [account]).WaitAsync(Patience);
                Assert.True(joined.IsSuccess, $"client {i}: error {joined.ErrorCode}");
            }

            // Room for the server to see the close before the next client comes; the stop's drain would handle it anyway.
            await Task.Delay(200);
        }

        await stop.CancelAsync();
        var exit = await serve.WaitAsync(Patience);
        Assert.True(exit == 0, $"exit {exit}\n{output.Text}\n{error}");
        return output.Text;
    }

    [Theory]
    [InlineData("--stages-max", "0")]
    [InlineData("--disconnected-actors-max", "-1")]
    [InlineData("--empty-stages-max", "-2")]
    [InlineData("--actors-per-stage-max", "-1")]
    [InlineData("--actor-expiry-ms", "-5")]
    public void Serve_WithARegistryOptionOutOfRange_Exits64NamingIt(string option, string value)
    {
        var result = CliHarness.Run("serve", "--port", "0", option, value);

        Assert.True(result.ExitCode == SimCli.UsageErrorExitCode, result.ToString());
        var lines = result.Error.Split('\n', StringSplitOptions.RemoveEmptyEntries);
        Assert.True(lines.Length == 1 && lines[0].StartsWith("error: ", StringComparison.Ordinal), result.ToString());
        Assert.Contains(option, lines[0], StringComparison.Ordinal);
        Assert.DoesNotContain("listening=", result.Output, StringComparison.Ordinal);
    }

    [Fact]
    public void BenchTcp_TinySize_PrintsEveryKey()
    {
        var result = CliHarness.Run("bench", "tcp", "--connections", "2", "--in-flight", "2", "--payload-bytes", "16", "--repeats", "2", "--duration-ms", "100", "--warm-up-ms", "20", "--rtt-samples", "50");

        Assert.True(result.ExitCode == 0, result.ToString());
        foreach (var key in new[] { "core.roundTripsPerSecond", "raw.roundTripsPerSecond", "ratio.median", "core.bytesPerMessage", "raw.bytesPerMessage", "core.gen2", "core.rttMsP50", "core.rttMsP99", "raw.rttMsP50", "raw.rttMsP99", "processors", "gc", "budget.ratio", "budget.bytesPerMessage", "budget.gen2", "core.cpuMicrosecondsPerMessage", "raw.cpuMicrosecondsPerMessage", "ratio.cpu", "core.contextSwitchesPerMessage", "raw.contextSwitchesPerMessage", "core.framesPerSendCall", "raw.framesPerSendCall", "core.framesPerReceiveCall", "raw.framesPerReceiveCall", "raw.rateSpread", "steadiness", "load-average-end" })
        {
            Assert.True(result.Value(key) is not null, $"no {key}\n{result}");
        }

        // The machine follows the options line, so two reports can be told apart by where they ran.
        Assert.StartsWith("machine cpu=", result.Lines[1], StringComparison.Ordinal);
        Assert.Matches("^(steady|unsteady) \\(the rate of the raw echo varied ", result.Value("steadiness")!);

        Assert.True(double.Parse(result.Value("core.roundTripsPerSecond")!, CultureInfo.InvariantCulture) > 0, result.ToString());
        Assert.True(double.Parse(result.Value("raw.roundTripsPerSecond")!, CultureInfo.InvariantCulture) > 0, result.ToString());
        Assert.True(double.Parse(result.Value("core.rttMsP50")!, CultureInfo.InvariantCulture) > 0, result.ToString());
        Assert.Equal("2", result.Value("repeats"));
        Assert.StartsWith("order:core,raw ", result.Value("repeat.1"), StringComparison.Ordinal);
        Assert.StartsWith("order:raw,core ", result.Value("repeat.2"), StringComparison.Ordinal);
        Assert.Contains("target >= 0.8", result.Value("budget.ratio"), StringComparison.Ordinal);
    }

    [Fact]
    public void BenchChurn_TinyRun_PrintsEachLevelsRatesRatioAndFailuresAndPasses()
    {
        var result = CliHarness.Run("bench", "churn", "--parallel", "1,2", "--repeats", "2", "--duration-ms", "100", "--warm-up-ms", "20");

        Assert.True(result.ExitCode == 0, result.ToString());
        Assert.Equal("bench churn parallel=1,2 payload-bytes=64 repeats=2 duration-ms=100 warm-up-ms=20", result.Lines[0]);
        Assert.StartsWith("machine cpu=", result.Lines[1], StringComparison.Ordinal);
        Assert.NotNull(result.Value("churn.1.raw.rateSpread"));
        Assert.NotNull(result.Value("churn.2.raw.rateSpread"));
        Assert.Matches("^(steady|unsteady) \\(the rate of the raw echo, at its least steady level, varied ", result.Value("steadiness")!);
        Assert.NotNull(result.Value("load-average-end"));
        foreach (var level in new[] { "1", "2" })
        {
            foreach (var key in new[] { "core.cyclesPerSecond", "raw.cyclesPerSecond", "ratio.median", "core.cpuMicrosecondsPerCycle", "raw.cpuMicrosecondsPerCycle" })
            {
                Assert.True(double.Parse(result.Value($"churn.{level}.{key}") ?? "0", CultureInfo.InvariantCulture) > 0, $"churn.{level}.{key}\n{result}");
            }

            Assert.Equal("core:0 raw:0", result.Value($"churn.{level}.failedCycles"));
            Assert.StartsWith("order:core,raw ", result.Value($"repeat.{level}.1"), StringComparison.Ordinal);
            Assert.StartsWith("order:raw,core ", result.Value($"repeat.{level}.2"), StringComparison.Ordinal);
        }

        Assert.Equal("pass", result.Value("outcome"));
    }

    [Fact]
    public void List_ShowsForEachScenarioWhetherTcpAndServeSupportIt()
    {
        var result = CliHarness.Run("list");

        Assert.Equal(0, result.ExitCode);
        var lines = result.Lines.ToList();
        foreach (var name in ScenarioCatalog.Names)
        {
            var at = lines.IndexOf($"{name}: {ScenarioCatalog.Create(name).Description}");
            Assert.True(at >= 0, $"{name} missing\n{result}");
            var serve = TcpServeHost.Scenarios.Contains(name) ? "yes" : "no";
            var modes = TcpScenarioRunner.Supports(ScenarioCatalog.Create(name)) ? "sim,tcp" : "sim";
            Assert.Equal($"  modes={modes} serve={serve}", lines[at + 2]);
        }

        Assert.Equal(3, lines.Count(l => l.EndsWith(" serve=yes", StringComparison.Ordinal)));
    }

    /// <summary>Collects the serve output from the server's thread and hands the test the port once it is printed.</summary>
    private sealed class PortWatchingWriter : TextWriter
    {
        private readonly Lock _gate = new();
        private readonly StringBuilder _text = new();
        private readonly TaskCompletionSource<int> _port = new(TaskCreationOptions.RunContinuationsAsynchronously);
        private int? _printedPort;

        public override Encoding Encoding => Encoding.UTF8;

        /// <summary>The printed port, once the whole start banner is printed.</summary>
        public Task<int> Port => _port.Task;

        public string Text
        {
            get
            {
                lock (_gate)
                {
                    return _text.ToString();
                }
            }
        }

        public override void Write(char value)
        {
            lock (_gate)
            {
                _text.Append(value);
            }
        }

        public override void WriteLine(string? value)
        {
            lock (_gate)
            {
                _text.Append(value).Append('\n');
            }

            if (value is not null && value.StartsWith("port=", StringComparison.Ordinal))
            {
                _printedPort = int.Parse(value["port=".Length..], CultureInfo.InvariantCulture);
            }

            // The banner ends with the wire-layout line: only then is everything before it in the text a test reads.
            if (value is not null && value.StartsWith("wire layout:", StringComparison.Ordinal) && _printedPort is { } port)
            {
                _port.TrySetResult(port);
            }
        }
    }
}
