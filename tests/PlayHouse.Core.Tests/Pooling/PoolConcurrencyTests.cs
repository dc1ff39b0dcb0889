using System.Collections.Concurrent;
using PlayHouse.Core.Pooling;

namespace PlayHouse.Core.Tests.Pooling;

/// <summary>
/// Real threads (allowed in tests only): rent on one thread, return on another (bug B2), with exact totals once the
/// threads are joined. Nothing here waits on wall time; every wait is a join or a blocking hand-off.
/// </summary>
public sealed class PoolConcurrencyTests
{
    [Fact]
    public void RentOnOneThread_ReturnOnAnother_KeepsTotalsExactAndHitRateHigh()
    {
        const int Messages = 50_000;
        const int InFlightMax = 32;
        const int LocalCapacity = 16;
        var pool = new MessagePool(new MessagePoolOptions { LocalCacheCapacityPerClass = LocalCapacity, GlobalCapacityPerClass = 256 });
        using var queue = new BlockingCollection<Payload>(InFlightMax);
        long checksumSent = 0, checksumReceived = 0;

        var errors = RunGuarded(
            [
                stop =>
                {
                    for (var i = 0; i < Messages; i++)
                    {
                        var payload = pool.Rent(256, "io-thread");
                        payload.WritableSpan.Fill((byte)i);
                        checksumSent += (byte)i;
                        queue.Add(payload.Move("queue"), stop);
                    }

                    queue.CompleteAdding();
                },
                stop =>
                {
                    foreach (var payload in queue.GetConsumingEnumerable(stop))
                    {
                        checksumReceived += payload.Span[255];
                        payload.Dispose();
                    }
                },
            ]);

        Assert.Empty(errors);

        var stats = pool.GetStatistics();
        Assert.Equal(Messages, stats.Rents);
        Assert.Equal(Messages, stats.Returns);
        Assert.Equal(0, stats.Outstanding);
        Assert.Equal(checksumSent, checksumReceived);

        // A miss needs the renter's stack and the global tier both empty, so every buffer ever made is then in the
        // queue (at most InFlightMax), in the consumer's hand (1), being rented (1) or in the consumer's stack.
        var row = pool.GetClassStatistics()[pool.FindSizeClass(256)];
        Assert.InRange(row.Misses, 1, InFlightMax + 2 + LocalCapacity);
        Assert.Equal(Messages - row.Misses, row.Hits);
        Assert.Equal(0, row.Dropped);

        // Items retained per thread stay bounded by the local capacity: two threads used the pool.
        Assert.InRange(row.LocalCached, 0, 2 * LocalCapacity);
        Assert.Equal(row.Misses, row.LocalCached + row.GlobalCached);
        PoolTestSupport.AssertIdentities(pool);
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public void ManyProducersAndConsumers_MixedSizes_BalanceAndLeaveNoLeaks(bool checkedMode)
    {
        const int ProducerCount = 3;
        const int ConsumerCount = 3;
        const int MessagesPerProducer = 20_000;
        var pool = new MessagePool(new MessagePoolOptions
        {
            CheckedMode = checkedMode,
            LocalCacheCapacityPerClass = 8,
            GlobalCapacityPerClass = 32,
            PreWarmCountPerClass = 4,
        });
        int[] lengths = [1, 64, 129, 1000, 4096, 20_000, 100_000];
        using var queue = new BlockingCollection<(Payload Payload, byte Tag)>(boundedCapacity: 256);
        var failures = new ConcurrentQueue<string>();
        var producersRunning = ProducerCount;

        var producers = Enumerable.Range(0, ProducerCount).Select(p => (Action<CancellationToken>)(stop =>
        {
            for (var i = 0; i < MessagesPerProducer; i++)
            {
                // Every 5000th message is oversize, to cover the unpooled path across threads too.
                var length = i % 5000 == 4999 ? (1024 * 1024) + 7 : lengths[(i + p) % lengths.Length];
                var payload = pool.Rent(length, $"producer-{p}");

                // Fill every byte: a buffer with two live owners would show a mix of tags at the consumer.
                var tag = (byte)((i * ProducerCount) + p);
                payload.WritableSpan.Fill(tag);
                queue.Add((payload, tag), stop);
            }

            // The last producer to finish closes the queue, so the consumers drain it and stop.
            if (Interlocked.Decrement(ref producersRunning) == 0)
            {
                queue.CompleteAdding();
            }
        }));
        var consumers = Enumerable.Range(0, ConsumerCount).Select(c => (Action<CancellationToken>)(stop =>
        {
            foreach (var (payload, tag) in queue.GetConsumingEnumerable(stop))
            {
                var taken = payload.Move($"consumer-{c}");
                var mismatchIndex = taken.Span.IndexOfAnyExcept(tag);
                if (mismatchIndex >= 0)
                {
                    failures.Enqueue($"buffer #{taken.BufferId} byte {mismatchIndex} is {taken.Span[mismatchIndex]}, sent {tag}");
                }

                taken.Dispose();
            }
        }));

        var errors = RunGuarded([.. consumers, .. producers]);

        Assert.Empty(errors);
        Assert.Empty(failures);
        var stats = pool.GetStatistics();
        Assert.Equal(ProducerCount * MessagesPerProducer, stats.Rents);
        Assert.Equal(ProducerCount * MessagesPerProducer, stats.Returns);
        Assert.Equal(ProducerCount * (MessagesPerProducer / 5000), stats.OversizeRents);
        PoolTestSupport.AssertBalanced(pool);
        PoolTestSupport.AssertIdentities(pool);

        // Six threads touched the pool; each keeps at most the local capacity per class.
        Assert.All(pool.GetClassStatistics(), r => Assert.InRange(r.LocalCached, 0, (ProducerCount + ConsumerCount) * 8));
        pool.ThrowIfLeaks();
        if (checkedMode)
        {
            Assert.Empty(pool.GetOutstanding());
        }
    }

    [Fact]
    public void Counters_OfAThreadThatExited_StillCountInTotals()
    {
        var pool = new MessagePool();
        var payloads = new Payload[100];

        var errors = RunGuarded(
            [
                _ =>
                {
                    for (var i = 0; i < payloads.Length; i++)
                    {
                        payloads[i] = pool.Rent(100 + i, "renter");
                    }
                },
            ]);

        Assert.Empty(errors);

        Assert.Equal(100, pool.GetStatistics().Rents);
        Assert.Equal(100, pool.GetStatistics().Outstanding);

        foreach (var payload in payloads)
        {
            payload.Dispose();
        }

        // The returns land in this thread's cache (up to its capacity) and the rest in the global tier.
        PoolTestSupport.AssertBalanced(pool);
        PoolTestSupport.AssertIdentities(pool);
    }

    /// <summary>
    /// Runs each body on its own thread and joins them all. A body that throws is recorded and cancels the others'
    /// blocking hand-offs, so a pool bug fails the test instead of crashing or hanging the test host.
    /// </summary>
    private static List<Exception> RunGuarded(Action<CancellationToken>[] bodies)
    {
        using var stop = new CancellationTokenSource();
        var errors = new ConcurrentQueue<Exception>();
        var threads = bodies.Select(body => new Thread(() =>
        {
            try
            {
                body(stop.Token);
            }
            catch (OperationCanceledException) when (stop.IsCancellationRequested)
            {
                // Another thread failed first and stopped this one; its error is the one to report.
            }
            catch (Exception error)
            {
                errors.Enqueue(error);
                stop.Cancel();
            }
        })).ToArray();

        Array.ForEach(threads, t => t.Start());
        Array.ForEach(threads, t => t.Join());
        return [.. errors];
    }
}
