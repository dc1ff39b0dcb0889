using System.Buffers;
using BenchmarkDotNet.Attributes;
using PlayHouse.Core.Pooling;

namespace PlayHouse.Benchmarks;

/// <summary>
/// Rent + return of one buffer on one thread: the message pool (unchecked and checked) against
/// <see cref="ArrayPool{T}.Shared"/>, the baseline. Target: unchecked within 2x of the baseline and 0 B allocated.
/// </summary>
[MemoryDiagnoser]
public class PoolBenchmarks
{
    // Several rents per invocation, so the harness's own per-call cost does not dominate a ~20 ns operation.
    private const int OperationsPerInvoke = 16;

    private MessagePool _uncheckedPool = null!;
    private MessagePool _checkedPool = null!;

    [Params(64, 1024, 16 * 1024)]
    public int LengthBytes { get; set; }

    [GlobalSetup]
    public void Setup()
    {
        _uncheckedPool = new MessagePool();
        _checkedPool = new MessagePool(new MessagePoolOptions { CheckedMode = true });

        // Warm every tier so the measured loop runs the steady state: a local-cache hit on rent and on return.
        _uncheckedPool.Rent(LengthBytes, "warm-up").Dispose();
        _checkedPool.Rent(LengthBytes, "warm-up").Dispose();
        ArrayPool<byte>.Shared.Return(ArrayPool<byte>.Shared.Rent(LengthBytes));
    }

    [Benchmark(Baseline = true, OperationsPerInvoke = OperationsPerInvoke)]
    public int ArrayPoolShared()
    {
        var total = 0;
        for (var i = 0; i < OperationsPerInvoke; i++)
        {
            var array = ArrayPool<byte>.Shared.Rent(LengthBytes);
            total += array.Length;
            ArrayPool<byte>.Shared.Return(array);
        }

        return total;
    }

    [Benchmark(OperationsPerInvoke = OperationsPerInvoke)]
    public int MessagePoolUnchecked() => RentAndReturn(_uncheckedPool);

    [Benchmark(OperationsPerInvoke = OperationsPerInvoke)]
    public int MessagePoolChecked() => RentAndReturn(_checkedPool);

    private int RentAndReturn(MessagePool pool)
    {
        var total = 0;
        for (var i = 0; i < OperationsPerInvoke; i++)
        {
            var payload = pool.Rent(LengthBytes, "bench");
            total += payload.Length;
            payload.Dispose();
        }

        return total;
    }
}
