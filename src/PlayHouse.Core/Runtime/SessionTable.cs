using System.Diagnostics.CodeAnalysis;

namespace PlayHouse.Core.Runtime;

/// <summary>
/// A play server's client sessions by id: the component <see cref="NodeParts.Sessions"/> builds, one per play server,
/// called under the server's session lock. It numbers each new session and finds a session by the id its transport
/// hands back with every frame, so ids must be unique across all the server's transports: PlayHouse's TCP and
/// WebSocket transports each numbered from 1 into one table, and a client's frames and replies reached the session of
/// the other transport's client with the same number (B14).
/// </summary>
/// <remarks>Not thread-safe by itself; the play server holds its session lock around every call.</remarks>
internal interface ISessionTable
{
    int Count { get; }

    /// <summary>Gives a newly connected client its session (and session id) and lists it.</summary>
    ClientSession Open(PlayServer server, IClientConnection connection);

    bool TryGet(long sessionId, [NotNullWhen(true)] out ClientSession? session);

    /// <summary>Unlists the session with this id; false when none is listed under it.</summary>
    bool Remove(long sessionId, [NotNullWhen(true)] out ClientSession? session);
}

/// <summary>The standard session table: one 64-bit counter for every transport of the server, so ids never meet.</summary>
internal sealed class SessionTable : ISessionTable
{
    private readonly Dictionary<long, ClientSession> _sessions = [];
    private long _lastSessionId;

    public int Count => _sessions.Count;

    public ClientSession Open(PlayServer server, IClientConnection connection)
    {
        var session = new ClientSession(server, ++_lastSessionId, connection) { IsListed = true };
        _sessions.Add(session.SessionId, session);
        return session;
    }

    public bool TryGet(long sessionId, [NotNullWhen(true)] out ClientSession? session) => _sessions.TryGetValue(sessionId, out session);

    public bool Remove(long sessionId, [NotNullWhen(true)] out ClientSession? session) => _sessions.Remove(sessionId, out session);
}
