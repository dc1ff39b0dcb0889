using System.CommandLine;
using System.Globalization;
using System.Runtime.InteropServices;
using PlayHouse.Fixtures.Scenarios;
using PlayHouse.Sim.Tcp;
using PlayHouse.Simulation.Runs;
using PlayHouse.Transport.Tcp;

namespace PlayHouse.Sim.Cli;

/// <summary>
/// The real-socket side of the runner: <c>run --mode tcp</c> (a scenario over loopback TCP with the same checkers),
/// <c>serve</c> (a play server on 127.0.0.1 for any PlayHouse-protocol client) and <c>bench tcp</c> (full core
/// against a raw-socket echo).
/// </summary>
/// <remarks>
/// Everything here runs on the wall clock and the thread pool, so nothing here is replayable bit for bit; the
/// options are printed so a run can be repeated. Not thread-safe; one instance serves one command line.
/// </remarks>
internal sealed class TcpCommands(IRunView view, CancellationToken stop)
{
    /// <summary>The substrates <c>run --mode</c> accepts.</summary>
    public const string SimMode = "sim";

    public const string TcpMode = "tcp";

    /// <summary>Real sockets with every client over WebSocket (Kestrel's <c>/ws</c> in front of each play server).</summary>
    public const string WebSocketMode = "ws";

    public const int TimeLimitSecondsDefault = 60;

    /// <summary>The clock of every real-socket command.</summary>
#pragma warning disable RS0030 // real-socket mode runs on the wall clock
    private static readonly TimeProvider WallTime = TimeProvider.System;
#pragma warning restore RS0030

    /// <summary>The scenarios <c>run --mode tcp</c> can run (those with a TCP shape in <see cref="TcpScenarioRunner"/>).</summary>
    public static bool SupportsTcp(IScenario scenario) => TcpScenarioRunner.Supports(scenario);

    /// <summary>True when <c>serve --scenario</c> hosts this scenario.</summary>
    public static bool SupportsServe(string scenario) => TcpServeHost.Scenarios.Contains(scenario, StringComparer.Ordinal);

    public static Option<string> ModeOption() => new Option<string>("--mode")
    {
        Description = "Where the scenario runs: sim (the deterministic simulation, replayable), tcp (real sockets on loopback, the same checkers; not bit-replayable) or ws (real sockets, every client over WebSocket on /ws of a Kestrel port per play server).",
        DefaultValueFactory = _ => SimMode,
    }.AcceptOnlyFromAmong(SimMode, TcpMode, WebSocketMode);

    public static Option<bool> TlsOption() => new("--tls")
    {
        Description = "tcp and ws modes only: clients reach the servers over TLS (TCP+TLS, or wss://) with a self-signed certificate made for the run.",
    };

    public static Option<int?> TimeLimitOption() => new("--time-limit-s")
    {
        Description = $"tcp mode only: fail the run (liveness, exit 3) when its workload has not finished after this many wall seconds (default {TimeLimitSecondsDefault}).",
    };

    /// <summary>
    /// Runs <paramref name="scenario"/> over loopback TCP and prints the banner, what the run ignores, the report and,
    /// on failure, the command that reruns the same options.
    /// </summary>
    public int RunTcp(IScenario scenario, SimOptions options, ulong seed, int? timeLimitSeconds, string? jsonPath, TextWriter? json, bool webSocket = false, bool tls = false)
    {
        ArgumentNullException.ThrowIfNull(scenario);
        ArgumentNullException.ThrowIfNull(options);
        var seconds = timeLimitSeconds ?? TimeLimitSecondsDefault;
        if (seconds < 1)
        {
            throw new UsageException($"--time-limit-s must be at least 1, got {seconds.ToString(CultureInfo.InvariantCulture)}.");
        }

        if (!SupportsTcp(scenario))
        {
            throw new UsageException($"Scenario '{scenario.Name}' has no TCP shape. Scenarios with one: {string.Join(", ", ScenarioCatalog.Names.Where(n => SupportsTcp(ScenarioCatalog.Create(n))))}.");
        }

        var settings = new TcpRunSettings { Time = WallTime, TimeLimit = TimeSpan.FromSeconds(seconds), Seed = seed, WebSocket = webSocket, Tls = tls };
        view.Line(string.Create(CultureInfo.InvariantCulture, $"{options.ToBanner(seed)} substrate={TcpMode} transport={settings.TransportName} time-limit-s={seconds}"));
        view.Line($"tcp.ignores={string.Join(',', TcpScenarioRunner.IgnoredOptionKeys)} (loopback is the network; of the fault plan only Disconnect and Reconnect steps apply, placed by workload progress)");
        var report = RunBlocking(() => TcpScenarioRunner.RunAsync(scenario, options, settings, stop));
        if (json is not null)
        {
            json.Write(report.ToJson());
            json.Write('\n');
            view.Line("json-file=" + jsonPath);
        }

        foreach (var line in report.ToText().Split('\n', StringSplitOptions.RemoveEmptyEntries))
        {
            view.Line(line);
        }

        if (!report.Passed)
        {
            view.Line($"replay={SimCli.ReplayPrefix} {ReplayArguments(scenario, options, seed, timeLimitSeconds, webSocket, tls)}");
            view.Line("replay-note=TCP runs are not bit-for-bit replayable (the thread pool and the kernel decide interleavings); the line reruns the same scenario, options and payload seed.");
        }

        return report.ExitCode;
    }

