using System.Buffers;
using System.Buffers.Binary;
using Google.Protobuf;
using Google.Protobuf.Reflection;
using PlayHouse.Core.Codec;
using PlayHouse.Core.Mesh;
using PlayHouse.Core.Mesh.Proto;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;
using PlayHouse.Core.Tests.Codec;

namespace PlayHouse.Core.Tests.Mesh;

public sealed class MeshFrameCodecTests
{
    internal static RouteHeader FullHeader(int payloadBytes) => new()
    {
        MsgSeq = ulong.MaxValue - 1,
        ServiceId = -3,
        MsgId = "스테이지생성",
        ErrorCode = 404,
        From = "play-8638",
        StageId = long.MinValue,
        AccountId = 1234567890123,
        Sid = 42,
        IsReply = true,
        PayloadSize = payloadBytes,
        IsSystem = true,
        FromStageId = 99,
        SenderAwaits = true,
        StageType = "room",
        TimeoutMs = 30_000,
        AwaitChain = { new AwaitEdge { NodeId = "play-2", StageId = 7, MsgSeq = 12 }, new AwaitEdge { NodeId = "play-1", StageId = -1, MsgSeq = ulong.MaxValue } },
    };

    internal static byte[] Encode(RouteHeader header, byte[] payload)
    {
        var bytes = new byte[MeshFrameCodec.GetEncodedLength(header, payload.Length)];
        Assert.Equal(bytes.Length, MeshFrameCodec.Encode(bytes, header, payload));
        return bytes;
    }

    /// <summary>A mesh frame built by hand, with optional overrides of FrameLen and HeaderLen.</summary>
    internal static byte[] Raw(int? frameLengthOverride, int? headerLengthOverride, byte[] header, byte[] payload) =>
    [
        .. WireBytes.I32(frameLengthOverride ?? (4 + header.Length + payload.Length)),
        .. WireBytes.I32(headerLengthOverride ?? header.Length),
        .. header,
        .. payload,
    ];

    [Fact]
    public void Encode_MeshFrame_WritesFrameLenHeaderLenHeaderAndPayload()
    {
        var payload = WireBytes.Pattern(64);
        var header = FullHeader(payload.Length);

        var bytes = Encode(header, payload);

        var headerBytes = header.CalculateSize();
        Assert.Equal(bytes.Length - 4, BinaryPrimitives.ReadInt32LittleEndian(bytes));
        Assert.Equal(headerBytes, BinaryPrimitives.ReadInt32LittleEndian(bytes.AsSpan(4)));
        Assert.Equal(header.ToByteArray(), bytes[8..(8 + headerBytes)]);
        Assert.Equal(payload, bytes[(8 + headerBytes)..]);
    }

    [Fact]
    public void Encode_IntoBufferWriter_WritesTheSameBytesAsIntoASpan()
    {
        var payload = WireBytes.Pattern(100);
        var header = FullHeader(payload.Length);
        var writer = new ArrayBufferWriter<byte>();

        var written = MeshFrameCodec.Encode(writer, header, payload);

        Assert.Equal(Encode(header, payload), writer.WrittenSpan.ToArray());
        Assert.Equal(written, writer.WrittenCount);
    }

    [Fact]
    public void Decode_MeshFrameWithEveryFieldSet_RoundTripsThroughEveryPath()
    {
        var pool = DecodeHarness.CheckedPool();
        var payload = WireBytes.Pattern(1024);
        var sent = FullHeader(payload.Length);
        var bytes = Encode(sent, payload);

        // Incremental decoder over a span.
        using (var decoder = new MeshFrameDecoder(pool))
        {
            var header = new RouteHeader();
            ReadOnlySpan<byte> input = bytes;
            Assert.True(decoder.TryDecode(ref input, header, out var received));
            Assert.Equal(sent, header);
            Assert.Equal(payload, received.Span.ToArray());
            received.Dispose();
        }

        // Incremental decoder over a segmented sequence.
        using (var decoder = new MeshFrameDecoder(pool))
        {
            var header = new RouteHeader();
            var buffer = WireBytes.Segmented(bytes[..5], bytes[5..30], bytes[30..]);
            Assert.True(decoder.TryDecode(ref buffer, header, out var received));
            Assert.True(buffer.IsEmpty);
            Assert.Equal(sent, header);
            Assert.Equal(payload, received.Span.ToArray());
            received.Dispose();
        }

        // Stateless whole-frame decode.
        var wholeHeader = new RouteHeader();
        Assert.True(MeshFrameCodec.TryDecode(bytes, wholeHeader, pool, out var whole, out var consumed));
        Assert.Equal(bytes.Length, consumed);
        Assert.Equal(sent, wholeHeader);
        Assert.Equal(payload, whole.Span.ToArray());
        whole.Dispose();

        pool.ThrowIfLeaks();
    }

