using System.Buffers.Binary;
using System.Globalization;
using System.Net.Sockets;
using System.Runtime;
using System.Text;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;
using PlayHouse.Transport.Tcp;

namespace PlayHouse.Sim.Tcp;

/// <summary>Options of a soak: how many cycles, how parallel, how spread, how hostile, and the budgets it reports.</summary>
public sealed record TcpSoakOptions
{
    /// <summary>Connect / authenticate / request / disconnect cycles in all.</summary>
    public long Cycles { get; init; } = 1_000_000;

    /// <summary>
    /// The parallel clients of each phase, in order; the cycles are split evenly between the phases (16, then 32, then 64
    /// connections cycling at once by default).
    /// </summary>
    public IReadOnlyList<int> Parallel { get; init; } = [16, 32, 64];

    /// <summary>Stage ids the accounts spread over: cycle n authenticates into stage 1 + n mod StageIds, always a fresh account.</summary>
    public int StageIds { get; init; } = 1_000;

    /// <summary>Every n-th cycle is hostile (it sends a malformed or out-of-protocol frame and expects the server to close it); 0 for none.</summary>
    public int HostileEvery { get; init; }

    /// <summary>A memory sample (and a progress line) every this many cycles.</summary>
    public long SampleEvery { get; init; } = 100_000;

    /// <summary>The in-process server's options: the soak's defaults expire disconnected actors and close idle stages within seconds.</summary>
    public ServerOptions Server { get; init; } = new()
    {
        DisconnectedActorExpiry = TimeSpan.FromSeconds(2),
        IdleStageCloseAfter = TimeSpan.FromSeconds(2),
    };

    /// <summary>
    /// The working-set budget: the curve is flat when the working set at the end is at most this much above the first
    /// sample after the start (the first <see cref="SampleEvery"/> cycles warm the JIT, the pools and the GC up).
    /// </summary>
    public double WorkingSetBudgetMb { get; init; } = 32;

    /// <summary>The live-heap budget (bytes reachable after a full collection), against the same first sample.</summary>
    public double LiveHeapBudgetMb { get; init; } = 16;

    /// <summary>How long one cycle's connect, reply or close may take before the cycle counts as lost.</summary>
    public TimeSpan CycleTimeout { get; init; } = TimeSpan.FromSeconds(30);

    public void Validate()
    {
        if (Cycles < 1 || Parallel.Count == 0 || Parallel.Any(p => p < 1 || p > 4096) || StageIds < 1 || HostileEvery < 0 || SampleEvery < 1
            || WorkingSetBudgetMb < 0 || LiveHeapBudgetMb < 0 || CycleTimeout <= TimeSpan.Zero)
        {
            throw new ArgumentException("TcpSoakOptions: Cycles, StageIds and SampleEvery must be at least 1, every Parallel within 1..4096, HostileEvery and the budgets at least 0.");
        }

        Server.Validate();
    }
}

/// <summary>The process's memory at one point of a soak.</summary>
public sealed record SoakSample(string Label, long Cycles, double WorkingSetMb, double GcHeapMb, double LiveHeapMb, int LiveStages, int LiveActors, int Sessions)
{
    public override string ToString() => string.Create(
        CultureInfo.InvariantCulture,
        $"cycles={Cycles} working-set-mb={WorkingSetMb:0.0} gc-heap-mb={GcHeapMb:0.0} live-heap-mb={LiveHeapMb:0.0} live-stages={LiveStages} live-actors={LiveActors} sessions={Sessions}");
}

/// <summary>One phase of a soak: its parallelism and how fast it cycled.</summary>
public sealed record SoakPhase(int Parallel, long Cycles, double WallSeconds)
{
    public double CyclesPerSecond => WallSeconds > 0 ? Cycles / WallSeconds : 0;
}

/// <summary>A budget a soak judges: met or missed, and the numbers behind it.</summary>
public sealed record SoakBudget(string Name, bool Met, string Detail)
{
    public override string ToString() => $"budget.{Name}={(Met ? "met" : "missed")} ({Detail})";

