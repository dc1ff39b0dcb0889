using PlayHouse.Core.Pooling;

namespace PlayHouse.Transport.Tcp.Tests;

/// <summary>
/// How a connection's fill buffer grows within one batch and which buffer it keeps between batches, counted in pool
/// rents with the default size classes (4096, 5120, 6144, 7168, 8192, ... 16384 bytes).
/// </summary>
public sealed class SendBufferGrowthTests
{
    private const int InitialBytes = 4096;

    [Fact]
    public void FramesThatExactlyFillTheBuffer_RentNothingMore()
    {
        var (pool, send) = NewSendBuffers();

        var rents = RentsOf(pool, () => AppendAll(send, Frames(4, 1024)));

        Assert.Equal(1, rents);
        Assert.Equal(4 * 1024, DrainAll(send).Length);
        Release(pool, send);
    }

    [Fact]
    public void AGrownBuffer_UsesItsWholeSizeClass_BeforeGrowingAgain()
    {
        var (pool, send) = NewSendBuffers();

        // 100 then 10000 bytes grow the 4096 buffer to the 10240 class; the third frame fits in its spare 140 bytes.
        var frames = new[] { Frame(100, 1), Frame(10_000, 2), Frame(100, 3) };
        var rents = RentsOf(pool, () => AppendAll(send, frames));

        Assert.Equal(2, rents);
        Assert.Equal(frames.SelectMany(f => f).ToArray(), DrainAll(send));
        Release(pool, send);
    }

    [Fact]
    public void AGrowingBuffer_DoublesInsteadOfGrowingByTheFrame()
    {
        var (pool, send) = NewSendBuffers();

        // 60 frames of 100 bytes: 4096, then one doubling to 8192 holds them all.
        var frames = Frames(60, 100);
        var rents = RentsOf(pool, () => AppendAll(send, frames));

        Assert.Equal(2, rents);
        Assert.Equal(frames.SelectMany(f => f).ToArray(), DrainAll(send));
        Release(pool, send);
    }

    [Fact]
    public void AFirstFrameLargerThanTheInitialBuffer_RentsItsSizeClass_AndTheNextFrameFitsInIt()
    {
        var (pool, send) = NewSendBuffers();

        // 5000 bytes rent the 5120 class; 100 more fit in it.
        var frames = new[] { Frame(5000, 4), Frame(100, 5) };
        var rents = RentsOf(pool, () => AppendAll(send, frames));

        Assert.Equal(1, rents);
        Assert.Equal(frames.SelectMany(f => f).ToArray(), DrainAll(send));
        Release(pool, send);
    }

    [Fact]
    public void ABufferOfExactlyFourTimesTheInitialSize_IsKeptForTheNextBatch()
    {
        var (pool, send) = NewSendBuffers();

        // 10 frames of 1000 bytes grow 4096 -> 8192 -> 16384 (= 4 x 4096); that buffer is kept, so the next batch,
        // sized for 10000 bytes, rents nothing.
        AppendAll(send, Frames(10, 1000));
        DrainAll(send);
        var nextBatchRents = RentsOf(pool, () => AppendAll(send, Frames(1, 100)));

        Assert.Equal(0, nextBatchRents);
        Assert.Equal(100, DrainAll(send).Length);
        Release(pool, send);
    }

    private static (MessagePool Pool, SendBuffers Send) NewSendBuffers()
    {
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = true, Name = "send-growth" });
        var send = new SendBuffers(pool, new ConnectionLimits(4096, 1024 * 1024, InitialBytes), TimeProvider.System, new TcpTransportCounters(), "test-send");
        return (pool, send);
    }

    private static void Release(MessagePool pool, SendBuffers send)
    {
        send.Release();
        Assert.Equal(0, send.QueuedBytes);
        pool.ThrowIfLeaks();
    }

    private static byte[] Frame(int bytes, byte fill)
    {
        var frame = new byte[bytes];
        for (var i = 0; i < bytes; i++)
        {
            frame[i] = (byte)(fill + (i % 7));
        }

        return frame;
    }

    private static byte[][] Frames(int count, int bytes) => [.. Enumerable.Range(0, count).Select(i => Frame(bytes, (byte)(i + 1)))];

    private static void AppendAll(SendBuffers send, byte[][] frames)
    {
        foreach (var frame in frames)
        {
            Assert.True(send.TryAppend(new RawBytesWriter(frame)));
        }
    }

    /// <summary>Takes every queued chunk, whole, and returns the bytes written.</summary>
    private static byte[] DrainAll(SendBuffers send)
    {
        var written = new List<byte>();
        while (true)
        {
            var chunk = send.NextChunk();
            if (chunk.IsEmpty)
            {
                return [.. written];
            }

            written.AddRange(chunk.ToArray());
            send.Sent(chunk.Length);
        }
    }

    private static long RentsOf(MessagePool pool, Action action)
    {
        var before = pool.GetStatistics().Rents;
        action();
        return pool.GetStatistics().Rents - before;
    }
}
