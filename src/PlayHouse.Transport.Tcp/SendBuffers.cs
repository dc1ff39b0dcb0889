using PlayHouse.Core.Pooling;

namespace PlayHouse.Transport.Tcp;

/// <summary>
/// The send side of one connection: frames are copied into a fill buffer while the transport writes the in-flight
/// one, and the two swap per batch; the queued bytes are held against the send queue's cap. Every connection kind
/// (socket or stream) keeps one.
/// </summary>
/// <remarks>Not thread-safe: the owning connection's lock guards every call.</remarks>
internal sealed class SendBuffers(MessagePool pool, ConnectionLimits limits, TimeProvider time, TcpTransportCounters counters, string owner)
{
    private Payload _fill;
    private int _fillBytes;
    private Payload _inFlight;
    private int _inFlightBytes;
    private int _inFlightSentBytes;

    // The bytes of the last batch sent: the next fill starts at least this large, so a session whose batches are larger
    // than the initial buffer (a turn's 16 KiB replies) rents one buffer per batch instead of growing one by doubling,
    // which rented three and copied the frames twice per batch.
    private int _lastBatchBytes;

    /// <summary>Bytes queued and not yet written, the in-flight rest included.</summary>
    public int QueuedBytes { get; private set; }

    public int QueuedBytesHighWater { get; private set; }

    /// <summary>Frames refused because they would have taken the queue past its cap.</summary>
    public long Refusals { get; private set; }

    /// <summary>When the queue first refused a frame since it last drained to half its cap; 0 when it has not.</summary>
    public long QueueFullSinceTimestamp { get; private set; }

    /// <summary>
    /// Copies one frame into the fill buffer. False, copying nothing (counted), when it would take the queue past its
    /// cap; a frame into an empty queue is always taken, so a frame larger than the cap can still be sent.
    /// </summary>
    public bool TryAppend<TWriter>(scoped in TWriter writer)
        where TWriter : IFrameWriter, allows ref struct
    {
        var frameBytes = writer.FrameBytes;
        if (QueuedBytes > 0 && QueuedBytes + (long)frameBytes > limits.SendQueueBytesMax)
        {
            if (QueueFullSinceTimestamp == 0)
            {
                QueueFullSinceTimestamp = Math.Max(1, time.GetTimestamp());
            }

            Refusals++;
            counters.AddSendQueueRefusal();
            return false;
        }

        EnsureFillCapacity(frameBytes);
        writer.Write(_fill.WritableSpan.Slice(_fillBytes, frameBytes));
        _fillBytes += frameBytes;
        QueuedBytes += frameBytes;
        if (QueuedBytes > QueuedBytesHighWater)
        {
            QueuedBytesHighWater = QueuedBytes;
        }

        return true;
    }

    /// <summary>
    /// The bytes to write next: the unsent rest of the in-flight buffer, else the fill buffer swapped in. Empty when
    /// nothing is queued; the emptied in-flight buffer is then kept as the next fill if it is small, so a steady
    /// exchange reuses two buffers instead of renting one per batch.
    /// </summary>
    public Memory<byte> NextChunk()
    {
        if (_inFlightSentBytes == _inFlightBytes)
        {
            if (_fillBytes == 0)
            {
                KeepOrReleaseSpare();
                return Memory<byte>.Empty;
            }

            var spare = _inFlight;
            _inFlight = _fill;
            _inFlightBytes = _fillBytes;
            _lastBatchBytes = _fillBytes;
            _inFlightSentBytes = 0;
            _fill = spare;
            _fillBytes = 0;
        }

        return _inFlight.WritableMemory[_inFlightSentBytes.._inFlightBytes];
    }

    /// <summary>A write of the chunk took <paramref name="bytes"/> of it (a stream send may take part of it).</summary>
    public void Sent(int bytes)
    {
        _inFlightSentBytes += bytes;
        QueuedBytes -= bytes;

        // Only a reader that drained half the queue has caught up; a trickle while the queue stays near its cap keeps
        // the slow-reader clock running.
        if (QueuedBytes <= limits.SendQueueBytesMax / 2)
        {
            QueueFullSinceTimestamp = 0;
        }
    }

    /// <summary>Returns both buffers to the pool and forgets what was queued (the connection closed, no write outstanding).</summary>
    public void Release()
    {
        _fill.Dispose();
        _fill = default;
        _fillBytes = 0;
        _inFlight.Dispose();
        _inFlight = default;
        _inFlightBytes = 0;
        _inFlightSentBytes = 0;
        QueuedBytes = 0;
    }

    private void EnsureFillCapacity(int frameBytes)
    {
        if (_fillBytes == 0)
        {
            // A new batch: sized for this frame and for the last batch (at most the queue's cap), so it seldom grows.
            var wanted = Math.Max(frameBytes, Math.Max(limits.SendBufferInitialBytes, Math.Min(_lastBatchBytes, limits.SendQueueBytesMax)));
            if (_fill.Length >= wanted)
            {
                return;
            }

            // The kept buffer is too small for the batch to come; nothing is in it yet, so it is swapped, not copied.
            _fill.Dispose();
            _fill = pool.Rent(wanted, owner);
            _fill.SetLength(_fill.Capacity);
            return;
        }

        var needed = _fillBytes + frameBytes;
        if (needed <= _fill.Length)
        {
            return;
        }

        // Grow by doubling; the queue cap bounds the size (plus one frame).
        var grown = pool.Rent(Math.Max(needed, _fill.Length * 2), owner);
        grown.SetLength(grown.Capacity);
        _fill.Span[.._fillBytes].CopyTo(grown.WritableSpan);
        _fill.Dispose();
        _fill = grown;
    }

    private void KeepOrReleaseSpare()
    {
        var spare = _inFlight;
        _inFlight = default;
        _inFlightBytes = 0;
        _inFlightSentBytes = 0;
        if (spare.IsEmpty)
        {
            return;
        }

        if (_fill.IsEmpty && spare.Length <= limits.SendBufferInitialBytes * 4)
        {
            _fill = spare;
            return;
        }

        spare.Dispose();
    }
}
