using System.Buffers;
using Google.Protobuf;
using PlayHouse.Core.Codec;
using PlayHouse.Core.Mesh;
using PlayHouse.Core.Mesh.Proto;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;
using PlayHouse.Core.Tests.Codec;

namespace PlayHouse.Core.Tests.Mesh;

/// <summary>
/// The argument checks, the limits at, below and above each threshold, the error messages and the sender-field scan
/// of <see cref="MeshFrameCodec"/>, and the mapping between <see cref="RouteHeader"/> and <see cref="MeshMessage"/>.
/// </summary>
public sealed class MeshFrameLimitTests
{
    // A header of 0 bytes and a payload of at most 16: FrameLen may be at most 4 + 0 + 16 = 20.
    private static readonly MeshFrameOptions Tight = new() { MaxHeaderBytes = 0, MaxPayloadBytes = 16 };

    private static FrameDecodeException DecodeFails(byte[] frame, MeshFrameOptions? options = null, ISenderIdCache? senderIds = null, RouteHeader? header = null)
    {
        var pool = DecodeHarness.CheckedPool();
        var error = Assert.Throws<FrameDecodeException>(() => MeshFrameCodec.TryDecode(frame, header ?? new RouteHeader(), pool, out _, out _, options, senderIds));
        Assert.Equal(0, pool.GetStatistics().Outstanding);
        return error;
    }

    [Fact]
    public void PublicEntryPoints_RefuseNullArguments_NamingThem()
    {
        var pool = new MessagePool();
        var header = new RouteHeader();

        Assert.Equal("header", Assert.Throws<ArgumentNullException>(() => MeshFrameCodec.IsReplyFrame(null!)).ParamName);
        Assert.Equal("header", Assert.Throws<ArgumentNullException>(() => MeshFrameCodec.GetEncodedLength(null!, 0)).ParamName);
        Assert.Equal("header", Assert.Throws<ArgumentNullException>(() => MeshFrameCodec.Encode(new byte[64], null!, [], RouteHeaderWriter.ExactSize)).ParamName);
        Assert.Equal("headerWriter", Assert.Throws<ArgumentNullException>(() => MeshFrameCodec.Encode(new byte[64], header, [], (IRouteHeaderWriter)null!)).ParamName);
        Assert.Equal("writer", Assert.Throws<ArgumentNullException>(() => MeshFrameCodec.Encode((IBufferWriter<byte>)null!, header, [])).ParamName);
        Assert.Equal("header", Assert.Throws<ArgumentNullException>(() => MeshFrameCodec.Encode(new ArrayBufferWriter<byte>(), null!, [])).ParamName);
        Assert.Equal("header", Assert.Throws<ArgumentNullException>(() => MeshFrameCodec.TryDecode(new byte[8], null!, pool, out _, out _)).ParamName);
        Assert.Equal("pool", Assert.Throws<ArgumentNullException>(() => MeshFrameCodec.TryDecode(new byte[8], header, null!, out _, out _)).ParamName);
        Assert.Equal("pool", Assert.Throws<ArgumentNullException>(() => new MeshFrameDecoder(null!)).ParamName);
    }

    [Fact]
    public void GetEncodedLength_OfANegativePayload_IsRefused_AndOfAnEmptyOneIsThePrefixAndHeader()
    {
        var header = new RouteHeader { MsgId = "Ping" };

        Assert.Equal("payloadLengthBytes", Assert.Throws<ArgumentOutOfRangeException>(() => MeshFrameCodec.GetEncodedLength(header, -1)).ParamName);
        Assert.Equal(8 + header.CalculateSize(), MeshFrameCodec.GetEncodedLength(header, 0));
    }

