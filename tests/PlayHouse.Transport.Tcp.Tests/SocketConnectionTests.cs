using System.Net;
using System.Net.Sockets;
using PlayHouse.Core.Pooling;

namespace PlayHouse.Transport.Tcp.Tests;

/// <summary>
/// The socket connection's life on its own, over a loopback socket pair: how it closes (FIN or reset), what it reports
/// for each way the peer or a callback ends it, and that it finishes once, after both loops, with every buffer back.
/// </summary>
public sealed class SocketConnectionTests
{
    private static readonly TimeSpan Wait = TimeSpan.FromSeconds(5);

    [Fact]
    public void Constructor_WithoutASocketPoolClockOrCounters_ThrowsNamingTheArgument()
    {
        using var socket = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        var pool = NewPool();
        var limits = new ConnectionLimits(1024, 4096);

        Assert.Equal("socket", Assert.Throws<ArgumentNullException>(() => new ProbeConnection(null!, pool, limits, TimeProvider.System, new TcpTransportCounters())).ParamName);
        Assert.Equal("pool", Assert.Throws<ArgumentNullException>(() => new ProbeConnection(socket, null!, limits, TimeProvider.System, new TcpTransportCounters())).ParamName);
        Assert.Equal("time", Assert.Throws<ArgumentNullException>(() => new ProbeConnection(socket, pool, limits, null!, new TcpTransportCounters())).ParamName);
        Assert.Equal("counters", Assert.Throws<ArgumentNullException>(() => new ProbeConnection(socket, pool, limits, TimeProvider.System, null!)).ParamName);
    }

    [Fact]
    public async Task Close_ShutsTheSocketDown_SoThePeerReadsTheEndOfStream()
    {
        using var pair = await SocketPair.OpenAsync();
        var connection = pair.Connect();
        connection.Start();

        Assert.True(connection.Close(SessionCloseReason.LocalClose, "done"));
        Assert.False(connection.Close(SessionCloseReason.IdleTimeout, "again"));

        Assert.Equal(0, await pair.Peer.ReceiveAsync(new byte[16]));
        Assert.True(connection.Finished.Wait(Wait));
        Assert.Equal((SessionCloseReason.LocalClose, "done"), (connection.CloseReason, connection.CloseDetail));
        Assert.Equal(1, pair.Counters.Closed(SessionCloseReason.LocalClose));
        Assert.Equal(0, pair.Counters.Closed(SessionCloseReason.IdleTimeout));
        Assert.Throws<ObjectDisposedException>(() => pair.Accepted.Available);
        pair.AssertNoLeaks();
    }

    [Fact]
    public async Task AbortiveClose_ResetsTheConnection_SoThePeerSeesAReset()
    {
        using var pair = await SocketPair.OpenAsync();
        var connection = pair.Connect();
        connection.Start();

        Assert.True(connection.Close(SessionCloseReason.LocalClose, "crash", abortive: true));

        var error = await Assert.ThrowsAsync<SocketException>(async () => await pair.Peer.ReceiveAsync(new byte[16]));
        Assert.Equal(SocketError.ConnectionReset, error.SocketErrorCode);
        Assert.True(connection.Finished.Wait(Wait));
        pair.AssertNoLeaks();
    }

    [Fact]
    public async Task TryEnqueue_AfterClose_IsRefusedAndCounted()
    {
        using var pair = await SocketPair.OpenAsync();
        var connection = pair.Connect();
        connection.Start();
        Assert.True(connection.Send(new byte[300]));
        connection.Close(SessionCloseReason.LocalClose, "done");

        var sentAfterClose = connection.Send(new byte[10]);

        Assert.False(sentAfterClose);
        Assert.Equal(1, pair.Counters.SendsRefusedClosed);
        Assert.Equal(300, pair.Counters.SendQueueHighWaterBytes);
        Assert.True(connection.Finished.Wait(Wait));
        pair.AssertNoLeaks();
    }

    [Fact]
    public async Task PeerEndOfStream_ClosesAsPeerClosed_AndFinishesOnce()
    {
        using var pair = await SocketPair.OpenAsync();
        var connection = pair.Connect();
        connection.Start();

        pair.Peer.Shutdown(SocketShutdown.Send);

        Assert.True(connection.Finished.Wait(Wait));
        Assert.Equal((SessionCloseReason.PeerClosed, "the peer closed the connection"), (connection.CloseReason, connection.CloseDetail));
        Assert.Equal((1, 1, 1), (connection.EndOfStreamCalls, connection.ReceiveEndedCalls, connection.FinishedCalls));
        pair.AssertNoLeaks();
    }