    /// <summary>The runner arguments of a TCP run: the scenario, <c>--mode tcp</c>, the seed, the time limit if set and every changed option.</summary>
    internal static string ReplayArguments(IScenario scenario, SimOptions options, ulong seed, int? timeLimitSeconds, bool webSocket = false, bool tls = false)
    {
        var arguments = options.ToArguments(seed, scenario.Defaults);
        var head = $"--scenario {options.Scenario}";
        var rest = arguments.StartsWith(head, StringComparison.Ordinal) ? arguments[head.Length..] : " " + arguments;
        var limit = timeLimitSeconds is { } s ? string.Create(CultureInfo.InvariantCulture, $" --time-limit-s {s}") : string.Empty;
        return $"{head} --mode {(webSocket ? WebSocketMode : TcpMode)}{(tls ? " --tls" : string.Empty)}{rest}{limit}";
    }

    public Command ServeCommand()
    {
        var port = new Option<int>("--port", "-p") { Description = "The port on 127.0.0.1; 0 picks a free one (printed).", DefaultValueFactory = _ => 0 };
        var scenario = new Option<string>("--scenario", "-s")
        {
            Description = $"What to serve: {string.Join(", ", TcpServeHost.Scenarios)} (all host the echo stage; see the printed message ids).",
            DefaultValueFactory = _ => EchoMsgIds.StageType,
        };
        var compressAbove = new Option<int>("--compress-above-bytes")
        {
            Description = "Replies whose payload has at least this many bytes are sent LZ4-compressed in K4os's LZ4Pickler format (OriginalSize > 0, what PlayHouse's C# connector reads) when that makes them smaller; 0 never compresses.",
            DefaultValueFactory = _ => 0,
        };
        var command = new Command(
            "serve",
            "Hosts a real play server on 127.0.0.1 for any PlayHouse-protocol client until Ctrl+C or SIGTERM, then stops gracefully (stops accepting, drains, reports what it dropped).")
        {
            port, scenario, compressAbove,
        };
        command.SetAction(parse =>
        {
            var name = parse.GetValue(scenario) ?? string.Empty;
            var portNumber = parse.GetValue(port);
            if (!SupportsServe(name))
            {
                var tcpOnly = ScenarioCatalog.Names.Contains(name, StringComparer.Ordinal) ? " (it needs its workload clients: use run --scenario " + name + " --mode tcp)" : string.Empty;
                throw new UsageException($"serve hosts the scenarios {string.Join(", ", TcpServeHost.Scenarios)}; got '{name}'{tcpOnly}.");
            }

            if (portNumber is < 0 or > 65_535)
            {
                throw new UsageException($"--port must be within 0..65535 (0 picks a free port), got {portNumber.ToString(CultureInfo.InvariantCulture)}.");
            }

            var compressAboveBytes = parse.GetValue(compressAbove);
            if (compressAboveBytes < 0)
            {
                throw new UsageException($"--compress-above-bytes must be 0 (never compress) or a payload size in bytes above 0, got {compressAboveBytes.ToString(CultureInfo.InvariantCulture)}.");
            }

            return Serve(new TcpServeOptions { Port = portNumber, Scenario = name, Transport = new TcpTransportOptions { CompressAboveBytes = compressAboveBytes } });
        });
        return command;
    }

