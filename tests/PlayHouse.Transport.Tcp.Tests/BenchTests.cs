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
    [InlineData(64, 0.8)]
    [InlineData(1024, 0.8)]
    [InlineData(16 * 1024, 0.6)]
    public void TcpBench_RatioTarget_IsPointEightUpToOneKibibyteAndPointSixAbove(int payloadBytes, double target)
    {
        var report = new TcpBenchReport(new TcpBenchOptions { PayloadBytes = payloadBytes }, [], 0, 0, 0, 0);

        Assert.Equal(target, report.RatioTarget);
    }

    [Fact]
    public void TcpBench_OddRepeats_AreRefused() =>
        Assert.Throws<ArgumentException>(() => new TcpBenchOptions { Repeats = 3 }.Validate());
}
