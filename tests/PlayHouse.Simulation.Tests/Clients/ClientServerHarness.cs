using PlayHouse.Core.Codec;
using PlayHouse.Core.Pooling;
using PlayHouse.Simulation.Clients;
using PlayHouse.Simulation.Network;

namespace PlayHouse.Simulation.Tests.Clients;

/// <summary>
/// One <see cref="SimClient"/> against a scripted server end on an ideal network (no latency, loss or splitting unless
/// given): the server decodes what the client sends with the real codec and the test writes each server frame by hand,
/// so replies can come out of order, twice, for sequences never sent, or malformed.
/// </summary>
/// <remarks>Not thread-safe; one harness per test, on the test's thread.</remarks>
internal sealed class ClientServerHarness : IDisposable
{
    public const string ServerEndpoint = "server";

    private readonly ClientFrameDecoder _decoder;
    private readonly WebSocketFrameDecoder? _webSocket;

    public ClientServerHarness(
        int inFlightMax = 16,
        ClientReadOptions? reading = null,
        SimClientTransport transport = SimClientTransport.Tcp,
        PathOptions? network = null,
        Func<int, IClientPacketQueue>? packetQueue = null,
        IUnmatchedReplyPolicy? unmatched = null)
    {
        World = new SimWorld(1);
        Network = new SimNetwork(World, World.CreateRandom(), network ?? new PathOptions { SplitProbability = 0 });
        Pool = new MessagePool(new MessagePoolOptions { CheckedMode = true, SingleThreaded = true });
        var msgIds = new Utf8StringCache(singleThreaded: true);
        _decoder = new ClientFrameDecoder(Pool, msgIds);
        _webSocket = transport == SimClientTransport.WebSocket ? new WebSocketFrameDecoder(expectMasked: true, WireProtocol.MaxFrameBytes) : null;
        Network.Listen(ServerEndpoint, connection =>
        {
            ServerEnd = connection;
            connection.Received = OnServerData;
        });
        Client = new SimClient(Network, "client", Pool, msgIds, inFlightMax, reading, packetQueue, transport, seed: 7) { UnmatchedReplies = unmatched };
    }

    public SimWorld World { get; }

    public SimNetwork Network { get; }

    public MessagePool Pool { get; }

    public SimClient Client { get; }

    /// <summary>The server's end of the client's latest connection, once accepted.</summary>
    public SimConnection? ServerEnd { get; private set; }

    /// <summary>What the server decoded, in arrival order: msg id, sequence, stage and payload.</summary>
    public List<(string MsgId, ushort Seq, long StageId, byte[] Payload)> Received { get; } = [];

    /// <summary>Replies the client handed to request callbacks, in order.</summary>
    public List<ClientReply> Replies { get; } = [];

    public long OutstandingBuffers => Pool.GetStatistics().Outstanding;

    /// <summary>Connects the client and runs the world through the current instant, when the server accepts it.</summary>
    public void Connect()
    {
        Client.Connect(ServerEndpoint);
        World.RunFor(TimeSpan.Zero);
        Assert.NotNull(ServerEnd);
    }

    /// <summary>A request whose reply (payload copied) lands in <see cref="Replies"/>.</summary>
    public ushort Request(string msgId = "Req", TimeSpan? timeout = null, byte[]? payload = null) =>
        Client.Request(msgId, 1, payload ?? [], timeout ?? TimeSpan.FromSeconds(5), (_, reply) => Replies.Add(reply with { Payload = reply.Payload.ToArray() }));

    /// <summary>The bytes of one server frame as the server's TCP transport writes them.</summary>
    public static byte[] Frame(string msgId, ushort seq, ushort errorCode = 0, byte[]? payload = null, long stageId = 1)
    {
        payload ??= [];
        var bytes = new byte[ServerFrameEncoder.GetEncodedLength(msgId, payload.Length)];
        ServerFrameEncoder.Encode(bytes, msgId, seq, stageId, errorCode, payload);
        return bytes;
    }

    /// <summary>One unmasked WebSocket frame of <paramref name="opcode"/> around <paramref name="payload"/>, as a server writes it.</summary>
    public static byte[] WebSocketFrame(byte[] payload, WebSocketOpcode opcode = WebSocketOpcode.Binary)
    {
        var bytes = new byte[WebSocketFraming.GetHeaderLength(payload.Length, masked: false) + payload.Length];
        WebSocketFraming.Encode(bytes, payload, maskKey: null, opcode);
        return bytes;
    }

    /// <summary>
    /// Sends raw bytes from the server end and runs the world through the current instant, when an ideal network
    /// delivers them (timers set for later, such as request timeouts, do not fire).
    /// </summary>
    public void ServerSends(params byte[][] chunks)
    {
        foreach (var chunk in chunks)
        {
            Assert.True(ServerEnd!.Send(chunk));
        }

        World.RunFor(TimeSpan.Zero);
    }

    public void Dispose()
    {
        Client.Dispose();
        World.RunUntilQuiet();
        _decoder.Dispose();
    }

    private void OnServerData(ReadOnlySpan<byte> data)
    {
        if (_webSocket is null)
        {
            DecodePackets(data);
            return;
        }

        while (_webSocket.TryDecode(ref data, out var opcode, out var message))
        {
            Assert.Equal(WebSocketOpcode.Binary, opcode);
            DecodePackets(message);
        }
    }

    private void DecodePackets(ReadOnlySpan<byte> data)
    {
        while (_decoder.TryDecode(ref data, out var frame))
        {
            using (frame)
            {
                Received.Add((frame.MsgId, frame.MsgSeq, frame.StageId, frame.Payload.Span.ToArray()));
            }
        }
    }
}
