namespace PlayHouse.Core.Codec;

/// <summary>Why a client, server or mesh frame could not be decoded. Every value but <see cref="None"/> desynchronises the stream.</summary>
public enum FrameError
{
    /// <summary>No error.</summary>
    None = 0,

    /// <summary>The length prefix is below zero.</summary>
    NegativeLength,

    /// <summary>The length prefix is smaller than the smallest legal body.</summary>
    LengthTooSmall,

    /// <summary>The length prefix exceeds the configured body limit.</summary>
    LengthTooLarge,

    /// <summary>The msg id length byte points past the end of the frame body.</summary>
    MsgIdLengthPastFrame,

    /// <summary>The msg id bytes are not valid UTF-8.</summary>
    InvalidUtf8MsgId,

    /// <summary>A server frame's OriginalSize is below zero.</summary>
    NegativeOriginalSize,

    /// <summary>A server frame's OriginalSize exceeds the configured decompressed-size limit.</summary>
    OriginalSizeTooLarge,

    /// <summary>A server frame is compressed (OriginalSize &gt; 0) and no <see cref="IPayloadDecompressor"/> was supplied.</summary>
    CompressionNotSupported,

    /// <summary>The decompressor threw or did not produce exactly OriginalSize bytes.</summary>
    DecompressionFailed,

    /// <summary>The stream ended in the middle of a frame.</summary>
    TruncatedFrame,

    /// <summary>A mesh frame's header length is below zero.</summary>
    NegativeHeaderLength,

    /// <summary>A mesh frame's header length points past the end of the frame.</summary>
    HeaderLengthPastFrame,

    /// <summary>A mesh frame's header length exceeds the configured header limit.</summary>
    HeaderTooLarge,

    /// <summary>A mesh frame's RouteHeader bytes are not a valid protobuf message.</summary>
    InvalidHeader,

    /// <summary>A mesh frame's RouteHeader.payload_size is set and differs from the payload actually carried.</summary>
    PayloadSizeMismatch,

    /// <summary>
    /// A WebSocket frame broke RFC 6455 as PlayHouse's WebSocket transport speaks it: reserved bits set, an unknown or
    /// fragmented opcode, a client frame without a mask (or a server frame with one), or a length past the limit.
    /// </summary>
    WebSocketProtocol,

    /// <summary>A WebSocket binary message did not carry exactly one whole packet.</summary>
    WebSocketMessageNotOnePacket,
}
