using System.Buffers;
using System.Buffers.Binary;
using PlayHouse.Core.Pooling;

namespace PlayHouse.Core.Codec;

/// <summary>The fields of one decoded client or server frame; the payload is owned by whoever holds this.</summary>
internal readonly record struct DecodedFrame(string MsgId, ushort MsgSeq, long StageId, ushort ErrorCode, int OriginalSize, Payload Payload);

/// <summary>
/// The direction-independent core of <see cref="ClientFrameDecoder"/> and <see cref="ServerFrameDecoder"/>: a state
/// machine that reassembles frames from chunks split anywhere, and a stateless path over a
/// <see cref="ReadOnlySequence{T}"/> that leaves partial frames in place for System.IO.Pipelines.
/// </summary>
/// <remarks>Not thread-safe; one decoder per connection.</remarks>
internal sealed class FrameReader : IDisposable
{
    private const int PrefixBytes = WireProtocol.LengthPrefixBytes;
    private const string CompressedOwner = "FrameDecoder.compressed";

    private readonly MessagePool _pool;
    private readonly Utf8StringCache _msgIds;
    private readonly IPayloadDecompressor? _decompressor;
    private readonly string _owner;
    private readonly bool _isServer;
    private readonly int _fixedFieldsBytes;
    private readonly int _minBodyBytes;
    private readonly int _maxBodyBytes;
    private readonly int _maxOriginalSizeBytes;

    // The header of the frame in progress, from the length prefix to the last fixed field; payload bytes go
    // straight into the pooled buffer instead.
    private readonly byte[] _header;

    private Phase _phase = Phase.Length;
    private int _headerNeededBytes = PrefixBytes;
    private int _headerFilledBytes;
    private int _bodyBytes;
    private DecodedFrame _fields;
    private Payload _payload;
    private int _payloadLengthBytes;
    private int _payloadFilledBytes;
    private StreamDecoderState _state;

    // The msg id cache's entry of this connection's last msg id, tried first: a connection mostly repeats one id.
    private int _msgIdSlot = -1;

    public FrameReader(MessagePool pool, Utf8StringCache? msgIdCache, FrameDecoderOptions? options, bool isServer, string defaultOwner)
    {
        ArgumentNullException.ThrowIfNull(pool);
        options ??= new FrameDecoderOptions();
        _isServer = isServer;
        _fixedFieldsBytes = isServer ? WireProtocol.ServerFixedFieldsBytes : WireProtocol.ClientFixedFieldsBytes;
        _minBodyBytes = isServer ? WireProtocol.MinServerBodyBytes : WireProtocol.MinClientBodyBytes;
        options.Validate(_minBodyBytes);
        _pool = pool;
        _msgIds = msgIdCache ?? new Utf8StringCache();
        _decompressor = isServer ? options.Decompressor : null;
        _owner = options.PayloadOwner ?? defaultOwner;
        _maxBodyBytes = options.MaxBodyBytes;
        _maxOriginalSizeBytes = options.MaxOriginalSizeBytes;
        _header = new byte[isServer ? WireProtocol.MaxServerHeaderBytes : WireProtocol.MaxClientHeaderBytes];
    }

    private enum Phase
    {
        Length,
        MsgIdLength,
        Header,
        Payload,
    }

    public bool HasPartialFrame => _phase != Phase.Length || _headerFilledBytes > 0;

    public FrameError Fault => _state.Fault;

    public long StreamOffsetBytes => _state.StreamOffsetBytes;

