using System.Net;
using System.Net.Sockets;
using PlayHouse.Sim.Tcp;

namespace PlayHouse.Transport.Tcp.Tests;

public sealed class BenchTests
{
    [Fact]
    public async Task TcpBench_TinyRun_MeasuresBothSidesInAlternatingOrder()
    {
        var options = new TcpBenchOptions { Connections = 2, InFlightPerConnection = 2, WarmUp = TimeSpan.FromMilliseconds(100), Measure = TimeSpan.FromMilliseconds(200), Repeats = 2, RttSamples = 50 };

        var report = await TcpBench.RunAsync(options, TimeProvider.System).WaitAsync(TimeSpan.FromSeconds(30));

        Assert.Equal(["core,raw", "raw,core"], report.Repeats.Select(r => r.Order));
        Assert.All(report.Repeats, r => Assert.True(r.Core.Messages > 0 && r.Raw.Messages > 0));
        Assert.True(report.MedianRatio > 0);
        Assert.True(report.RttMsP50Core > 0 && report.RttMsP99Core >= report.RttMsP50Core);
        Assert.True(report.RttMsP50Raw > 0 && report.RttMsP99Raw >= report.RttMsP50Raw);
        Assert.Contains("median ratio core/raw", report.ToText(), StringComparison.Ordinal);

        // The cost per message: CPU time, and how many frames each server system call carried (the core's from its
        // transport counters, the raw echo's from its own).
        Assert.All(report.Repeats, r => Assert.True(r.Core.CpuMicrosecondsPerMessage > 0 && r.Raw.CpuMicrosecondsPerMessage > 0));
        Assert.All(report.Repeats, r => Assert.True(r.Core.FramesPerSendCall > 0 && r.Raw.FramesPerSendCall > 0));
        Assert.All(report.Repeats, r => Assert.True(r.Core.FramesPerReceiveCall > 0 && r.Raw.FramesPerReceiveCall > 0));
        Assert.True(report.MedianCpuRatio > 0);
    }

    [Theory]
    [InlineData(64, 0.9)]
    [InlineData(1024, 0.9)]
    [InlineData(16 * 1024, 0.6)]
    public void TcpBench_RatioTarget_IsPointNineUpToOneKibibyteAndPointSixAbove(int payloadBytes, double target)
    {
        var report = new TcpBenchReport(new TcpBenchOptions { PayloadBytes = payloadBytes }, [], 0, 0, 0, 0);

        Assert.Equal(target, report.RatioTarget);
    }

    [Fact]
    public void TcpBench_OddRepeats_AreRefused() =>
        Assert.Throws<ArgumentException>(() => new TcpBenchOptions { Repeats = 3 }.Validate());

    [Fact]
    public async Task TcpChurn_TinyRun_CyclesOnBothSidesAtEachLevelInAlternatingOrder()
    {
        var options = new TcpChurnOptions { Parallel = [1, 3], WarmUp = TimeSpan.FromMilliseconds(50), Measure = TimeSpan.FromMilliseconds(200), Repeats = 2 };

        var report = await TcpChurnBench.RunAsync(options, TimeProvider.System).WaitAsync(TimeSpan.FromSeconds(60));

        Assert.Equal([1, 3], report.Levels.Select(l => l.Parallel));
        Assert.All(report.Levels, l => Assert.Equal(["core,raw", "raw,core"], l.Repeats.Select(r => r.Order)));
        Assert.All(report.Levels.SelectMany(l => l.Repeats), r => Assert.True(r.Core.Cycles > 0 && r.Raw.Cycles > 0, $"{r}"));
        Assert.All(report.Levels.SelectMany(l => l.Repeats), r => Assert.True(r.Core.CpuMicrosecondsPerCycle > 0 && r.Raw.CpuMicrosecondsPerCycle > 0, $"{r}"));
        Assert.All(report.Levels, l => Assert.True(l.MedianRatio > 0));
        Assert.True(report.NoCycleFailed, string.Join("; ", report.Levels.Select(l => $"{l.Parallel}: core {l.CoreFailedCycles}, raw {l.RawFailedCycles}, first {l.FirstFailure}")));
        Assert.All(report.Levels, l => Assert.Null(l.FirstFailure));
    }

    [Fact]
    public async Task TcpChurn_ServerClosingBeforeItAnswers_CountsEveryCycleAsFailed()
    {
        var options = new TcpChurnOptions { Parallel = [2], WarmUp = TimeSpan.Zero, Measure = TimeSpan.FromMilliseconds(200), Repeats = 2 };

        var side = await TcpChurnBench.RunSideAsync("closing", () => new ClosingServer(), parallel: 2, options, TimeProvider.System, CancellationToken.None).WaitAsync(TimeSpan.FromSeconds(60));

        Assert.Equal((0L, true), (side.Cycles, side.FailedCycles > 0));
        // Depending on whether the server's close reaches the client before or after it sends, the first failure is the
        // close seen while waiting for the answer or the reset seen while sending.
        Assert.Matches("^(the server closed the connection before it answered the authentication|send failed: [A-Za-z]+)$", side.FirstFailure ?? "(none)");
    }

    [Fact]
    public async Task RawEcho_ConnectionsThatClosed_AreForgotten()
    {
        await using var server = new TcpBench.RawEchoServer();
        for (var i = 0; i < 5; i++)
        {
            using var client = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
            await client.ConnectAsync(server.EndPoint);
        }

        // Each echo loop removes its connection when it reads the close; give the loops a moment to run.
        for (var wait = 0; wait < 500 && server.OpenConnections > 0; wait++)
        {
            await Task.Delay(10);
        }

        Assert.Equal(0, server.OpenConnections);
    }

    [Theory]
    [InlineData(3, 16)]
    [InlineData(4, 0)]
    public void TcpChurn_OddRepeatsOrAnEmptyLevel_AreRefused(int repeats, int parallel) =>
        Assert.Throws<ArgumentException>(() => new TcpChurnOptions { Repeats = repeats, Parallel = [parallel] }.Validate());

    /// <summary>A server that accepts every connection and closes it at once, before any reply.</summary>
    private sealed class ClosingServer : TcpBench.IBenchServer
    {
        private readonly Socket _listen = new(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        private readonly Task _accepting;

        public ClosingServer()
        {
            _listen.Bind(new IPEndPoint(IPAddress.Loopback, 0));
            _listen.Listen(64);
            EndPoint = (IPEndPoint)_listen.LocalEndPoint!;
            _accepting = AcceptAsync();
        }

        public IPEndPoint EndPoint { get; }

        public (long Receives, long Sends) Calls => (0, 0);

        public async ValueTask DisposeAsync()
        {
            _listen.Dispose();
            await _accepting;
        }

        private async Task AcceptAsync()
        {
            try
            {
                while (true)
                {
                    using var accepted = await _listen.AcceptAsync();
                }
            }
            catch (Exception e) when (e is SocketException or ObjectDisposedException)
            {
                // The listener was closed.
            }
        }
    }
}