    /// <summary>
    /// Flat means: the value at the end is at most <paramref name="budgetMb"/> above the baseline, the first sample after
    /// the start (or the start itself when the run was shorter than one sample interval).
    /// </summary>
    public static SoakBudget Flat(string name, IReadOnlyList<SoakSample> samples, Func<SoakSample, double> value, double budgetMb)
    {
        ArgumentNullException.ThrowIfNull(samples);
        ArgumentNullException.ThrowIfNull(value);
        if (samples.Count < 2)
        {
            throw new ArgumentException("A flat budget needs a baseline and an end sample.", nameof(samples));
        }

        var baseline = samples.Count > 2 ? samples[1] : samples[0];
        var end = samples[^1];
        var growth = value(end) - value(baseline);
        return new SoakBudget(name, growth <= budgetMb, string.Create(CultureInfo.InvariantCulture, $"end {value(end):0.0} MB, baseline {value(baseline):0.0} MB at {baseline.Cycles} cycles, growth {(growth >= 0 ? "+" : string.Empty)}{growth:0.0} MB, budget +{budgetMb:0.#} MB"));
    }
}

/// <summary>What a soak did.</summary>
public sealed record TcpSoakReport
{
    public required TcpSoakOptions Options { get; init; }

    public required IReadOnlyList<SoakSample> Samples { get; init; }

    public required IReadOnlyList<SoakPhase> Phases { get; init; }

    public long CyclesOk { get; init; }

    public long HostileClosed { get; init; }

    /// <summary>Authentications refused at a registry cap (TooManyStages, StageFull): answered, so not lost.</summary>
    public long RefusedAtCap { get; init; }

    /// <summary>Cycles that did not end as expected (a failed connect, a wrong or missing reply, a hostile frame the server did not close on).</summary>
    public long Lost { get; init; }

    public string? FirstLoss { get; init; }

    public int LeakedServerSessions { get; init; }

    public int LeakedListenerSessions { get; init; }

    public long ServerBuffersOutstanding { get; init; }

    public long ClientBuffersOutstanding { get; init; }

    public double PeakWorkingSetMb { get; init; }

    public required TcpServeRegistries RegistriesAfterCycles { get; init; }

    public required TcpServeRegistries RegistriesAtEnd { get; init; }

    public IReadOnlyList<KeyValuePair<string, long>> ServerCounters { get; init; } = [];

    public IReadOnlyList<KeyValuePair<string, long>> TransportCounters { get; init; } = [];

    public double WallSeconds { get; init; }

    public bool NothingLeaked => Lost == 0 && LeakedServerSessions == 0 && LeakedListenerSessions == 0 && ServerBuffersOutstanding == 0 && ClientBuffersOutstanding == 0;

    public IReadOnlyList<SoakBudget> Budgets =>
    [
        new SoakBudget("leaks", NothingLeaked, string.Create(CultureInfo.InvariantCulture, $"lost {Lost}, sessions {LeakedServerSessions + LeakedListenerSessions}, buffers {ServerBuffersOutstanding + ClientBuffersOutstanding}; target 0")),
        SoakBudget.Flat("workingSet", Samples, s => s.WorkingSetMb, Options.WorkingSetBudgetMb),
        SoakBudget.Flat("liveHeap", Samples, s => s.LiveHeapMb, Options.LiveHeapBudgetMb),
    ];

    public bool Passed => Budgets.All(b => b.Met);
}

/// <summary>
/// The soak: one play server with the echo stage on loopback TCP in this process (the core as <c>serve</c> hosts it),
/// and phases of parallel clients that each run connect / authenticate (a fresh account) / echo / disconnect cycles
/// over many stage ids, every n-th cycle a hostile frame instead. It samples the process's working set and heaps
/// at the start, every <see cref="TcpSoakOptions.SampleEvery"/> cycles and at the end (after the server expired the
/// last actors and closed the idle stages), then checks that no cycle was lost, no session and no pooled buffer leaked,
/// and that the memory curve stayed within its budgets.
/// </summary>
/// <remarks>Real sockets, the thread pool and the wall clock: nothing here is replayable; the options are printed.</remarks>
public static class TcpSoak
{
    /// <summary>How often the end of a soak checks whether the server let go of its sessions, actors and stages.</summary>
    private static readonly TimeSpan PollInterval = TimeSpan.FromMilliseconds(20);

    private static readonly byte[] EchoPayload = Encoding.ASCII.GetBytes("soak-echo-payload-0123456789abcd");

