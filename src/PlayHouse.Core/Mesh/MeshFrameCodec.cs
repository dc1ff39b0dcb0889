using System.Buffers;
using System.Buffers.Binary;
using Google.Protobuf;
using PlayHouse.Core.Codec;
using PlayHouse.Core.Mesh.Proto;
using PlayHouse.Core.Pooling;

namespace PlayHouse.Core.Mesh;

/// <summary>
/// Encodes and decodes server-to-server (mesh) frames. The layout, all integers little-endian:
/// <code>
/// [FrameLen:i32][HeaderLen:i32][RouteHeader: HeaderLen bytes of protobuf][Payload: FrameLen - 4 - HeaderLen bytes]
/// </code>
/// FrameLen counts every byte after itself (HeaderLen field, header and payload). HeaderLen may be 0: a RouteHeader
/// whose fields all hold defaults serializes to nothing. RouteHeader.payload_size is either 0 (unset) or equal to the
/// payload length; anything else is rejected on both sides.
/// </summary>
public static class MeshFrameCodec
{
    public const int FrameLengthBytes = sizeof(int);

    public const int HeaderLengthBytes = sizeof(int);

    /// <summary>FrameLen and HeaderLen together.</summary>
    public const int PrefixBytes = FrameLengthBytes + HeaderLengthBytes;

    /// <summary>The largest payload, matching the client protocol's body limit.</summary>
    public const int MaxPayloadBytes = WireProtocol.MaxBodyBytes;

    /// <summary>The default header cap: a RouteHeader with two 255-byte strings and every number at full width is under 700 bytes.</summary>
    public const int DefaultMaxHeaderBytes = 4 * 1024;

    /// <summary>The highest header cap options may set.</summary>
    public const int MaxHeaderBytesLimit = 64 * 1024;

    /// <summary>A reply is a frame marked is_reply that answers a request (msg_seq above 0).</summary>
    public static bool IsReplyFrame(RouteHeader header)
    {
        ArgumentNullException.ThrowIfNull(header);
        return header.IsReply && header.MsgSeq > 0;
    }

    /// <summary>The exact number of bytes an Encode call writes.</summary>
    /// <exception cref="ArgumentException">The header or payload exceeds its limit, or payload_size disagrees with the payload.</exception>
    public static int GetEncodedLength(RouteHeader header, int payloadLengthBytes, MeshFrameOptions? options = null)
    {
        ArgumentNullException.ThrowIfNull(header);
        ArgumentOutOfRangeException.ThrowIfNegative(payloadLengthBytes);
        return PrefixBytes + CheckedHeaderBytes(header, payloadLengthBytes, options ?? MeshFrameOptions.Default) + payloadLengthBytes;
    }

    /// <summary>Writes one mesh frame at the start of <paramref name="destination"/> and returns the bytes written.</summary>
    /// <exception cref="ArgumentException">A limit is exceeded, payload_size disagrees, or the destination is too short; nothing was written.</exception>
    public static int Encode(Span<byte> destination, RouteHeader header, ReadOnlySpan<byte> payload, MeshFrameOptions? options = null) =>
        Encode(destination, header, payload, RouteHeaderWriter.ExactSize, options);

    /// <summary>
    /// Writes one mesh frame at the start of <paramref name="destination"/>, its header through
    /// <paramref name="headerWriter"/> (a node's <see cref="Runtime.NodeParts.MeshHeaderWriter"/>), and returns the bytes written.
    /// </summary>
    /// <exception cref="ArgumentException">A limit is exceeded, payload_size disagrees, or the destination is too short; nothing was written.</exception>
    public static int Encode(Span<byte> destination, RouteHeader header, ReadOnlySpan<byte> payload, IRouteHeaderWriter headerWriter, MeshFrameOptions? options = null)
    {
        ArgumentNullException.ThrowIfNull(header);
        ArgumentNullException.ThrowIfNull(headerWriter);
        var headerBytes = CheckedHeaderBytes(header, payload.Length, options ?? MeshFrameOptions.Default);
        return EncodeChecked(destination, header, headerBytes, payload, headerWriter);
    }

