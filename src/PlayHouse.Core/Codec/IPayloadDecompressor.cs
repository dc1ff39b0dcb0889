namespace PlayHouse.Core.Codec;

/// <summary>
/// Inflates a compressed server payload (PlayHouse's connector reads K4os's LZ4Pickler format). Supplying one lets a
/// <see cref="ServerFrameDecoder"/> accept frames whose OriginalSize is above zero; without one such frames fail
/// with <see cref="FrameError.CompressionNotSupported"/>.
/// </summary>
public interface IPayloadDecompressor
{
    /// <summary>
    /// Decompresses <paramref name="source"/> into <paramref name="destination"/>, which is exactly OriginalSize
    /// bytes long, and returns the number of bytes written. A result other than the destination length, or an
    /// exception, fails the frame with <see cref="FrameError.DecompressionFailed"/>.
    /// </summary>
    int Decompress(ReadOnlySpan<byte> source, Span<byte> destination);
}
