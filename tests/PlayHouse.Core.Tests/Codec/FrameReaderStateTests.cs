using System.Buffers;
using PlayHouse.Core.Codec;
using PlayHouse.Core.Pooling;

namespace PlayHouse.Core.Tests.Codec;

/// <summary>
/// The client and server frame decoders between calls and at their limits: the header buffer of the longest msg id,
/// who owns a payload in progress, a frame resumed after its first byte, the messages of every decode error, end of
/// stream, and a decoder broken by an unexpected exception.
/// </summary>
public sealed class FrameReaderStateTests
{
    private static FrameDecodeException ClientFails(byte[] bytes, FrameDecoderOptions? options = null)
    {
        var pool = DecodeHarness.CheckedPool();
        using var decoder = new ClientFrameDecoder(pool, options: options);
        var error = Assert.Throws<FrameDecodeException>(() => DecodeHarness.FeedClient(decoder, [bytes]));
        Assert.Equal(error.Error, decoder.Fault);
        Assert.Equal(0, pool.GetStatistics().Outstanding);
        return error;
    }

    private static FrameDecodeException ServerFails(byte[] bytes, FrameDecoderOptions? options = null)
    {
        var pool = DecodeHarness.CheckedPool();
        using var decoder = new ServerFrameDecoder(pool, options: options);
        var error = Assert.Throws<FrameDecodeException>(() => DecodeHarness.FeedServer(decoder, [bytes]));
        Assert.Equal(0, pool.GetStatistics().Outstanding);
        return error;
    }

    [Fact]
    public void Decoders_RefuseANullPool()
    {
        Assert.Equal("pool", Assert.Throws<ArgumentNullException>(() => new ClientFrameDecoder(null!)).ParamName);
        Assert.Equal("pool", Assert.Throws<ArgumentNullException>(() => new ServerFrameDecoder(null!)).ParamName);
    }

