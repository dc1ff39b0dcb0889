using System.Runtime.CompilerServices;

namespace PlayHouse.Core.Codec;

/// <summary>
/// The failure, end and position state every incremental stream decoder keeps (client frames, mesh frames). After a
/// malformed frame, an unexpected exception or the end of the stream, the byte stream is desynchronised or finished,
/// so every later call is refused the same way, naming why.
/// </summary>
internal struct StreamDecoderState
{
    /// <summary>The typed error that desynchronised the stream; None while it is usable.</summary>
    public FrameError Fault;

    /// <summary>An unexpected exception (not a <see cref="FrameDecodeException"/>) escaped decoding.</summary>
    public bool Broken;

    /// <summary>The caller declared the end of the stream.</summary>
    public bool Ended;

    public bool Disposed;

    /// <summary>Bytes consumed from the stream so far, for error messages that point at the offending frame.</summary>
    public long StreamOffsetBytes;

    public readonly void ThrowIfUnusable(object owner)
    {
        // One test on the per-frame path; the refusals, with their messages, are built out of line.
        if (Disposed || Fault != FrameError.None || Broken || Ended)
        {
            ThrowUnusable(owner);
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private readonly void ThrowUnusable(object owner)
    {
        ObjectDisposedException.ThrowIf(Disposed, owner);
        if (Fault != FrameError.None)
        {
            throw new FrameDecodeException(Fault, $"{Fault}: the decoder already failed and the stream is desynchronised; close the connection.", StreamOffsetBytes);
        }

        if (Broken)
        {
            throw new InvalidOperationException("The decoder failed with an unexpected exception and the stream is desynchronised; close the connection.");
        }

        if (Ended)
        {
            throw new InvalidOperationException("The stream was already completed.");
        }
    }
}