    [Fact]
    public void Decode_EmptyHeaderAndEmptyPayload_IsAValidFrame()
    {
        var pool = DecodeHarness.CheckedPool();
        var bytes = Encode(new RouteHeader(), []);
        Assert.Equal(Raw(null, null, [], []), bytes);
        using var decoder = new MeshFrameDecoder(pool);
        var header = FullHeader(0);
        ReadOnlySpan<byte> input = bytes;

        Assert.True(decoder.TryDecode(ref input, header, out var payload));

        Assert.Equal(new RouteHeader(), header);
        Assert.True(payload.IsEmpty);
        Assert.Equal(0, pool.GetStatistics().Rents);
    }

    [Fact]
    public void TryDecode_WholeFrameIncomplete_ReturnsFalse()
    {
        var pool = DecodeHarness.CheckedPool();
        var bytes = Encode(FullHeader(10), WireBytes.Pattern(10));

        for (var length = 0; length < bytes.Length; length++)
        {
            Assert.False(MeshFrameCodec.TryDecode(bytes.AsSpan(0, length), new RouteHeader(), pool, out _, out var consumed));
            Assert.Equal(0, consumed);
        }

        Assert.Equal(0, pool.GetStatistics().Rents);
    }

    [Fact]
    public void Encode_PayloadSizeDisagreeingWithThePayload_ThrowsBeforeWriting()
    {
        var destination = new byte[256];

        var error = Assert.Throws<ArgumentException>(() => MeshFrameCodec.Encode(destination, FullHeader(65), WireBytes.Pattern(64)));

        Assert.Contains("PayloadSize is 65", error.Message, StringComparison.Ordinal);
        Assert.All(destination, b => Assert.Equal(0, b));
        var unset = FullHeader(0);
        Assert.Equal(MeshFrameCodec.GetEncodedLength(unset, 64), MeshFrameCodec.Encode(destination, unset, WireBytes.Pattern(64)));
    }

    [Fact]
    public void Encode_HeaderOverTheCap_Throws()
    {
        var header = new RouteHeader { MsgId = new string('m', 100) };

        Assert.Throws<ArgumentException>(() => MeshFrameCodec.GetEncodedLength(header, 0, new MeshFrameOptions { MaxHeaderBytes = 64 }));
        Assert.Equal(8 + header.CalculateSize(), MeshFrameCodec.GetEncodedLength(header, 0));
    }

    [Fact]
    public void Encode_PayloadOverTwoMebibytes_Throws()
    {
        var header = new RouteHeader { MsgId = "Big" };

        Assert.Throws<ArgumentException>(() => MeshFrameCodec.GetEncodedLength(header, MeshFrameCodec.MaxPayloadBytes + 1));
        Assert.Throws<ArgumentException>(() => MeshFrameCodec.Encode(new byte[64], header, new byte[65], new MeshFrameOptions { MaxPayloadBytes = 64 }));
    }

    [Fact]
    public void Encode_DestinationTooShort_Throws()
    {
        var header = FullHeader(8);

        Assert.Throws<ArgumentException>(() => MeshFrameCodec.Encode(new byte[MeshFrameCodec.GetEncodedLength(header, 8) - 1], header, new byte[8]));
    }

    public static TheoryData<bool, ulong, bool> ReplyCases() => new()
    {
        { true, 1, true },
        { true, ulong.MaxValue, true },
        { true, 0, false },
        { false, 5, false },
        { false, 0, false },
    };

    [Theory]
    [MemberData(nameof(ReplyCases))]
    public void IsReplyFrame_RequiresIsReplyAndAPositiveMsgSeq(bool isReply, ulong msgSeq, bool expected)
    {
        Assert.Equal(expected, MeshFrameCodec.IsReplyFrame(new RouteHeader { IsReply = isReply, MsgSeq = msgSeq }));
    }

    [Fact]
    public void Clear_HeaderWithEveryFieldAndAnUnknownFieldSet_EqualsAFreshHeader()
    {
        // Every field the descriptor knows is set, so a field added to the proto later and missed by Clear fails here.
        var header = HeaderWithEveryFieldSet();

        // Field 99 (varint 1) is unknown to RouteHeader and lands in its unknown-field set.
        header.MergeFrom(new byte[] { 0x98, 0x06, 0x01 });
        var fresh = new RouteHeader();
        Assert.All(RouteHeader.Descriptor.Fields.InFieldNumberOrder(), f => Assert.NotEqual(f.Accessor.GetValue(fresh), f.Accessor.GetValue(header)));
        Assert.NotEqual(fresh, header);

        header.Clear();

        Assert.Equal(new RouteHeader(), header);
        Assert.Equal(0, header.CalculateSize());
    }

