using System.Diagnostics.CodeAnalysis;
using PlayHouse.Core.Runtime;

namespace PlayHouse.Core.Tests.Runtime;

/// <summary>
/// A play server's sessions: the protocol state a join moves a session through (and back to when the join fails), an
/// account logging in again on another session, the count and ids of sessions, replies to a session that closed, and
/// session tables other than the standard one (asked by id under the lock, or one that does not list what it opens).
/// </summary>
public sealed class ClientSessionTests
{
    [Fact]
    public void FrameArrivingWhileItsSessionsJoinIsQueued_IsRefusedNotAuthenticated_AndTheSessionStaysOpen()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var client = new FakeClient(h);
        var join = client.Authenticate(1, accountId: 7);
        var early = client.Request("Early", 1, [1]);
        h.Pump();

        Assert.Equal((ErrorCodes.NotAuthenticated, ErrorCodes.Success), (client.ReplyTo(early).ErrorCode, client.ReplyTo(join).ErrorCode));
        Assert.Equal((1L, (string?)null), (h.Play.Counters.ClientMessagesBeforeAuthentication, client.ClosedReason));
        Assert.Contains((ErrorCodes.Describe(ErrorCodes.NotAuthenticated), "Early"), h.Events.Dropped);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void FailedFirstJoin_LeavesTheSessionNew_SoItsNextPlainMessageClosesIt()
    {
        using var h = new RuntimeHarness(new ServerOptions());
        var client = new FakeClient(h);
        var join = client.Authenticate(99, accountId: 7);
        h.Pump();
        var plain = client.Request("Plain", 99, [1]);
        h.Pump();

        Assert.Equal(ErrorCodes.StageNotFound, client.ReplyTo(join).ErrorCode);
        Assert.DoesNotContain(client.Received, f => f.MsgSeq == plain);
        Assert.Equal($"first message was 'Plain', expected '{h.Play.Options.AuthenticateMsgId}'", client.ClosedReason);
        Assert.Equal(1L, h.Play.Counters.SessionsClosedBeforeAuthentication);
        Assert.Contains((PlayServer.FirstMessageNotAuthenticateReason, "Plain"), h.Events.Dropped);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void FailedJoinAfterAnEarlierOne_LeavesTheSessionAuthenticated_SoItsNextMessageIsRefusedNotInStage()
    {
        // No default stage type: a join finds a stage or fails with StageNotFound.
        using var h = new RuntimeHarness(new ServerOptions());
        h.CreateStage(1);
        var client = h.Join(1, accountId: 7);
        h.Play.CloseStage(1);
        h.Pump();
        var rejoin = client.Authenticate(2, accountId: 7);
        h.Pump();
        var plain = client.Request("Plain", 2, [1]);
        h.Pump();

        Assert.Equal((ErrorCodes.StageNotFound, ErrorCodes.NotInStage), (client.ReplyTo(rejoin).ErrorCode, client.ReplyTo(plain).ErrorCode));
        Assert.Null(client.ClosedReason);
        Assert.Contains((ErrorCodes.Describe(ErrorCodes.NotInStage), "Plain"), h.Events.Dropped);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void AccountLoggingInOnASecondSession_ClosesTheFirst_AndRepliesGoToTheSecond()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var first = h.Join(1, accountId: 7);
        var second = h.Join(1, accountId: 7);
        var stale = first.Request("Stale", 1, [1]);
        var fresh = second.Request("Fresh", 1, [2]);
        h.Pump();

        Assert.Equal($"account 7 logged in on session {second.SessionId}", first.ClosedReason);
        Assert.Null(second.ClosedReason);
        Assert.DoesNotContain(first.Received, f => f.MsgSeq == stale);
        Assert.Equal([2], second.ReplyTo(fresh).Payload);
        Assert.Equal((1, 1), (h.Play.SessionCount, h.Play.ActorCount));
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void ActorReconnectingOnANewSession_NoLongerWaitsForItsAccount()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var first = h.Join(1, accountId: 7);
        first.Disconnect();
        h.Pump();
        var waitingAfterTheDisconnect = h.Play.DisconnectedActorCount;

        var second = h.Join(1, accountId: 7);

        Assert.Equal((1, 0), (waitingAfterTheDisconnect, h.Play.DisconnectedActorCount));
        Assert.Equal(["OnJoinStage 7", "OnPostJoinStage 7", "OnConnectionChanged 7 False", "OnConnectionChanged 7 True"], h.Stages[1].Callbacks);
        Assert.Null(second.ClosedReason);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void ReplyToASessionThatDisconnectedMeanwhile_IsDroppedAndCounted_NotSent()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var client = h.Join(1, accountId: 7);
        var framesBefore = client.Received.Count;
        client.Request("Late", 1, [1]);
        client.Disconnect();
        h.Pump();

        Assert.Equal(framesBefore, client.Received.Count);
        Assert.Equal(1L, h.Play.Counters.RepliesToClosedSessions);
        Assert.Contains(("reply-to-closed-session", "Late"), h.Events.Dropped);
        Assert.Equal("OnConnectionChanged 7 False", h.Stages[1].Callbacks[^1]);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void ReplyToASessionTheServerClosed_IsDroppedAndCounted_NotSent()
    {
        using var h = new RuntimeHarness();
        h.CreateStage(1);
        var first = h.Join(1, accountId: 7);
        var held = new List<Packet>();
        h.Stages[1].OnClient = (_, _, packet) =>
        {
            held.Add(packet);
            return ValueTask.CompletedTask;
        };
        first.Request("Held", 1, [1]);
        h.Pump();
        var framesBefore = first.Received.Count;

        // The second login closes the first session while its request waits for its answer.
        var second = new FakeClient(h);
        second.Authenticate(1, accountId: 7);
        h.Pump();
        h.Stages[1].Link.Reply(held.Single(), ErrorCodes.Success);

        Assert.NotNull(first.ClosedReason);
        Assert.Equal(framesBefore, first.Received.Count);
        Assert.Equal(1L, h.Play.Counters.RepliesToClosedSessions);
        Assert.Contains(("reply-to-closed-session", "Held"), h.Events.Dropped);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void Sessions_AreNumberedFromOne_AndCountedUntilTheyDisconnect_WhileADisconnectOfAnUnknownIdChangesNothing()
    {
        using var h = new RuntimeHarness();
        var clients = new[] { new FakeClient(h), new FakeClient(h), new FakeClient(h) };
        var afterConnects = h.Play.SessionCount;

        clients[1].Disconnect();
        clients[1].Disconnect();
        h.Play.Disconnect(1000);

        Assert.Equal([1L, 2L, 3L], clients.Select(c => c.SessionId));
        Assert.Equal((3, 2), (afterConnects, h.Play.SessionCount));
    }

    [Fact]
    public void HeldSession_WithATableThatIsNotTheStandardOne_IsLookedUpByIdInThatTable()
    {
        var table = new DictionarySessionTable(listsWhatItOpens: true);
        using var h = new RuntimeHarness(parts: NodeParts.Standard with { Sessions = _ => table });
        h.CreateStage(1);

        // Frames by id go through the table under the lock (it declares no concurrent lookups).
        var client = h.Join(1, accountId: 7);
        var echoed = client.Request("ById", 1, [1]);
        h.Pump();
        Assert.True(table.TryGet(client.SessionId, out var session));

        // The table loses the session while its flag still says listed: a held frame must ask the table.
        table.Forget(client.SessionId);
        h.Play.OnClientFrame(session, "Held", 9, 1, h.Bytes(2));
        h.Pump();

        Assert.Equal([1], client.ReplyTo(echoed).Payload);
        Assert.True(session.IsListed);
        Assert.DoesNotContain(client.Received, f => f.MsgSeq == 9);
        Assert.Contains(("frame-from-closed-session", "Held"), h.Events.Dropped);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void SessionTableThatDoesNotListWhatItOpens_IsRefusedAtTheConnect()
    {
        var table = new DictionarySessionTable(listsWhatItOpens: false);
        using var h = new RuntimeHarness(parts: NodeParts.Standard with { Sessions = _ => table });

        var error = Assert.Throws<InvalidOperationException>(() => h.Play.Connect(new NullConnection()));

        Assert.Equal("Session 1 was opened without being listed; the session table must list what it opens.", error.Message);
        Assert.Equal(0, h.Play.SessionCount);
    }

    /// <summary>A session table that is not the standard one: a plain dictionary, looked up under the server's lock.</summary>
    private sealed class DictionarySessionTable(bool listsWhatItOpens) : ISessionTable
    {
        private readonly Dictionary<long, ClientSession> _sessions = [];
        private long _lastSessionId;

        public int Count => _sessions.Count;

        public ClientSession Open(PlayServer server, IClientConnection connection)
        {
            var session = new ClientSession(server, ++_lastSessionId, connection) { IsListed = listsWhatItOpens };
            if (listsWhatItOpens)
            {
                _sessions.Add(session.SessionId, session);
            }

            return session;
        }

        public bool TryGet(long sessionId, [NotNullWhen(true)] out ClientSession? session) => _sessions.TryGetValue(sessionId, out session);

        public bool Remove(long sessionId, [NotNullWhen(true)] out ClientSession? session) => _sessions.Remove(sessionId, out session);

        /// <summary>Drops a session without the server knowing, as a flawed table would.</summary>
        public void Forget(long sessionId) => _sessions.Remove(sessionId);
    }

    private sealed class NullConnection : IClientConnection
    {
        public bool TrySend(string msgId, ushort msgSeq, long stageId, ushort errorCode, PlayHouse.Core.Pooling.Payload payload)
        {
            payload.DisposeIfOwner();
            return true;
        }

        public void Close(string reason)
        {
        }
    }
}