    [Fact]
    public async Task PeerReset_ClosesAsConnectionReset_NamingTheReceiveError()
    {
        using var pair = await SocketPair.OpenAsync();
        var connection = pair.Connect();
        connection.Start();

        pair.Peer.LingerState = new LingerOption(true, 0);
        pair.Peer.Close();

        Assert.True(connection.Finished.Wait(Wait));
        Assert.Equal((SessionCloseReason.ConnectionReset, "receive failed: ConnectionReset"), (connection.CloseReason, connection.CloseDetail));
        Assert.Equal(0, pair.Counters.CallbackFaults);
        pair.AssertNoLeaks();
    }

    [Fact]
    public async Task ThrowingCallbacks_AreCountedAsFaults_AndCloseTheConnectionNamingThem()
    {
        using var pair = await SocketPair.OpenAsync();
        var connection = pair.Connect();
        connection.ThrowOnReceived = true;
        connection.ThrowOnClosed = true;
        connection.Start();

        await pair.Peer.SendAsync(new byte[] { 1, 2, 3 });

        Assert.True(connection.Finished.Wait(Wait));
        Assert.Equal((SessionCloseReason.CallbackFault, "OnReceived threw InvalidOperationException: OnReceived failed"), (connection.CloseReason, connection.CloseDetail));
        Assert.Equal(2, pair.Counters.CallbackFaults);
        Assert.Equal((3, 1L), (pair.Counters.BytesReceived, pair.Counters.ReceiveCalls));
        pair.AssertNoLeaks();
    }

    [Fact]
    public async Task ThrowingEndOfStream_IsCountedAsAFault_AndClosesTheConnection()
    {
        using var pair = await SocketPair.OpenAsync();
        var connection = pair.Connect();
        connection.ThrowOnEndOfStream = true;
        connection.Start();

        pair.Peer.Shutdown(SocketShutdown.Send);

        Assert.True(connection.Finished.Wait(Wait));
        Assert.Equal(SessionCloseReason.CallbackFault, connection.CloseReason);
        Assert.StartsWith("OnEndOfStream threw InvalidOperationException", connection.CloseDetail, StringComparison.Ordinal);
        Assert.Equal(1, pair.Counters.CallbackFaults);
        pair.AssertNoLeaks();
    }

    [Fact]
    public async Task AReceiveLoopThatCannotRentItsBuffer_CountsAFault_AndStillFinishes()
    {
        using var pair = await SocketPair.OpenAsync();
        var connection = pair.Connect(new ConnectionLimits(-1, 4096));

        connection.Start();

        Assert.True(connection.Finished.Wait(Wait));
        Assert.Equal(SessionCloseReason.CallbackFault, connection.CloseReason);
        Assert.StartsWith("receive loop threw ArgumentOutOfRangeException", connection.CloseDetail, StringComparison.Ordinal);
        Assert.Equal((1L, 1), (pair.Counters.CallbackFaults, connection.ReceiveEndedCalls));
        pair.AssertNoLeaks();
    }

    [Fact]
    public async Task AThrowingFinish_IsCountedAsAFault()
    {
        using var pair = await SocketPair.OpenAsync();
        var connection = pair.Connect();
        connection.ThrowOnFinished = true;
        connection.Start();

        connection.Close(SessionCloseReason.LocalClose, "done");

        Assert.True(connection.Finished.Wait(Wait));
        Assert.True(SpinWait.SpinUntil(() => pair.Counters.CallbackFaults == 1, Wait));
        Assert.Equal(SessionCloseReason.LocalClose, connection.CloseReason);
        pair.AssertNoLeaks();
    }

    [Fact]
    public async Task StartAfterClose_EndsTheReceiveLoopAtOnce_WithoutRentingABuffer()
    {
        using var pair = await SocketPair.OpenAsync();
        var connection = pair.Connect();
        connection.Close(SessionCloseReason.ServerStopping, "stopping");
        var finishedBeforeStart = connection.FinishedCalls;

        connection.Start();

        Assert.Equal(0, finishedBeforeStart);
        Assert.Equal((1, 1), (connection.ReceiveEndedCalls, connection.FinishedCalls));
        Assert.Equal(0, pair.Pool.GetStatistics().Rents);
        pair.AssertNoLeaks();
    }

    [Fact]
    public async Task AReceiveOnADisposedSocket_EndsTheLoop_AndTheLaterCloseFinishes()
    {
        using var pair = await SocketPair.OpenAsync();
        var connection = pair.Connect();
        pair.Accepted.Dispose();

        connection.Start();
        var finishedBeforeClose = connection.FinishedCalls;
        connection.Close(SessionCloseReason.LocalClose, "done");

        Assert.Equal(0, finishedBeforeClose);
        Assert.Equal((1, 1), (connection.ReceiveEndedCalls, connection.FinishedCalls));
        pair.AssertNoLeaks();
    }

