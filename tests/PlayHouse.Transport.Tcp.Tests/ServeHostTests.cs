using System.Net;
using System.Text.RegularExpressions;
using PlayHouse.Core.Runtime;
using PlayHouse.Sim.Tcp;

namespace PlayHouse.Transport.Tcp.Tests;

/// <summary>The engine of the <c>serve</c> command: a real play server any PlayHouse-protocol client can use.</summary>
public sealed partial class ServeHostTests
{
    [Fact]
    public async Task Serve_EchoScenario_AnswersARawClientAndStopsCleanly()
    {
        var session = TcpServeHost.Start(new TcpServeOptions { Scenario = "echo" }, TimeProvider.System);
        using (var raw = await RawClient.ConnectAsync(session.EndPoint))
        {
            await raw.SendAsync(RawFrames.Client("AuthenticateRequest", 1, 77, []));
            var auth = await raw.ReadFrameAsync();
            await raw.SendAsync(RawFrames.Client("EchoRequest", 2, 77, [1, 2, 3]));
            var echo = await raw.ReadFrameAsync();
            await raw.SendAsync(RawFrames.Client("SendPush", 0, 77, [4]));
            var push = await raw.ReadFrameAsync();

            Assert.Equal((ErrorCodes.Success, "AuthenticateReply"), (auth.ErrorCode, auth.MsgId));
            Assert.Equal(("EchoReply", (ushort)2), (echo.MsgId, echo.MsgSeq));
            Assert.Equal(new byte[] { 1, 2, 3 }, echo.Payload);
            Assert.Equal(("Push", (ushort)0), (push.MsgId, push.MsgSeq));
            Assert.Equal(new byte[] { 4 }, push.Payload);
        }

        var report = await session.StopAsync().WaitAsync(TestServer.Patience);

        Assert.True(report.Drained);
        Assert.Equal(0, report.BuffersOutstanding);
        Assert.Equal(1, report.ConnectionsAccepted);
        Assert.Equal(3, report.FramesReceived);
    }

    [Fact]
    public async Task RunAsync_PrintsWhereItListens_AndStopsGracefullyOnCancellation()
    {
        using var stop = new CancellationTokenSource();
        var output = new SignalWriter();
        var run = TcpServeHost.RunAsync(new TcpServeOptions { Scenario = "send-push" }, TimeProvider.System, output, stop.Token);
        var line = await output.FirstLine.WaitAsync(TestServer.Patience);
        var endPoint = IPEndPoint.Parse(ListeningOn().Match(line).Groups[1].Value);
        using var client = await TcpPlayClient.ConnectAsync(endPoint, new TcpPlayClientOptions { RequestTimeout = TestServer.Patience });
        var auth = await client.AuthenticateAsync(1, []).WaitAsync(TestServer.Patience);

        stop.Cancel();
        var report = await run.WaitAsync(TestServer.Patience);
        await client.Closed.WaitAsync(TestServer.Patience);

        Assert.True(auth.IsSuccess);
        Assert.Equal(IPAddress.Loopback, endPoint.Address);
        Assert.True(report.Drained);
        Assert.Equal(1, report.SessionsClosedAtStop);
        Assert.Equal(0, report.BuffersOutstanding);
        Assert.Contains("SendPush (one-way", output.ToString(), StringComparison.Ordinal);
    }

    [Fact]
    public void Serve_UnknownScenario_IsRefusedWithTheList()
    {
        var error = Assert.Throws<ArgumentException>(() => TcpServeHost.Start(new TcpServeOptions { Scenario = "timers" }, TimeProvider.System));

        Assert.Contains("broadcast, echo, send-push", error.Message, StringComparison.Ordinal);
    }

    [GeneratedRegex(@"listening on (\S+)")]
    private static partial Regex ListeningOn();

    private sealed class SignalWriter : StringWriter
    {
        private readonly TaskCompletionSource<string> _first = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public Task<string> FirstLine => _first.Task;

        public override Task WriteLineAsync(string? value)
        {
            _first.TrySetResult(value ?? string.Empty);
            return base.WriteLineAsync(value);
        }
    }
}
