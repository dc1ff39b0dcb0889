using System.Buffers.Binary;
using System.Collections.Immutable;
using System.Globalization;
using System.Text;
using FsCheck;
using FsCheck.Fluent;
using Google.Protobuf;
using PlayHouse.Core.Codec;
using PlayHouse.Core.Mesh;
using PlayHouse.Core.Mesh.Proto;

namespace PlayHouse.Properties.Tests.Machinery;

/// <summary>Which framed stream a case is: client -> server, server -> client, or server -> server (mesh).</summary>
public enum WireKind
{
    Client,
    Server,
    Mesh,
}

/// <summary>How a frame's size stands to the decoder's limit.</summary>
public enum FrameSize
{
    /// <summary>A payload of a few bytes.</summary>
    Small,

    /// <summary>No payload at all.</summary>
    Empty,

    /// <summary>Exactly the largest body (client and server: <c>Len</c> = MaxBodyBytes; mesh: payload = MaxPayloadBytes).</summary>
    AtMax,

    /// <summary>One byte past the largest body (mesh: the payload one byte past its limit).</summary>
    OverMaxByOne,

    /// <summary>Mesh only: FrameLen one byte past the largest frame the options accept (client and server: as OverMaxByOne).</summary>
    FrameOverMaxByOne,
}

/// <summary>What is wrong with the last frame of a case, if anything.</summary>
public enum WireTamper
{
    None,

    /// <summary>The stream ends a few bytes early.</summary>
    Truncate,

    /// <summary>The length prefix is negative.</summary>
    NegativeLength,

    /// <summary>Client and server: MsgIdLen runs past the body. Mesh: HeaderLen runs past the frame.</summary>
    FieldPastFrame,

    /// <summary>Client and server: the msg id is not UTF-8. Mesh: the header does not parse.</summary>
    BadHeader,

    /// <summary>Server: OriginalSize says compressed and no decompressor is set. Mesh: payload_size disagrees.</summary>
    HeaderDisagrees,
}

/// <summary>One frame of a case: its size against the limit, its msg id (length in UTF-8 bytes) and its numbers.</summary>
public sealed record WireFrame(FrameSize Size, int MsgIdBytes, bool MultiByteMsgId, ushort MsgSeq, long StageId, int SmallPayloadBytes, ushort ErrorCode, byte Fill)
{
    public override string ToString() => string.Create(
        CultureInfo.InvariantCulture,
        $"{Size} frame (msg id {MsgIdBytes} B{(MultiByteMsgId ? ", multi-byte" : "")}, seq {MsgSeq}, stage {StageId}, small payload {SmallPayloadBytes} B, error {ErrorCode}, fill 0x{Fill:x2})");
}

/// <summary>
/// A framed byte stream for the decoder differential: a kind, the decoder's limit (client and server: MaxBodyBytes;
/// mesh: MaxPayloadBytes, with the header limit <see cref="HeaderSlackBytes"/> above the largest header), one to three
/// frames and what is wrong with the last one.
/// </summary>
public sealed record WireCase(WireKind Kind, int LimitBytes, int HeaderSlackBytes, ImmutableArray<WireFrame> Frames, WireTamper Tamper)
{
    public override string ToString() => string.Create(
        CultureInfo.InvariantCulture,
        $"{Kind} stream, limit {LimitBytes} B, header slack {HeaderSlackBytes}, tamper {Tamper}, {Frames.Length} frame(s):\n    {string.Join("\n    ", Frames)}");

    /// <summary>The decoder options for client and server frames.</summary>
    public FrameDecoderOptions FrameOptions => new() { MaxBodyBytes = LimitBytes };

    /// <summary>The mesh decoder's options: the payload limit, and the header limit just above (or below) the largest header.</summary>
    public MeshFrameOptions MeshOptions => new()
    {
        MaxPayloadBytes = LimitBytes,
        MaxHeaderBytes = Math.Clamp(Frames.Select((f, i) => MeshHeader(f, i == Frames.Length - 1 ? Tamper : WireTamper.None).CalculateSize()).Max() + HeaderSlackBytes, 0, MeshFrameCodec.MaxHeaderBytesLimit),
    };

