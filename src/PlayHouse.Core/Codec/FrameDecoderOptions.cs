namespace PlayHouse.Core.Codec;

/// <summary>Limits and hooks of a <see cref="ClientFrameDecoder"/> or <see cref="ServerFrameDecoder"/>.</summary>
public sealed record FrameDecoderOptions
{
    /// <summary>The largest accepted <c>Len</c>; may be lowered below <see cref="WireProtocol.MaxBodyBytes"/>, never raised above it.</summary>
    public int MaxBodyBytes { get; init; } = WireProtocol.MaxBodyBytes;

    /// <summary>Inflates compressed server payloads; null rejects them with <see cref="FrameError.CompressionNotSupported"/>. Ignored for client frames.</summary>
    public IPayloadDecompressor? Decompressor { get; init; }

    /// <summary>The largest accepted OriginalSize of a compressed server payload.</summary>
    public int MaxOriginalSizeBytes { get; init; } = WireProtocol.MaxBodyBytes;

    /// <summary>The owner label of payloads the decoder rents; null uses the decoder's type name.</summary>
    public string? PayloadOwner { get; init; }

    internal void Validate(int minBodyBytes)
    {
        if (MaxBodyBytes < minBodyBytes || MaxBodyBytes > WireProtocol.MaxBodyBytes)
        {
            throw new ArgumentOutOfRangeException(nameof(MaxBodyBytes), MaxBodyBytes, $"MaxBodyBytes must lie in [{minBodyBytes}, {WireProtocol.MaxBodyBytes}].");
        }

        if (MaxOriginalSizeBytes < 1 || MaxOriginalSizeBytes > WireProtocol.MaxBodyBytes)
        {
            throw new ArgumentOutOfRangeException(nameof(MaxOriginalSizeBytes), MaxOriginalSizeBytes, $"MaxOriginalSizeBytes must lie in [1, {WireProtocol.MaxBodyBytes}].");
        }
    }
}