    public bool TryRead(ref ReadOnlySpan<byte> input, out DecodedFrame frame)
    {
        ThrowIfUnusable();
        if (input.IsEmpty)
        {
            // Every chunk ends with this call. No bytes cannot finish a frame: a call that fills a header or a payload
            // finishes its phase before it returns, so the state machine would copy nothing and change nothing, only
            // touch the decoder's colder fields and header buffer.
            frame = default;
            return false;
        }

        try
        {
            if (TryReadWhole(ref input, out frame))
            {
                return true;
            }

            while (true)
            {
                if (_phase == Phase.Payload)
                {
                    var take = Math.Min(_payloadLengthBytes - _payloadFilledBytes, input.Length);
                    if (take > 0)
                    {
                        input[..take].CopyTo(_payload.WritableSpan[_payloadFilledBytes..]);
                        input = input[take..];
                        _payloadFilledBytes += take;
                        _state.StreamOffsetBytes += take;
                    }

                    if (_payloadFilledBytes < _payloadLengthBytes)
                    {
                        frame = default;
                        return false;
                    }

                    frame = FinishFrame();
                    return true;
                }

                var headerTake = Math.Min(_headerNeededBytes - _headerFilledBytes, input.Length);
                input[..headerTake].CopyTo(_header.AsSpan(_headerFilledBytes));
                input = input[headerTake..];
                _headerFilledBytes += headerTake;
                _state.StreamOffsetBytes += headerTake;
                if (_headerFilledBytes < _headerNeededBytes)
                {
                    frame = default;
                    return false;
                }

                switch (_phase)
                {
                    case Phase.Length:
                        _bodyBytes = BinaryPrimitives.ReadInt32LittleEndian(_header);
                        CheckBodyLength(_bodyBytes);
                        _headerNeededBytes = PrefixBytes + WireProtocol.MsgIdLengthBytes;
                        _phase = Phase.MsgIdLength;
                        break;
                    case Phase.MsgIdLength:
                        var msgIdBytes = _header[PrefixBytes];
                        CheckMsgIdLength(msgIdBytes, _bodyBytes);
                        _headerNeededBytes = PrefixBytes + WireProtocol.MsgIdLengthBytes + msgIdBytes + _fixedFieldsBytes;
                        _phase = Phase.Header;
                        break;
                    default:
                        var headerBodyBytes = _headerNeededBytes - PrefixBytes;
                        _fields = ParseHeader(_header.AsSpan(PrefixBytes, headerBodyBytes));
                        _payloadLengthBytes = _bodyBytes - headerBodyBytes;
                        _payloadFilledBytes = 0;
                        _payload = _payloadLengthBytes == 0 ? Payload.Empty : _pool.Rent(_payloadLengthBytes, _fields.OriginalSize > 0 ? CompressedOwner : _owner);
                        _phase = Phase.Payload;
                        break;
                }
            }
        }
        catch (Exception e) when (e is not FrameDecodeException)
        {
            // Anything unexpected (the pool refusing a rent, say) leaves the frame boundary unknown as surely as bad input.
            ReleasePartial();
            _state.Broken = true;
            throw;
        }
    }

    /// <summary>
    /// The common case: no frame in progress and the chunk holds a whole valid-looking frame, read in place without
    /// staging its header. Anything else (a split frame, a length or msg id length the checks refuse) takes the
    /// state machine, which reports it exactly as before; a header that fails to parse fails here with the same
    /// error at the same stream offset.
    /// </summary>
    private bool TryReadWhole(ref ReadOnlySpan<byte> input, out DecodedFrame frame)
    {
        frame = default;
        if (_phase != Phase.Length || _headerFilledBytes != 0 || input.Length < PrefixBytes + WireProtocol.MsgIdLengthBytes)
        {
            return false;
        }

        var bodyBytes = BinaryPrimitives.ReadInt32LittleEndian(input);
        var msgIdBytes = input[PrefixBytes];
        var headerBodyBytes = WireProtocol.MsgIdLengthBytes + msgIdBytes + _fixedFieldsBytes;
        if (bodyBytes < _minBodyBytes || bodyBytes > _maxBodyBytes || headerBodyBytes > bodyBytes || input.Length - PrefixBytes < bodyBytes)
        {
            return false;
        }

        _state.StreamOffsetBytes += PrefixBytes + headerBodyBytes;
        var fields = ParseHeader(input.Slice(PrefixBytes, headerBodyBytes));
        var payloadBytes = input.Slice(PrefixBytes + headerBodyBytes, bodyBytes - headerBodyBytes);
        _state.StreamOffsetBytes += payloadBytes.Length;
        input = input[(PrefixBytes + bodyBytes)..];
        Payload payload;
        if (fields.OriginalSize > 0)
        {
            payload = Inflate(payloadBytes, fields.OriginalSize);
        }
        else if (payloadBytes.IsEmpty)
        {
            payload = Payload.Empty;
        }
        else
        {
            payload = _pool.Rent(payloadBytes.Length, _owner);
            payloadBytes.CopyTo(payload.WritableSpan);
        }

        frame = fields with { Payload = payload, OriginalSize = 0 };
        return true;
    }

