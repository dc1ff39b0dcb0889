namespace PlayHouse.Core.Codec;

/// <summary>
/// Malformed input on a framed stream. <see cref="Error"/> names the cause; the decoder that threw is poisoned,
/// and the connection must be closed because the frame boundaries after this point are unknown.
/// </summary>
/// <remarks>
/// Why an exception and not a result type: a malformed frame is rare and always fatal to its connection, so the
/// hot path keeps the plain <c>while (decoder.TryDecode(ref input, out var frame))</c> shape with nothing to inspect
/// per frame, and the cost of throwing is paid only once per broken connection. A result type would put an error
/// check on every successful frame for a case that ends the stream anyway.
/// </remarks>
public sealed class FrameDecodeException : Exception
{
    public FrameDecodeException(FrameError error, string message, long streamOffsetBytes, Exception? innerException = null)
        : base(message, innerException)
    {
        Error = error;
        StreamOffsetBytes = streamOffsetBytes;
    }

    public FrameDecodeException()
    {
    }

    public FrameDecodeException(string message)
        : base(message)
    {
    }

    public FrameDecodeException(string message, Exception innerException)
        : base(message, innerException)
    {
    }

    /// <summary>The cause.</summary>
    public FrameError Error { get; }

    /// <summary>Bytes of the stream consumed by the decoder when the error was found, for locating it in a capture.</summary>
    public long StreamOffsetBytes { get; }
}
