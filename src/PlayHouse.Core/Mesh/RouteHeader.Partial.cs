namespace PlayHouse.Core.Mesh.Proto;

/// <summary>Additions to the generated <see cref="RouteHeader"/>.</summary>
public sealed partial class RouteHeader
{
    /// <summary>
    /// Resets every field, unknown fields included, so one instance can be reused for each received frame.
    /// Protobuf's MergeFrom merges rather than replaces, so a reused header must be cleared first or fields absent
    /// from the new frame would keep the previous frame's values.
    /// </summary>
    public void Clear()
    {
        MsgSeq = 0;
        ServiceId = 0;
        MsgId = string.Empty;
        ErrorCode = 0;
        From = string.Empty;
        StageId = 0;
        AccountId = 0;
        Sid = 0;
        IsReply = false;
        PayloadSize = 0;
        IsSystem = false;
        FromStageId = 0;
        SenderAwaits = false;
        StageType = string.Empty;
        _unknownFields = null;
    }
}