    /// <summary>Writes one mesh frame into <paramref name="writer"/> (one GetSpan, one Advance) and returns the bytes written.</summary>
    public static int Encode(IBufferWriter<byte> writer, RouteHeader header, ReadOnlySpan<byte> payload, MeshFrameOptions? options = null)
    {
        ArgumentNullException.ThrowIfNull(writer);
        ArgumentNullException.ThrowIfNull(header);
        var headerBytes = CheckedHeaderBytes(header, payload.Length, options ?? MeshFrameOptions.Default);
        var written = EncodeChecked(writer.GetSpan(PrefixBytes + headerBytes + payload.Length), header, headerBytes, payload, RouteHeaderWriter.ExactSize);
        writer.Advance(written);
        return written;
    }

    /// <summary>
    /// Decodes one whole frame from the start of <paramref name="input"/> (for transports that deliver whole
    /// messages): clears <paramref name="header"/> and merges the frame's header into it, and copies the payload into
    /// a buffer rented from <paramref name="pool"/>, owned by the caller. Returns false when the frame is incomplete.
    /// </summary>
    /// <exception cref="FrameDecodeException">The frame is malformed; no buffer stays rented.</exception>
    public static bool TryDecode(
        ReadOnlySpan<byte> input,
        RouteHeader header,
        MessagePool pool,
        out Payload payload,
        out int consumedBytes,
        MeshFrameOptions? options = null,
        ISenderIdCache? senderIds = null)
    {
        ArgumentNullException.ThrowIfNull(header);
        ArgumentNullException.ThrowIfNull(pool);
        options ??= MeshFrameOptions.Default;
        payload = Payload.Empty;
        consumedBytes = 0;
        if (input.Length < FrameLengthBytes)
        {
            return false;
        }

        var frameLengthBytes = BinaryPrimitives.ReadInt32LittleEndian(input);
        CheckFrameLength(frameLengthBytes, options, streamOffsetBytes: 0);
        if (input.Length < PrefixBytes)
        {
            return false;
        }

        var headerBytes = BinaryPrimitives.ReadInt32LittleEndian(input[FrameLengthBytes..]);
        CheckHeaderLength(headerBytes, frameLengthBytes, options, streamOffsetBytes: 0);
        if (input.Length < FrameLengthBytes + frameLengthBytes)
        {
            return false;
        }

        var payloadBytes = frameLengthBytes - HeaderLengthBytes - headerBytes;
        ParseHeader(input.Slice(PrefixBytes, headerBytes), header, payloadBytes, streamOffsetBytes: 0, senderIds);
        if (payloadBytes > 0)
        {
            payload = pool.Rent(payloadBytes, options.PayloadOwner ?? nameof(MeshFrameDecoder));
            input.Slice(PrefixBytes + headerBytes, payloadBytes).CopyTo(payload.WritableSpan);
        }

        consumedBytes = FrameLengthBytes + frameLengthBytes;
        return true;
    }

    internal static void CheckFrameLength(int frameLengthBytes, MeshFrameOptions options, long streamOffsetBytes)
    {
        if (frameLengthBytes < 0)
        {
            throw Error(FrameError.NegativeLength, $"FrameLen is {frameLengthBytes}.", streamOffsetBytes);
        }

        if (frameLengthBytes < HeaderLengthBytes)
        {
            throw Error(FrameError.LengthTooSmall, $"FrameLen is {frameLengthBytes}; it must cover the {HeaderLengthBytes}-byte HeaderLen field.", streamOffsetBytes);
        }

        if (frameLengthBytes > options.MaxFrameLengthBytes)
        {
            throw Error(FrameError.LengthTooLarge, $"FrameLen is {frameLengthBytes}; the limit is {options.MaxFrameLengthBytes} bytes.", streamOffsetBytes);
        }
    }