    private int Serve(TcpServeOptions options)
    {
        using var signalled = CancellationTokenSource.CreateLinkedTokenSource(stop);
        void OnSignal(PosixSignalContext context)
        {
            // Keep the process alive for the graceful stop; the command returns once it is done.
            context.Cancel = true;
            signalled.Cancel();
        }

        using var interrupt = PosixSignalRegistration.Create(PosixSignal.SIGINT, OnSignal);
        using var terminate = PosixSignalRegistration.Create(PosixSignal.SIGTERM, OnSignal);
        TcpServeSession session;
        try
        {
            session = TcpServeHost.Start(options, WallTime);
        }
        catch (System.Net.Sockets.SocketException ex)
        {
            throw new UsageException($"serve cannot listen on 127.0.0.1:{options.Port.ToString(CultureInfo.InvariantCulture)}: {ex.Message}", ex);
        }

        var report = RunBlocking(async () =>
        {
            await using (session.ConfigureAwait(false))
            {
                view.Line($"listening={session.EndPoint} scenario={options.Scenario} stage-type={EchoMsgIds.StageType}");
                view.Line("port=" + session.EndPoint.Port.ToString(CultureInfo.InvariantCulture));
                view.Line(options.Transport.CompressAboveBytes > 0
                    ? string.Create(CultureInfo.InvariantCulture, $"compress-above-bytes={options.Transport.CompressAboveBytes} (LZ4Pickler format, OriginalSize > 0)")
                    : "compress-above-bytes=0 (never compresses)");
                foreach (var line in TcpServeHost.Describe(options.Scenario).Split('\n', StringSplitOptions.RemoveEmptyEntries))
                {
                    view.Line(line.TrimEnd());
                }

                view.Line("wire layout: see playhouse-reference.md (PlayHouse TCP framing); Ctrl+C or SIGTERM stops gracefully");
                try
                {
                    await Task.Delay(Timeout.InfiniteTimeSpan, WallTime, signalled.Token).ConfigureAwait(false);
                }
                catch (OperationCanceledException)
                {
                    // The stop signal.
                }

                view.Line("stopping: no new connections, draining mailboxes and send queues");
                return await session.StopAsync().ConfigureAwait(false);
            }
        });
        view.Line(report.ToString());
        view.Line(string.Create(
            CultureInfo.InvariantCulture,
            $"serve.connections={report.ConnectionsAccepted} serve.framesIn={report.FramesReceived} serve.framesOut={report.FramesSent} serve.drained={(report.Drained ? "true" : "false")} serve.mailboxDropped={report.MailboxMessagesDropped} serve.sendBytesDropped={report.SendBytesDropped} serve.buffersOutstanding={report.BuffersOutstanding}"));
        foreach (var (name, value) in report.TransportCounters.Where(c => c.Value != 0))
        {
            view.Line(string.Create(CultureInfo.InvariantCulture, $"tcp.{name}={value}"));
        }

        // A leaked pooled buffer is a bug the ledger caught: the stop was not clean.
        return report.BuffersOutstanding == 0 ? RunExitCodes.Pass : RunExitCodes.InvariantViolation;
    }

    public Command BenchTcpCommand()
    {
        var defaults = new TcpBenchOptions();
        var connections = new Option<int>("--connections") { Description = "Client connections.", DefaultValueFactory = _ => defaults.Connections };
        var inFlight = new Option<int>("--in-flight") { Description = "Requests each connection keeps in flight (closed loop).", DefaultValueFactory = _ => defaults.InFlightPerConnection };
        var payload = new Option<int>("--payload-bytes") { Description = "Echo payload size (0..65536).", DefaultValueFactory = _ => defaults.PayloadBytes };
        var repeats = new Option<int>("--repeats") { Description = "Paired repeats, alternating which side goes first (even, at least 2).", DefaultValueFactory = _ => defaults.Repeats };
        var duration = new Option<int>("--duration-ms") { Description = "Measured window per side per repeat.", DefaultValueFactory = _ => (int)defaults.Measure.TotalMilliseconds };
        var warmUp = new Option<int>("--warm-up-ms") { Description = "Unmeasured warm-up before each window.", DefaultValueFactory = _ => (int)defaults.WarmUp.TotalMilliseconds };
        var rttSamples = new Option<int>("--rtt-samples") { Description = "Round trips timed one at a time (1 connection, 1 in flight) for the low-load RTT of each side.", DefaultValueFactory = _ => defaults.RttSamples };
        var command = new Command(
            "tcp",
            "Full-core echo over loopback TCP against a raw-socket echo with the same load client: median paired ratio (target >= 0.6), allocated bytes per message (<= 1), Gen2 in the windows (0), low-load RTT of both (reported, not asserted).")
        {
            connections, inFlight, payload, repeats, duration, warmUp, rttSamples,
        };
        command.SetAction(parse =>
        {
            var options = new TcpBenchOptions
            {
                Connections = parse.GetValue(connections),
                InFlightPerConnection = parse.GetValue(inFlight),
                PayloadBytes = parse.GetValue(payload),
                Repeats = parse.GetValue(repeats),
                Measure = TimeSpan.FromMilliseconds(parse.GetValue(duration)),
                WarmUp = TimeSpan.FromMilliseconds(parse.GetValue(warmUp)),
                RttSamples = parse.GetValue(rttSamples),
            };
            try
            {
                options.Validate();
            }
            catch (ArgumentException ex)
            {
                throw new UsageException("bench tcp: --connections, --in-flight, --duration-ms and --rtt-samples must be at least 1, --warm-up-ms at least 0, --payload-bytes within 0..65536 and --repeats even and at least 2.", ex);
            }

            return BenchTcp(options);
        });
        return command;
    }