    [Fact]
    public void Options_OutsideTheirRange_SayTheRange()
    {
        var pool = new MessagePool();

        var body = Assert.Throws<ArgumentOutOfRangeException>(() => new ClientFrameDecoder(pool, options: new FrameDecoderOptions { MaxBodyBytes = 10 }));
        var original = Assert.Throws<ArgumentOutOfRangeException>(() => new ServerFrameDecoder(pool, options: new FrameDecoderOptions { MaxOriginalSizeBytes = 0 }));

        Assert.Contains($"MaxBodyBytes must lie in [11, {WireProtocol.MaxBodyBytes}].", body.Message, StringComparison.Ordinal);
        Assert.Contains($"MaxOriginalSizeBytes must lie in [1, {WireProtocol.MaxBodyBytes}].", original.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void ServerFrameWithTheLongestMsgId_DecodesByteByByte()
    {
        // Staged byte by byte, the header holds the prefix, a 255-byte msg id and all 16 bytes of server fields.
        var msgId = new string('m', WireProtocol.MaxMsgIdBytes);
        var bytes = WireBytes.Server(msgId, 3, 4, 5, 0, [1, 2]);
        using var decoder = new ServerFrameDecoder(DecodeHarness.CheckedPool());

        var frame = Assert.Single(DecodeHarness.FeedServer(decoder, DecodeHarness.ByteByByte(bytes)));

        Assert.Equal(msgId, frame.MsgId);
        Assert.Equal((ushort)5, frame.ErrorCode);
        Assert.Equal(new byte[] { 1, 2 }, frame.Payload);
    }

    [Fact]
    public void EmptyPayloadSplitAcrossChunks_RentsNothing()
    {
        var pool = DecodeHarness.CheckedPool();
        using var decoder = new ClientFrameDecoder(pool);

        var frame = Assert.Single(DecodeHarness.FeedClient(decoder, DecodeHarness.ByteByByte(WireBytes.Client("Ping", 1, 2, []))));

        Assert.Empty(frame.Payload);
        Assert.Equal(0, pool.GetStatistics().Rents);
    }

    [Fact]
    public void PayloadInProgress_IsOwnedByTheConfiguredOwner_OrAsCompressedBytes()
    {
        var pool = DecodeHarness.CheckedPool();
        var options = new FrameDecoderOptions { Decompressor = new RepeatDecompressor(), PayloadOwner = "server-in" };
        using var plain = new ServerFrameDecoder(pool, options: options);
        using var compressed = new ServerFrameDecoder(pool, options: options);
        var plainBytes = WireBytes.Server("Ping", 1, 2, 0, 0, [1, 2, 3]);
        var compressedBytes = WireBytes.Server("Ping", 1, 2, 0, 12, [4, 5, 6]);

        DecodeHarness.FeedServer(plain, [plainBytes[..^1]]);
        Assert.Equal("server-in", Assert.Single(pool.GetOutstanding()).Owner);
        DecodeHarness.FeedServer(compressed, [compressedBytes[..^1]]);

        Assert.Equal(["FrameDecoder.compressed", "server-in"], pool.GetOutstanding().Select(b => b.Owner).Order(StringComparer.Ordinal));
        var inflated = Assert.Single(DecodeHarness.FeedServer(compressed, [compressedBytes[^1..]]));
        Assert.Equal(new byte[] { 4, 5, 6, 4, 5, 6, 4, 5, 6, 4, 5, 6 }, inflated.Payload);
    }

    [Fact]
    public void FrameResumedAfterItsFirstByte_IsReadFromTheHeldBytes_NotFromTheNewChunk()
    {
        // Chosen so the chunk after the first byte would itself look like a whole frame: Len 0x0B00 puts 0x0B, 0, 0, 0
        // at offset 1 (a valid Len of 11), the empty msg id a 0 at offset 4, and msg seq 256 another 0 at offset 5.
        var payload = WireBytes.Pattern(0x0B00 - WireProtocol.MinClientBodyBytes);
        var bytes = WireBytes.Client(string.Empty, 256, 7, payload);
        using var decoder = new ClientFrameDecoder(DecodeHarness.CheckedPool());

        var frame = Assert.Single(DecodeHarness.FeedClient(decoder, [bytes[..1], bytes[1..]]));

        Assert.Equal((ushort)256, frame.MsgSeq);
        Assert.Equal(7, frame.StageId);
        Assert.Equal(payload, frame.Payload);
    }

    [Fact]
    public void SequenceAfterSpanBytesOfAFrame_IsRefusedSayingNotToMixThem()
    {
        using var decoder = new ClientFrameDecoder(DecodeHarness.CheckedPool());
        DecodeHarness.FeedClient(decoder, [WireBytes.Client("Ping", 1, 2, [])[..3]]);
        var buffer = new ReadOnlySequence<byte>(new byte[20]);

        var error = Assert.Throws<InvalidOperationException>(() => decoder.TryDecode(ref buffer, out _));

        Assert.Contains("either span chunks or a ReadOnlySequence", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void ARentThePoolRefuses_BreaksTheDecoderOnEitherPath_AndLaterCallsSaySo()
    {
        var pool = new MessagePool(new MessagePoolOptions { MaxRentBytes = 4 });
        var bytes = WireBytes.Client("Ping", 1, 2, WireBytes.Pattern(8));
        using var span = new ClientFrameDecoder(pool);
        using var sequence = new ClientFrameDecoder(pool);
        var buffer = new ReadOnlySequence<byte>(bytes);

        Assert.Throws<ArgumentOutOfRangeException>(() => DecodeHarness.FeedClient(span, [bytes[..6], bytes[6..]]));
        Assert.Throws<ArgumentOutOfRangeException>(() => sequence.TryDecode(ref buffer, out _));

        Assert.Contains("unexpected exception", Assert.Throws<InvalidOperationException>(span.Complete).Message, StringComparison.Ordinal);
        Assert.Contains("unexpected exception", Assert.Throws<InvalidOperationException>(sequence.Complete).Message, StringComparison.Ordinal);
        Assert.Equal(FrameError.None, sequence.Fault);
        Assert.Equal(0, pool.GetStatistics().Outstanding);
    }

    [Fact]
    public void Complete_InsideAFrame_SaysHowManyBytesArrivedOfHowMany()
    {
        var bytes = WireBytes.Client("Ping", 1, 2, WireBytes.Pattern(10));
        using var length = new ClientFrameDecoder(DecodeHarness.CheckedPool());
        using var header = new ClientFrameDecoder(DecodeHarness.CheckedPool());
        using var payload = new ClientFrameDecoder(DecodeHarness.CheckedPool());
        DecodeHarness.FeedClient(length, [bytes[..2]]);
        DecodeHarness.FeedClient(header, [bytes[..6]]);
        DecodeHarness.FeedClient(payload, [bytes[..^3]]);

        Assert.Equal("TruncatedFrame: The stream ended inside a frame: 2 of at least 4 bytes arrived. (stream offset 2).", Assert.Throws<FrameDecodeException>(length.Complete).Message);
        Assert.Equal($"TruncatedFrame: The stream ended inside a frame: 6 of {bytes.Length} bytes arrived. (stream offset 6).", Assert.Throws<FrameDecodeException>(header.Complete).Message);
        Assert.Equal($"TruncatedFrame: The stream ended inside a frame: {bytes.Length - 3} of {bytes.Length} bytes arrived. (stream offset {bytes.Length - 3}).", Assert.Throws<FrameDecodeException>(payload.Complete).Message);
    }

    [Fact]
    public void Complete_Twice_IsRefused_OnEitherPath()
    {
        using var span = new ClientFrameDecoder(DecodeHarness.CheckedPool());
        using var sequence = new ClientFrameDecoder(DecodeHarness.CheckedPool());
        span.Complete();
        sequence.Complete(ReadOnlySequence<byte>.Empty);

        Assert.Contains("already completed", Assert.Throws<InvalidOperationException>(span.Complete).Message, StringComparison.Ordinal);
        Assert.Throws<InvalidOperationException>(() => sequence.Complete(ReadOnlySequence<byte>.Empty));
        Assert.Throws<InvalidOperationException>(sequence.Complete);
    }

    [Fact]
    public void CompleteWithBytesLeft_IsTruncatedFrameSayingHowMany()
    {
        using var decoder = new ServerFrameDecoder(DecodeHarness.CheckedPool());

        var error = Assert.Throws<FrameDecodeException>(() => decoder.Complete(new ReadOnlySequence<byte>(new byte[5])));

        Assert.Equal("TruncatedFrame: The stream ended inside a frame: 5 bytes are left over. (stream offset 0).", error.Message);
        Assert.Equal(FrameError.TruncatedFrame, decoder.Fault);
    }

    [Fact]
    public void CompleteWithBytesLeft_OnAnEndedFailedOrDisposedDecoder_IsRefusedAsUnusable_NotReadAsATruncatedFrame()
    {
        var leftOver = new ReadOnlySequence<byte>(new byte[5]);
        using var ended = new ServerFrameDecoder(DecodeHarness.CheckedPool());
        using var failed = new ServerFrameDecoder(DecodeHarness.CheckedPool());
        var disposed = new ServerFrameDecoder(DecodeHarness.CheckedPool());
        ended.Complete(ReadOnlySequence<byte>.Empty);
        var negative = new ReadOnlySequence<byte>(WireBytes.I32(-1));
        Assert.Throws<FrameDecodeException>(() => failed.TryDecode(ref negative, out _));
        disposed.Dispose();

        Assert.Contains("already completed", Assert.Throws<InvalidOperationException>(() => ended.Complete(leftOver)).Message, StringComparison.Ordinal);
        var error = Assert.Throws<FrameDecodeException>(() => failed.Complete(leftOver));
        Assert.StartsWith("NegativeLength: the decoder already failed", error.Message, StringComparison.Ordinal);
        Assert.Equal(FrameError.NegativeLength, failed.Fault);
        Assert.Throws<ObjectDisposedException>(() => disposed.Complete(leftOver));
    }

    [Fact]
    public void LengthErrors_SayTheLengthAndTheBound()
    {
        var small = new FrameDecoderOptions { MaxBodyBytes = 64 };

        Assert.StartsWith("NegativeLength: The length prefix is -1.", ClientFails(WireBytes.I32(-1)).Message, StringComparison.Ordinal);
        Assert.StartsWith("LengthTooSmall: The length prefix is 10; the smallest client body is 11 bytes.", ClientFails(WireBytes.I32(10)).Message, StringComparison.Ordinal);
        Assert.StartsWith("LengthTooSmall: The length prefix is 16; the smallest server body is 17 bytes.", ServerFails(WireBytes.I32(16)).Message, StringComparison.Ordinal);
        Assert.StartsWith("LengthTooLarge: The length prefix is 65; the limit is 64 bytes.", ClientFails(WireBytes.I32(65), small).Message, StringComparison.Ordinal);
        Assert.StartsWith(
            "MsgIdLengthPastFrame: The msg id length is 1, but the 11-byte body has room for 0.",
            ClientFails(WireBytes.RawClient(11, 1, [], 1, 2, [])).Message,
            StringComparison.Ordinal);
    }

    [Fact]
    public void BodyAtTheLimit_DecodesByteByByte_AndOneAboveIsRefused()
    {
        var options = new FrameDecoderOptions { MaxBodyBytes = 64 };
        var atLimit = WireBytes.Client("Ping", 1, 2, WireBytes.Pattern(64 - 1 - 4 - 10));
        using var decoder = new ClientFrameDecoder(DecodeHarness.CheckedPool(), options: options);

        Assert.Equal(64, BitConverter.ToInt32(atLimit));
        Assert.Single(DecodeHarness.FeedClient(decoder, DecodeHarness.ByteByByte(atLimit)));
        Assert.Equal(FrameError.LengthTooLarge, ClientFails(WireBytes.Client("Ping", 1, 2, WireBytes.Pattern(64 - 1 - 4 - 10 + 1)), options).Error);
    }

    [Fact]
    public void HeaderErrors_SayWhatWasRead()
    {
        var inflating = new FrameDecoderOptions { Decompressor = new RepeatDecompressor(), MaxOriginalSizeBytes = 8 };

        Assert.StartsWith("InvalidUtf8MsgId: The msg id bytes FF are not valid UTF-8.", ClientFails(WireBytes.RawClient(null, null, [0xFF], 1, 2, [])).Message, StringComparison.Ordinal);
        Assert.StartsWith("NegativeOriginalSize: OriginalSize is -1 (msg id 'Ping').", ServerFails(WireBytes.Server("Ping", 1, 2, 0, -1, [1])).Message, StringComparison.Ordinal);
        Assert.StartsWith(
            "CompressionNotSupported: The frame (msg id 'Ping') is compressed to inflate to 10 bytes, and no IPayloadDecompressor was supplied.",
            ServerFails(WireBytes.Server("Ping", 1, 2, 0, 10, [1])).Message,
            StringComparison.Ordinal);
        Assert.StartsWith("OriginalSizeTooLarge: OriginalSize is 9; the limit is 8 bytes (msg id 'Ping').", ServerFails(WireBytes.Server("Ping", 1, 2, 0, 9, [1]), inflating).Message, StringComparison.Ordinal);
    }

    [Fact]
    public void DecompressionErrors_SayTheSizes()
    {
        var bytes = WireBytes.Server("Ping", 1, 2, 0, 10, [1, 2]);

        var threw = ServerFails(bytes, new FrameDecoderOptions { Decompressor = new ThrowingDecompressor() });
        var shortWrite = ServerFails(bytes, new FrameDecoderOptions { Decompressor = new ShortDecompressor() });

        Assert.StartsWith("DecompressionFailed: The decompressor threw inflating 2 bytes to 10: corrupt LZ4 block", threw.Message, StringComparison.Ordinal);
        Assert.IsType<InvalidDataException>(threw.InnerException);
        Assert.StartsWith("DecompressionFailed: The decompressor wrote 9 bytes; OriginalSize is 10.", shortWrite.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void Sequence_EmptyPayload_RentsNothing_AndACompressedPayloadAcrossSegmentsInflates()
    {
        var pool = DecodeHarness.CheckedPool();
        using var decoder = new ServerFrameDecoder(pool, options: new FrameDecoderOptions { Decompressor = new RepeatDecompressor() });
        var empty = new ReadOnlySequence<byte>(WireBytes.Server("Ping", 1, 2, 0, 0, []));
        var split = WireBytes.OneBytePerSegment(WireBytes.Server("Pong", 1, 2, 0, 6, [7, 8, 9]));

        var bare = Assert.Single(DecodeHarness.DrainServer(decoder, ref empty));
        Assert.Empty(bare.Payload);
        Assert.Equal(0, pool.GetStatistics().Rents);

        var inflated = Assert.Single(DecodeHarness.DrainServer(decoder, ref split));
        Assert.Equal(new byte[] { 7, 8, 9, 7, 8, 9 }, inflated.Payload);
        Assert.Equal(0, inflated.OriginalSize);
        Assert.Equal(0, pool.GetStatistics().Outstanding);
    }
}