    [Fact]
    public async Task AThrowingReceiveEnd_BeforeAnyClose_ClosesTheConnectionNamingIt()
    {
        using var pair = await SocketPair.OpenAsync();
        var connection = pair.Connect();
        connection.ThrowOnReceiveEnded = true;
        pair.Accepted.Dispose();

        connection.Start();

        Assert.Equal(SessionCloseReason.CallbackFault, connection.CloseReason);
        Assert.Equal("OnReceiveEnded threw InvalidOperationException: OnReceiveEnded failed", connection.CloseDetail);
        Assert.Equal((1L, 1), (pair.Counters.CallbackFaults, connection.FinishedCalls));
        pair.AssertNoLeaks();
    }

    [Fact]
    public async Task Finish_WaitsForTheReceiveLoop_WhenTheCloseReturnsFirst()
    {
        using var pair = await SocketPair.OpenAsync();
        var connection = pair.Connect();
        connection.HoldReceiveEnd = new ManualResetEventSlim();
        connection.Start();

        connection.Close(SessionCloseReason.LocalClose, "done");
        var finishedWhileReceiveHeld = connection.FinishedCalls;
        connection.HoldReceiveEnd.Set();

        Assert.True(connection.Finished.Wait(Wait));
        Assert.Equal(0, finishedWhileReceiveHeld);
        Assert.True(connection.ReceiveEndedBeforeFinish);
        Assert.Equal(1, connection.FinishedCalls);
        pair.AssertNoLeaks();
    }

    [Fact]
    public async Task Finish_HappensOnce_WhenTheReceiveLoopEndsBeforeTheCloseReturns()
    {
        using var pair = await SocketPair.OpenAsync();
        var connection = pair.Connect();
        connection.HoldCloseUntilReceiveEnded = true;
        connection.Start();

        connection.Close(SessionCloseReason.LocalClose, "done");

        Assert.True(connection.Finished.Wait(Wait));
        Assert.Equal(1, connection.FinishedCalls);
        Assert.Equal(1, connection.ReceiveEndedCalls);
        pair.AssertNoLeaks();
    }

    [Fact]
    public async Task Callbacks_OnIoThreads_DoNotSeeTheStartersAmbientContext()
    {
        using var pair = await SocketPair.OpenAsync();
        var connection = pair.Connect();
        connection.Ambient.Value = "starter";
        connection.Start();

        await pair.Peer.SendAsync(new byte[] { 7 });

        Assert.True(connection.Received.Wait(Wait));
        Assert.Null(connection.AmbientSeenOnReceive);
        connection.Close(SessionCloseReason.LocalClose, "done");
        Assert.True(connection.Finished.Wait(Wait));
    }

    [Fact]
    public async Task ALargeSend_CompletingLater_DeliversEveryByteOnce()
    {
        using var pair = await SocketPair.OpenAsync(smallBuffers: true);
        var connection = pair.Connect();
        connection.Start();
        var frame = new byte[256 * 1024];
        new Random(7).NextBytes(frame);

        Assert.True(connection.Send(frame));
        var received = await pair.ReadExactlyAsync(frame.Length);
        connection.Close(SessionCloseReason.LocalClose, "done");

        Assert.Equal(frame, received);
        Assert.Equal(0, await pair.Peer.ReceiveAsync(new byte[16]));
        Assert.True(connection.Finished.Wait(Wait));
        Assert.Equal(frame.Length, pair.Counters.BytesSent);
        pair.AssertNoLeaks();
    }

    [Fact]
    public async Task APendingSendThePeerResets_ClosesAsConnectionReset_NamingTheSendError_OffTheStartersContext()
    {
        using var pair = await SocketPair.OpenAsync(smallBuffers: true);
        var connection = pair.Connect();
        connection.Ambient.Value = "starter";

        // No receive loop: only the send can observe the reset.
        Assert.True(connection.Send(new byte[4 * 1024 * 1024]));
        pair.Peer.LingerState = new LingerOption(true, 0);
        pair.Peer.Close();

        Assert.True(connection.ClosedEvent.Wait(Wait));
        Assert.Equal(SessionCloseReason.ConnectionReset, connection.CloseReason);
        Assert.StartsWith("send failed: ", connection.CloseDetail, StringComparison.Ordinal);
        Assert.Null(connection.AmbientSeenOnClose);
        Assert.Equal((0L, 0L), (pair.Counters.BytesSent, pair.Counters.SendCalls));
        connection.Start();
        Assert.True(connection.Finished.Wait(Wait));
        pair.AssertNoLeaks();
    }

    private static MessagePool NewPool() => new(new MessagePoolOptions { CheckedMode = true, Name = "socket-connection" });

    /// <summary>A loopback pair: the accepted socket the connection drives, and the peer the test drives by hand.</summary>
    private sealed class SocketPair : IDisposable
    {
        private SocketPair(Socket accepted, Socket peer)
        {
            Accepted = accepted;
            Peer = peer;
        }

