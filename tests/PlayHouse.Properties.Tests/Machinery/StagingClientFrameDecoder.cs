using System.Buffers;
using System.Buffers.Binary;
using System.Globalization;
using System.Text;
using PlayHouse.Core.Codec;
using PlayHouse.Core.Pooling;

namespace PlayHouse.Properties.Tests.Machinery;

/// <summary>
/// DELIBERATELY FLAWED. A compact incremental decoder of client -> server frames in the common "stage until whole"
/// design: a frame that arrives whole in one chunk is read in place; one split across chunks is gathered, length prefix
/// included, in a staging buffer and read from there. The flaw is the staging buffer's size: it holds MaxBodyBytes, the
/// largest *body*, forgetting the four prefix bytes staged with it, so a split frame whose body is within four bytes of
/// the limit overflows it, while the same frame in one chunk decodes. Everything else (limits, msg id checks, the pool,
/// truncation) is right, so only the differential's boundary cases tell it apart. Only the decoder differential test
/// uses it, to show that the differential catches it.
/// </summary>
internal sealed class StagingClientFrameDecoder : IWireDecoder
{
    private const int PrefixBytes = WireProtocol.LengthPrefixBytes;
    private static readonly UTF8Encoding StrictUtf8 = new(encoderShouldEmitUTF8Identifier: false, throwOnInvalidBytes: true);

    private readonly MessagePool _pool;
    private readonly int _maxBodyBytes;
    private readonly byte[] _stage;
    private int _staged;
    private int _bodyBytes;
    private long _frameStartOffset;
    private FrameError _fault;

    public StagingClientFrameDecoder(MessagePool pool, int maxBodyBytes)
    {
        _pool = pool;
        _maxBodyBytes = maxBodyBytes;

        // The flaw: the largest body, not the largest frame (PrefixBytes + maxBodyBytes).
        _stage = new byte[maxBodyBytes];
    }

    public bool HasSequencePath => false;

    public bool TryDecode(ref ReadOnlySpan<byte> input, out string frame)
    {
        frame = string.Empty;
        if (_fault != FrameError.None)
        {
            throw new FrameDecodeException(_fault, $"{_fault}: the decoder already failed.", _frameStartOffset);
        }

        if (_staged == 0 && input.Length >= PrefixBytes)
        {
            var bodyBytes = BinaryPrimitives.ReadInt32LittleEndian(input);
            CheckLength(bodyBytes);
            if (input.Length >= PrefixBytes + bodyBytes)
            {
                frame = Parse(input[..(PrefixBytes + bodyBytes)]);
                input = input[(PrefixBytes + bodyBytes)..];
                return true;
            }
        }

        if (input.IsEmpty)
        {
            return false;
        }

        if (_staged < PrefixBytes)
        {
            var prefixTake = Math.Min(PrefixBytes - _staged, input.Length);
            input[..prefixTake].CopyTo(_stage.AsSpan(_staged));
            input = input[prefixTake..];
            _staged += prefixTake;
            if (_staged < PrefixBytes)
            {
                return false;
            }

            _bodyBytes = BinaryPrimitives.ReadInt32LittleEndian(_stage);
            CheckLength(_bodyBytes);
        }

        var take = Math.Min(PrefixBytes + _bodyBytes - _staged, input.Length);
        input[..take].CopyTo(_stage.AsSpan(_staged));
        input = input[take..];
        _staged += take;
        if (_staged < PrefixBytes + _bodyBytes)
        {
            return false;
        }

        frame = Parse(_stage.AsSpan(0, PrefixBytes + _bodyBytes));
        _staged = 0;
        return true;
    }

    public void Complete()
    {
        if (_staged > 0)
        {
            throw Fail(FrameError.TruncatedFrame, $"the stream ended after {_staged} bytes of a frame");
        }
    }

    public bool TryDecode(ref ReadOnlySequence<byte> buffer, out string frame) => throw new NotSupportedException("This decoder has no sequence path.");

    public void Complete(ReadOnlySequence<byte> remaining) => throw new NotSupportedException("This decoder has no sequence path.");

    public void Dispose()
    {
    }

    private void CheckLength(int bodyBytes)
    {
        if (bodyBytes < 0)
        {
            throw Fail(FrameError.NegativeLength, $"the length prefix is {bodyBytes}");
        }

        if (bodyBytes < WireProtocol.MinClientBodyBytes)
        {
            throw Fail(FrameError.LengthTooSmall, $"the length prefix is {bodyBytes}");
        }

        if (bodyBytes > _maxBodyBytes)
        {
            throw Fail(FrameError.LengthTooLarge, $"the length prefix is {bodyBytes}; the limit is {_maxBodyBytes}");
        }
    }

    /// <summary>Reads one whole frame, prefix included.</summary>
    private string Parse(ReadOnlySpan<byte> frameBytes)
    {
        var body = frameBytes[PrefixBytes..];
        var msgIdBytes = body[0];
        if (WireProtocol.MsgIdLengthBytes + msgIdBytes + WireProtocol.ClientFixedFieldsBytes > body.Length)
        {
            throw Fail(FrameError.MsgIdLengthPastFrame, $"the msg id length {msgIdBytes} runs past the {body.Length}-byte body");
        }

        string msgId;
        try
        {
            msgId = StrictUtf8.GetString(body.Slice(WireProtocol.MsgIdLengthBytes, msgIdBytes));
        }
        catch (DecoderFallbackException)
        {
            throw Fail(FrameError.InvalidUtf8MsgId, "the msg id is not UTF-8");
        }

        var fields = body[(WireProtocol.MsgIdLengthBytes + msgIdBytes)..];
        var msgSeq = BinaryPrimitives.ReadUInt16LittleEndian(fields);
        var stageId = BinaryPrimitives.ReadInt64LittleEndian(fields[2..]);
        var payloadBytes = fields[WireProtocol.ClientFixedFieldsBytes..];
        var payload = payloadBytes.IsEmpty ? Payload.Empty : _pool.Rent(payloadBytes.Length, nameof(StagingClientFrameDecoder));
        payloadBytes.CopyTo(payload.WritableSpan);
        _frameStartOffset += frameBytes.Length;
        var text = string.Create(CultureInfo.InvariantCulture, $"frame '{msgId}' seq {msgSeq} stage {stageId} payload {DecoderDifferential.Digest(payload.Span)}");
        payload.Dispose();
        return text;
    }

    private FrameDecodeException Fail(FrameError error, string what)
    {
        _fault = error;
        return new FrameDecodeException(error, $"{error}: {what}.", _frameStartOffset);
    }
}
