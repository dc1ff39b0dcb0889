using System.Buffers.Binary;
using System.Globalization;
using System.Net;
using System.Net.Sockets;
using System.Runtime;
using System.Runtime.CompilerServices;
using System.Text;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;
using PlayHouse.Core.Seams;

namespace PlayHouse.Transport.Tcp;

/// <summary>Options of <c>bench tcp</c>.</summary>
public sealed record TcpBenchOptions
{
    public int Connections { get; init; } = 64;

    /// <summary>Requests each connection keeps in flight (closed loop).</summary>
    public int InFlightPerConnection { get; init; } = 16;

    public int PayloadBytes { get; init; } = 64;

    public TimeSpan WarmUp { get; init; } = TimeSpan.FromSeconds(1);

    public TimeSpan Measure { get; init; } = TimeSpan.FromSeconds(3);

    /// <summary>Paired repeats, alternating which side runs first; must be even.</summary>
    public int Repeats { get; init; } = 4;

    /// <summary>Round trips timed one at a time (one connection, one in flight) for the low-load RTT.</summary>
    public int RttSamples { get; init; } = 2000;

    public void Validate()
    {
        if (Connections < 1 || InFlightPerConnection < 1 || PayloadBytes < 0 || PayloadBytes > 64 * 1024 || Measure <= TimeSpan.Zero
            || WarmUp < TimeSpan.Zero || Repeats < 2 || Repeats % 2 != 0 || RttSamples < 1)
        {
            throw new ArgumentException("TcpBenchOptions: every count must be positive and Repeats even (at least 2).");
        }
    }
}

/// <summary>One side (full core or raw echo) in one repeat.</summary>
public sealed record TcpBenchSide(string Name, long Messages, double MessagesPerSecond, double AllocatedBytesPerMessage, int Gen2Collections);

/// <summary>One paired repeat: both sides under the same load, in the order given.</summary>
public sealed record TcpBenchRepeat(int Index, string Order, TcpBenchSide Core, TcpBenchSide Raw)
{
    public double Ratio => Raw.MessagesPerSecond > 0 ? Core.MessagesPerSecond / Raw.MessagesPerSecond : 0;
}