    public bool TryRead(ref ReadOnlySequence<byte> buffer, out DecodedFrame frame)
    {
        ThrowIfUnusable();
        if (HasPartialFrame)
        {
            throw new InvalidOperationException("The decoder holds part of a frame from span input; a connection must use either span chunks or a ReadOnlySequence, not both.");
        }

        frame = default;
        if (buffer.Length < PrefixBytes)
        {
            return false;
        }

        try
        {
            Span<byte> header = stackalloc byte[WireProtocol.MaxServerHeaderBytes];

            // Validate what has arrived even when the frame is incomplete, so a hostile length fails at once
            // instead of making the pipe buffer up to 2 MiB first.
            var prefix = header[..(PrefixBytes + WireProtocol.MsgIdLengthBytes)];
            var available = (int)Math.Min(buffer.Length, prefix.Length);
            buffer.Slice(0, available).CopyTo(prefix);
            var bodyBytes = BinaryPrimitives.ReadInt32LittleEndian(prefix);
            CheckBodyLength(bodyBytes);
            if (available <= PrefixBytes)
            {
                return false;
            }

            var msgIdBytes = prefix[PrefixBytes];
            CheckMsgIdLength(msgIdBytes, bodyBytes);
            var frameBytes = PrefixBytes + bodyBytes;
            if (buffer.Length < frameBytes)
            {
                return false;
            }

            var headerBodyBytes = WireProtocol.MsgIdLengthBytes + msgIdBytes + _fixedFieldsBytes;
            var headerBody = header.Slice(PrefixBytes, headerBodyBytes);
            buffer.Slice(PrefixBytes, headerBodyBytes).CopyTo(headerBody);
            var fields = ParseHeader(headerBody);
            var payloadBytes = buffer.Slice(PrefixBytes + headerBodyBytes, bodyBytes - headerBodyBytes);
            var payload = fields.OriginalSize > 0 ? Inflate(payloadBytes, fields.OriginalSize) : CopyToPooled(payloadBytes);

            buffer = buffer.Slice(frameBytes);
            _state.StreamOffsetBytes += frameBytes;
            frame = fields with { Payload = payload, OriginalSize = 0 };
            return true;
        }
        catch (Exception e) when (e is not FrameDecodeException)
        {
            _state.Broken = true;
            throw;
        }
    }

    /// <summary>Declares end of stream; a frame still in progress is a <see cref="FrameError.TruncatedFrame"/>.</summary>
    public void Complete()
    {
        ThrowIfUnusable();
        if (HasPartialFrame)
        {
            var received = _phase == Phase.Payload ? _headerNeededBytes + _payloadFilledBytes : _headerFilledBytes;
            var expected = _phase == Phase.Length ? "at least 4" : (PrefixBytes + _bodyBytes).ToString(System.Globalization.CultureInfo.InvariantCulture);
            throw Fail(FrameError.TruncatedFrame, $"The stream ended inside a frame: {received} of {expected} bytes arrived.");
        }

        _state.Ended = true;
    }

    /// <summary>Declares end of stream for the sequence path: bytes left in <paramref name="remaining"/> are a truncated frame.</summary>
    public void Complete(ReadOnlySequence<byte> remaining)
    {
        ThrowIfUnusable();
        if (!remaining.IsEmpty)
        {
            throw Fail(FrameError.TruncatedFrame, $"The stream ended inside a frame: {remaining.Length} bytes are left over.");
        }

        Complete();
    }

    public void Dispose()
    {
        if (_state.Disposed)
        {
            return;
        }

        _state.Disposed = true;
        ReleasePartial();
    }

    private DecodedFrame FinishFrame()
    {
        var payload = _payload;
        _payload = default;
        var fields = _fields;
        _fields = default;
        _phase = Phase.Length;
        _headerNeededBytes = PrefixBytes;
        _headerFilledBytes = 0;
        _payloadFilledBytes = 0;
        _payloadLengthBytes = 0;

        if (fields.OriginalSize > 0)
        {
            // The compressed bytes are scratch once inflated, and on a failure too.
            var compressed = payload;
            try
            {
                payload = Inflate(compressed.Span, fields.OriginalSize);
            }
            finally
            {
                compressed.Dispose();
            }

            return fields with { Payload = payload, OriginalSize = 0 };
        }

        return fields with { Payload = payload };
    }

    private void CheckBodyLength(int bodyBytes)
    {
        if (bodyBytes < 0)
        {
            throw Fail(FrameError.NegativeLength, $"The length prefix is {bodyBytes}.");
        }

        if (bodyBytes < _minBodyBytes)
        {
            throw Fail(FrameError.LengthTooSmall, $"The length prefix is {bodyBytes}; the smallest {(_isServer ? "server" : "client")} body is {_minBodyBytes} bytes.");
        }

        if (bodyBytes > _maxBodyBytes)
        {
            throw Fail(FrameError.LengthTooLarge, $"The length prefix is {bodyBytes}; the limit is {_maxBodyBytes} bytes.");
        }
    }

    private void CheckMsgIdLength(int msgIdBytes, int bodyBytes)
    {
        if (WireProtocol.MsgIdLengthBytes + msgIdBytes + _fixedFieldsBytes > bodyBytes)
        {
            throw Fail(FrameError.MsgIdLengthPastFrame, $"The msg id length is {msgIdBytes}, but the {bodyBytes}-byte body has room for {bodyBytes - WireProtocol.MsgIdLengthBytes - _fixedFieldsBytes}.");
        }
    }

