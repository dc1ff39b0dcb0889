using System.Buffers.Binary;
using Microsoft.Extensions.Time.Testing;
using PlayHouse.Core.Codec;
using PlayHouse.Core.Pooling;

namespace PlayHouse.Transport.Tcp.Tests;

/// <summary>
/// Every numeric <see cref="TcpTransportOptions"/> and <see cref="TlsServerOptions"/> limit one below, at and one above
/// it. The send queue's cap and its half-cap slow-reader clock are tested on the send buffers themselves; the session
/// limits on sessions served over a <see cref="ScriptedWebSocket"/> by a listener on a fake clock, so each timeout is
/// met to the tick by the listener's own sweep.
/// </summary>
public sealed class TransportLimitTests
{
    private const int QueueCap = 1024;
    private static readonly TimeSpan SweepAt = TimeSpan.FromSeconds(5);
    private static readonly TimeSpan Long = TimeSpan.FromDays(1);

    // ---- Validation ----

    public static TheoryData<string, long, long> ValidationBounds() => new()
    {
        // Option, the value at its bound (accepted), the value one past it (refused); ticks for the time limits.
        { nameof(TcpTransportOptions.ReceiveBufferBytes), 256, 255 },
        { nameof(TcpTransportOptions.SendQueueBytesMax), 1024, 1023 },
        { nameof(TcpTransportOptions.MaxBodyBytes), WireProtocol.MinClientBodyBytes, WireProtocol.MinClientBodyBytes - 1 },
        { nameof(TcpTransportOptions.MaxBodyBytes), WireProtocol.MaxBodyBytes, WireProtocol.MaxBodyBytes + 1L },
        { nameof(TcpTransportOptions.IdleTimeout), 1, 0 },
        { nameof(TcpTransportOptions.FrameTimeout), 1, 0 },
        { nameof(TcpTransportOptions.SlowReaderTimeout), 1, 0 },
        { nameof(TcpTransportOptions.SweepInterval), 1, 0 },
        { nameof(TcpTransportOptions.MaxConnections), 1, 0 },
        { nameof(TcpTransportOptions.ListenBacklog), 1, 0 },
        { nameof(TcpTransportOptions.SocketSendBufferBytes), 0, -1 },
        { nameof(TcpTransportOptions.CompressAboveBytes), 0, -1 },
        { nameof(TcpTransportOptions.WebSocketMessageBytesMax), 256, 255 },
        { nameof(TcpTransportOptions.WebSocketCloseGrace), 1, 0 },
    };

    [Theory]
    [MemberData(nameof(ValidationBounds))]
    public void Validate_AcceptsEachLimitAtItsBound_AndRefusesOnePastIt_ByName(string name, long atBound, long pastBound)
    {
        With(name, atBound).Validate();
        var error = Assert.Throws<ArgumentException>(With(name, pastBound).Validate);

        Assert.Equal(name, error.ParamName);
        Assert.StartsWith($"TcpTransportOptions.{name} is out of range.", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void TlsHandshakeTimeout_OfOneTickIsAccepted_AndZeroIsRefused_AlsoThroughTheTransportOptions()
    {
        using var certificate = TlsServerOptions.CreateSelfSignedCertificate("localhost", TimeProvider.System);

        new TcpTransportOptions { Tls = new TlsServerOptions { Certificate = certificate, HandshakeTimeout = TimeSpan.FromTicks(1) } }.Validate();
        var error = Assert.Throws<ArgumentException>(new TcpTransportOptions { Tls = new TlsServerOptions { Certificate = certificate, HandshakeTimeout = TimeSpan.Zero } }.Validate);

        Assert.Equal(nameof(TlsServerOptions.HandshakeTimeout), error.ParamName);
    }

    // ---- The send queue: its cap, and the half of it that stops the slow-reader clock ----

    [Theory]
    [InlineData(-1)]
    [InlineData(0)]
    [InlineData(1)]
    public void SendQueue_TakesAFrameThatFillsItToSendQueueBytesMax_AndRefusesOneByteMore(int bytesPastTheCap)
    {
        var time = new FakeTimeProvider();
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = true });
        var send = Buffers(pool, time, QueueCap);
        Assert.True(send.TryAppend(new RawBytesWriter(new byte[100])));

        var taken = send.TryAppend(new RawBytesWriter(new byte[QueueCap - 100 + bytesPastTheCap]));

        Assert.Equal(bytesPastTheCap <= 0, taken);
        Assert.Equal(taken ? QueueCap + bytesPastTheCap : 100, send.QueuedBytes);
        Assert.Equal(taken ? 0 : 1, send.Refusals);
        Assert.Equal(taken ? 0 : time.GetTimestamp(), send.QueueFullSinceTimestamp);
        send.Release();
        pool.ThrowIfLeaks();
    }

