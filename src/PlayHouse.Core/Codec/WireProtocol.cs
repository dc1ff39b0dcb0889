namespace PlayHouse.Core.Codec;

/// <summary>
/// Constants of PlayHouse's client TCP wire format. All integers on the wire are little-endian.
/// <code>
/// client -> server: [Len:i32][MsgIdLen:u8][MsgId:UTF-8][MsgSeq:u16][StageId:i64][Payload]
/// server -> client: [Len:i32][MsgIdLen:u8][MsgId:UTF-8][MsgSeq:u16][StageId:i64][ErrorCode:u16][OriginalSize:i32][Payload]
/// </code>
/// <c>Len</c> counts every byte after itself. <c>OriginalSize</c> 0 means a raw payload; a value above 0 means
/// the payload is LZ4-compressed (K4os's LZ4Pickler format) and inflates to that many bytes.
/// </summary>
public static class WireProtocol
{
    /// <summary>The msg id a client sends to keep its session alive; the server echoes it.</summary>
    public const string HeartbeatMsgId = "@Heart@Beat@";

    /// <summary>Size of the <c>Len</c> prefix.</summary>
    public const int LengthPrefixBytes = sizeof(int);

    /// <summary>Size of the <c>MsgIdLen</c> field.</summary>
    public const int MsgIdLengthBytes = sizeof(byte);

    /// <summary>The longest msg id, counted in UTF-8 bytes (the length field is one byte).</summary>
    public const int MaxMsgIdBytes = byte.MaxValue;

    /// <summary>Fixed fields after the msg id in a client frame: MsgSeq (2) + StageId (8).</summary>
    public const int ClientFixedFieldsBytes = sizeof(ushort) + sizeof(long);

    /// <summary>Fixed fields after the msg id in a server frame: MsgSeq (2) + StageId (8) + ErrorCode (2) + OriginalSize (4).</summary>
    public const int ServerFixedFieldsBytes = ClientFixedFieldsBytes + sizeof(ushort) + sizeof(int);

    /// <summary>The smallest client body (<c>Len</c>): an empty msg id and an empty payload, 1 + 0 + 2 + 8 = 11.</summary>
    public const int MinClientBodyBytes = MsgIdLengthBytes + ClientFixedFieldsBytes;

    /// <summary>The smallest server body (<c>Len</c>): 1 + 0 + 2 + 8 + 2 + 4 = 17.</summary>
    public const int MinServerBodyBytes = MsgIdLengthBytes + ServerFixedFieldsBytes;

    /// <summary>The largest body (<c>Len</c>) PlayHouse accepts: 2 MiB. Options may lower it, never raise it.</summary>
    public const int MaxBodyBytes = 2 * 1024 * 1024;

    /// <summary>The longest client frame header: prefix, msg id length, a 255-byte msg id and the fixed fields.</summary>
    public const int MaxClientHeaderBytes = LengthPrefixBytes + MsgIdLengthBytes + MaxMsgIdBytes + ClientFixedFieldsBytes;

    /// <summary>The longest server frame header.</summary>
    public const int MaxServerHeaderBytes = LengthPrefixBytes + MsgIdLengthBytes + MaxMsgIdBytes + ServerFixedFieldsBytes;

    /// <summary>The largest whole client or server frame on the wire: the prefix plus the largest body.</summary>
    public const int MaxFrameBytes = LengthPrefixBytes + MaxBodyBytes;
}