    internal static void CheckHeaderLength(int headerBytes, int frameLengthBytes, MeshFrameOptions options, long streamOffsetBytes)
    {
        if (headerBytes < 0)
        {
            throw Error(FrameError.NegativeHeaderLength, $"HeaderLen is {headerBytes}.", streamOffsetBytes);
        }

        if (headerBytes > frameLengthBytes - HeaderLengthBytes)
        {
            throw Error(FrameError.HeaderLengthPastFrame, $"HeaderLen is {headerBytes}, but FrameLen {frameLengthBytes} leaves room for {frameLengthBytes - HeaderLengthBytes}.", streamOffsetBytes);
        }

        if (headerBytes > options.MaxHeaderBytes)
        {
            throw Error(FrameError.HeaderTooLarge, $"HeaderLen is {headerBytes}; the limit is {options.MaxHeaderBytes} bytes.", streamOffsetBytes);
        }

        var payloadBytes = frameLengthBytes - HeaderLengthBytes - headerBytes;
        if (payloadBytes > options.MaxPayloadBytes)
        {
            throw Error(FrameError.LengthTooLarge, $"The payload is {payloadBytes} bytes; the limit is {options.MaxPayloadBytes} bytes.", streamOffsetBytes);
        }
    }

    internal static void ParseHeader(ReadOnlySpan<byte> headerBytes, RouteHeader header, int payloadBytes, long streamOffsetBytes, ISenderIdCache? senderIds = null)
    {
        header.Clear();
        try
        {
            if (senderIds is not null && FindSender(headerBytes, out var start, out var valueStart, out var end)
                && senderIds.TryGetString(headerBytes[valueStart..end], out var from))
            {
                // Protobuf merges concatenated messages field by field, so the header around the sender field parses
                // as the whole would, and the sender comes from the cache instead of a new string per frame.
                header.MergeFrom(headerBytes[..start]);
                header.MergeFrom(headerBytes[end..]);
                header.From = from;
            }
            else
            {
                header.MergeFrom(headerBytes);
            }
        }
        catch (InvalidProtocolBufferException e)
        {
            header.Clear();
            throw Error(FrameError.InvalidHeader, $"The {headerBytes.Length}-byte RouteHeader does not parse: {e.Message}", streamOffsetBytes, e);
        }

        CheckPayloadSize(header, payloadBytes, streamOffsetBytes);
    }

    internal static void ParseHeader(ReadOnlySequence<byte> headerBytes, RouteHeader header, int payloadBytes, long streamOffsetBytes, ISenderIdCache? senderIds = null)
    {
        if (headerBytes.IsSingleSegment)
        {
            ParseHeader(headerBytes.FirstSpan, header, payloadBytes, streamOffsetBytes, senderIds);
            return;
        }

        header.Clear();
        try
        {
            header.MergeFrom(headerBytes);
        }
        catch (InvalidProtocolBufferException e)
        {
            header.Clear();
            throw Error(FrameError.InvalidHeader, $"The {headerBytes.Length}-byte RouteHeader does not parse: {e.Message}", streamOffsetBytes, e);
        }

        CheckPayloadSize(header, payloadBytes, streamOffsetBytes);
    }