    public static async Task<TcpSoakReport> RunAsync(TcpSoakOptions options, TimeProvider time, Action<string>? progress = null, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(options);
        ArgumentNullException.ThrowIfNull(time);
        options.Validate();
        var serve = TcpServeHost.Start(new TcpServeOptions { Scenario = EchoMsgIds.StageType, Server = options.Server }, time);
        await using (serve.ConfigureAwait(false))
        {
            var clientPool = new MessagePool(new MessagePoolOptions { CheckedMode = true, Name = "soak-clients" });
            var run = new SoakRun(options, time, serve, clientPool, progress);
            return await run.RunAsync(cancellationToken).ConfigureAwait(false);
        }
    }

    private sealed class SoakRun(TcpSoakOptions options, TimeProvider time, TcpServeSession serve, MessagePool clientPool, Action<string>? progress)
    {
        private readonly Lock _gate = new();
        private readonly List<SoakSample> _samples = [];
        private readonly TcpPlayClientOptions _clientOptions = new() { Pool = clientPool, Time = time, RequestTimeout = options.CycleTimeout, InFlightMax = 4 };
        private long _next;
        private long _done;
        private long _ok;
        private long _hostileClosed;
        private long _refused;
        private long _lost;
        private string? _firstLoss;
        private long _phaseBegin;
        private long _phaseEnd;
        private long _phaseStartTimestamp;
        private int _phaseParallel;

        private PlayServer Server => serve.Server;

        public async Task<TcpSoakReport> RunAsync(CancellationToken cancellationToken)
        {
            var started = time.GetTimestamp();
            Sample("start", 0);
            var phases = new List<SoakPhase>();
            var perPhase = options.Cycles / options.Parallel.Count;
            for (var i = 0; i < options.Parallel.Count; i++)
            {
                var parallel = options.Parallel[i];
                var end = i == options.Parallel.Count - 1 ? options.Cycles : (i + 1) * perPhase;
                var begin = Volatile.Read(ref _next);
                _phaseBegin = begin;
                _phaseEnd = end;
                _phaseParallel = parallel;
                _phaseStartTimestamp = time.GetTimestamp();
                var workers = new Task[parallel];
                for (var w = 0; w < parallel; w++)
                {
                    workers[w] = WorkAsync(cancellationToken);
                }

                await Task.WhenAll(workers).ConfigureAwait(false);
                phases.Add(new SoakPhase(parallel, end - begin, time.GetElapsedTime(_phaseStartTimestamp).TotalSeconds));
            }

            var afterCycles = Registries();

            // Every client has closed: the server must let go of every session, then (after the expiry and the idle close)
            // of every actor and stage.
            var settle = (options.Server.DisconnectedActorExpiry ?? TimeSpan.Zero) + (options.Server.IdleStageCloseAfter ?? TimeSpan.Zero) + TimeSpan.FromSeconds(10);
            await WaitUntilAsync(() => serve.Listener.SessionCount == 0 && Server.SessionCount == 0 && (options.Server.DisconnectedActorExpiry is null || Server.ActorCount == 0) && (options.Server.IdleStageCloseAfter is null || Server.StageCount == 0), settle, cancellationToken).ConfigureAwait(false);
            var atEnd = Registries();
            var leakedServer = Server.SessionCount;
            var leakedListener = serve.Listener.SessionCount;
            Sample("end", Volatile.Read(ref _done));
            var serverBuffers = serve.Server.Pool.GetStatistics().Outstanding;
            var clientBuffers = clientPool.GetStatistics().Outstanding;
            double peak;
            using (var process = System.Diagnostics.Process.GetCurrentProcess())
            {
                peak = Math.Max(process.PeakWorkingSet64 / Mb, _samples.Max(s => s.WorkingSetMb));
            }

            var counters = Server.Counters.Snapshot().Where(c => c.Value != 0).ToList();
            var transport = serve.Listener.Counters.Snapshot().Where(c => c.Value != 0).ToList();
            return new TcpSoakReport
            {
                Options = options,
                Samples = [.. _samples],
                Phases = phases,
                CyclesOk = Volatile.Read(ref _ok),
                HostileClosed = Volatile.Read(ref _hostileClosed),
                RefusedAtCap = Volatile.Read(ref _refused),
                Lost = Volatile.Read(ref _lost),
                FirstLoss = _firstLoss,
                LeakedServerSessions = leakedServer,
                LeakedListenerSessions = leakedListener,
                ServerBuffersOutstanding = serverBuffers,
                ClientBuffersOutstanding = clientBuffers,
                PeakWorkingSetMb = peak,
                RegistriesAfterCycles = afterCycles,
                RegistriesAtEnd = atEnd,
                ServerCounters = counters,
                TransportCounters = transport,
                WallSeconds = time.GetElapsedTime(started).TotalSeconds,
            };
        }