    /// <summary>The stream's bytes, written from the byte layout (not with the encoders, which refuse the malformed frames).</summary>
    public byte[] Build()
    {
        var bytes = new List<byte>();
        for (var i = 0; i < Frames.Length; i++)
        {
            var tamper = i == Frames.Length - 1 ? Tamper : WireTamper.None;
            bytes.AddRange(Kind == WireKind.Mesh ? BuildMesh(Frames[i], tamper) : BuildFrame(Frames[i], tamper));
        }

        if (Tamper == WireTamper.Truncate && bytes.Count > 1)
        {
            bytes.RemoveRange(bytes.Count - Math.Min(3, bytes.Count - 1), Math.Min(3, bytes.Count - 1));
        }

        return [.. bytes];
    }

    private byte[] BuildFrame(WireFrame frame, WireTamper tamper)
    {
        var fixedBytes = Kind == WireKind.Server ? WireProtocol.ServerFixedFieldsBytes : WireProtocol.ClientFixedFieldsBytes;
        var headerRoom = LimitBytes - WireProtocol.MsgIdLengthBytes - fixedBytes;
        var msgId = MsgId(frame, Math.Min(frame.MsgIdBytes, Math.Max(0, headerRoom)));
        if (tamper == WireTamper.BadHeader)
        {
            // 0xFF never occurs in UTF-8.
            msgId = [.. Enumerable.Repeat((byte)0xFF, Math.Max(1, msgId.Length))];
        }

        var headerBytes = WireProtocol.MsgIdLengthBytes + msgId.Length + fixedBytes;
        var bodyBytes = frame.Size switch
        {
            FrameSize.Empty => headerBytes,
            FrameSize.AtMax => Math.Max(headerBytes, LimitBytes),
            FrameSize.OverMaxByOne or FrameSize.FrameOverMaxByOne => Math.Max(headerBytes, LimitBytes + 1),
            _ => Math.Min(Math.Max(headerBytes, LimitBytes), headerBytes + frame.SmallPayloadBytes),
        };
        var buffer = new byte[WireProtocol.LengthPrefixBytes + bodyBytes];
        BinaryPrimitives.WriteInt32LittleEndian(buffer, tamper == WireTamper.NegativeLength ? -1 - frame.SmallPayloadBytes : bodyBytes);
        buffer[4] = tamper == WireTamper.FieldPastFrame ? byte.MaxValue : (byte)msgId.Length;
        msgId.CopyTo(buffer.AsSpan(5));
        var fields = buffer.AsSpan(5 + msgId.Length);
        BinaryPrimitives.WriteUInt16LittleEndian(fields, frame.MsgSeq);
        BinaryPrimitives.WriteInt64LittleEndian(fields[2..], frame.StageId);
        if (Kind == WireKind.Server)
        {
            BinaryPrimitives.WriteUInt16LittleEndian(fields[10..], frame.ErrorCode);
            BinaryPrimitives.WriteInt32LittleEndian(fields[12..], tamper == WireTamper.HeaderDisagrees ? 1 + frame.SmallPayloadBytes : 0);
        }

        Fill(buffer.AsSpan(WireProtocol.LengthPrefixBytes + headerBytes), frame.Fill);
        return buffer;
    }