        public Socket Accepted { get; }

        public Socket Peer { get; }

        public MessagePool Pool { get; } = NewPool();

        public TcpTransportCounters Counters { get; } = new();

        public static async Task<SocketPair> OpenAsync(bool smallBuffers = false)
        {
            using var listener = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
            listener.Bind(new IPEndPoint(IPAddress.Loopback, 0));
            listener.Listen(1);
            var peer = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
            if (smallBuffers)
            {
                peer.ReceiveBufferSize = 4096;
            }

            await peer.ConnectAsync(listener.LocalEndPoint!);
            var accepted = await listener.AcceptAsync();
            if (smallBuffers)
            {
                accepted.SendBufferSize = 4096;
            }

            return new SocketPair(accepted, peer);
        }

        public ProbeConnection Connect(ConnectionLimits? limits = null) =>
            new(Accepted, Pool, limits ?? new ConnectionLimits(1024, 8 * 1024 * 1024), TimeProvider.System, Counters);

        public async Task<byte[]> ReadExactlyAsync(int bytes)
        {
            var buffer = new byte[bytes];
            var read = 0;
            while (read < bytes)
            {
                var n = await Peer.ReceiveAsync(buffer.AsMemory(read));
                Assert.NotEqual(0, n);
                read += n;
            }

            return buffer;
        }

        public void AssertNoLeaks() => Assert.Empty(Pool.GetOutstanding());

        public void Dispose()
        {
            Peer.Dispose();
            Accepted.Dispose();
        }
    }

    /// <summary>A connection that records its callbacks and can be told to throw from, or hold, each of them.</summary>
    private sealed class ProbeConnection(Socket socket, MessagePool pool, ConnectionLimits limits, TimeProvider time, TcpTransportCounters counters)
        : SocketConnection(socket, pool, limits, time, counters)
    {
        private int _receiveEndedCalls;
        private int _finishedCalls;

        public AsyncLocal<string?> Ambient { get; } = new();

        public bool ThrowOnReceived { get; set; }

        public bool ThrowOnEndOfStream { get; set; }

        public bool ThrowOnReceiveEnded { get; set; }

        public bool ThrowOnClosed { get; set; }

        public bool ThrowOnFinished { get; set; }

        public bool HoldCloseUntilReceiveEnded { get; set; }

        public ManualResetEventSlim? HoldReceiveEnd { get; set; }

        public ManualResetEventSlim Received { get; } = new();

        public ManualResetEventSlim ClosedEvent { get; } = new();

        public ManualResetEventSlim ReceiveEnded { get; } = new();

        public ManualResetEventSlim Finished { get; } = new();

        public string? AmbientSeenOnReceive { get; private set; }

        public string? AmbientSeenOnClose { get; private set; }

        public int EndOfStreamCalls { get; private set; }

        public int ReceiveEndedCalls => Volatile.Read(ref _receiveEndedCalls);

        public int FinishedCalls => Volatile.Read(ref _finishedCalls);

        public bool ReceiveEndedBeforeFinish { get; private set; }

        public bool Send(byte[] frame) => TryEnqueue(new RawBytesWriter(frame));

        protected override void OnReceived(ReadOnlySpan<byte> data)
        {
            AmbientSeenOnReceive = Ambient.Value;
            Received.Set();
            if (ThrowOnReceived)
            {
                throw new InvalidOperationException("OnReceived failed");
            }
        }

        protected override void OnEndOfStream()
        {
            EndOfStreamCalls++;
            if (ThrowOnEndOfStream)
            {
                throw new InvalidOperationException("OnEndOfStream failed");
            }
        }

        protected override void OnReceiveEnded()
        {
            HoldReceiveEnd?.Wait(Wait);
            Interlocked.Increment(ref _receiveEndedCalls);
            ReceiveEnded.Set();
            if (ThrowOnReceiveEnded)
            {
                throw new InvalidOperationException("OnReceiveEnded failed");
            }
        }

        protected override void OnClosed(SessionCloseReason reason, string detail)
        {
            AmbientSeenOnClose = Ambient.Value;
            ClosedEvent.Set();
            if (HoldCloseUntilReceiveEnded)
            {
                // The receive loop ends (and tries to finish) before this close tries to.
                Assert.True(ReceiveEnded.Wait(Wait));
            }

            if (ThrowOnClosed)
            {
                throw new InvalidOperationException("OnClosed failed");
            }
        }

        protected override void OnFinished()
        {
            ReceiveEndedBeforeFinish = ReceiveEndedCalls > 0;
            Interlocked.Increment(ref _finishedCalls);
            Finished.Set();
            if (ThrowOnFinished)
            {
                throw new InvalidOperationException("OnFinished failed");
            }
        }
    }
}