        private async Task WorkAsync(CancellationToken cancellationToken)
        {
            // Yield first, so that starting the workers does not run the first cycles on the caller's stack one after another.
            await Task.Yield();
            while (!cancellationToken.IsCancellationRequested)
            {
                var cycle = Interlocked.Increment(ref _next) - 1;
                if (cycle >= _phaseEnd)
                {
                    Interlocked.Decrement(ref _next);
                    return;
                }

                try
                {
                    if (options.HostileEvery > 0 && cycle % options.HostileEvery == options.HostileEvery - 1)
                    {
                        await HostileCycleAsync(cycle, cancellationToken).ConfigureAwait(false);
                    }
                    else
                    {
                        await CycleAsync(cycle, cancellationToken).ConfigureAwait(false);
                    }
                }
                catch (Exception ex) when (ex is SocketException or TimeoutException or IOException or ObjectDisposedException)
                {
                    Lose(cycle, $"{ex.GetType().Name}: {ex.Message}");
                }

                var done = Interlocked.Increment(ref _done);
                if (done % options.SampleEvery == 0 && done < options.Cycles)
                {
                    Sample("progress", done);
                }
            }
        }

        private async Task CycleAsync(long cycle, CancellationToken cancellationToken)
        {
            var stageId = 1 + (cycle % options.StageIds);
            var account = new byte[sizeof(long)];
            BinaryPrimitives.WriteInt64LittleEndian(account, cycle + 1);
            var client = await TcpPlayClient.ConnectAsync(serve.EndPoint, _clientOptions, cancellationToken).ConfigureAwait(false);
            try
            {
                var auth = await client.AuthenticateAsync(stageId, account).ConfigureAwait(false);
                if (!auth.IsSuccess)
                {
                    if (auth.ErrorCode is ErrorCodes.TooManyStages or ErrorCodes.StageFull && !auth.TimedOut && !auth.Disconnected)
                    {
                        Interlocked.Increment(ref _refused);
                    }
                    else
                    {
                        Lose(cycle, $"authenticate into stage {stageId}: {ErrorCodes.Describe(auth.ErrorCode)} timedOut={auth.TimedOut} disconnected={auth.Disconnected}");
                    }

                    return;
                }

                var echo = await client.RequestAsync(EchoMsgIds.Echo, stageId, EchoPayload).ConfigureAwait(false);
                if (!echo.IsSuccess || !echo.Payload.AsSpan().SequenceEqual(EchoPayload))
                {
                    Lose(cycle, $"echo in stage {stageId}: {ErrorCodes.Describe(echo.ErrorCode)} timedOut={echo.TimedOut} disconnected={echo.Disconnected} bytes={echo.Payload.Length}");
                    return;
                }

                Interlocked.Increment(ref _ok);
            }
            finally
            {
                client.Dispose();
                await client.Closed.WaitAsync(options.CycleTimeout, time, cancellationToken).ConfigureAwait(false);
            }
        }

        private async Task HostileCycleAsync(long cycle, CancellationToken cancellationToken)
        {
            using var socket = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp) { NoDelay = true };
            await socket.ConnectAsync(serve.EndPoint, cancellationToken).ConfigureAwait(false);
            await socket.SendAsync(HostileFrame(cycle / Math.Max(1, options.HostileEvery)), SocketFlags.None, cancellationToken).ConfigureAwait(false);
            var buffer = new byte[256];
            using var timeout = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
            timeout.CancelAfter(options.CycleTimeout);
            try
            {
                // The server answers nothing to these frames (or an error reply); it must close the connection.
                while (await socket.ReceiveAsync(buffer, SocketFlags.None, timeout.Token).ConfigureAwait(false) > 0)
                {
                }
            }
            catch (SocketException)
            {
                // A reset is a close too.
            }
            catch (OperationCanceledException) when (!cancellationToken.IsCancellationRequested)
            {
                Lose(cycle, "hostile frame: the server kept the connection open");
                return;
            }

            Interlocked.Increment(ref _hostileClosed);
        }