    private byte[] BuildMesh(WireFrame frame, WireTamper tamper)
    {
        var header = MeshHeader(frame, tamper);
        var headerBytes = tamper == WireTamper.BadHeader ? [0xFF, 0xFF, 0xFF] : header.ToByteArray();

        // FrameOverMaxByOne: FrameLen = the largest the options accept, plus one; the payload fills the rest.
        var payloadBytes = frame.Size == FrameSize.FrameOverMaxByOne
            ? Math.Max(0, MeshOptions.MaxFrameLengthBytes + 1 - MeshFrameCodec.HeaderLengthBytes - headerBytes.Length)
            : MeshPayloadBytes(frame);
        var frameLength = MeshFrameCodec.HeaderLengthBytes + headerBytes.Length + payloadBytes;
        var buffer = new byte[MeshFrameCodec.FrameLengthBytes + frameLength];
        BinaryPrimitives.WriteInt32LittleEndian(buffer, tamper == WireTamper.NegativeLength ? -1 - frame.SmallPayloadBytes : frameLength);
        BinaryPrimitives.WriteInt32LittleEndian(buffer.AsSpan(4), tamper == WireTamper.FieldPastFrame ? frameLength : headerBytes.Length);
        headerBytes.CopyTo(buffer.AsSpan(MeshFrameCodec.PrefixBytes));
        Fill(buffer.AsSpan(MeshFrameCodec.PrefixBytes + headerBytes.Length), frame.Fill);
        return buffer;
    }

    /// <summary>A mesh frame's payload length (for FrameOverMaxByOne it depends on the options and is set while building).</summary>
    private int MeshPayloadBytes(WireFrame frame) => frame.Size switch
    {
        FrameSize.Empty or FrameSize.FrameOverMaxByOne => 0,
        FrameSize.AtMax => LimitBytes,
        FrameSize.OverMaxByOne => LimitBytes + 1,
        _ => Math.Min(LimitBytes, frame.SmallPayloadBytes),
    };

    /// <summary>A mesh frame's RouteHeader: payload_size set on every other frame, wrong when the tamper says so.</summary>
    private RouteHeader MeshHeader(WireFrame frame, WireTamper tamper)
    {
        var payloadBytes = MeshPayloadBytes(frame);
        return Header(frame, tamper == WireTamper.HeaderDisagrees ? payloadBytes + 1 : frame.MsgSeq % 2 == 0 ? payloadBytes : 0);
    }

    private static RouteHeader Header(WireFrame frame, int payloadSize)
    {
        var header = new RouteHeader
        {
            MsgSeq = frame.MsgSeq,
            MsgId = Encoding.UTF8.GetString(MsgId(frame, frame.MsgIdBytes)),
            StageId = frame.StageId,
            ErrorCode = frame.ErrorCode,
            IsReply = frame.MsgSeq % 3 == 0,
            PayloadSize = payloadSize,
        };
        if (frame.MultiByteMsgId)
        {
            header.From = "play-" + frame.Fill.ToString(CultureInfo.InvariantCulture);
        }

        return header;
    }

    private static byte[] MsgId(WireFrame frame, int bytes)
    {
        // Three-byte characters first when asked for, ASCII for the rest, so the id is exactly that many UTF-8 bytes.
        var text = new StringBuilder();
        var left = bytes;
        while (frame.MultiByteMsgId && left >= 3)
        {
            text.Append('한');
            left -= 3;
        }

        for (var i = 0; i < left; i++)
        {
            text.Append((char)('a' + ((i + frame.Fill) % 26)));
        }

        return Encoding.UTF8.GetBytes(text.ToString());
    }

    private static void Fill(Span<byte> payload, byte seed)
    {
        for (var i = 0; i < payload.Length; i++)
        {
            payload[i] = (byte)(seed + (i * 7));
        }
    }

