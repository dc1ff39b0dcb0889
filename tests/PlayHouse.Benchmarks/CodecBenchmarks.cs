using System.Buffers;
using BenchmarkDotNet.Attributes;
using PlayHouse.Core.Codec;
using PlayHouse.Core.Mesh;
using PlayHouse.Core.Mesh.Proto;
using PlayHouse.Core.Pooling;

namespace PlayHouse.Benchmarks;

/// <summary>
/// One operation = encode one frame, decode it through a long-lived decoder into a pooled payload, dispose the
/// payload. The target is 0 B allocated per operation for client and server frames; the mesh case allocates the
/// RouteHeader's strings inside protobuf's MergeFrom and is here to show that cost.
/// </summary>
[MemoryDiagnoser]
public class CodecBenchmarks
{
    private const string MsgId = "EchoRequest";

    private MessagePool _pool = null!;
    private ClientFrameDecoder _clientDecoder = null!;
    private ServerFrameDecoder _serverDecoder = null!;
    private MeshFrameDecoder _meshDecoder = null!;
    private RouteHeader _sentHeader = null!;
    private RouteHeader _receivedHeader = null!;
    private byte[] _payload = null!;
    private byte[] _wire = null!;

    [Params(64, 1024)]
    public int PayloadBytes { get; set; }

    [GlobalSetup]
    public void Setup()
    {
        _pool = new MessagePool();
        var msgIds = new Utf8StringCache();
        _clientDecoder = new ClientFrameDecoder(_pool, msgIds);
        _serverDecoder = new ServerFrameDecoder(_pool, msgIds);
        _meshDecoder = new MeshFrameDecoder(_pool);
        _sentHeader = new RouteHeader { MsgId = MsgId, From = "play-1", MsgSeq = 7, StageId = 42, PayloadSize = PayloadBytes };
        _receivedHeader = new RouteHeader();
        _payload = new byte[PayloadBytes];
        for (var i = 0; i < _payload.Length; i++)
        {
            _payload[i] = (byte)i;
        }

        _wire = new byte[PayloadBytes + 512];
    }

    [GlobalCleanup]
    public void Cleanup()
    {
        _clientDecoder.Dispose();
        _serverDecoder.Dispose();
        _meshDecoder.Dispose();
    }

    [Benchmark(Baseline = true)]
    public int ClientFrame_EncodeDecode()
    {
        var written = ClientFrameEncoder.Encode(_wire, MsgId, 7, 42, _payload);
        ReadOnlySpan<byte> input = _wire.AsSpan(0, written);
        if (!_clientDecoder.TryDecode(ref input, out var frame))
        {
            throw new InvalidOperationException("No frame decoded.");
        }

        var length = frame.Payload.Length;
        frame.Dispose();
        return length;
    }

    [Benchmark]
    public int ClientFrame_EncodeDecodeInThreeChunks()
    {
        // Chunk boundaries inside the length prefix and inside the payload, as a socket may deliver them.
        var written = ClientFrameEncoder.Encode(_wire, MsgId, 7, 42, _payload);
        ReadOnlySpan<byte> a = _wire.AsSpan(0, 2);
        ReadOnlySpan<byte> b = _wire.AsSpan(2, written - 10);
        ReadOnlySpan<byte> c = _wire.AsSpan(written - 8, 8);
        _clientDecoder.TryDecode(ref a, out _);
        _clientDecoder.TryDecode(ref b, out _);
        if (!_clientDecoder.TryDecode(ref c, out var frame))
        {
            throw new InvalidOperationException("No frame decoded.");
        }

        var length = frame.Payload.Length;
        frame.Dispose();
        return length;
    }

    [Benchmark]
    public int ClientFrame_EncodeDecodeSequence()
    {
        var written = ClientFrameEncoder.Encode(_wire, MsgId, 7, 42, _payload);
        var buffer = new ReadOnlySequence<byte>(_wire, 0, written);
        if (!_clientDecoder.TryDecode(ref buffer, out var frame))
        {
            throw new InvalidOperationException("No frame decoded.");
        }

        var length = frame.Payload.Length;
        frame.Dispose();
        return length;
    }

    [Benchmark]
    public int ServerFrame_EncodeDecode()
    {
        var written = ServerFrameEncoder.Encode(_wire, MsgId, 7, 42, 0, _payload);
        ReadOnlySpan<byte> input = _wire.AsSpan(0, written);
        if (!_serverDecoder.TryDecode(ref input, out var frame))
        {
            throw new InvalidOperationException("No frame decoded.");
        }

        var length = frame.Payload.Length;
        frame.Dispose();
        return length;
    }

    [Benchmark]
    public int MeshFrame_EncodeDecode()
    {
        var written = MeshFrameCodec.Encode(_wire, _sentHeader, _payload);
        ReadOnlySpan<byte> input = _wire.AsSpan(0, written);
        if (!_meshDecoder.TryDecode(ref input, _receivedHeader, out var payload))
        {
            throw new InvalidOperationException("No frame decoded.");
        }

        var length = payload.Length;
        payload.Dispose();
        return length;
    }
}