/// <summary>The result of <c>bench tcp</c>.</summary>
public sealed record TcpBenchReport(
    TcpBenchOptions Options,
    IReadOnlyList<TcpBenchRepeat> Repeats,
    double RttMsP50Core,
    double RttMsP99Core,
    double RttMsP50Raw,
    double RttMsP99Raw)
{
    /// <summary>The median of the per-repeat ratios core / raw (target at least 0.6).</summary>
    public double MedianRatio => Median(Repeats.Select(r => r.Ratio));

    public double CoreAllocatedBytesPerMessage => Median(Repeats.Select(r => r.Core.AllocatedBytesPerMessage));

    public int CoreGen2Collections => Repeats.Sum(r => r.Core.Gen2Collections);

    public int ProcessorCount { get; init; } = Environment.ProcessorCount;

    public string GcMode { get; init; } = (GCSettings.IsServerGC ? "server" : "workstation") + ", " + GCSettings.LatencyMode;

    public string ToText()
    {
        var text = new StringBuilder();
        var o = Options;
        text.Append(CultureInfo.InvariantCulture, $"bench tcp: {o.Connections} connections x {o.InFlightPerConnection} in flight, {o.PayloadBytes} B payload, warm-up {o.WarmUp.TotalSeconds:F1} s, measured {o.Measure.TotalSeconds:F1} s, {o.Repeats} repeats; {ProcessorCount} processors, GC {GcMode}\n");
        text.Append("repeat  order      core msg/s   raw msg/s   ratio  core B/msg  core gen2\n");
        foreach (var r in Repeats)
        {
            text.Append(CultureInfo.InvariantCulture, $"{r.Index,6}  {r.Order,-9} {r.Core.MessagesPerSecond,11:F0} {r.Raw.MessagesPerSecond,11:F0} {r.Ratio,7:F3} {r.Core.AllocatedBytesPerMessage,11:F3} {r.Core.Gen2Collections,10}\n");
        }

        text.Append(CultureInfo.InvariantCulture, $"median ratio core/raw = {MedianRatio:F3} (target >= 0.6)\n");
        text.Append(CultureInfo.InvariantCulture, $"core allocated bytes per message (median) = {CoreAllocatedBytesPerMessage:F3} (target <= 1); core gen2 in measured windows = {CoreGen2Collections} (target 0)\n");
        text.Append(CultureInfo.InvariantCulture, $"RTT at low load (1 connection, 1 in flight): core p50 {RttMsP50Core:F3} ms p99 {RttMsP99Core:F3} ms; raw p50 {RttMsP50Raw:F3} ms p99 {RttMsP99Raw:F3} ms\n");
        return text.ToString();
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
}

/// <summary>
/// <c>bench tcp</c>: full-core echo throughput (play server, echo stage per connection, TCP sessions) against a
/// minimal raw-socket echo written here, under the same load client (same connections, framing, payload and
/// batching), in one process. Each repeat runs both sides; the order alternates over an even number of repeats, and
/// the result is the median of the paired ratios (seed 003's method). Allocation per message and Gen2 collections are
/// measured over each window; request/reply RTT is timed at low load for both sides.
/// </summary>
public static class TcpBench
{
    public static async Task<TcpBenchReport> RunAsync(TcpBenchOptions options, TimeProvider time, TextWriter? progress = null, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(options);
        ArgumentNullException.ThrowIfNull(time);
        options.Validate();
        // One unmeasured round of each side first, so both run tier-1 JIT code in every measured window (equal build tiers).
        await RunSideAsync(core: true, options, time, cancellationToken).ConfigureAwait(false);
        await RunSideAsync(core: false, options, time, cancellationToken).ConfigureAwait(false);
        var repeats = new List<TcpBenchRepeat>();
        for (var i = 0; i < options.Repeats; i++)
        {
            var coreFirst = i % 2 == 0;
            TcpBenchSide core;
            TcpBenchSide raw;
            if (coreFirst)
            {
                core = await RunSideAsync(core: true, options, time, cancellationToken).ConfigureAwait(false);
                raw = await RunSideAsync(core: false, options, time, cancellationToken).ConfigureAwait(false);
            }
            else
            {
                raw = await RunSideAsync(core: false, options, time, cancellationToken).ConfigureAwait(false);
                core = await RunSideAsync(core: true, options, time, cancellationToken).ConfigureAwait(false);
            }

            var repeat = new TcpBenchRepeat(i + 1, coreFirst ? "core,raw" : "raw,core", core, raw);
            repeats.Add(repeat);
            progress?.WriteLine(string.Create(CultureInfo.InvariantCulture, $"repeat {repeat.Index}/{options.Repeats} ({repeat.Order}): core {core.MessagesPerSecond:F0} msg/s, raw {raw.MessagesPerSecond:F0} msg/s, ratio {repeat.Ratio:F3}"));
        }

        var (coreP50, coreP99) = await MeasureRttAsync(core: true, options, time, cancellationToken).ConfigureAwait(false);
        var (rawP50, rawP99) = await MeasureRttAsync(core: false, options, time, cancellationToken).ConfigureAwait(false);
        return new TcpBenchReport(options, repeats, coreP50, coreP99, rawP50, rawP99);
    }

    private static async Task<TcpBenchSide> RunSideAsync(bool core, TcpBenchOptions options, TimeProvider time, CancellationToken cancellationToken)
    {
        await using var server = core ? (IBenchServer)new CoreEchoServer(time, options) : new RawEchoServer();
        var load = new LoadClient(options.PayloadBytes);
        var clients = new Task[options.Connections];
        for (var i = 0; i < options.Connections; i++)
        {
            clients[i] = load.RunConnectionAsync(server.EndPoint, stageId: i + 1, options.InFlightPerConnection, rtt: null);
        }

        await Task.Delay(options.WarmUp, time, cancellationToken).ConfigureAwait(false);
        var messagesBefore = load.Replies;
        var allocatedBefore = GC.GetTotalAllocatedBytes(precise: true);
        var gen2Before = GC.CollectionCount(2);
        var started = time.GetTimestamp();
        await Task.Delay(options.Measure, time, cancellationToken).ConfigureAwait(false);
        var elapsed = time.GetElapsedTime(started);
        var messages = load.Replies - messagesBefore;
        var allocated = GC.GetTotalAllocatedBytes(precise: true) - allocatedBefore;
        var gen2 = GC.CollectionCount(2) - gen2Before;
        load.Stop();
        await Task.WhenAll(clients).ConfigureAwait(false);
        return new TcpBenchSide(core ? "core" : "raw", messages, messages / elapsed.TotalSeconds, messages == 0 ? 0 : (double)allocated / messages, gen2);
    }

    private static async Task<(double P50, double P99)> MeasureRttAsync(bool core, TcpBenchOptions options, TimeProvider time, CancellationToken cancellationToken)
    {
        await using var server = core ? (IBenchServer)new CoreEchoServer(time, options) : new RawEchoServer();
        var load = new LoadClient(options.PayloadBytes);
        var samples = new RttSamples(options.RttSamples, time);
        await load.RunConnectionAsync(server.EndPoint, stageId: 1, inFlight: 1, samples).WaitAsync(cancellationToken).ConfigureAwait(false);
        return (samples.PercentileMs(50), samples.PercentileMs(99));
    }

    private interface IBenchServer : IAsyncDisposable
    {
        IPEndPoint EndPoint { get; }
    }

    /// <summary>The full core: a play server with one echo stage per connection, behind the TCP client listener.</summary>
    private sealed class CoreEchoServer : IBenchServer
    {
        private readonly PlayServer _server;
        private readonly TcpClientListener _listener;

        public CoreEchoServer(TimeProvider time, TcpBenchOptions options)
        {
            // The global tier holds every request payload in flight (connections x in flight) with room to spare,
            // so returns on the stage threads never overflow while the I/O threads rent.
            var inFlight = options.Connections * options.InFlightPerConnection;
            var pool = new MessagePool(new MessagePoolOptions { GlobalCapacityPerClass = Math.Max(256, 4 * inFlight), PreWarmCountPerClass = 2 * inFlight, PreWarmMaxBytes = 16 * 1024, Name = "bench" });
            _server = new PlayServer("bench", new NodeSeams(time, ThreadPoolExecutor.Instance, EntropyRandomSource.Create(), pool), new ServerOptions { DefaultStageType = EchoMsgIds.StageType });
            EchoStage.Register(_server);
            _listener = new TcpClientListener(_server, new TcpTransportOptions { IdleTimeout = TimeSpan.FromHours(1), SendQueueBytesMax = 16 * 1024 * 1024 }, time: time);
            EndPoint = _listener.Start(new IPEndPoint(IPAddress.Loopback, 0));
        }

        public IPEndPoint EndPoint { get; }

        public async ValueTask DisposeAsync()
        {
            _listener.Dispose();
            await _listener.WhenAllSessionsFinished().ConfigureAwait(false);
            _server.Dispose();
        }
    }

    /// <summary>
    /// The baseline: the least a server can do and still speak the protocol. Per connection one receive loop parses
    /// whole client frames by hand and writes each back as a server frame (error 0, OriginalSize 0), all the replies
    /// of one receive in one send.
    /// </summary>
    private sealed class RawEchoServer : IBenchServer
    {
        private readonly Socket _listen;
        private readonly List<Socket> _accepted = [];
        private readonly Lock _gate = new();
        private readonly List<Task> _loops = [];
        private readonly Task _acceptLoop;

        public RawEchoServer()
        {
            _listen = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
            _listen.Bind(new IPEndPoint(IPAddress.Loopback, 0));
            _listen.Listen(512);
            EndPoint = (IPEndPoint)_listen.LocalEndPoint!;
            _acceptLoop = AcceptAsync();
        }

        public IPEndPoint EndPoint { get; }

        public async ValueTask DisposeAsync()
        {
            _listen.Dispose();
            List<Socket> sockets;
            List<Task> loops;
            lock (_gate)
            {
                sockets = [.. _accepted];
                loops = [.. _loops];
            }

            foreach (var socket in sockets)
            {
                socket.Dispose();
            }

            await Task.WhenAll(loops.Append(_acceptLoop)).ConfigureAwait(false);
        }

        private async Task AcceptAsync()
        {
            try
            {
                while (true)
                {
                    var socket = await _listen.AcceptAsync().ConfigureAwait(false);
                    socket.NoDelay = true;
                    lock (_gate)
                    {
                        _accepted.Add(socket);
                        _loops.Add(EchoAsync(socket));
                    }
                }
            }
            catch (Exception e) when (e is SocketException or ObjectDisposedException)
            {
                // The listener was closed.
            }
        }

        private static async Task EchoAsync(Socket socket)
        {
            var input = new byte[64 * 1024];
            var output = new byte[128 * 1024];
            var filled = 0;
            try
            {
                while (true)
                {
                    var read = await socket.ReceiveAsync(input.AsMemory(filled), SocketFlags.None).ConfigureAwait(false);
                    if (read == 0)
                    {
                        return;
                    }

                    filled += read;
                    var consumed = 0;
                    var written = 0;
                    while (filled - consumed >= 4)
                    {
                        var body = BinaryPrimitives.ReadInt32LittleEndian(input.AsSpan(consumed));
                        if (filled - consumed < 4 + body)
                        {
                            break;
                        }

                        // Client body [idLen][id][seq][stage][payload] -> server body [idLen][id][seq][stage][error][originalSize][payload].
                        var idLength = input[consumed + 4];
                        var header = 1 + idLength + 10;
                        BinaryPrimitives.WriteInt32LittleEndian(output.AsSpan(written), body + 6);
                        input.AsSpan(consumed + 4, header).CopyTo(output.AsSpan(written + 4));
                        BinaryPrimitives.WriteUInt16LittleEndian(output.AsSpan(written + 4 + header), 0);
                        BinaryPrimitives.WriteInt32LittleEndian(output.AsSpan(written + 6 + header), 0);
                        input.AsSpan(consumed + 4 + header, body - header).CopyTo(output.AsSpan(written + 10 + header));
                        written += 4 + body + 6;
                        consumed += 4 + body;
                    }

                    input.AsSpan(consumed, filled - consumed).CopyTo(input);
                    filled -= consumed;
                    var sent = 0;
                    while (sent < written)
                    {
                        sent += await socket.SendAsync(output.AsMemory(sent, written - sent), SocketFlags.None).ConfigureAwait(false);
                    }
                }
            }
            catch (Exception e) when (e is SocketException or ObjectDisposedException)
            {
                // The load client closed, or the server stopped.
            }
        }
    }

    /// <summary>Round-trip samples of the low-load run, in timestamps.</summary>
    private sealed class RttSamples(int count, TimeProvider time)
    {
        private readonly double[] _ms = new double[count];

        public int Count { get; private set; }

        public int Capacity => _ms.Length;

        public TimeProvider Time => time;

        public void Add(TimeSpan rtt) => _ms[Count++] = rtt.TotalMilliseconds;

        public double PercentileMs(double percentile)
        {
            if (Count == 0)
            {
                return 0;
            }

            var sorted = _ms[..Count];
            Array.Sort(sorted);
            return sorted[Math.Min(Count - 1, (int)Math.Ceiling(percentile / 100 * Count) - 1)];
        }
    }

    /// <summary>
    /// The load client both sides face: per connection it authenticates, keeps <c>inFlight</c> echo requests
    /// outstanding, and answers every batch of replies with one send of as many new requests. Frames are built by
    /// hand; nothing is allocated per message.
    /// </summary>
    private sealed class LoadClient(int payloadBytes)
    {
        private long _replies;
        private volatile bool _stopping;

        public long Replies => Interlocked.Read(ref _replies);

        public void Stop() => _stopping = true;

        public async Task RunConnectionAsync(IPEndPoint server, long stageId, int inFlight, RttSamples? rtt)
        {
            using var socket = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp) { NoDelay = true };
            await socket.ConnectAsync(server).ConfigureAwait(false);
            var request = Frame(EchoMsgIds.Echo, stageId, new byte[payloadBytes]);
            var output = new byte[request.Length * inFlight];
            var input = new byte[64 * 1024];
            var filled = 0;

            var account = new byte[8];
            BinaryPrimitives.WriteInt64LittleEndian(account, stageId);
            await SendAllAsync(socket, Frame(EchoMsgIds.Authenticate, stageId, account)).ConfigureAwait(false);
            var (read, frames) = await ReceiveFramesAsync(socket, input, 0).ConfigureAwait(false);
            filled = read;
            if (frames < 1)
            {
                return;
            }

            var sentAt = rtt?.Time.GetTimestamp() ?? 0;
            for (var i = 0; i < inFlight; i++)
            {
                request.CopyTo(output, i * request.Length);
            }

            await SendAllAsync(socket, output.AsMemory(0, request.Length * inFlight)).ConfigureAwait(false);
            var outstanding = inFlight;
            while (true)
            {
                (filled, frames) = await ReceiveFramesAsync(socket, input, filled).ConfigureAwait(false);
                if (frames < 0)
                {
                    return;
                }

                outstanding -= frames;
                Interlocked.Add(ref _replies, frames);
                if (rtt is not null)
                {
                    rtt.Add(rtt.Time.GetElapsedTime(sentAt));
                    if (rtt.Count == rtt.Capacity)
                    {
                        return;
                    }

                    sentAt = rtt.Time.GetTimestamp();
                }

                if (_stopping)
                {
                    if (outstanding == 0)
                    {
                        return;
                    }

                    continue;
                }

                // Every reply is answered by a new request, batched into one send.
                for (var i = 0; i < frames; i++)
                {
                    request.CopyTo(output, i * request.Length);
                }

                outstanding += frames;
                await SendAllAsync(socket, output.AsMemory(0, request.Length * frames)).ConfigureAwait(false);
            }
        }

        private static byte[] Frame(string msgId, long stageId, byte[] payload)
        {
            var id = Encoding.UTF8.GetBytes(msgId);
            var body = 1 + id.Length + 10 + payload.Length;
            var frame = new byte[4 + body];
            BinaryPrimitives.WriteInt32LittleEndian(frame, body);
            frame[4] = (byte)id.Length;
            id.CopyTo(frame, 5);
            BinaryPrimitives.WriteUInt16LittleEndian(frame.AsSpan(5 + id.Length), 1);
            BinaryPrimitives.WriteInt64LittleEndian(frame.AsSpan(7 + id.Length), stageId);
            payload.CopyTo(frame, 15 + id.Length);
            return frame;
        }

        // Pooled builders: these run once per batch, and an allocation per batch would show in the per-message budget.
        [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder))]
        private static async ValueTask SendAllAsync(Socket socket, ReadOnlyMemory<byte> bytes)
        {
            var sent = 0;
            while (sent < bytes.Length)
            {
                sent += await socket.SendAsync(bytes[sent..], SocketFlags.None).ConfigureAwait(false);
            }
        }

        /// <summary>Receives once and counts whole server frames; returns the bytes still held and the count (-1 at close).</summary>
        [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
        private static async ValueTask<(int Filled, int Frames)> ReceiveFramesAsync(Socket socket, byte[] input, int filled)
        {
            var frames = 0;
            while (frames == 0)
            {
                int read;
                try
                {
                    read = await socket.ReceiveAsync(input.AsMemory(filled), SocketFlags.None).ConfigureAwait(false);
                }
                catch (SocketException)
                {
                    return (0, -1);
                }

                if (read == 0)
                {
                    return (0, -1);
                }

                filled += read;
                var consumed = 0;
                while (filled - consumed >= 4)
                {
                    var body = BinaryPrimitives.ReadInt32LittleEndian(input.AsSpan(consumed));
                    if (filled - consumed < 4 + body)
                    {
                        break;
                    }

                    consumed += 4 + body;
                    frames++;
                }

                input.AsSpan(consumed, filled - consumed).CopyTo(input);
                filled -= consumed;
            }

            return (filled, frames);
        }
    }
}