    [Fact]
    public void ToMessageThenFill_HeaderWithEveryFieldSet_GivesTheSameHeader()
    {
        // Every field the descriptor knows is set, so a field added to the proto later and missed by the mapping
        // between headers and mesh messages (which every mesh transport uses) fails here.
        var header = HeaderWithEveryFieldSet();

        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = true });
        var message = header.ToMessage(pool.Copy([1, 2, 3, 4, 5, 6, 7], "mapping test"));
        var again = new RouteHeader();
        again.Fill(message);
        message.Payload.Dispose();

        Assert.Equal(header, again);
        Assert.Equal(0, pool.GetStatistics().Outstanding);
    }

    [Fact]
    public void AwaitChain_RoundTripsThroughTheWireNearestFirst()
    {
        var pool = DecodeHarness.CheckedPool();
        var sent = new RouteHeader { MsgSeq = 3, MsgId = "Ask", SenderAwaits = true, FromStageId = 2 };
        sent.SetAwaitChain([new AwaitingStage("play-2", 20, 5), new AwaitingStage("play-1", 10, 4)]);
        var received = new RouteHeader();

        Assert.True(MeshFrameCodec.TryDecode(Encode(sent, []), received, pool, out _, out _));

        Assert.Equal([new AwaitingStage("play-2", 20, 5), new AwaitingStage("play-1", 10, 4)], received.GetAwaitChain()!);
        Assert.Equal(sent, received);
    }

    [Fact]
    public void NewFields_LeftAtTheirDefaults_AddNoBytesAndDecodeAsBefore()
    {
        // A request without an explicit timeout or an await chain (every frame of an old sender, and the common case)
        // encodes exactly as before fields 15 and 16 existed, so frames and simulation traces keep their sizes.
        var header = new RouteHeader { MsgSeq = 3, MsgId = "Ask", From = "play-1", StageId = 2, SenderAwaits = true, FromStageId = 1 };
        var before = header.ToByteArray();
        header.TimeoutMs = 0;
        header.SetAwaitChain(null);
        header.SetAwaitChain([]);

        Assert.Equal(before, header.ToByteArray());
        Assert.Null(header.GetAwaitChain());
        Assert.Equal(0U, RouteHeader.Parser.ParseFrom(before).TimeoutMs);
    }

    [Fact]
    public void AwaitChain_LongerThanTheCapFromAPeer_IsCutKeepingTheNearestStages()
    {
        var header = new RouteHeader();
        for (var i = 0; i < AwaitingStage.ChainLengthMax + 5; i++)
        {
            header.AwaitChain.Add(new AwaitEdge { NodeId = "play-1", StageId = i, MsgSeq = (ulong)i });
        }

        var chain = header.GetAwaitChain()!;

        Assert.Equal(AwaitingStage.ChainLengthMax, chain.Length);
        Assert.Equal(Enumerable.Range(0, AwaitingStage.ChainLengthMax).Select(i => (long)i), chain.Select(c => c.StageId));
    }

    [Fact]
    public void Options_BeyondTheLimits_AreRejected()
    {
        var pool = new MessagePool();

        Assert.Throws<ArgumentOutOfRangeException>(() => new MeshFrameDecoder(pool, new MeshFrameOptions { MaxPayloadBytes = MeshFrameCodec.MaxPayloadBytes + 1 }));
        Assert.Throws<ArgumentOutOfRangeException>(() => new MeshFrameDecoder(pool, new MeshFrameOptions { MaxHeaderBytes = MeshFrameCodec.MaxHeaderBytesLimit + 1 }));
    }

    [Fact]
    public void MaxFrameLength_IsTwoMebibytesPlusTheHeaderCapPlusHeaderLen()
    {
        Assert.Equal((2 * 1024 * 1024) + MeshFrameCodec.DefaultMaxHeaderBytes + 4, new MeshFrameOptions().MaxFrameLengthBytes);
        Assert.Equal(FrameError.None, new MeshFrameDecoder(new MessagePool()).Fault);
    }

    private static RouteHeader HeaderWithEveryFieldSet()
    {
        var header = new RouteHeader();
        foreach (var field in RouteHeader.Descriptor.Fields.InFieldNumberOrder())
        {
            if (field.IsRepeated)
            {
                var list = (System.Collections.IList)field.Accessor.GetValue(header);
                list.Add(field.FieldType == FieldType.Message ? new AwaitEdge { NodeId = "x", StageId = 7, MsgSeq = 7 } : throw new NotSupportedException($"Add a sample element for {field.Name} ({field.FieldType})."));
                continue;
            }

            object value = field.FieldType switch
            {
                FieldType.String => "x",
                FieldType.Bool => true,
                FieldType.UInt64 => 7UL,
                FieldType.Int64 => 7L,
                FieldType.Int32 => 7,
                FieldType.UInt32 => 7U,
                _ => throw new NotSupportedException($"Add a sample value for {field.Name} ({field.FieldType})."),
            };
            field.Accessor.SetValue(header, value);
        }

        return header;
    }
}
