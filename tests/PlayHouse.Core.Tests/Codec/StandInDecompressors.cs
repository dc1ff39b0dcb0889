using PlayHouse.Core.Codec;

namespace PlayHouse.Core.Tests.Codec;

/// <summary>A stand-in codec: the "compressed" bytes repeat cyclically to fill the original size.</summary>
internal sealed class RepeatDecompressor : IPayloadDecompressor
{
    public int Decompress(ReadOnlySpan<byte> source, Span<byte> destination)
    {
        for (var i = 0; i < destination.Length; i++)
        {
            destination[i] = source[i % source.Length];
        }

        return destination.Length;
    }
}

/// <summary>A decompressor that finds every input corrupt.</summary>
internal sealed class ThrowingDecompressor : IPayloadDecompressor
{
    public int Decompress(ReadOnlySpan<byte> source, Span<byte> destination) => throw new InvalidDataException("corrupt LZ4 block");
}

/// <summary>A decompressor that writes one byte less than the original size.</summary>
internal sealed class ShortDecompressor : IPayloadDecompressor
{
    public int Decompress(ReadOnlySpan<byte> source, Span<byte> destination) => destination.Length - 1;
}
