using System.Buffers;
using K4os.Compression.LZ4;
using PlayHouse.Core.Codec;

namespace PlayHouse.Transport.Tcp;

/// <summary>
/// Compressed server payloads (<c>OriginalSize</c> above 0) in K4os.Compression.LZ4's <see cref="LZ4Pickler"/>
/// format, which is what PlayHouse's own C# connector reads (it calls <c>LZ4Pickler.Unpickle</c> on such a payload
/// and drops the connection on anything else, a bare LZ4 block included). A pickle is one header byte (version 0
/// in the low three bits, the width of a length difference in the top two), that difference, and the LZ4 block.
/// </summary>
public static class Lz4Payloads
{
    // The pickle header: one flags byte and at most four bytes of length difference.
    private const int PickleHeaderBytesMax = 1 + sizeof(int);

    // One writer per thread, so a compressed send allocates nothing and sessions on different threads never share one.
    [ThreadStatic]
    private static SpanWriter? _threadWriter;

    /// <summary>The most bytes <see cref="Compress"/> can write for <paramref name="sourceBytes"/> bytes of input.</summary>
    public static int MaxCompressedLength(int sourceBytes) => sourceBytes + PickleHeaderBytesMax;

    /// <summary>
    /// Pickles <paramref name="source"/> into <paramref name="destination"/> (at least
    /// <see cref="MaxCompressedLength"/> bytes) and returns the bytes written. The pickle is compressed only when
    /// that makes the LZ4 block shorter than the source; otherwise it holds the bytes as they are and is one byte longer
    /// than the source. Its header (1 to 5 bytes) can make even a compressed pickle no shorter than the source, so the
    /// caller uses it only when the returned length is below the source's, and sends the payload raw otherwise.
    /// </summary>
    public static int Compress(ReadOnlySpan<byte> source, Memory<byte> destination)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(destination.Length, MaxCompressedLength(source.Length), nameof(destination));
        var writer = _threadWriter ??= new SpanWriter();
        writer.Reset(destination);
        try
        {
            LZ4Pickler.Pickle(source, writer);
            return writer.Written;
        }
        finally
        {
            writer.Reset(Memory<byte>.Empty);
        }
    }

    /// <summary>An <see cref="IBufferWriter{T}"/> over one caller-owned buffer; it never grows.</summary>
    private sealed class SpanWriter : IBufferWriter<byte>
    {
        private Memory<byte> _buffer;

        public int Written { get; private set; }

        public void Reset(Memory<byte> buffer)
        {
            _buffer = buffer;
            Written = 0;
        }

        public void Advance(int count)
        {
            ArgumentOutOfRangeException.ThrowIfNegative(count);
            ArgumentOutOfRangeException.ThrowIfGreaterThan(count, _buffer.Length - Written);
            Written += count;
        }

        public Memory<byte> GetMemory(int sizeHint = 0) => Remaining(sizeHint);

        public Span<byte> GetSpan(int sizeHint = 0) => Remaining(sizeHint).Span;

        private Memory<byte> Remaining(int sizeHint)
        {
            var remaining = _buffer[Written..];
            if (remaining.Length < Math.Max(sizeHint, 1))
            {
                throw new InvalidOperationException($"The pickle needs {sizeHint} bytes; {remaining.Length} are left.");
            }

            return remaining;
        }
    }
}

/// <summary>
/// Inflates compressed server payloads (<see cref="LZ4Pickler"/> format, see <see cref="Lz4Payloads"/>) for a
/// <see cref="ServerFrameDecoder"/> or a <see cref="TcpPlayClient"/>. A pickle that is corrupt, or that does not
/// inflate to exactly the frame's <c>OriginalSize</c>, throws, which fails the frame as
/// <see cref="FrameError.DecompressionFailed"/>.
/// </summary>
public sealed class Lz4PayloadDecompressor : IPayloadDecompressor
{
    public static Lz4PayloadDecompressor Instance { get; } = new();

    public int Decompress(ReadOnlySpan<byte> source, Span<byte> destination)
    {
        if (source.IsEmpty)
        {
            throw new InvalidDataException("A compressed payload cannot be empty.");
        }

        LZ4Pickler.Unpickle(source, destination);
        return destination.Length;
    }
}