    /// <summary>Parses <c>[MsgIdLen][MsgId][fixed fields]</c>; the payload is filled in later.</summary>
    private DecodedFrame ParseHeader(ReadOnlySpan<byte> headerBody)
    {
        var msgIdBytes = headerBody[0];
        var msgIdUtf8 = headerBody.Slice(WireProtocol.MsgIdLengthBytes, msgIdBytes);
        if (!_msgIds.TryGetString(msgIdUtf8, ref _msgIdSlot, out var msgId))
        {
            throw Fail(FrameError.InvalidUtf8MsgId, $"The msg id bytes {Convert.ToHexString(msgIdUtf8)} are not valid UTF-8.");
        }

        var fixedFields = headerBody[(WireProtocol.MsgIdLengthBytes + msgIdBytes)..];
        var msgSeq = BinaryPrimitives.ReadUInt16LittleEndian(fixedFields);
        var stageId = BinaryPrimitives.ReadInt64LittleEndian(fixedFields[sizeof(ushort)..]);
        if (!_isServer)
        {
            return new DecodedFrame(msgId, msgSeq, stageId, 0, 0, default);
        }

        var errorCode = BinaryPrimitives.ReadUInt16LittleEndian(fixedFields[WireProtocol.ClientFixedFieldsBytes..]);
        var originalSize = BinaryPrimitives.ReadInt32LittleEndian(fixedFields[(WireProtocol.ClientFixedFieldsBytes + sizeof(ushort))..]);
        if (originalSize < 0)
        {
            throw Fail(FrameError.NegativeOriginalSize, $"OriginalSize is {originalSize} (msg id '{msgId}').");
        }

        if (originalSize > 0)
        {
            if (_decompressor is null)
            {
                throw Fail(FrameError.CompressionNotSupported, $"The frame (msg id '{msgId}') is compressed to inflate to {originalSize} bytes, and no IPayloadDecompressor was supplied.");
            }

            if (originalSize > _maxOriginalSizeBytes)
            {
                throw Fail(FrameError.OriginalSizeTooLarge, $"OriginalSize is {originalSize}; the limit is {_maxOriginalSizeBytes} bytes (msg id '{msgId}').");
            }
        }

        return new DecodedFrame(msgId, msgSeq, stageId, errorCode, originalSize, default);
    }

    private Payload CopyToPooled(ReadOnlySequence<byte> bytes)
    {
        if (bytes.IsEmpty)
        {
            return Payload.Empty;
        }

        var payload = _pool.Rent((int)bytes.Length, _owner);
        bytes.CopyTo(payload.WritableSpan);
        return payload;
    }

    /// <summary>Inflates a payload held in pipe segments; a split one is gathered first because a decompressor takes one span.</summary>
    private Payload Inflate(ReadOnlySequence<byte> compressed, int originalSize)
    {
        if (compressed.IsSingleSegment)
        {
            return Inflate(compressed.FirstSpan, originalSize);
        }

        var scratch = _pool.Rent((int)compressed.Length, CompressedOwner);
        try
        {
            compressed.CopyTo(scratch.WritableSpan);
            return Inflate(scratch.Span, originalSize);
        }
        finally
        {
            scratch.Dispose();
        }
    }

    /// <summary>Inflates into a fresh pooled payload; on any failure the new payload goes back to the pool.</summary>
    private Payload Inflate(ReadOnlySpan<byte> compressed, int originalSize)
    {
        var inflated = _pool.Rent(originalSize, _owner);
        try
        {
            int written;
            try
            {
                written = _decompressor!.Decompress(compressed, inflated.WritableSpan);
            }
            catch (Exception e)
            {
                throw Fail(FrameError.DecompressionFailed, $"The decompressor threw inflating {compressed.Length} bytes to {originalSize}: {e.Message}", e);
            }

            if (written != originalSize)
            {
                throw Fail(FrameError.DecompressionFailed, $"The decompressor wrote {written} bytes; OriginalSize is {originalSize}.");
            }

            var result = inflated;
            inflated = Payload.Empty;
            return result;
        }
        finally
        {
            inflated.Dispose();
        }
    }

    private FrameDecodeException Fail(FrameError error, string message, Exception? inner = null)
    {
        _state.Fault = error;
        ReleasePartial();
        return new FrameDecodeException(error, $"{error}: {message} (stream offset {_state.StreamOffsetBytes}).", _state.StreamOffsetBytes, inner);
    }

    private void ReleasePartial()
    {
        var payload = _payload;
        _payload = default;
        payload.Dispose();
    }

    private void ThrowIfUnusable() => _state.ThrowIfUnusable(this);
}
