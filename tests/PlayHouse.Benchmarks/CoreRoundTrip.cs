using PlayHouse.Core.Codec;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;
using PlayHouse.Core.Seams;
using PlayHouse.Sim.Tcp;

namespace PlayHouse.Benchmarks;

/// <summary>
/// One client request through the core with no network: the client encodes a request frame, the server decodes it,
/// dispatches it to the session's stage, runs the stage's turn (the handler echoes the payload, its reply closes the
/// ledger entry), encodes the reply frame, and the client decodes it. Everything a round trip costs the core, and
/// nothing a socket or the simulator's network costs.
/// </summary>
/// <remarks>
/// Two shapes, as the core runs in each substrate: <see cref="CoreShape.Threaded"/> is a server whose locks are on and
/// whose frames arrive as a TCP session's receive hands them over (a batch flushed per receive, dated with the
/// receive's clock reading); <see cref="CoreShape.SingleThreaded"/> is a simulated node (no locks, one frame at a time).
/// The clock is a manual one whose reading is a field, so the clock's own cost (the OS's, or the simulator's) is not
/// the core's. Not thread-safe: one instance per benchmark thread.
/// </remarks>
public sealed class CoreRoundTrip : IDisposable
{
    private const long StageId = 1;
    private const string MsgId = EchoMsgIds.Echo;

    private readonly ManualExecutor _executor = new();
    private readonly PlayServer _server;
    private readonly EncodingConnection _connection;
    private readonly ClientFrameDecoder _serverDecoder;
    private readonly ServerFrameDecoder _clientDecoder;
    private readonly ClientFrameBatch? _batch;
    private readonly ManualClock _clock = new();
    private readonly byte[] _requestPayload;
    private readonly byte[] _requestWire;
    private readonly ClientSession _session;
    private ushort _seq = 1;

    public CoreRoundTrip(CoreShape shape, int payloadBytes = 64)
    {
        Shape = shape;
        var singleThreaded = shape == CoreShape.SingleThreaded;

        // Over TCP a receive's turn runs on the receiving thread (ServerOptions.RunClientTurnsOnReceiveThread).
        _executor.CanRunInline = !singleThreaded;
        var pool = new MessagePool(new MessagePoolOptions { SingleThreaded = singleThreaded, PreWarmCountPerClass = 64 });
        var seams = new NodeSeams(_clock, _executor, new Xoshiro256StarStar(1), pool);
        _server = new PlayServer("play-bench", seams, new ServerOptions { DefaultStageType = EchoMsgIds.StageType, SingleThreaded = singleThreaded });

        // The stage bench tcp and serve run: it answers a request with the same payload.
        EchoStage.Register(_server);
        // A simulated node's msg-id caches take no lock and count hits without the per-thread stripes, as here.
        _serverDecoder = new ClientFrameDecoder(pool, new Utf8StringCache(singleThreaded: singleThreaded));
        _clientDecoder = new ServerFrameDecoder(pool, new Utf8StringCache(singleThreaded: singleThreaded));
        _connection = new EncodingConnection(payloadBytes);
        _session = _server.ConnectSession(_connection);
        _batch = singleThreaded ? null : new ClientFrameBatch();
        _requestPayload = new byte[payloadBytes];
        _requestWire = new byte[ClientFrameEncoder.GetEncodedLength(MsgId, payloadBytes)];

        var auth = new byte[ClientFrameEncoder.GetEncodedLength(_server.Options.AuthenticateMsgId, sizeof(long))];
        ClientFrameEncoder.Encode(auth, _server.Options.AuthenticateMsgId, 1, StageId, BitConverter.GetBytes(7L));
        Deliver(auth);
        ReceiveReply();
        if (_connection.Frames != 1)
        {
            throw new InvalidOperationException("The benchmark client did not join its stage.");
        }

        // Warm every path once, and check that an echo comes back whole.
        if (RoundTrip() != payloadBytes)
        {
            throw new InvalidOperationException("The echo did not come back.");
        }
    }

    public CoreShape Shape { get; }

    /// <summary>Round trips the server answered (the join's reply included).</summary>
    public long Replies => _connection.Frames;

    /// <summary>One request echoed through the core; returns the echoed payload's length.</summary>
    public int RoundTrip()
    {
        _seq = (ushort)(_seq == ushort.MaxValue ? 2 : _seq + 1);
        var written = ClientFrameEncoder.Encode(_requestWire, MsgId, _seq, StageId, _requestPayload);
        Deliver(_requestWire.AsSpan(0, written));
        return ReceiveReply();
    }

    public void Dispose()
    {
        _serverDecoder.Dispose();
        _clientDecoder.Dispose();
        _server.Dispose();
    }

    private void Deliver(ReadOnlySpan<byte> wire)
    {
        while (_serverDecoder.TryDecode(ref wire, out var frame))
        {
            if (_batch is null)
            {
                // As a simulated session does: it holds the session the server opened for it.
                _server.OnClientFrame(_session, frame.MsgId, frame.MsgSeq, frame.StageId, frame.Payload);
            }
            else
            {
                // As a TCP session does: by its id, with the receive's clock reading and batch.
                _server.OnClientFrame(_session.SessionId, frame.MsgId, frame.MsgSeq, frame.StageId, frame.Payload, _clock.GetTimestamp(), _batch);
            }
        }

        if (_batch is not null)
        {
            _server.FlushClientFrames(_batch);
        }

        _executor.RunUntilIdle();
    }

    private int ReceiveReply()
    {
        ReadOnlySpan<byte> wire = _connection.Wire.AsSpan(0, _connection.WrittenBytes);
        if (!_clientDecoder.TryDecode(ref wire, out var reply))
        {
            throw new InvalidOperationException("No reply frame was sent.");
        }

        using (reply)
        {
            if (reply.ErrorCode != ErrorCodes.Success)
            {
                throw new InvalidOperationException($"The reply carried error {reply.ErrorCode}.");
            }

            return reply.Payload.Length;
        }
    }

    /// <summary>A clock whose reading is a field: a simulated world's clock costs about this.</summary>
    private sealed class ManualClock : TimeProvider
    {
        public override long TimestampFrequency => TimeSpan.TicksPerSecond;

        public override long GetTimestamp() => 1_000_000;
    }

    /// <summary>The session's connection: encodes each frame the server sends, as a transport's send would.</summary>
    private sealed class EncodingConnection(int payloadBytes) : IClientConnection
    {
        public byte[] Wire { get; } = new byte[ServerFrameEncoder.GetEncodedLength(MsgId, Math.Max(payloadBytes, 64)) + 256];

        public int WrittenBytes { get; private set; }

        public long Frames { get; private set; }

        public bool TrySend(string msgId, ushort msgSeq, long stageId, ushort errorCode, Payload payload)
        {
            WrittenBytes = ServerFrameEncoder.Encode(Wire, msgId, msgSeq, stageId, errorCode, payload.Span);
            payload.DisposeIfOwner();
            Frames++;
            return true;
        }

        public void Close(string reason)
        {
        }
    }
}

/// <summary>How the core runs in <see cref="CoreRoundTrip"/>: as over TCP (locks on, receive batches) or as in simulation.</summary>
public enum CoreShape
{
    Threaded,
    SingleThreaded,
}