    [Fact]
    public void Encode_PayloadAtTheLimit_IsWritten_AndOneAboveIsRefusedWithBothSizes()
    {
        var options = new MeshFrameOptions { MaxPayloadBytes = 64 };
        var header = new RouteHeader { MsgId = "Big" };

        Assert.Equal(8 + header.CalculateSize() + 64, MeshFrameCodec.GetEncodedLength(header, 64, options));
        var error = Assert.Throws<ArgumentException>(() => MeshFrameCodec.GetEncodedLength(header, 65, options));

        Assert.Equal("payloadBytes", error.ParamName);
        Assert.StartsWith("The payload is 65 bytes; the mesh limit is 64 bytes.", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void Encode_HeaderAtTheCap_IsWritten_AndOneByteOverIsRefusedWithBothSizes()
    {
        var header = new RouteHeader { MsgId = "abcdef" };
        var headerBytes = header.CalculateSize();

        Assert.Equal(8 + headerBytes, MeshFrameCodec.GetEncodedLength(header, 0, new MeshFrameOptions { MaxHeaderBytes = headerBytes }));
        var error = Assert.Throws<ArgumentException>(() => MeshFrameCodec.GetEncodedLength(header, 0, new MeshFrameOptions { MaxHeaderBytes = headerBytes - 1 }));

        Assert.Equal("header", error.ParamName);
        Assert.StartsWith($"The RouteHeader serializes to {headerBytes} bytes; the limit is {headerBytes - 1} bytes.", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void Encode_EveryOverload_AppliesTheOptionsItIsGiven()
    {
        var header = new RouteHeader { MsgId = "abcdef" };
        var small = new MeshFrameOptions { MaxHeaderBytes = 4 };

        Assert.Throws<ArgumentException>(() => MeshFrameCodec.Encode(new byte[64], header, [], small));
        Assert.Throws<ArgumentException>(() => MeshFrameCodec.Encode(new ArrayBufferWriter<byte>(), header, [], small));
        Assert.Equal(MeshFrameCodec.GetEncodedLength(header, 0), MeshFrameCodec.Encode(new byte[64], header, [], RouteHeaderWriter.ExactSize));
        Assert.Equal(MeshFrameCodec.GetEncodedLength(header, 0), MeshFrameCodec.Encode(new ArrayBufferWriter<byte>(), header, []));
    }

    [Fact]
    public void Encode_WithOptionsOutsideTheirRange_IsRefusedAsOutOfRange()
    {
        var header = new RouteHeader { MsgId = "Ping" };

        var error = Assert.Throws<ArgumentOutOfRangeException>(() => MeshFrameCodec.GetEncodedLength(header, 0, new MeshFrameOptions { MaxHeaderBytes = MeshFrameCodec.MaxHeaderBytesLimit + 1 }));

        Assert.Equal("MaxHeaderBytes", error.ParamName);
        Assert.Equal(8 + header.CalculateSize(), MeshFrameCodec.GetEncodedLength(header, 0, new MeshFrameOptions { MaxHeaderBytes = MeshFrameCodec.MaxHeaderBytesLimit }));
    }

    [Fact]
    public void Options_OutsideTheirRange_SayTheRange()
    {
        var pool = new MessagePool();

        var payload = Assert.Throws<ArgumentOutOfRangeException>(() => new MeshFrameDecoder(pool, new MeshFrameOptions { MaxPayloadBytes = -1 }));
        var header = Assert.Throws<ArgumentOutOfRangeException>(() => new MeshFrameDecoder(pool, new MeshFrameOptions { MaxHeaderBytes = -1 }));

        Assert.Contains($"MaxPayloadBytes must lie in [0, {MeshFrameCodec.MaxPayloadBytes}].", payload.Message, StringComparison.Ordinal);
        Assert.Contains($"MaxHeaderBytes must lie in [0, {MeshFrameCodec.MaxHeaderBytesLimit}].", header.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void Encode_IntoABufferWriter_AsksForExactlyTheFrame()
    {
        var payload = WireBytes.Pattern(40);
        var header = new RouteHeader { MsgId = "Ping", PayloadSize = 40 };
        var writer = new ExactWriter();

        var written = MeshFrameCodec.Encode(writer, header, payload);

        Assert.Equal(MeshFrameCodec.GetEncodedLength(header, 40), written);
        Assert.Equal(written, writer.SizeHint);
        Assert.Equal(MeshFrameCodecTests.Encode(header, payload), writer.Written);
    }

    [Fact]
    public void Encode_DestinationOneByteShort_SaysBothSizes_AndWritesNothing()
    {
        var header = new RouteHeader { MsgId = "Ping" };
        var frameBytes = MeshFrameCodec.GetEncodedLength(header, 8);
        var destination = new byte[frameBytes - 1];

        var error = Assert.Throws<ArgumentException>(() => MeshFrameCodec.Encode(destination, header, new byte[8]));

        Assert.Equal("destination", error.ParamName);
        Assert.StartsWith($"The destination holds {frameBytes - 1} bytes; the frame needs {frameBytes}.", error.Message, StringComparison.Ordinal);
        Assert.All(destination, b => Assert.Equal(0, b));
    }

    [Fact]
    public void TryDecode_FrameLenAtTheLimit_Decodes_AndOneAboveIsLengthTooLargeNamingTheLimit()
    {
        var pool = DecodeHarness.CheckedPool();
        var payload = WireBytes.Pattern(16);

        Assert.True(MeshFrameCodec.TryDecode(MeshFrameCodecTests.Raw(20, 0, [], payload), new RouteHeader(), pool, out var decoded, out var consumed, Tight));
        Assert.Equal(payload, decoded.Span.ToArray());
        Assert.Equal(24, consumed);
        decoded.Dispose();

        var error = DecodeFails(MeshFrameCodecTests.Raw(21, 0, [], [.. payload, 0]), Tight);
        Assert.Equal(FrameError.LengthTooLarge, error.Error);
        Assert.Equal("LengthTooLarge: FrameLen is 21; the limit is 20 bytes. (stream offset 0).", error.Message);
    }

    [Fact]
    public void TryDecode_FrameLenOfZero_IsTooSmall_AndNegativeIsNegative_EachSayingTheValue()
    {
        var zero = DecodeFails(WireBytes.I32(0));
        var negative = DecodeFails(WireBytes.I32(-1));
        var three = DecodeFails(WireBytes.I32(3));

        Assert.Equal(FrameError.LengthTooSmall, zero.Error);
        Assert.Equal("LengthTooSmall: FrameLen is 0; it must cover the 4-byte HeaderLen field. (stream offset 0).", zero.Message);
        Assert.Equal(FrameError.LengthTooSmall, three.Error);
        Assert.Equal(FrameError.NegativeLength, negative.Error);
        Assert.Equal("NegativeLength: FrameLen is -1. (stream offset 0).", negative.Message);
    }

    [Fact]
    public void TryDecode_JustTheFrameLen_IsCheckedBeforeTheRestArrives()
    {
        var pool = DecodeHarness.CheckedPool();

        Assert.False(MeshFrameCodec.TryDecode(WireBytes.I32(20), new RouteHeader(), pool, out _, out _));
        Assert.Equal(FrameError.NegativeLength, DecodeFails(WireBytes.I32(-5)).Error);
        Assert.False(MeshFrameCodec.TryDecode(WireBytes.I32(20).AsSpan(0, 3), new RouteHeader(), pool, out _, out _));
    }

    [Fact]
    public void TryDecode_HeaderLengthErrors_SayTheLengthsInvolved()
    {
        var negative = DecodeFails(MeshFrameCodecTests.Raw(8, -1, [], [1, 2, 3, 4]));
        var past = DecodeFails(MeshFrameCodecTests.Raw(8, 5, [], [1, 2, 3, 4]));
        var tooLarge = DecodeFails(MeshFrameCodecTests.Raw(null, null, new RouteHeader { MsgId = "abcdef" }.ToByteArray(), []), new MeshFrameOptions { MaxHeaderBytes = 4 });
        var payload = DecodeFails(MeshFrameCodecTests.Raw(null, null, [], new byte[17]), new MeshFrameOptions { MaxHeaderBytes = 8, MaxPayloadBytes = 16 });

        Assert.Equal("NegativeHeaderLength: HeaderLen is -1. (stream offset 0).", negative.Message);
        Assert.Equal("HeaderLengthPastFrame: HeaderLen is 5, but FrameLen 8 leaves room for 4. (stream offset 0).", past.Message);
        Assert.Equal("HeaderTooLarge: HeaderLen is 8; the limit is 4 bytes. (stream offset 0).", tooLarge.Message);
        Assert.Equal(FrameError.LengthTooLarge, payload.Error);
        Assert.Equal("LengthTooLarge: The payload is 17 bytes; the limit is 16 bytes. (stream offset 0).", payload.Message);
    }

    [Fact]
    public void TryDecode_AppliesTheOptionsItIsGiven()
    {
        var frame = MeshFrameCodecTests.Raw(null, null, new RouteHeader { MsgId = "abcdef" }.ToByteArray(), []);

        Assert.Equal(FrameError.HeaderTooLarge, DecodeFails(frame, new MeshFrameOptions { MaxHeaderBytes = 4 }).Error);
        Assert.True(MeshFrameCodec.TryDecode(frame, new RouteHeader(), DecodeHarness.CheckedPool(), out _, out _));
    }

    [Fact]
    public void TryDecode_EmptyPayload_RentsNothing_AndAPayloadGoesToTheConfiguredOwner()
    {
        var pool = DecodeHarness.CheckedPool();
        var options = new MeshFrameOptions { PayloadOwner = "mesh-in" };

        Assert.True(MeshFrameCodec.TryDecode(MeshFrameCodecTests.Encode(new RouteHeader { MsgId = "Ping" }, []), new RouteHeader(), pool, out var empty, out _, options));
        Assert.True(empty.IsEmpty);
        Assert.Equal(0, pool.GetStatistics().Rents);

        Assert.True(MeshFrameCodec.TryDecode(MeshFrameCodecTests.Encode(new RouteHeader(), [1]), new RouteHeader(), pool, out var owned, out _, options));
        Assert.Equal("mesh-in", owned.Owner);
        owned.Dispose();
        Assert.True(MeshFrameCodec.TryDecode(MeshFrameCodecTests.Encode(new RouteHeader(), [1]), new RouteHeader(), pool, out var defaulted, out _));
        Assert.Equal(nameof(MeshFrameDecoder), defaulted.Owner);
        defaulted.Dispose();
    }

    [Fact]
    public void TryDecode_HeaderThatBreaksOffAfterAField_IsInvalidHeaderAndLeavesTheHeaderClear()
    {
        // The MsgId field parses before the truncated second field fails, so a header not cleared would keep it.
        byte[] headerBytes = [.. new RouteHeader { MsgId = "Ping" }.ToByteArray(), 0x2A, 0x09, 0x61];
        var header = new RouteHeader();

        var error = DecodeFails(MeshFrameCodecTests.Raw(null, null, headerBytes, []), header: header);

        Assert.Equal(FrameError.InvalidHeader, error.Error);
        Assert.StartsWith($"InvalidHeader: The {headerBytes.Length}-byte RouteHeader does not parse: ", error.Message, StringComparison.Ordinal);
        Assert.Equal(new RouteHeader(), header);
    }

    [Fact]
    public void TryDecode_PayloadSizeThatDisagrees_SaysBothAndLeavesTheHeaderClear()
    {
        var header = new RouteHeader();
        var frame = MeshFrameCodecTests.Raw(null, null, new RouteHeader { MsgId = "Ping", PayloadSize = 9 }.ToByteArray(), new byte[8]);

        var error = DecodeFails(frame, header: header);

        Assert.Equal(FrameError.PayloadSizeMismatch, error.Error);
        Assert.Equal("PayloadSizeMismatch: RouteHeader.payload_size is 9, but the frame carries 8 payload bytes. (stream offset 0).", error.Message);
        Assert.Equal(new RouteHeader(), header);
    }

    public static TheoryData<string, byte[]> HeadersTheSenderScanGivesUpOn() => new()
    {
        { "field number 0", [0x00, 0x01] },
        { "varint value cut off", [0x08, 0x80] },
        { "sender length past the end", [0x2A, 0x05, 0x61] },
        { "sender length cut off", [0x2A, 0x80] },
        { "wire type 7", [0x0F, 0x01] },
        { "fixed64 cut off", [0xA1, 0x01, 1, 2, 3] },
    };

    [Theory]
    [MemberData(nameof(HeadersTheSenderScanGivesUpOn))]
    public void TryDecode_MalformedHeaderWithASenderCache_IsInvalidHeaderAsWithout(string description, byte[] headerBytes)
    {
        var frame = MeshFrameCodecTests.Raw(null, null, headerBytes, []);

        var cached = DecodeFails(frame, senderIds: new Utf8SenderIdCache(singleThreaded: true));
        var plain = DecodeFails(frame);

        Assert.True(cached.Error == FrameError.InvalidHeader, description);
        Assert.Equal(plain.Error, cached.Error);
    }

    [Fact]
    public void TryDecode_SenderAfterUnknownFixedWidthFields_ComesFromTheCacheWithTheFieldsKept()
    {
        var cache = new Utf8SenderIdCache(singleThreaded: true);
        Assert.True(cache.TryGetString("play-1"u8, out var shared));

        // Field 20 as fixed64 and field 21 as fixed32: unknown to RouteHeader, skipped by the sender scan.
        byte[] headerBytes = [0xA1, 0x01, 1, 2, 3, 4, 5, 6, 7, 8, 0xAD, 0x01, 9, 10, 11, 12, .. new RouteHeader { From = "play-1", MsgSeq = 3 }.ToByteArray()];
        var header = new RouteHeader();

        Assert.True(MeshFrameCodec.TryDecode(MeshFrameCodecTests.Raw(null, null, headerBytes, []), header, DecodeHarness.CheckedPool(), out _, out _, senderIds: cache));

        Assert.Same(shared, header.From);
        Assert.Equal(3UL, header.MsgSeq);
        // The unknown fields are kept, so the header serializes to as many bytes as arrived.
        Assert.Equal(headerBytes.Length, header.CalculateSize());
    }

    [Fact]
    public void TryDecode_SenderAsTheFirstField_AndALongSender_ComeFromTheCache()
    {
        var cache = new Utf8SenderIdCache(singleThreaded: true);
        var longId = new string('p', 200);
        Assert.True(cache.TryGetString("play-1"u8, out var first));
        Assert.True(cache.TryGetString(System.Text.Encoding.UTF8.GetBytes(longId), out var longShared));
        var pool = DecodeHarness.CheckedPool();
        var header = new RouteHeader();

        // From (field 5) alone serializes first; a 200-byte id needs a two-byte length varint.
        Assert.True(MeshFrameCodec.TryDecode(MeshFrameCodecTests.Encode(new RouteHeader { From = "play-1" }, []), header, pool, out _, out _, senderIds: cache));
        Assert.Same(first, header.From);
        Assert.True(MeshFrameCodec.TryDecode(MeshFrameCodecTests.Encode(new RouteHeader { From = longId, MsgSeq = 2 }, []), header, pool, out _, out _, senderIds: cache));
        Assert.Same(longShared, header.From);
        Assert.Equal(2UL, header.MsgSeq);
    }

    [Fact]
    public void Fill_FromAMessageWithoutStrings_LeavesThemEmpty_AndDropsWhatTheHeaderHeld()
    {
        var header = new RouteHeader { MsgId = "Old", From = "play-9", StageType = "room" };
        header.MergeFrom(new byte[] { 0x98, 0x06, 0x01 });

        header.Fill(new MeshMessage { MsgSeq = 4, Payload = Payload.Empty });

        Assert.Equal(new RouteHeader { MsgSeq = 4 }, header);
        Assert.Equal(string.Empty, header.MsgId);
        Assert.Equal(string.Empty, header.From);
        Assert.Equal(string.Empty, header.StageType);
    }

    [Fact]
    public void ToMessage_OfAHeaderWithoutAStageType_CarriesNone_AndWithOneCarriesIt()
    {
        Assert.Null(new RouteHeader { MsgId = "Ask" }.ToMessage(Payload.Empty).StageType);
        Assert.Equal("room", new RouteHeader { MsgId = "Ask", StageType = "room" }.ToMessage(Payload.Empty).StageType);
    }

    [Fact]
    public void SetAwaitChain_Twice_KeepsOnlyTheSecondChain()
    {
        var header = new RouteHeader();
        header.SetAwaitChain([new AwaitingStage("play-1", 1, 1), new AwaitingStage("play-2", 2, 2)]);

        header.SetAwaitChain([new AwaitingStage("play-3", 3, 3)]);

        Assert.Equal([new AwaitingStage("play-3", 3, 3)], header.GetAwaitChain()!);
    }

    /// <summary>A buffer writer that hands out exactly the size asked for, so a short request cannot hide behind slack.</summary>
    private sealed class ExactWriter : IBufferWriter<byte>
    {
        private byte[] _buffer = [];

        public int SizeHint { get; private set; }

        public byte[] Written { get; private set; } = [];

        public void Advance(int count) => Written = _buffer[..count];

        public Memory<byte> GetMemory(int sizeHint = 0) => GetBuffer(sizeHint);

        public Span<byte> GetSpan(int sizeHint = 0) => GetBuffer(sizeHint);

        private byte[] GetBuffer(int sizeHint)
        {
            SizeHint = sizeHint;
            _buffer = new byte[sizeHint];
            return _buffer;
        }
    }
}