        /// <summary>Four kinds in turn: a length past any frame cap, a msg id that is not UTF-8, an empty msg id, and a first message that is not the authentication.</summary>
        private static byte[] HostileFrame(long kind)
        {
            switch (kind % 4)
            {
                case 0:
                    return LengthThen(int.MaxValue, [3, 0x41, 0x42, 0x43]);
                case 1:
                    return LengthThen(13, [2, 0xC3, 0x28, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0]);
                case 2:
                    return LengthThen(11, [0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0]);
                default:
                    var id = Encoding.ASCII.GetBytes(EchoMsgIds.Echo);
                    var body = new byte[1 + id.Length + 2 + 8 + 4];
                    body[0] = (byte)id.Length;
                    id.CopyTo(body, 1);
                    BinaryPrimitives.WriteUInt16LittleEndian(body.AsSpan(1 + id.Length), 1);
                    BinaryPrimitives.WriteInt64LittleEndian(body.AsSpan(3 + id.Length), 1);
                    return LengthThen(body.Length, body);
            }
        }

        private static byte[] LengthThen(int length, byte[] rest)
        {
            var frame = new byte[4 + rest.Length];
            BinaryPrimitives.WriteInt32LittleEndian(frame, length);
            rest.CopyTo(frame, 4);
            return frame;
        }

        private void Lose(long cycle, string why)
        {
            if (Interlocked.Increment(ref _lost) == 1)
            {
                _firstLoss = string.Create(CultureInfo.InvariantCulture, $"cycle {cycle}: {why}");
            }
        }

        private TcpServeRegistries Registries() => new(Server.StageCount, Server.ActorCount, Server.StagesHighWater, Server.ActorsHighWater);

        private void Sample(string label, long cycles)
        {
            // A full blocking collection first: what is left is what the process still holds.
            var gcHeap = GC.GetTotalMemory(forceFullCollection: false) / Mb;
            var liveHeap = GC.GetTotalMemory(forceFullCollection: true) / Mb;
            var sample = new SoakSample(label, cycles, Environment.WorkingSet / Mb, gcHeap, liveHeap, Server.StageCount, Server.ActorCount, Server.SessionCount);
            string line;
            lock (_gate)
            {
                _samples.Add(sample);
                line = label switch
                {
                    "progress" => string.Create(CultureInfo.InvariantCulture, $"progress {cycles}/{options.Cycles} parallel={_phaseParallel} phase-cycles-per-second={PhaseRate(cycles):0} {sample}"),
                    _ => $"sample.{label} {sample}",
                };
            }

            progress?.Invoke(line);
        }

        private double PhaseRate(long cycles)
        {
            var seconds = time.GetElapsedTime(_phaseStartTimestamp).TotalSeconds;
            return seconds > 0 ? Math.Max(0, cycles - _phaseBegin) / seconds : 0;
        }

        private async Task WaitUntilAsync(Func<bool> done, TimeSpan limit, CancellationToken cancellationToken)
        {
            var deadline = time.GetTimestamp() + (long)(limit.TotalSeconds * time.TimestampFrequency);
            while (!done() && time.GetTimestamp() < deadline)
            {
                await Task.Delay(PollInterval, time, cancellationToken).ConfigureAwait(false);
            }
        }

        private const double Mb = 1024 * 1024;
    }

    /// <summary>The machine a soak ran on, for its report: CPU model, processors, load average, GC mode.</summary>
    public static string DescribeMachine()
    {
        var cpu = ReadFirst("/proc/cpuinfo", line => line.StartsWith("model name", StringComparison.Ordinal) ? line[(line.IndexOf(':', StringComparison.Ordinal) + 1)..].Trim() : null) ?? "unknown";
        var load = ReadFirst("/proc/loadavg", line => string.Join(' ', line.Split(' ').Take(3))) ?? "unknown";
        var gc = (GCSettings.IsServerGC ? "server" : "workstation") + "," + GCSettings.LatencyMode;
        return string.Create(CultureInfo.InvariantCulture, $"cpu=\"{cpu}\" processors={Environment.ProcessorCount} load-average=\"{load}\" gc={gc}");
    }

    private static string? ReadFirst(string path, Func<string, string?> pick)
    {
        try
        {
            foreach (var line in File.ReadLines(path))
            {
                var value = pick(line);
                if (value is not null)
                {
                    return value;
                }
            }
        }
        catch (IOException)
        {
        }
        catch (UnauthorizedAccessException)
        {
        }

        return null;
    }
}