    public static Gen<WireCase> Cases(WireKind? kind = null)
    {
        var frame =
            from size in Gen.Frequency((4, Gen.Constant(FrameSize.Small)), (1, Gen.Constant(FrameSize.Empty)), (3, Gen.Constant(FrameSize.AtMax)), (2, Gen.Constant(FrameSize.OverMaxByOne)), (1, Gen.Constant(FrameSize.FrameOverMaxByOne)))
            from msgIdBytes in Gen.Frequency((6, Gen.Choose(0, 24)), (1, Gen.Choose(200, 255)))
            from multiByte in Gen.Frequency((3, Gen.Constant(false)), (1, Gen.Constant(true)))
            from seq in Gen.Choose(0, ushort.MaxValue)
            from stage in Gen.Choose(int.MinValue, int.MaxValue)
            from small in Gen.Choose(0, 40)
            from error in Gen.Choose(0, ushort.MaxValue)
            from fill in Gen.Choose(0, 255)
            select new WireFrame(size, msgIdBytes, multiByte, (ushort)seq, stage * 3L, small, (ushort)error, (byte)fill);
        return
            from k in kind is { } fixedKind ? Gen.Constant(fixedKind) : Gen.Elements(WireKind.Client, WireKind.Server, WireKind.Mesh)
            from limit in Gen.Frequency((3, Gen.Choose(0, 96)), (2, Gen.Choose(97, 400)))
            from slack in Gen.Elements(0, 0, 1, 5, -1)
            from count in Gen.Choose(1, 3)
            from frames in Gen.ListOf(frame, count)
            from tamper in Gen.Frequency((6, Gen.Constant(WireTamper.None)), (1, Gen.Constant(WireTamper.Truncate)), (1, Gen.Constant(WireTamper.NegativeLength)), (1, Gen.Constant(WireTamper.FieldPastFrame)), (1, Gen.Constant(WireTamper.BadHeader)), (1, Gen.Constant(WireTamper.HeaderDisagrees)))
            select new WireCase(k, k == WireKind.Mesh ? limit : MinBody(k) + limit, slack, [.. frames], tamper);
    }

    /// <summary>The smallest body a client or server decoder accepts as its limit.</summary>
    public static int MinBody(WireKind kind) => kind == WireKind.Server ? WireProtocol.MinServerBodyBytes : WireProtocol.MinClientBodyBytes;

    public static Arbitrary<WireCase> Arbitrary(WireKind? kind = null) => Arb.From(Cases(kind), Shrink);

    /// <summary>Fewer frames, no tamper, then smaller frames and limits.</summary>
    public static IEnumerable<WireCase> Shrink(WireCase wire)
    {
        ArgumentNullException.ThrowIfNull(wire);
        for (var i = 0; i < wire.Frames.Length && wire.Frames.Length > 1; i++)
        {
            yield return wire with { Frames = wire.Frames.RemoveAt(i) };
        }

        if (wire.Tamper != WireTamper.None)
        {
            yield return wire with { Tamper = WireTamper.None };
        }

        if (wire.HeaderSlackBytes != 0)
        {
            yield return wire with { HeaderSlackBytes = 0 };
        }

        var floor = wire.Kind == WireKind.Mesh ? 0 : MinBody(wire.Kind);
        if (wire.LimitBytes > floor)
        {
            yield return wire with { LimitBytes = floor + ((wire.LimitBytes - floor) / 2) };
            yield return wire with { LimitBytes = wire.LimitBytes - 1 };
        }

        for (var i = 0; i < wire.Frames.Length; i++)
        {
            var f = wire.Frames[i];
            if (f.MsgIdBytes > 0)
            {
                yield return wire with { Frames = wire.Frames.SetItem(i, f with { MsgIdBytes = f.MsgIdBytes / 2 }) };
            }

            if (f.MultiByteMsgId)
            {
                yield return wire with { Frames = wire.Frames.SetItem(i, f with { MultiByteMsgId = false }) };
            }

            if (f.SmallPayloadBytes > 0)
            {
                yield return wire with { Frames = wire.Frames.SetItem(i, f with { SmallPayloadBytes = f.SmallPayloadBytes / 2 }) };
            }

            if (f.MsgSeq != 0 || f.StageId != 0 || f.ErrorCode != 0 || f.Fill != 0)
            {
                yield return wire with { Frames = wire.Frames.SetItem(i, f with { MsgSeq = 0, StageId = 0, ErrorCode = 0, Fill = 0 }) };
            }
        }
    }
}
