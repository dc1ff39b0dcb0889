using PlayHouse.Core.Pooling;

namespace PlayHouse.Transport.Tcp.Tests;

/// <summary>
/// A connection's send buffers: a batch starts in a buffer sized for the last batch, so batches larger than the initial
/// buffer rent one buffer each instead of growing one by doubling (three rents and two copies for three 16 KiB frames).
/// </summary>
public sealed class SendBuffersTests
{
    private const int FrameBytes = 16 * 1024 + 40;

    [Fact]
    public void BatchesLargerThanTheInitialBuffer_RentOneBufferEach_AfterTheFirst()
    {
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = true, Name = "send-buffers" });
        var send = new SendBuffers(pool, new ConnectionLimits(4096, 1024 * 1024), TimeProvider.System, new TcpTransportCounters(), "test-send");
        var frame = new byte[FrameBytes];

        var firstBatchRents = RentsOf(pool, () => SendBatch(send, frame, frames: 3));
        var secondBatchRents = RentsOf(pool, () => SendBatch(send, frame, frames: 3));
        var thirdBatchRents = RentsOf(pool, () => SendBatch(send, frame, frames: 3));
        send.Release();

        // The first batch grows from the initial 4 KiB (one rent per size); every later one starts large enough.
        Assert.Equal(3, firstBatchRents);
        Assert.Equal((1, 1), (secondBatchRents, thirdBatchRents));
        Assert.Equal(0, send.QueuedBytes);
        pool.ThrowIfLeaks();
    }

    [Fact]
    public void SmallBatches_ReuseTheKeptBuffer_AndRentNothing()
    {
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = true, Name = "send-buffers" });
        var send = new SendBuffers(pool, new ConnectionLimits(4096, 1024 * 1024), TimeProvider.System, new TcpTransportCounters(), "test-send");
        var frame = new byte[100];

        SendBatch(send, frame, frames: 16);
        SendBatch(send, frame, frames: 16);
        var laterRents = RentsOf(pool, () => SendBatch(send, frame, frames: 16));
        send.Release();

        Assert.Equal(0, laterRents);
        pool.ThrowIfLeaks();
    }

    private static long RentsOf(MessagePool pool, Action action)
    {
        var before = pool.GetStatistics().Rents;
        action();
        return pool.GetStatistics().Rents - before;
    }

    /// <summary>Queues <paramref name="frames"/> frames, then writes every chunk whole, as one batch.</summary>
    private static void SendBatch(SendBuffers send, byte[] frame, int frames)
    {
        for (var i = 0; i < frames; i++)
        {
            Assert.True(send.TryAppend(new RawBytesWriter(frame)));
        }

        while (true)
        {
            var chunk = send.NextChunk();
            if (chunk.IsEmpty)
            {
                return;
            }

            send.Sent(chunk.Length);
        }
    }
}
