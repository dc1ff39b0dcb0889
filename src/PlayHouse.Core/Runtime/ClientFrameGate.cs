namespace PlayHouse.Core.Runtime;

/// <summary>What a play server does with a client's frame, by the session's state and the frame's msg id.</summary>
internal enum FrameAdmission
{
    /// <summary>A heartbeat: echoed.</summary>
    Heartbeat,

    /// <summary>A new session's first message is not authentication: the session is closed.</summary>
    FirstMessageNotAuthenticate,

    /// <summary>Authentication of a new session: it joins its stage.</summary>
    Join,

    /// <summary>A message while the session's join is still running: refused with NotAuthenticated.</summary>
    NotAuthenticatedYet,

    /// <summary>The session is authenticated: the frame is routed (to a join, or to its actor's stage).</summary>
    Authenticated,
}

/// <summary>
/// The session protocol's gate: the order in which a play server applies its rules to a client's frame. The standard
/// part recognises a heartbeat first, in any state, before authentication too, so a client may start its heartbeat as
/// soon as it connects; only then does the authenticate-first rule apply (PlayHouse applied that rule first and closed
/// sessions whose first frame was a heartbeat, B16).
/// </summary>
internal interface IClientFrameGate
{
    FrameAdmission Admit(SessionState state, string msgId, string authenticateMsgId);
}

/// <summary>The standard gate: heartbeats in any state, then authenticate first.</summary>
internal sealed class StandardClientFrameGate : IClientFrameGate
{
    public static StandardClientFrameGate Instance { get; } = new();

    public FrameAdmission Admit(SessionState state, string msgId, string authenticateMsgId)
    {
        if (string.Equals(msgId, PlayServer.HeartbeatMsgId, StringComparison.Ordinal))
        {
            return FrameAdmission.Heartbeat;
        }

        return state switch
        {
            SessionState.New => string.Equals(msgId, authenticateMsgId, StringComparison.Ordinal) ? FrameAdmission.Join : FrameAdmission.FirstMessageNotAuthenticate,
            SessionState.Authenticating => FrameAdmission.NotAuthenticatedYet,
            _ => FrameAdmission.Authenticated,
        };
    }
}
