using System.Buffers;
using System.Buffers.Binary;
using PlayHouse.Core.Codec;
using PlayHouse.Core.Mesh.Proto;
using PlayHouse.Core.Pooling;

namespace PlayHouse.Core.Mesh;

/// <summary>
/// Decodes mesh frames (layout in <see cref="MeshFrameCodec"/>) from a byte stream split anywhere. Each frame's
/// header is merged into a caller-supplied, reused <see cref="RouteHeader"/> (cleared first) and its payload is
/// copied into a pooled buffer whose ownership passes to the caller. Malformed input throws
/// <see cref="FrameDecodeException"/>, releases any partial payload and poisons the decoder.
/// </summary>
/// <remarks>
/// Not thread-safe; one decoder per connection. The header is parsed when its frame is complete, so the
/// <see cref="RouteHeader"/> passed to the call that returns true is the one filled in.
/// </remarks>
public sealed class MeshFrameDecoder : IDisposable
{
    private readonly MessagePool _pool;
    private readonly MeshFrameOptions _options;
    private readonly string _owner;
    private readonly ISenderIdCache? _senderIds;

    // FrameLen, HeaderLen and the header bytes of the frame in progress; payload bytes go straight to the pool.
    private readonly byte[] _head;

    private Phase _phase = Phase.FrameLength;
    private int _headNeededBytes = MeshFrameCodec.FrameLengthBytes;
    private int _headFilledBytes;
    private int _frameLengthBytes;
    private int _headerBytes;
    private Payload _payload;
    private int _payloadLengthBytes;
    private int _payloadFilledBytes;
    private StreamDecoderState _state;

    /// <param name="pool">Where payloads are rented.</param>
    /// <param name="options">Limits; null takes the defaults.</param>
    /// <param name="senderIds">Resolves each frame's sender id without a new string (the node's cache); null lets protobuf make one.</param>
    public MeshFrameDecoder(MessagePool pool, MeshFrameOptions? options = null, ISenderIdCache? senderIds = null)
    {
        ArgumentNullException.ThrowIfNull(pool);
        _senderIds = senderIds;
        _options = options ?? MeshFrameOptions.Default;
        _options.Validate();
        _pool = pool;
        _owner = _options.PayloadOwner ?? nameof(MeshFrameDecoder);
        _head = new byte[MeshFrameCodec.PrefixBytes + _options.MaxHeaderBytes];
    }

    private enum Phase
    {
        FrameLength,
        HeaderLength,
        Header,
        Payload,
    }

    /// <summary>True while bytes of an unfinished frame are held.</summary>
    public bool HasPartialFrame => _phase != Phase.FrameLength || _headFilledBytes > 0;

    /// <summary>The error that poisoned the decoder, or <see cref="FrameError.None"/>.</summary>
    public FrameError Fault => _state.Fault;

    /// <summary>Bytes consumed from the stream so far.</summary>
    public long StreamOffsetBytes => _state.StreamOffsetBytes;

    /// <summary>
    /// Consumes bytes from <paramref name="input"/> up to the end of the next frame. Returns true with
    /// <paramref name="header"/> filled in, the payload (now owned by the caller) and <paramref name="input"/>
    /// advanced past the frame; returns false once all of <paramref name="input"/> has been taken in.
    /// </summary>
    /// <exception cref="FrameDecodeException">The input is malformed, or an earlier call already failed.</exception>
    public bool TryDecode(ref ReadOnlySpan<byte> input, RouteHeader header, out Payload payload)
    {
        ArgumentNullException.ThrowIfNull(header);
        ThrowIfUnusable();
        try
        {
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
                        payload = Payload.Empty;
                        return false;
                    }

                    MeshFrameCodec.ParseHeader(_head.AsSpan(MeshFrameCodec.PrefixBytes, _headerBytes), header, _payloadLengthBytes, _state.StreamOffsetBytes, _senderIds);
                    payload = _payload;
                    _payload = Payload.Empty;
                    _phase = Phase.FrameLength;
                    _headNeededBytes = MeshFrameCodec.FrameLengthBytes;
                    _headFilledBytes = 0;
                    return true;
                }

                var headTake = Math.Min(_headNeededBytes - _headFilledBytes, input.Length);
                input[..headTake].CopyTo(_head.AsSpan(_headFilledBytes));
                input = input[headTake..];
                _headFilledBytes += headTake;
                _state.StreamOffsetBytes += headTake;
                if (_headFilledBytes < _headNeededBytes)
                {
                    payload = Payload.Empty;
                    return false;
                }

