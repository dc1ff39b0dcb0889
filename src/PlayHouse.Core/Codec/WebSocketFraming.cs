using System.Buffers.Binary;

namespace PlayHouse.Core.Codec;

/// <summary>The WebSocket frame kinds (RFC 6455 opcodes) a PlayHouse connection uses.</summary>
public enum WebSocketOpcode : byte
{
    Continuation = 0x0,
    Text = 0x1,
    Binary = 0x2,
    Close = 0x8,
    Ping = 0x9,
    Pong = 0xA,
}

/// <summary>
/// RFC 6455 data framing for PlayHouse packets over WebSocket: each packet (the same bytes as on TCP, length prefix
/// included) travels as one binary message in one unfragmented frame. A frame is
/// <c>[FIN|opcode][MASK|len7][len16 or len64][mask key (client frames)][payload]</c>; a client masks every frame with a
/// fresh 4-byte key, a server never masks.
/// </summary>
public static class WebSocketFraming
{
    /// <summary>The longest frame header: two bytes, a 64-bit length and a mask key.</summary>
    public const int MaxHeaderBytes = 14;

    /// <summary>The bytes of the header in front of a payload of <paramref name="payloadBytes"/>.</summary>
    public static int GetHeaderLength(int payloadBytes, bool masked)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(payloadBytes);
        return 2 + (payloadBytes < 126 ? 0 : payloadBytes <= ushort.MaxValue ? 2 : 8) + (masked ? 4 : 0);
    }

    /// <summary>
    /// Writes a final frame of <paramref name="opcode"/> at the start of <paramref name="destination"/>: the header, then
    /// <paramref name="payload"/> (masked with <paramref name="maskKey"/> when one is given, as a client must). Returns
    /// the bytes written. <paramref name="payload"/> may already sit where the payload goes (right after the header).
    /// </summary>
    public static int Encode(Span<byte> destination, ReadOnlySpan<byte> payload, uint? maskKey, WebSocketOpcode opcode = WebSocketOpcode.Binary)
    {
        var headerBytes = GetHeaderLength(payload.Length, maskKey is not null);
        var total = headerBytes + payload.Length;
        if (destination.Length < total)
        {
            throw new ArgumentException($"The destination holds {destination.Length} bytes; the frame needs {total}.", nameof(destination));
        }

        WriteHeader(destination, payload.Length, maskKey, opcode);
        var body = destination.Slice(headerBytes, payload.Length);
        payload.CopyTo(body);
        if (maskKey is { } key)
        {
            Mask(body, key, 0);
        }

        return total;
    }

    /// <summary>Writes just the header of a final frame (a caller that encodes the payload in place after it).</summary>
    public static int WriteHeader(Span<byte> destination, int payloadBytes, uint? maskKey, WebSocketOpcode opcode = WebSocketOpcode.Binary)
    {
        var masked = maskKey is not null;
        destination[0] = (byte)(0x80 | (byte)opcode);
        var maskBit = masked ? (byte)0x80 : (byte)0;
        int position;
        if (payloadBytes < 126)
        {
            destination[1] = (byte)(maskBit | payloadBytes);
            position = 2;
        }
        else if (payloadBytes <= ushort.MaxValue)
        {
            destination[1] = (byte)(maskBit | 126);
            BinaryPrimitives.WriteUInt16BigEndian(destination[2..], (ushort)payloadBytes);
            position = 4;
        }
        else
        {
            destination[1] = (byte)(maskBit | 127);
            BinaryPrimitives.WriteUInt64BigEndian(destination[2..], (ulong)payloadBytes);
            position = 10;
        }

        if (maskKey is { } key)
        {
            BinaryPrimitives.WriteUInt32BigEndian(destination[position..], key);
            position += 4;
        }

        return position;
    }

    /// <summary>Masks (or unmasks: XOR is its own inverse) bytes that start <paramref name="offset"/> bytes into a frame's payload.</summary>
    public static void Mask(Span<byte> bytes, uint maskKey, long offset)
    {
        Span<byte> key = stackalloc byte[4];
        BinaryPrimitives.WriteUInt32BigEndian(key, maskKey);
        for (var i = 0; i < bytes.Length; i++)
        {
            bytes[i] ^= key[(int)((offset + i) & 3)];
        }
    }
}

/// <summary>
/// Decodes WebSocket frames from a byte stream split anywhere into whole, unmasked messages. Data comes only as final
/// binary frames (PlayHouse never fragments a packet); close, ping and pong frames are handed up with their payload.
/// Anything else, reserved bits, a missing or unexpected mask, or a payload over the limit, throws
/// <see cref="FrameDecodeException"/> with <see cref="FrameError.WebSocketProtocol"/> and poisons the decoder.
/// </summary>
/// <remarks>Not thread-safe; one decoder per connection. A decoded message is valid until the next call.</remarks>
public sealed class WebSocketFrameDecoder
{
    private readonly bool _expectMasked;
    private readonly int _maxPayloadBytes;
    private readonly byte[] _head = new byte[WebSocketFraming.MaxHeaderBytes];
    private byte[] _payload = new byte[256];
    private int _headNeeded = 2;
    private int _headFilled;
    private bool _inPayload;
    private WebSocketOpcode _opcode;
    private uint? _maskKey;
    private int _payloadBytes;
    private int _payloadFilled;
    private long _streamOffsetBytes;
    private bool _poisoned;

