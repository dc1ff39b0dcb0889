using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;

namespace PlayHouse.Core.Tests.Runtime;

/// <summary>
/// A transport that holds the session the server opened for it (the simulator's sessions) hands frames over with the
/// session instead of its id. With the standard session table the session's listed flag stands in for the lookup by
/// id: every frame must be answered exactly as the same frame by id is, and a frame after the session closed must be
/// dropped as one by id is.
/// </summary>
public sealed class HeldSessionTests
{
    [Fact]
    public void FramesFromAHeldSession_AreAnsweredAsTheSameFramesByIdAre()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var byId = new RecordingConnection();
        var byIdSession = h.Play.Connect(byId);
        var held = new RecordingConnection();
        var heldSession = h.Play.ConnectSession(held);

        // The same script on both: a heartbeat before authentication, the join, requests in and out of the stage, a send,
        // and a second authentication.
        foreach (var (msgId, seq, stageId) in Script(h.Play.Options.AuthenticateMsgId))
        {
            h.Play.OnClientFrame(byIdSession, msgId, seq, stageId, Body(h, msgId, seq, accountId: 7));
            h.Play.OnClientFrame(heldSession, msgId, seq, stageId, Body(h, msgId, seq, accountId: 8));
            h.Pump();
        }

        Assert.Equal(6, byId.Frames.Count);
        Assert.Equal(byId.Frames.Select(f => (f.MsgId, f.MsgSeq, f.ErrorCode)), held.Frames.Select(f => (f.MsgId, f.MsgSeq, f.ErrorCode)));
        Assert.Equal(0, h.Play.UnansweredRequestCount);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void FrameFromAHeldSessionAfterItsDisconnect_IsDroppedUnanswered_AndItsPayloadReturned()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var held = new RecordingConnection();
        var session = h.Play.ConnectSession(held);
        h.Play.OnClientFrame(session, h.Play.Options.AuthenticateMsgId, 1, 1, h.Bytes(BitConverter.GetBytes(7L)));
        h.Pump();
        var framesAfterJoin = held.Frames.Count;

        h.Play.Disconnect(session.SessionId);
        h.Play.OnClientFrame(session, "Echo", 2, 1, h.Bytes(2));
        h.Pump();

        Assert.Equal(1, framesAfterJoin);
        Assert.Single(held.Frames);
        Assert.Empty(h.Stages[1].Dispatched);
        Assert.Equal(0, h.Play.UnansweredRequestCount);
        h.Pool.ThrowIfLeaks();
    }

    private static IEnumerable<(string MsgId, ushort Seq, long StageId)> Script(string authenticateMsgId) =>
    [
        (PlayServer.HeartbeatMsgId, 1, 1),
        (authenticateMsgId, 2, 1),
        ("Echo", 3, 1),
        ("Elsewhere", 4, 99),
        ("OneWay", 0, 1),
        ("Echo", 5, 1),
        (authenticateMsgId, 6, 1),
    ];

    private static Payload Body(RuntimeHarness h, string msgId, ushort seq, long accountId) =>
        msgId == h.Play.Options.AuthenticateMsgId ? h.Bytes(BitConverter.GetBytes(accountId)) : h.Bytes((byte)seq);

    /// <summary>Records what the server sends one session.</summary>
    private sealed class RecordingConnection : IClientConnection
    {
        public List<ReceivedFrame> Frames { get; } = [];

        public bool TrySend(string msgId, ushort msgSeq, long stageId, ushort errorCode, Payload payload)
        {
            Frames.Add(new ReceivedFrame(msgId, msgSeq, stageId, errorCode, payload.Span.ToArray()));
            payload.DisposeIfOwner();
            return true;
        }

        public void Close(string reason)
        {
        }
    }
}