    [Fact]
    public void EmptySendQueue_TakesOneFrameLargerThanSendQueueBytesMax_ButNothingBehindIt()
    {
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = true });
        var send = Buffers(pool, new FakeTimeProvider(), QueueCap);

        Assert.True(send.TryAppend(new RawBytesWriter(new byte[(2 * QueueCap) + 1])));
        Assert.False(send.TryAppend(new RawBytesWriter(new byte[1])));
        Assert.Equal((2 * QueueCap) + 1, send.QueuedBytes);
        send.Release();
        pool.ThrowIfLeaks();
    }

    [Theory]
    [InlineData(1024, 511, true)]
    [InlineData(1024, 512, true)]
    [InlineData(1024, 513, false)]
    [InlineData(1025, 512, true)]
    [InlineData(1025, 513, false)]
    public void SlowReaderClock_StopsOnlyOnceTheQueueHasDrainedToHalfItsCap(int cap, int queuedAfterDrain, bool clockStopped)
    {
        // Half an odd cap rounds down: 1025 B must drain to 512 B.
        var time = new FakeTimeProvider();
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = true });
        var send = Buffers(pool, time, cap);
        Assert.True(send.TryAppend(new RawBytesWriter(new byte[cap])));
        Assert.False(send.TryAppend(new RawBytesWriter(new byte[1])));
        var fullSince = send.QueueFullSinceTimestamp;

        var chunk = send.NextChunk();
        time.Advance(TimeSpan.FromSeconds(1));
        send.Sent(chunk.Length - queuedAfterDrain);

        Assert.NotEqual(0, fullSince);
        Assert.Equal(queuedAfterDrain, send.QueuedBytes);
        Assert.Equal(clockStopped ? 0 : fullSince, send.QueueFullSinceTimestamp);
        send.Sent(queuedAfterDrain);
        send.Release();
        pool.ThrowIfLeaks();
    }

    [Fact]
    public void SlowReaderClock_KeepsTheFirstRefusalsTime_UntilItStops_ThenRestartsAtTheNextRefusal()
    {
        var time = new FakeTimeProvider();
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = true });
        var send = Buffers(pool, time, QueueCap);
        Assert.True(send.TryAppend(new RawBytesWriter(new byte[QueueCap])));
        Assert.False(send.TryAppend(new RawBytesWriter(new byte[1])));
        var first = send.QueueFullSinceTimestamp;
        time.Advance(TimeSpan.FromSeconds(1));
        Assert.False(send.TryAppend(new RawBytesWriter(new byte[1])));
        var afterSecondRefusal = send.QueueFullSinceTimestamp;

        send.Sent(send.NextChunk().Length);
        time.Advance(TimeSpan.FromSeconds(1));
        Assert.True(send.TryAppend(new RawBytesWriter(new byte[QueueCap])));
        Assert.False(send.TryAppend(new RawBytesWriter(new byte[1])));

        Assert.Equal(first, afterSecondRefusal);
        Assert.Equal(first + TimeSpan.FromSeconds(2).Ticks, send.QueueFullSinceTimestamp);
        Assert.Equal(3, send.Refusals);
        send.Release();
        pool.ThrowIfLeaks();
    }

    // ---- Session timeouts, met by the listener's sweep at 5 s (one sweep a second) ----

    [Theory]
    [InlineData(-1)]
    [InlineData(0)]
    [InlineData(1)]
    public void SilentSession_ClosesOnlyOnceItsSilenceExceedsIdleTimeout(int timeoutOffsetTicks)
    {
        using var bench = new WebSocketSessionBench(Options() with { IdleTimeout = SweepAt + TimeSpan.FromTicks(timeoutOffsetTicks) });
        var (_, session) = bench.Open();

        bench.Time.Advance(SweepAt);

        // At the sweep the session has been silent exactly 5 s: more than a limit one tick shorter, no more than the others.
        Assert.Equal(timeoutOffsetTicks < 0, session!.IsClosed);
        Assert.Equal(timeoutOffsetTicks < 0 ? 1 : 0, bench.Listener.Counters.Closed(SessionCloseReason.IdleTimeout));
    }

    [Theory]
    [InlineData(-1)]
    [InlineData(0)]
    [InlineData(1)]
    public void IncompleteFrame_ClosesItsSessionOnlyOnceItHasWaitedLongerThanFrameTimeout(int timeoutOffsetTicks)
    {
        using var bench = new WebSocketSessionBench(Options() with { FrameTimeout = SweepAt + TimeSpan.FromTicks(timeoutOffsetTicks) });
        var (socket, session) = bench.Open();
        socket.Feed(ClientFrame(payloadBytes: 10)[..7]);

        bench.Time.Advance(SweepAt);

        Assert.NotEqual(0, session!.PartialFrameSinceTimestamp);
        Assert.Equal(timeoutOffsetTicks < 0, session.IsClosed);
        Assert.Equal(timeoutOffsetTicks < 0 ? 1 : 0, bench.Listener.Counters.Closed(SessionCloseReason.FrameTimeout));
    }

    [Theory]
    [InlineData(-1)]
    [InlineData(0)]
    [InlineData(1)]
    public void ClientThatStopsReading_IsClosedOnlyOnceItsQueueHasBeenFullLongerThanSlowReaderTimeout(int timeoutOffsetTicks)
    {
        using var bench = new WebSocketSessionBench(Options() with { SendQueueBytesMax = QueueCap, SlowReaderTimeout = SweepAt + TimeSpan.FromTicks(timeoutOffsetTicks) });
        var (socket, session) = bench.Open();
        socket.HoldSends = true;
        var sent = 0;
        while (session!.TrySend("m", 0, 1, 0, bench.Pool.Copy(new byte[200], "test")))
        {
            sent++;
        }

        bench.Time.Advance(SweepAt);

        Assert.InRange(sent, 2, QueueCap / 200);
        Assert.Equal(timeoutOffsetTicks < 0, session.IsClosed);
        Assert.Equal(timeoutOffsetTicks < 0 ? 1 : 0, bench.Listener.Counters.Closed(SessionCloseReason.SlowReader));
    }

    [Theory]
    [InlineData(-1)]
    [InlineData(0)]
    [InlineData(1)]
    public void TimeoutSweep_RunsEverySweepInterval_NotOneTickSooner(int tickOffset)
    {
        var interval = TimeSpan.FromSeconds(2);
        using var bench = new WebSocketSessionBench(Options() with { SweepInterval = interval, IdleTimeout = TimeSpan.FromTicks(1) });
        var (_, session) = bench.Open();

        bench.Time.Advance(interval + TimeSpan.FromTicks(tickOffset));

        // The session is past its idle timeout a tick after it opened; only a sweep notices.
        Assert.Equal(tickOffset >= 0, session!.IsClosed);
    }

    // ---- Connections, message sizes, compression, receive buffer, close grace ----

    [Theory]
    [InlineData(1)]
    [InlineData(2)]
    [InlineData(3)]
    public void Connections_PastMaxConnections_AreAbortedAtOnceAndCounted(int connections)
    {
        using var bench = new WebSocketSessionBench(Options() with { MaxConnections = 2 });

        var opened = Enumerable.Range(0, connections).Select(_ => bench.Open()).ToList();

        Assert.Equal(Math.Min(connections, 2), bench.Listener.SessionCount);
        Assert.Equal(Math.Max(0, connections - 2), bench.Listener.Counters.ConnectionsRefusedAtLimit);
        Assert.Equal(Math.Max(0, connections - 2), opened.Count(o => o.Session is null && o.Socket.Aborted));
    }

    [Theory]
    [InlineData(255, new[] { 255 })]
    [InlineData(256, new[] { 256 })]
    [InlineData(257, new[] { 256, 1 })]
    public void QueuedBytes_LeaveInWebSocketMessagesOfAtMostWebSocketMessageBytesMax(int frameBytes, int[] messageBytes)
    {
        using var bench = new WebSocketSessionBench(Options() with { WebSocketMessageBytesMax = 256 });
        var (socket, session) = bench.Open();
        var payloadBytes = frameBytes - ServerFrameEncoder.GetEncodedLength("m", 0);

        Assert.True(session!.TrySend("m", 1, 1, 0, bench.Pool.Copy(new byte[payloadBytes], "test")));

        Assert.Equal(messageBytes, socket.SentMessages.Select(m => m.Length));
    }

    [Theory]
    [InlineData(99)]
    [InlineData(100)]
    [InlineData(101)]
    public void Payload_IsSentCompressedFromCompressAboveBytes_AndRawBelowIt(int payloadBytes)
    {
        using var bench = new WebSocketSessionBench(Options() with { CompressAboveBytes = 100 });
        var (socket, session) = bench.Open();

        Assert.True(session!.TrySend("m", 1, 1, 0, bench.Pool.Copy(new byte[payloadBytes], "zeros")));

        // OriginalSize follows the length prefix, the msg id ("m" and its length byte), MsgSeq, StageId and ErrorCode.
        var frame = Assert.Single(socket.SentMessages);
        var compressed = payloadBytes >= 100;
        Assert.Equal(compressed ? payloadBytes : 0, BinaryPrimitives.ReadInt32LittleEndian(frame.AsSpan(4 + 2 + 2 + 8 + 2)));
        Assert.Equal(compressed ? 1 : 0, bench.Listener.Counters.FramesCompressed);
        Assert.Equal(compressed, frame.Length < ServerFrameEncoder.GetEncodedLength("m", payloadBytes));
    }

    [Fact]
    public void CompressAboveBytesOfZero_NeverCompresses()
    {
        using var bench = new WebSocketSessionBench(Options());
        var (socket, session) = bench.Open();

        Assert.True(session!.TrySend("m", 1, 1, 0, bench.Pool.Copy(new byte[4096], "zeros")));

        Assert.Equal(0, bench.Listener.Counters.FramesCompressed);
        Assert.Equal(ServerFrameEncoder.GetEncodedLength("m", 4096), Assert.Single(socket.SentMessages).Length);
    }

    [Theory]
    [InlineData(255, 1)]
    [InlineData(256, 1)]
    [InlineData(257, 2)]
    public void Session_ReceivesIntoBuffersOfReceiveBufferBytes_AndAFrameOneByteLargerTakesTwoReceives(int frameBytes, int receives)
    {
        using var bench = new WebSocketSessionBench(Options() with { ReceiveBufferBytes = 256 });
        var (socket, session) = bench.Open();

        socket.Feed(ClientFrame(frameBytes - ClientFrame(0).Length));

        Assert.All(socket.ReceiveBufferLengths, length => Assert.Equal(256, length));
        Assert.Equal(receives + 1, socket.ReceiveBufferLengths.Count);
        Assert.Equal(1, bench.Listener.Counters.FramesReceived);
        Assert.Equal(frameBytes, bench.Listener.Counters.BytesReceived);
        Assert.False(session!.IsClosed);
    }

    [Theory]
    [InlineData(-1)]
    [InlineData(0)]
    [InlineData(1)]
    public void ClientFrame_WithABodyUpToMaxBodyBytesArrives_AndOneByteMoreClosesTheSessionAsMalformed(int bytesPastTheLimit)
    {
        const int MaxBody = 64;
        using var bench = new WebSocketSessionBench(Options() with { MaxBodyBytes = MaxBody });
        var (socket, session) = bench.Open();
        var emptyBody = ClientFrame(0).Length - WireProtocol.LengthPrefixBytes;

        socket.Feed(ClientFrame(MaxBody - emptyBody + bytesPastTheLimit));

        Assert.Equal(bytesPastTheLimit > 0, session!.IsClosed);
        Assert.Equal(bytesPastTheLimit > 0 ? 1 : 0, bench.Listener.Counters.Malformed(FrameError.LengthTooLarge));
        Assert.Equal(bytesPastTheLimit > 0 ? 0 : 1, bench.Listener.Counters.FramesReceived);
    }

    [Theory]
    [InlineData(-1)]
    [InlineData(0)]
    [InlineData(1)]
    public void SessionClosedByTheServer_WaitsWebSocketCloseGraceForTheClientsClose_ThenAborts(int tickOffset)
    {
        var grace = TimeSpan.FromSeconds(1);
        using var bench = new WebSocketSessionBench(Options() with { WebSocketCloseGrace = grace });
        var (socket, session) = bench.Open();
        session!.Close("the server closes");

        bench.Time.Advance(grace + TimeSpan.FromTicks(tickOffset));

        Assert.True(socket.CloseOutputSent);
        Assert.Equal(tickOffset >= 0, socket.Aborted);
        Assert.Equal(tickOffset >= 0, session.Finished.IsCompleted);
    }

    /// <summary>Transport options whose time limits stay out of the way of the one a test sets.</summary>
    internal static TcpTransportOptions Options() => new()
    {
        IdleTimeout = Long,
        FrameTimeout = Long,
        SlowReaderTimeout = Long,
        SweepInterval = TimeSpan.FromSeconds(1),
        BatchSends = false,
    };

    /// <summary>A heartbeat frame (answered before authentication, so any session takes it) with a payload of zeros.</summary>
    internal static byte[] ClientFrame(int payloadBytes)
    {
        var frame = new byte[ClientFrameEncoder.GetEncodedLength(WireProtocol.HeartbeatMsgId, payloadBytes)];
        ClientFrameEncoder.Encode(frame, WireProtocol.HeartbeatMsgId, 1, 0, new byte[payloadBytes]);
        return frame;
    }

    private static SendBuffers Buffers(MessagePool pool, TimeProvider time, int cap) =>
        new(pool, new ConnectionLimits(4096, cap), time, new TcpTransportCounters(), "limits");

    private static TcpTransportOptions With(string name, long value) => name switch
    {
        nameof(TcpTransportOptions.ReceiveBufferBytes) => new TcpTransportOptions { ReceiveBufferBytes = (int)value },
        nameof(TcpTransportOptions.SendQueueBytesMax) => new TcpTransportOptions { SendQueueBytesMax = (int)value },
        nameof(TcpTransportOptions.MaxBodyBytes) => new TcpTransportOptions { MaxBodyBytes = (int)value },
        nameof(TcpTransportOptions.IdleTimeout) => new TcpTransportOptions { IdleTimeout = TimeSpan.FromTicks(value) },
        nameof(TcpTransportOptions.FrameTimeout) => new TcpTransportOptions { FrameTimeout = TimeSpan.FromTicks(value) },
        nameof(TcpTransportOptions.SlowReaderTimeout) => new TcpTransportOptions { SlowReaderTimeout = TimeSpan.FromTicks(value) },
        nameof(TcpTransportOptions.SweepInterval) => new TcpTransportOptions { SweepInterval = TimeSpan.FromTicks(value) },
        nameof(TcpTransportOptions.MaxConnections) => new TcpTransportOptions { MaxConnections = (int)value },
        nameof(TcpTransportOptions.ListenBacklog) => new TcpTransportOptions { ListenBacklog = (int)value },
        nameof(TcpTransportOptions.SocketSendBufferBytes) => new TcpTransportOptions { SocketSendBufferBytes = (int)value },
        nameof(TcpTransportOptions.CompressAboveBytes) => new TcpTransportOptions { CompressAboveBytes = (int)value },
        nameof(TcpTransportOptions.WebSocketMessageBytesMax) => new TcpTransportOptions { WebSocketMessageBytesMax = (int)value },
        nameof(TcpTransportOptions.WebSocketCloseGrace) => new TcpTransportOptions { WebSocketCloseGrace = TimeSpan.FromTicks(value) },
        _ => throw new ArgumentOutOfRangeException(nameof(name), name, "not a numeric TcpTransportOptions limit"),
    };
}
