using System.Diagnostics.CodeAnalysis;
using PlayHouse.Core.Pooling;

namespace PlayHouse.Core.Runtime;

/// <summary>
/// A play server's client sessions: the table of open sessions by id (a replaceable part, <see cref="NodeParts.Sessions"/>,
/// whose ids are unique across the server's transports, B14), each session's protocol state (new, authenticating,
/// authenticated, closed) and its binding to an actor, and the replies and pushes routed to a session.
/// </summary>
/// <remarks>
/// Invariant: a session is listed in the table exactly while its <see cref="ClientSession.IsListed"/> flag is set, and
/// a closed session is never listed; a session and its actor point at each other while they are bound.
/// Threading: thread-safe; one lock (none on a single-threaded node) guards the table, the states and the bindings. The
/// standard table also looks sessions up without it (<see cref="ISessionTable.ConcurrentLookups"/>), and replies read
/// the listed flag without it.
/// </remarks>
internal sealed class ClientSessions
{
    private readonly PlayServer _server;
    private readonly Lock? _gate;
    private readonly ISessionTable _table;
    private readonly bool _lookupsWithoutLock;

    // The standard table lists a session under its own id while its flag is set (ids are never reused), so a session
    // a transport holds is found by its flag; another table (a bug zoo's) is asked by id, where its flaw lives.
    private readonly bool _heldSessionsFoundByFlag;

    public ClientSessions(PlayServer server)
    {
        _server = server;
        _gate = NodeLock.Create(server.Options);
        _table = server.Parts.Sessions(server);
        _lookupsWithoutLock = _table.ConcurrentLookups;
        _heldSessionsFoundByFlag = _table is SessionTable;
    }

    public int Count
    {
        get
        {
            using (NodeLock.Enter(_gate))
            {
                return _table.Count;
            }
        }
    }

    /// <summary>Opens a session for a new connection.</summary>
    public ClientSession Open(IClientConnection connection)
    {
        using (NodeLock.Enter(_gate))
        {
            var session = _table.Open(_server, connection);
            if (!session.IsListed)
            {
                throw new InvalidOperationException($"Session {session.SessionId} was opened without being listed; the session table must list what it opens.");
            }

            return session;
        }
    }

    /// <summary>The session a frame names and its state as the frame finds it; false when it is gone or closed.</summary>
    public bool TryGetOpen(long sessionId, [NotNullWhen(true)] out ClientSession? session, out SessionState state)
    {
        if (_lookupsWithoutLock)
        {
            // The standard table looks up without the lock; the state is read after the lookup, as a close that
            // overtakes this frame would be seen by the next one anyway.
            _table.TryGet(sessionId, out session);
            state = session?.State ?? SessionState.Closed;
        }
        else
        {
            using (NodeLock.Enter(_gate))
            {
                _table.TryGet(sessionId, out session);
                state = session?.State ?? SessionState.Closed;
            }
        }

        return session is not null && state != SessionState.Closed;
    }

    /// <summary>
    /// <see cref="TryGetOpen(long, out ClientSession?, out SessionState)"/> for a transport that holds the session it
    /// opened: with the standard table the session's listed flag answers what the lookup by its id would (the flag
    /// follows the table's entry, under the same lock), without hashing the id into the table per frame.
    /// </summary>
    public bool TryGetOpen(ClientSession held, [NotNullWhen(true)] out ClientSession? session, out SessionState state)
    {
        if (!_heldSessionsFoundByFlag)
        {
            return TryGetOpen(held.SessionId, out session, out state);
        }

        // As the lookup: the flag first (the table's entry), then the state; a close clears the flag before the state.
        session = held.IsListed ? held : null;
        state = session?.State ?? SessionState.Closed;
        return session is not null && state != SessionState.Closed;
    }

    /// <summary>The client's connection closed: the session leaves the table and its actor (if any) is returned, unbound.</summary>
    public bool TryRemoveOnDisconnect(long sessionId, [NotNullWhen(true)] out ClientSession? session, out ActorHost? actor)
    {
        using (NodeLock.Enter(_gate))
        {
            actor = null;
            if (!_table.Remove(sessionId, out session))
            {
                return false;
            }

            session.IsListed = false;
            session.State = SessionState.Closed;
            actor = session.Actor;
            session.Actor = null;
            return true;
        }
    }

    /// <summary>The server closes a session: it leaves the table, and its connection closes with <paramref name="reason"/>.</summary>
    public void Close(ClientSession session, string reason)
    {
        using (NodeLock.Enter(_gate))
        {
            _table.Remove(session.SessionId, out _);
            session.IsListed = false;
            session.State = SessionState.Closed;
        }

        session.Connection.Close(reason);
    }

    /// <summary>A join starts for the session: until it ends its frames wait for authentication.</summary>
    public void BeginAuthenticating(ClientSession session)
    {
        using (NodeLock.Enter(_gate))
        {
            session.State = SessionState.Authenticating;
        }
    }

    /// <summary>
    /// Binds a joined (or re-joined) actor to the session; false when the session closed meanwhile. A session the
    /// actor was bound to before is returned in <paramref name="replaced"/>, for the caller to close.
    /// </summary>
    public bool TryBind(ClientSession session, ActorHost actor, out ClientSession? replaced)
    {
        replaced = null;
        using (NodeLock.Enter(_gate))
        {
            if (session.State == SessionState.Closed)
            {
                return false;
            }

            if (actor.Session is not null && !ReferenceEquals(actor.Session, session))
            {
                replaced = actor.Session;
                replaced.Actor = null;
            }

            session.State = SessionState.Authenticated;
            session.AuthenticatedBefore = true;
            session.Actor = actor;
            actor.Session = session;
            return true;
        }
    }

    /// <summary>A join failed: the session goes back to where it was before it (authenticated before, or new).</summary>
    public void OnJoinFailed(ClientSession session)
    {
        using (NodeLock.Enter(_gate))
        {
            if (session.State == SessionState.Authenticating)
            {
                session.State = session.AuthenticatedBefore ? SessionState.Authenticated : SessionState.New;
            }
        }
    }

    /// <summary>The actor leaves its stage: its session stays authenticated, with no actor.</summary>
    public void Unbind(ActorHost actor)
    {
        using (NodeLock.Enter(_gate))
        {
            var session = actor.Session;
            if (session is not null && ReferenceEquals(session.Actor, actor))
            {
                // The session stays authenticated; with no actor its messages get NotInStage until it joins again.
                session.Actor = null;
            }
        }
    }

    /// <summary>Sends a reply or push to a session, or drops and counts it when the session closed.</summary>
    public void Send(ClientSession session, string msgId, ushort msgSeq, long stageId, ushort errorCode, Payload payload)
    {
        // The flag follows the session's entry in the table, so this is the lookup by id without the hashing; it is
        // read without the session lock, which every frame of every session takes (one lock fewer per reply).
        if (!session.IsListed)
        {
            _server.Counters.AddReplyToClosedSession();
            _server.Observer.OnDropped(_server.NodeId, "reply-to-closed-session", msgId);
            payload.DisposeIfOwner();
            return;
        }

        session.Send(msgId, msgSeq, stageId, errorCode, payload);
    }
}
