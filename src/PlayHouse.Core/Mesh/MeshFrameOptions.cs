namespace PlayHouse.Core.Mesh;

/// <summary>Limits of mesh frames (<see cref="MeshFrameCodec"/>, <see cref="MeshFrameDecoder"/>).</summary>
public sealed record MeshFrameOptions
{
    /// <summary>The largest payload after the header; at most <see cref="MeshFrameCodec.MaxPayloadBytes"/>.</summary>
    public int MaxPayloadBytes { get; init; } = MeshFrameCodec.MaxPayloadBytes;

    /// <summary>The largest serialized RouteHeader; at most <see cref="MeshFrameCodec.MaxHeaderBytesLimit"/>.</summary>
    public int MaxHeaderBytes { get; init; } = MeshFrameCodec.DefaultMaxHeaderBytes;

    /// <summary>The owner label of payloads the decoder rents; null uses "MeshFrameDecoder".</summary>
    public string? PayloadOwner { get; init; }

    /// <summary>The largest FrameLen these options accept: the header length field, the header and the payload.</summary>
    public int MaxFrameLengthBytes => MeshFrameCodec.HeaderLengthBytes + MaxHeaderBytes + MaxPayloadBytes;

    internal static MeshFrameOptions Default { get; } = new();

    internal void Validate()
    {
        if (MaxPayloadBytes < 0 || MaxPayloadBytes > MeshFrameCodec.MaxPayloadBytes)
        {
            throw new ArgumentOutOfRangeException(nameof(MaxPayloadBytes), MaxPayloadBytes, $"MaxPayloadBytes must lie in [0, {MeshFrameCodec.MaxPayloadBytes}].");
        }

        if (MaxHeaderBytes < 0 || MaxHeaderBytes > MeshFrameCodec.MaxHeaderBytesLimit)
        {
            throw new ArgumentOutOfRangeException(nameof(MaxHeaderBytes), MaxHeaderBytes, $"MaxHeaderBytes must lie in [0, {MeshFrameCodec.MaxHeaderBytesLimit}].");
        }
    }
}
