using System.Collections.Concurrent;
using System.Diagnostics.CodeAnalysis;

namespace PlayHouse.Core.Runtime;

/// <summary>
/// A play server's client sessions by id: the component <see cref="NodeParts.Sessions"/> builds, one per play server,
/// called under the server's session lock. It numbers each new session and finds a session by the id its transport
/// hands back with every frame, so ids must be unique across all the server's transports: PlayHouse's TCP and
/// WebSocket transports each numbered from 1 into one table, and a client's frames and replies reached the session of
/// the other transport's client with the same number (B14).
/// </summary>
/// <remarks>
/// Not thread-safe by itself; the play server holds its session lock around every call, except lookups by a table
/// that declares <see cref="ConcurrentLookups"/>.
/// </remarks>
internal interface ISessionTable
{
    int Count { get; }

    /// <summary>
    /// True when <see cref="TryGet"/> is safe while another thread opens or removes a session under the lock, so the
    /// server looks a frame's session up without its session lock (taken by every frame of every session otherwise).
    /// </summary>
    bool ConcurrentLookups => false;

    /// <summary>Gives a newly connected client its session (and session id) and lists it.</summary>
    ClientSession Open(PlayServer server, IClientConnection connection);

    bool TryGet(long sessionId, [NotNullWhen(true)] out ClientSession? session);

    /// <summary>Unlists the session with this id; false when none is listed under it.</summary>
    bool Remove(long sessionId, [NotNullWhen(true)] out ClientSession? session);
}

/// <summary>
/// The standard session table: one 64-bit counter for every transport of the server, so ids never meet. Lookups are
/// safe beside the opens and removes (a concurrent dictionary), so the server's frames look their sessions up
/// without the session lock; opens and removes still run under it, one at a time.
/// </summary>
internal sealed class SessionTable : ISessionTable
{
    private readonly ConcurrentDictionary<long, ClientSession> _sessions = new();
    private long _lastSessionId;
    private int _count;

    // Kept apart from the dictionary, whose Count takes every one of its internal locks.
    public int Count => _count;

    public bool ConcurrentLookups => true;

    public ClientSession Open(PlayServer server, IClientConnection connection)
    {
        var session = new ClientSession(server, ++_lastSessionId, connection) { IsListed = true };
        if (!_sessions.TryAdd(session.SessionId, session))
        {
            throw new InvalidOperationException($"Session id {session.SessionId} is already listed.");
        }

        _count++;
        return session;
    }

    public bool TryGet(long sessionId, [NotNullWhen(true)] out ClientSession? session) => _sessions.TryGetValue(sessionId, out session);

    public bool Remove(long sessionId, [NotNullWhen(true)] out ClientSession? session)
    {
        if (!_sessions.TryRemove(sessionId, out session))
        {
            return false;
        }

        _count--;
        return true;
    }
}
