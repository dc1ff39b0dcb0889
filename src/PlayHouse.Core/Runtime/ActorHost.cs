using PlayHouse.Core.Pooling;

namespace PlayHouse.Core.Runtime;

/// <summary>The runtime side of an actor: its account, its session binding and its stage.</summary>
/// <remarks>Not thread-safe; used from its stage's turns (the session binding is also read under the server's session lock).</remarks>
internal sealed class ActorHost(StageHost stage, long instance) : IActorLink
{
    /// <summary>A server-unique number for this actor object, so checkers can tell a probe actor from the live one.</summary>
    public long Instance { get; } = instance;

    public IActor User { get; set; } = null!;

    public long AccountId { get; set; }

    public ClientSession? Session { get; set; }

    public bool IsJoined { get; set; }

    /// <summary>How many times the stage handled this actor's disconnect; an expiry entry of an earlier one is stale.</summary>
    public long DisconnectGeneration { get; set; }

    /// <summary>This actor's entry in the server's ledger of waiting actors while it is disconnected; null while connected.</summary>
    public WaitingActor? Wait { get; set; }

    /// <summary>True once OnDestroy was called (or is about to be), so it never runs twice.</summary>
    public bool IsDestroyed { get; set; }

    public StageHost Host => stage;

    public long SessionId => Session?.SessionId ?? 0;

    public bool IsConnected => Session is not null;

    public IStageLink Stage => stage;

    public void SendToClient(string msgId, Payload payload)
    {
        var session = Session;
        if (session is null)
        {
            stage.Counters.AddClientPushToDisconnected();
            payload.Move("client-push").Dispose();
            return;
        }

        stage.Server.ClientPushes.Push(stage.Server, session, msgId, stage.StageId, payload);
    }

    public void LeaveStage() => stage.Post(new StageMessage { Kind = StageWorkKind.Leave, Actor = this });

    public override string ToString() => $"Actor(#{Instance}, account {AccountId}, stage {stage.StageId})";
}

/// <summary>One client session on a play server.</summary>
internal sealed class ClientSession(PlayServer server, long sessionId, IClientConnection connection)
{
    public long SessionId { get; } = sessionId;

    public IClientConnection Connection { get; } = connection;

    private volatile SessionState _state = SessionState.New;
    private volatile bool _isListed;

    /// <summary>Written under the server's session lock; read without it where a snapshot is all the reader gets anyway.</summary>
    public SessionState State
    {
        get => _state;
        set => _state = value;
    }

    public ActorHost? Actor { get; set; }

    /// <summary>
    /// True exactly while the server's session table holds this session (set and cleared with it, under its lock). A
    /// reply reads it without the lock: a single flag read under the lock was no fresher once the lock was released.
    /// </summary>
    public bool IsListed
    {
        get => _isListed;
        set => _isListed = value;
    }

    /// <summary>True once a join succeeded; a failed later join returns the session to Authenticated, not New.</summary>
    public bool AuthenticatedBefore { get; set; }

    public void Send(string msgId, ushort msgSeq, long stageId, ushort errorCode, Payload payload)
    {
        if (!Connection.TrySend(msgId, msgSeq, stageId, errorCode, payload))
        {
            server.Counters.AddClientSendRefused();
        }
    }
}

internal enum SessionState
{
    New,
    Authenticating,
    Authenticated,
    Closed,
}

/// <summary>A registered stage type: how to make the stage and its actors.</summary>
internal sealed record StageRegistration(string StageType, Func<IStageLink, IStage> StageFactory, Func<IActorLink, IActor> ActorFactory);
