using BenchmarkDotNet.Attributes;
using PlayHouse.Core.Mesh;
using PlayHouse.Core.Mesh.Proto;
using PlayHouse.Fixtures.Flawed.Performance;

namespace PlayHouse.Benchmarks;

/// <summary>
/// B3: one operation = encode one mesh frame (a RouteHeader of about 100 bytes, as in seed 004, plus a 64-byte payload)
/// with the standard exact-size header write, and with the flawed twin's rented array + CodedOutputStream. The
/// simulation's checker asserts the allocation (zero per send); the time per operation is reported here, not asserted.
/// </summary>
[MemoryDiagnoser]
public class HeaderWriterBenchmarks
{
    private readonly IRouteHeaderWriter _rentedStream = new RentedStreamRouteHeaderWriter();
    private RouteHeader _header = null!;
    private byte[] _payload = null!;
    private byte[] _frame = null!;

    [GlobalSetup]
    public void Setup()
    {
        _header = new RouteHeader
        {
            MsgId = "PlayHouse.Benchmark.ApiEchoRequest",
            From = "play-server-0001.region-a",
            MsgSeq = 123_456_789,
            ServiceId = 2,
            StageId = 1_000_001,
            AccountId = 9_876_543_210,
            Sid = 4_242,
            TimeoutMs = 30_000,
            PayloadSize = 64,
        };
        _payload = new byte[64];
        _frame = new byte[MeshFrameCodec.GetEncodedLength(_header, _payload.Length)];
    }

    [Benchmark(Baseline = true)]
    public int ExactSize() => MeshFrameCodec.Encode(_frame, _header, _payload, RouteHeaderWriter.ExactSize);

    [Benchmark]
    public int RentedArrayAndStream() => MeshFrameCodec.Encode(_frame, _header, _payload, _rentedStream);
}