                switch (_phase)
                {
                    case Phase.FrameLength:
                        _frameLengthBytes = BinaryPrimitives.ReadInt32LittleEndian(_head);
                        MeshFrameCodec.CheckFrameLength(_frameLengthBytes, _options, _state.StreamOffsetBytes);
                        _headNeededBytes = MeshFrameCodec.PrefixBytes;
                        _phase = Phase.HeaderLength;
                        break;
                    case Phase.HeaderLength:
                        _headerBytes = BinaryPrimitives.ReadInt32LittleEndian(_head.AsSpan(MeshFrameCodec.FrameLengthBytes));
                        MeshFrameCodec.CheckHeaderLength(_headerBytes, _frameLengthBytes, _options, _state.StreamOffsetBytes);
                        _headNeededBytes = MeshFrameCodec.PrefixBytes + _headerBytes;
                        _phase = Phase.Header;
                        break;
                    default:
                        _payloadLengthBytes = _frameLengthBytes - MeshFrameCodec.HeaderLengthBytes - _headerBytes;
                        _payloadFilledBytes = 0;
                        _payload = _payloadLengthBytes == 0 ? Payload.Empty : _pool.Rent(_payloadLengthBytes, _owner);
                        _phase = Phase.Payload;
                        break;
                }
            }
        }
        catch (FrameDecodeException e)
        {
            _state.Fault = e.Error;
            ReleasePartial();
            throw;
        }
        catch
        {
            // Anything unexpected (the pool refusing a rent, say) leaves the frame boundary unknown as surely as bad input.
            _state.Broken = true;
            ReleasePartial();
            throw;
        }
    }

    /// <summary>
    /// Decodes one complete frame from the start of <paramref name="buffer"/> and slices it off; returns false,
    /// leaving <paramref name="buffer"/> untouched, when the frame is not complete yet. The lengths that have arrived
    /// are checked at once. Do not mix with the span overload on one connection.
    /// </summary>
    /// <exception cref="FrameDecodeException">The input is malformed, or an earlier call already failed.</exception>
    public bool TryDecode(ref ReadOnlySequence<byte> buffer, RouteHeader header, out Payload payload)
    {
        ArgumentNullException.ThrowIfNull(header);
        ThrowIfUnusable();
        if (HasPartialFrame)
        {
            throw new InvalidOperationException("The decoder holds part of a frame from span input; a connection must use either span chunks or a ReadOnlySequence, not both.");
        }

        payload = Payload.Empty;
        if (buffer.Length < MeshFrameCodec.FrameLengthBytes)
        {
            return false;
        }

        try
        {
            Span<byte> prefix = stackalloc byte[MeshFrameCodec.PrefixBytes];
            var available = (int)Math.Min(buffer.Length, MeshFrameCodec.PrefixBytes);
            buffer.Slice(0, available).CopyTo(prefix);
            var frameLengthBytes = BinaryPrimitives.ReadInt32LittleEndian(prefix);
            MeshFrameCodec.CheckFrameLength(frameLengthBytes, _options, _state.StreamOffsetBytes);
            if (available < MeshFrameCodec.PrefixBytes)
            {
                return false;
            }

            var headerBytes = BinaryPrimitives.ReadInt32LittleEndian(prefix[MeshFrameCodec.FrameLengthBytes..]);
            MeshFrameCodec.CheckHeaderLength(headerBytes, frameLengthBytes, _options, _state.StreamOffsetBytes);
            var frameBytes = MeshFrameCodec.FrameLengthBytes + frameLengthBytes;
            if (buffer.Length < frameBytes)
            {
                return false;
            }

            var payloadBytes = frameLengthBytes - MeshFrameCodec.HeaderLengthBytes - headerBytes;
            MeshFrameCodec.ParseHeader(buffer.Slice(MeshFrameCodec.PrefixBytes, headerBytes), header, payloadBytes, _state.StreamOffsetBytes, _senderIds);
            if (payloadBytes > 0)
            {
                payload = _pool.Rent(payloadBytes, _owner);
                buffer.Slice(MeshFrameCodec.PrefixBytes + headerBytes, payloadBytes).CopyTo(payload.WritableSpan);
            }

            buffer = buffer.Slice(frameBytes);
            _state.StreamOffsetBytes += frameBytes;
            return true;
        }
        catch (FrameDecodeException e)
        {
            _state.Fault = e.Error;
            throw;
        }
        catch
        {
            _state.Broken = true;
            throw;
        }
    }

    /// <summary>Declares end of stream for span input.</summary>
    /// <exception cref="FrameDecodeException"><see cref="FrameError.TruncatedFrame"/> when a frame was cut off.</exception>
    public void Complete()
    {
        ThrowIfUnusable();
        if (HasPartialFrame)
        {
            _state.Fault = FrameError.TruncatedFrame;
            ReleasePartial();
            var received = _phase == Phase.Payload ? _headNeededBytes + _payloadFilledBytes : _headFilledBytes;
            throw new FrameDecodeException(
                FrameError.TruncatedFrame,
                $"TruncatedFrame: the stream ended inside a mesh frame after {received} bytes (stream offset {_state.StreamOffsetBytes}).",
                _state.StreamOffsetBytes);
        }

        _state.Ended = true;
    }

    /// <summary>Declares end of stream for sequence input; <paramref name="remaining"/> is what the last TryDecode left.</summary>
    /// <exception cref="FrameDecodeException"><see cref="FrameError.TruncatedFrame"/> when bytes are left over.</exception>
    public void Complete(ReadOnlySequence<byte> remaining)
    {
        ThrowIfUnusable();
        if (!remaining.IsEmpty)
        {
            _state.Fault = FrameError.TruncatedFrame;
            throw new FrameDecodeException(
                FrameError.TruncatedFrame,
                $"TruncatedFrame: the stream ended inside a mesh frame; {remaining.Length} bytes are left over (stream offset {_state.StreamOffsetBytes}).",
                _state.StreamOffsetBytes);
        }

        Complete();
    }

    /// <summary>Returns the payload buffer of an unfinished frame, if any, to the pool.</summary>
    public void Dispose()
    {
        if (_state.Disposed)
        {
            return;
        }

        _state.Disposed = true;
        ReleasePartial();
    }

    private void ReleasePartial()
    {
        var payload = _payload;
        _payload = Payload.Empty;
        payload.Dispose();
    }

    private void ThrowIfUnusable() => _state.ThrowIfUnusable(this);
}