    private int BenchTcp(TcpBenchOptions options)
    {
        static string F(double value) => value.ToString("0.###", CultureInfo.InvariantCulture);
        static string Whole(double value) => value.ToString("0", CultureInfo.InvariantCulture);
        view.Line(string.Create(
            CultureInfo.InvariantCulture,
            $"bench tcp connections={options.Connections} in-flight={options.InFlightPerConnection} payload-bytes={options.PayloadBytes} repeats={options.Repeats} duration-ms={options.Measure.TotalMilliseconds} warm-up-ms={options.WarmUp.TotalMilliseconds} rtt-samples={options.RttSamples}"));
        using var progress = new ViewLineWriter(view);
        var report = RunBlocking(() => TcpBench.RunAsync(options, WallTime, progress, stop));
        foreach (var repeat in report.Repeats)
        {
            view.Line(string.Create(
                CultureInfo.InvariantCulture,
                $"repeat.{repeat.Index}=order:{repeat.Order} core={repeat.Core.MessagesPerSecond:0} raw={repeat.Raw.MessagesPerSecond:0} ratio={repeat.Ratio:0.###} core-bytes-per-message={repeat.Core.AllocatedBytesPerMessage:0.###} core-gen2={repeat.Core.Gen2Collections}"));
        }

        var ratio = report.MedianRatio;
        var bytes = report.CoreAllocatedBytesPerMessage;
        view.Line("repeats=" + report.Repeats.Count.ToString(CultureInfo.InvariantCulture));
        view.Line("core.roundTripsPerSecond=" + Whole(Median(report.Repeats.Select(r => r.Core.MessagesPerSecond))));
        view.Line("raw.roundTripsPerSecond=" + Whole(Median(report.Repeats.Select(r => r.Raw.MessagesPerSecond))));
        view.Line("ratio.median=" + F(ratio));
        view.Line("core.bytesPerMessage=" + F(bytes));
        view.Line("raw.bytesPerMessage=" + F(Median(report.Repeats.Select(r => r.Raw.AllocatedBytesPerMessage))));
        view.Line("core.gen2=" + report.CoreGen2Collections.ToString(CultureInfo.InvariantCulture));
        view.Line("core.rttMsP50=" + F(report.RttMsP50Core));
        view.Line("core.rttMsP99=" + F(report.RttMsP99Core));
        view.Line("raw.rttMsP50=" + F(report.RttMsP50Raw));
        view.Line("raw.rttMsP99=" + F(report.RttMsP99Raw));
        view.Line("processors=" + report.ProcessorCount.ToString(CultureInfo.InvariantCulture));
        view.Line("gc=" + report.GcMode);

        // Budgets are reported, not enforced: the numbers depend on the machine and its load.
        view.Line($"budget.ratio={(ratio >= 0.6 ? "met" : "missed")} (median core/raw {F(ratio)}, target >= 0.6)");
        view.Line($"budget.bytesPerMessage={(bytes <= 1 ? "met" : "missed")} ({F(bytes)}, target <= 1)");
        view.Line($"budget.gen2={(report.CoreGen2Collections == 0 ? "met" : "missed")} ({report.CoreGen2Collections.ToString(CultureInfo.InvariantCulture)}, target 0)");
        return 0;
    }

    private static double Median(IEnumerable<double> values)
    {
        var sorted = values.Order().ToArray();
        if (sorted.Length == 0)
        {
            return 0;
        }

        return sorted.Length % 2 == 1 ? sorted[sorted.Length / 2] : (sorted[(sorted.Length / 2) - 1] + sorted[sorted.Length / 2]) / 2;
    }

    /// <summary>
    /// The command line is synchronous; the real-socket engines are asynchronous and run on the thread pool. The
    /// console has no synchronisation context, so waiting here cannot deadlock.
    /// </summary>
    private static T RunBlocking<T>(Func<Task<T>> run) => run().GetAwaiter().GetResult();
}

/// <summary>A <see cref="TextWriter"/> that hands each completed line to a view (for engines that report progress to a writer).</summary>
/// <remarks>Not thread-safe; the engines write their progress from one logical flow.</remarks>
internal sealed class ViewLineWriter(IRunView view) : TextWriter
{
    private readonly System.Text.StringBuilder _line = new();

    public override System.Text.Encoding Encoding => System.Text.Encoding.UTF8;

    public override void Write(char value)
    {
        if (value == '\n')
        {
            view.Line(_line.ToString().TrimEnd('\r'));
            _line.Clear();
        }
        else
        {
            _line.Append(value);
        }
    }

    protected override void Dispose(bool disposing)
    {
        if (disposing && _line.Length > 0)
        {
            view.Line(_line.ToString());
            _line.Clear();
        }

        base.Dispose(disposing);
    }
}