    /// <summary>
    /// Finds the one top-level <c>from</c> field (number 5, length-delimited) of a serialized RouteHeader: the field
    /// starts at <paramref name="start"/>, its bytes run from <paramref name="valueStart"/> to <paramref name="end"/>.
    /// False when there is none, when it occurs more than once (protobuf keeps the last; the plain parse handles that),
    /// or when the bytes do not scan as protobuf fields (the plain parse then reports the error).
    /// </summary>
    private static bool FindSender(ReadOnlySpan<byte> header, out int start, out int valueStart, out int end)
    {
        const ulong SenderTag = (5 << 3) | 2;
        start = valueStart = end = -1;
        var position = 0;
        while (position < header.Length)
        {
            var fieldStart = position;
            if (!TryReadVarint(header, ref position, out var tag) || tag >> 3 == 0)
            {
                return false;
            }

            switch (tag & 7)
            {
                case 0:
                    if (!TryReadVarint(header, ref position, out _))
                    {
                        return false;
                    }

                    break;
                case 1:
                    position += 8;
                    break;
                case 2:
                    if (!TryReadVarint(header, ref position, out var length) || length > (ulong)(header.Length - position))
                    {
                        return false;
                    }

                    if (tag == SenderTag)
                    {
                        if (start >= 0)
                        {
                            return false;
                        }

                        (start, valueStart, end) = (fieldStart, position, position + (int)length);
                    }

                    position += (int)length;
                    break;
                case 5:
                    position += 4;
                    break;
                default:
                    return false;
            }

            if (position > header.Length)
            {
                return false;
            }
        }

        return start >= 0;
    }

    private static bool TryReadVarint(ReadOnlySpan<byte> bytes, ref int position, out ulong value)
    {
        value = 0;
        for (var shift = 0; shift < 64 && position < bytes.Length; shift += 7)
        {
            var b = bytes[position++];
            value |= (ulong)(b & 0x7F) << shift;
            if (b < 0x80)
            {
                return true;
            }
        }

        return false;
    }

    private static void CheckPayloadSize(RouteHeader header, int payloadBytes, long streamOffsetBytes)
    {
        if (header.PayloadSize != 0 && header.PayloadSize != payloadBytes)
        {
            var claimed = header.PayloadSize;
            header.Clear();
            throw Error(FrameError.PayloadSizeMismatch, $"RouteHeader.payload_size is {claimed}, but the frame carries {payloadBytes} payload bytes.", streamOffsetBytes);
        }
    }

    private static FrameDecodeException Error(FrameError error, string message, long streamOffsetBytes, Exception? inner = null) =>
        new(error, $"{error}: {message} (stream offset {streamOffsetBytes}).", streamOffsetBytes, inner);

    private static int CheckedHeaderBytes(RouteHeader header, int payloadBytes, MeshFrameOptions options)
    {
        options.Validate();
        if (payloadBytes > options.MaxPayloadBytes)
        {
            throw new ArgumentException($"The payload is {payloadBytes} bytes; the mesh limit is {options.MaxPayloadBytes} bytes.", nameof(payloadBytes));
        }

        if (header.PayloadSize != 0 && header.PayloadSize != payloadBytes)
        {
            throw new ArgumentException($"RouteHeader.PayloadSize is {header.PayloadSize}, but the payload is {payloadBytes} bytes; set it to the payload length or leave it 0.", nameof(header));
        }

        var headerBytes = header.CalculateSize();
        if (headerBytes > options.MaxHeaderBytes)
        {
            throw new ArgumentException($"The RouteHeader serializes to {headerBytes} bytes; the limit is {options.MaxHeaderBytes} bytes.", nameof(header));
        }

        return headerBytes;
    }

    private static int EncodeChecked(Span<byte> destination, RouteHeader header, int headerBytes, ReadOnlySpan<byte> payload, IRouteHeaderWriter headerWriter)
    {
        var frameBytes = PrefixBytes + headerBytes + payload.Length;
        if (destination.Length < frameBytes)
        {
            throw new ArgumentException($"The destination holds {destination.Length} bytes; the frame needs {frameBytes}.", nameof(destination));
        }

        BinaryPrimitives.WriteInt32LittleEndian(destination, frameBytes - FrameLengthBytes);
        BinaryPrimitives.WriteInt32LittleEndian(destination[FrameLengthBytes..], headerBytes);

        headerWriter.Write(header, destination.Slice(PrefixBytes, headerBytes));
        payload.CopyTo(destination[(PrefixBytes + headerBytes)..]);
        return frameBytes;
    }
}
