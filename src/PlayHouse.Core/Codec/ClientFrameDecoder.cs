using System.Buffers;
using PlayHouse.Core.Pooling;

namespace PlayHouse.Core.Codec;

/// <summary>
/// Decodes client -> server frames from a byte stream. Feed it chunks split anywhere (inside the length prefix, the header
/// or the payload) with <see cref="TryDecode(ref ReadOnlySpan{byte}, out ClientFrame)"/>, or hand it a pipe's
/// buffer with <see cref="TryDecode(ref ReadOnlySequence{byte}, out ClientFrame)"/>. Each payload is copied into a
/// buffer rented from the pool, and ownership passes to the caller with the frame; msg ids come from a
/// <see cref="Utf8StringCache"/>, so a steady stream allocates nothing per frame.
/// Malformed input throws <see cref="FrameDecodeException"/>, releases any partial payload and poisons the decoder:
/// every later call throws, because the frame boundaries are lost.
/// </summary>
/// <remarks>Not thread-safe; one decoder per connection.</remarks>
public sealed class ClientFrameDecoder : IDisposable
{
    private readonly FrameReader _reader;

    /// <summary>The frame reader behind this decoder, for a caller that hints it into the cache (the simulator).</summary>
    internal object Reader => _reader;

    /// <param name="pool">Supplies the payload buffers.</param>
    /// <param name="msgIdCache">Shared msg-id strings; null gives the decoder a private cache.</param>
    /// <param name="options">Limits; null uses the protocol maxima.</param>
    public ClientFrameDecoder(MessagePool pool, Utf8StringCache? msgIdCache = null, FrameDecoderOptions? options = null)
    {
        _reader = new FrameReader(pool, msgIdCache, options, isServer: false, defaultOwner: nameof(ClientFrameDecoder));
    }

    /// <summary>True while bytes of an unfinished frame are held.</summary>
    public bool HasPartialFrame => _reader.HasPartialFrame;

    /// <summary>The error that poisoned the decoder, or <see cref="FrameError.None"/>.</summary>
    public FrameError Fault => _reader.Fault;

    /// <summary>Bytes consumed from the stream so far.</summary>
    public long StreamOffsetBytes => _reader.StreamOffsetBytes;

    /// <summary>
    /// Consumes bytes from <paramref name="input"/> up to the end of the next frame. Returns true with a frame
    /// (whose payload the caller now owns) and <paramref name="input"/> advanced past it; returns false once all of
    /// <paramref name="input"/> has been taken into the unfinished frame. Call in a loop until it returns false.
    /// </summary>
    /// <exception cref="FrameDecodeException">The input is malformed, or an earlier call already failed.</exception>
    public bool TryDecode(ref ReadOnlySpan<byte> input, out ClientFrame frame)
    {
        if (_reader.TryRead(ref input, out var decoded))
        {
            frame = new ClientFrame(decoded.MsgId, decoded.MsgSeq, decoded.StageId, decoded.Payload);
            return true;
        }

        frame = default;
        return false;
    }

    /// <summary>
    /// Decodes one complete frame from the start of <paramref name="buffer"/> and slices it off; returns false,
    /// leaving <paramref name="buffer"/> untouched, when the frame is not complete yet (for a pipe reader:
    /// AdvanceTo(buffer.Start, buffer.End) and read more). The lengths that have arrived are checked at once.
    /// Do not mix with the span overload on one connection.
    /// </summary>
    /// <exception cref="FrameDecodeException">The input is malformed, or an earlier call already failed.</exception>
    public bool TryDecode(ref ReadOnlySequence<byte> buffer, out ClientFrame frame)
    {
        if (_reader.TryRead(ref buffer, out var decoded))
        {
            frame = new ClientFrame(decoded.MsgId, decoded.MsgSeq, decoded.StageId, decoded.Payload);
            return true;
        }

        frame = default;
        return false;
    }

    /// <summary>Declares end of stream for span input.</summary>
    /// <exception cref="FrameDecodeException"><see cref="FrameError.TruncatedFrame"/> when a frame was cut off.</exception>
    public void Complete() => _reader.Complete();

    /// <summary>Declares end of stream for sequence input; <paramref name="remaining"/> is what the last TryDecode left.</summary>
    /// <exception cref="FrameDecodeException"><see cref="FrameError.TruncatedFrame"/> when bytes are left over.</exception>
    public void Complete(ReadOnlySequence<byte> remaining) => _reader.Complete(remaining);

    /// <summary>Returns the payload buffer of an unfinished frame, if any, to the pool.</summary>
    public void Dispose() => _reader.Dispose();
}