    /// <param name="expectMasked">True on a server (client frames must be masked); false on a client (server frames must not be).</param>
    /// <param name="maxPayloadBytes">The largest frame payload accepted.</param>
    public WebSocketFrameDecoder(bool expectMasked, int maxPayloadBytes)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(maxPayloadBytes);
        _expectMasked = expectMasked;
        _maxPayloadBytes = maxPayloadBytes;
    }

    /// <summary>True while bytes of an unfinished frame are held.</summary>
    public bool HasPartialFrame => _inPayload || _headFilled > 0;

    /// <summary>
    /// Consumes <paramref name="input"/> up to the end of the next frame. Returns true with its opcode and unmasked
    /// payload (valid until the next call), <paramref name="input"/> advanced past it; false once all input is taken.
    /// </summary>
    public bool TryDecode(ref ReadOnlySpan<byte> input, out WebSocketOpcode opcode, out ReadOnlySpan<byte> payload)
    {
        if (_poisoned)
        {
            throw new FrameDecodeException(FrameError.WebSocketProtocol, "WebSocketProtocol: the decoder already failed on this stream.", _streamOffsetBytes);
        }

        while (true)
        {
            if (_inPayload)
            {
                var take = Math.Min(_payloadBytes - _payloadFilled, input.Length);
                input[..take].CopyTo(_payload.AsSpan(_payloadFilled));
                if (_maskKey is { } key)
                {
                    WebSocketFraming.Mask(_payload.AsSpan(_payloadFilled, take), key, _payloadFilled);
                }

                input = input[take..];
                _payloadFilled += take;
                _streamOffsetBytes += take;
                if (_payloadFilled < _payloadBytes)
                {
                    opcode = default;
                    payload = default;
                    return false;
                }

                opcode = _opcode;
                payload = _payload.AsSpan(0, _payloadBytes);
                _inPayload = false;
                _headNeeded = 2;
                _headFilled = 0;
                return true;
            }

            var headTake = Math.Min(_headNeeded - _headFilled, input.Length);
            input[..headTake].CopyTo(_head.AsSpan(_headFilled));
            input = input[headTake..];
            _headFilled += headTake;
            _streamOffsetBytes += headTake;
            if (_headFilled < _headNeeded)
            {
                opcode = default;
                payload = default;
                return false;
            }

            if (_headNeeded == 2)
            {
                // The first two bytes say how long the rest of the header is.
                var length7 = _head[1] & 0x7F;
                var masked = (_head[1] & 0x80) != 0;
                CheckFirstByte(_head[0], masked);
                _headNeeded = 2 + (length7 == 126 ? 2 : length7 == 127 ? 8 : 0) + (masked ? 4 : 0);
                if (_headNeeded > 2)
                {
                    continue;
                }
            }

            BeginPayload();
            if (_payloadBytes == 0)
            {
                opcode = _opcode;
                payload = default;
                _headNeeded = 2;
                _headFilled = 0;
                return true;
            }
        }
    }

    private void CheckFirstByte(byte first, bool masked)
    {
        var opcode = (WebSocketOpcode)(first & 0x0F);
        if ((first & 0x70) != 0)
        {
            Fail("reserved bits are set (no extension was negotiated)");
        }

        if ((first & 0x80) == 0 || opcode is WebSocketOpcode.Continuation)
        {
            Fail("a fragmented message (PlayHouse sends each packet in one final frame)");
        }

        if (opcode is not (WebSocketOpcode.Binary or WebSocketOpcode.Close or WebSocketOpcode.Ping or WebSocketOpcode.Pong))
        {
            Fail($"opcode {(int)opcode} (packets travel in binary frames)");
        }

        if (masked != _expectMasked)
        {
            Fail(_expectMasked ? "an unmasked client frame" : "a masked server frame");
        }

        _opcode = opcode;
    }

    private void BeginPayload()
    {
        var length7 = _head[1] & 0x7F;
        var position = 2;
        ulong length = (ulong)length7;
        if (length7 == 126)
        {
            length = BinaryPrimitives.ReadUInt16BigEndian(_head.AsSpan(2));
            position = 4;
        }
        else if (length7 == 127)
        {
            length = BinaryPrimitives.ReadUInt64BigEndian(_head.AsSpan(2));
            position = 10;
        }

        if (length > (ulong)_maxPayloadBytes)
        {
            Fail($"a {length}-byte payload over the limit of {_maxPayloadBytes}");
        }

        _maskKey = (_head[1] & 0x80) != 0 ? BinaryPrimitives.ReadUInt32BigEndian(_head.AsSpan(position)) : null;
        _payloadBytes = (int)length;
        _payloadFilled = 0;
        if (_payload.Length < _payloadBytes)
        {
            _payload = new byte[Math.Max(_payloadBytes, _payload.Length * 2)];
        }

        _inPayload = _payloadBytes > 0;
    }

    private void Fail(string what)
    {
        _poisoned = true;
        throw new FrameDecodeException(FrameError.WebSocketProtocol, $"WebSocketProtocol: {what} (stream offset {_streamOffsetBytes}).", _streamOffsetBytes);
    }
}
