using PlayHouse.Core.Collections;
using PlayHouse.Core.Pooling;

namespace PlayHouse.Core.Runtime;

/// <summary>
/// Hosts stages and client sessions. The dispatcher lives here: it routes client frames and mesh messages to
/// stages by id, creates stages exactly once, and answers requests for unknown stages with
/// <see cref="ErrorCodes.StageNotFound"/>. This type is the server's API and its node-wide counts; the work is done by
/// its parts: the stages (<see cref="StageDirectory"/>), the sessions (<see cref="ClientSessions"/>), the client
/// frames (<see cref="ClientFrameRouting"/>) and the inbound mesh messages (<see cref="MeshRouting"/>).
/// </summary>
/// <remarks>
/// Invariant: a handler counts in <see cref="HandlersInProgress"/> from its start to the end of its work (never more
/// ends than starts), and an actor in <see cref="ActorCount"/> while it is joined to one of the server's stages.
/// Thread-safe: transports call in from any thread; stage work runs on the executor.
/// </remarks>
public sealed class PlayServer : ServerNode
{
    /// <summary>The heartbeat msg id, echoed by the server before or after authentication.</summary>
    public const string HeartbeatMsgId = "@Heart@Beat@";

    /// <summary>The stage id a create names to have the server pick a new one (<see cref="NodeParts.StageIds"/>).</summary>
    public const long NewStageId = 0;

    /// <summary>The reason <see cref="RuntimeObserver.OnDropped"/> names when a session's first message was not authentication.</summary>
    public const string FirstMessageNotAuthenticateReason = "first-message-not-authenticate";

    private readonly ClientSessions _sessions;
    private readonly ClientFrameRouting _frames;
    private readonly MeshRouting _mesh;
    private long _nextActorInstance;
    private int _actors;
    private int _actorsHighWater;

    // Single-threaded: a plain count. Otherwise a count per thread, summed when read: one node-wide interlocked count,
    // written twice per message by every thread that runs turns, moved its cache line between the cores each time.
    private int _handlersInProgress;
    private readonly StartEndCount? _handlerCounts;

    public PlayServer(string nodeId, NodeSeams seams, ServerOptions? options = null)
        : base(nodeId, seams, options)
    {
        Stages = new StageDirectory(this);
        _sessions = new ClientSessions(this);
        _frames = new ClientFrameRouting(this, _sessions);
        _mesh = new MeshRouting(this);
        _handlerCounts = Options.SingleThreaded ? null : new StartEndCount(ThreadSlots.StripesPerMachine);
        ClientPushes = Parts.ClientPushes;
        WaitingActors = Parts.DisconnectedActorLedger(Options);
        EmptyStages = new OldestFirstCap<EmptyStage>(Options, Options.EmptyStagesMax);
    }

    public int StageCount => Stages.Count;

    public int SessionCount => _sessions.Count;

    /// <summary>Actors joined to this server's stages now, connected or waiting to reconnect.</summary>
    public int ActorCount => Volatile.Read(ref _actors);

    /// <summary>The most actors this server's stages held at once.</summary>
    public int ActorsHighWater => Volatile.Read(ref _actorsHighWater);

    /// <summary>Disconnected actors waiting for their accounts now, across the stages (at most <see cref="ServerOptions.DisconnectedActorsMax"/>).</summary>
    public int DisconnectedActorCount => WaitingActors.Count;

    /// <summary>The most disconnected actors that waited at once.</summary>
    public int DisconnectedActorsHighWater => WaitingActors.HighWater;

    /// <summary>Stages with no actor open now, waiting for their idle close (at most <see cref="ServerOptions.EmptyStagesMax"/>).</summary>
    public int EmptyStageCount => EmptyStages.Count;

    /// <summary>The most stages this server held at once.</summary>
    public int StagesHighWater => Stages.HighWater;

    /// <summary>
    /// Stage handlers started and not yet ended, awaits included: a handler suspended at an await still counts. A
    /// graceful shutdown drains this with the mailboxes, so it never stops a node under a handler that has not
    /// finished (PlayHouse's pending count dropped when the handler's call returned at its first await, B16).
    /// </summary>
    /// <exception cref="InvalidOperationException">More handlers ended than started (a handler-completion part ended one twice).</exception>
    public int HandlersInProgress
    {
        get
        {
            if (_handlerCounts is null)
            {
                return Volatile.Read(ref _handlersInProgress);
            }

            // Never below the true count at the read's start (see StartEndCount), so never negative unless ends outnumber starts.
            var inProgress = _handlerCounts.InProgress;
            return inProgress >= 0 ? (int)Math.Min(inProgress, int.MaxValue) : throw MoreEndedThanStarted();
        }
    }

    /// <summary>
    /// True when this server holds no work in progress: no handler started and not ended (awaits included), no message
    /// waiting in a mailbox, no inbound request unanswered and no outgoing request pending. A graceful shutdown stops
    /// taking work and waits for this before the process exits.
    /// </summary>
    public bool IsDrained =>
        HandlersInProgress == 0 && PendingRequestCount == 0 && UnansweredRequestCount == 0 && !Stages.AnyMailboxHoldsMessages();

    /// <summary>This server's stages: types, the registry by id, creation exactly once.</summary>
    internal StageDirectory Stages { get; }

    /// <summary>The ledger of disconnected actors waiting for their accounts, across this server's stages.</summary>
    internal IDisconnectedActorLedger WaitingActors { get; }

    /// <summary>The list of this server's empty stages, in the order they became empty.</summary>
    internal OldestFirstCap<EmptyStage> EmptyStages { get; }

    /// <summary>How an actor's push reaches its client's session (<see cref="NodeParts.ClientPushes"/>).</summary>
    internal IClientPushes ClientPushes { get; }

    // ---- Stages ----

    /// <summary>Registers a stage type with its stage and actor factories.</summary>
    public PlayServer RegisterStage(string stageType, Func<IStageLink, IStage> stageFactory, Func<IActorLink, IActor> actorFactory)
    {
        ArgumentException.ThrowIfNullOrEmpty(stageType);
        ArgumentNullException.ThrowIfNull(stageFactory);
        ArgumentNullException.ThrowIfNull(actorFactory);
        Stages.Register(stageType, stageFactory, actorFactory);
        return this;
    }

    public bool HasStage(long stageId) => Stages.Find(stageId) is not null;

    /// <summary>Mailbox statistics of every live stage, in stage id order.</summary>
    public IReadOnlyList<StageStatistics> GetStageStatistics() => Stages.GetStatistics();

    /// <summary>Creates a stage from inside this server (a test or a host); the reply says how it went. Stage id
    /// <see cref="NewStageId"/> has the server pick a new id, which the response's <see cref="Response.StageId"/> carries.</summary>
    public Task<Response> CreateStage(string stageType, long stageId, string msgId, Payload payload, TimeSpan? timeout = null) =>
        RequestAsync(NodeId, stageId, msgId, payload.Move("mesh"), timeout, null, SystemOp.CreateStage, stageType);

    /// <summary>Closes a stage from outside (a host or a test): every actor, then the stage, is destroyed after its current handler.</summary>
    public bool CloseStage(long stageId)
    {
        if (Stages.Find(stageId) is not { } stage)
        {
            return false;
        }

        stage.RequestClose();
        return true;
    }

    /// <summary>See <see cref="StageDirectory.AwaitsLocalStage"/>.</summary>
    internal bool AwaitsLocalStage(StageHost target, long senderStageId) => Stages.AwaitsLocalStage(target, senderStageId);

    /// <summary>The stage's create succeeded (called from its Create turn).</summary>
    internal void OnStageCreated(StageHost stage) => Stages.OnCreated(stage);

    internal void RemoveStage(StageHost stage, StageRemoval why) => Stages.Remove(stage, why);

    /// <summary>An idle stage closes: under the registry lock it is marked closed (if nothing is queued for it) and leaves the registry at once.</summary>
    internal bool TryRetireIdleStage(StageHost stage) => Stages.TryRetireIdle(stage);

    // ---- Sessions and client frames ----

    /// <summary>Accepts a client connection and returns its session id, unique on this server whatever the transport (B14).</summary>
    public long Connect(IClientConnection connection) => ConnectSession(connection).SessionId;

    /// <summary><see cref="Connect"/> returning the session itself, for a transport that keeps it (the simulator hints it into the cache).</summary>
    internal ClientSession ConnectSession(IClientConnection connection)
    {
        ArgumentNullException.ThrowIfNull(connection);
        return _sessions.Open(connection);
    }

    /// <summary>A frame arrived from a client. Ownership of <paramref name="payload"/> passes to the server.</summary>
    public void OnClientFrame(long sessionId, string msgId, ushort msgSeq, long stageId, Payload payload) =>
        _frames.Dispatch(sessionId, msgId, msgSeq, stageId, payload, receivedTimestamp: null, batch: null);

    /// <summary>
    /// <see cref="OnClientFrame(long, string, ushort, long, Payload)"/> from a transport that holds the session
    /// <see cref="ConnectSession"/> gave it: the session is found without a lookup by id.
    /// </summary>
    internal void OnClientFrame(ClientSession session, string msgId, ushort msgSeq, long stageId, Payload payload) =>
        _frames.Dispatch(session, msgId, msgSeq, stageId, payload);

    /// <summary>
    /// A frame arrived from a client at <paramref name="receivedTimestamp"/>, a timestamp of this server's
    /// <see cref="ServerNode.Time"/>: a request's entry in the ledger of unanswered requests expires
    /// <see cref="ServerOptions.RequestTimeout"/> after it. A transport that reads the clock once per receive passes that
    /// reading for every frame of the receive, which spares the ledger a clock read per request. Ownership of
    /// <paramref name="payload"/> passes to the server.
    /// </summary>
    public void OnClientFrame(long sessionId, string msgId, ushort msgSeq, long stageId, Payload payload, long receivedTimestamp) =>
        _frames.Dispatch(sessionId, msgId, msgSeq, stageId, payload, receivedTimestamp, batch: null);

    /// <summary>
    /// <see cref="OnClientFrame(long, string, ushort, long, Payload, long)"/> for a transport's receive loop that hands
    /// over the frames of one receive one after another: a plain message to the session's stage is checked now and held
    /// in <paramref name="batch"/>, and the held ones enter the ledger and the stage's mailbox together, at the next
    /// frame that is not one (which first flushes them) or at <see cref="FlushClientFrames"/>, which the loop must call
    /// before it hands its thread back. Ownership of <paramref name="payload"/> passes to the server.
    /// </summary>
    public void OnClientFrame(long sessionId, string msgId, ushort msgSeq, long stageId, Payload payload, long receivedTimestamp, ClientFrameBatch batch)
    {
        ArgumentNullException.ThrowIfNull(batch);
        _frames.Dispatch(sessionId, msgId, msgSeq, stageId, payload, receivedTimestamp, batch);
    }

    /// <summary>
    /// Opens the ledger entries of the messages held in <paramref name="batch"/> under one lock and queues them in their
    /// stage's mailbox under one lock; a message the ledger or the mailbox refuses is answered and counted as a single
    /// frame would be. Leaves the batch empty.
    /// </summary>
    public void FlushClientFrames(ClientFrameBatch batch)
    {
        ArgumentNullException.ThrowIfNull(batch);
        _frames.Flush(batch);
    }

    /// <summary>The client's connection closed; its actor (if any) stays in the stage, disconnected.</summary>
    public void Disconnect(long sessionId)
    {
        if (_sessions.TryRemoveOnDisconnect(sessionId, out var session, out var actor))
        {
            actor?.Host.Post(new StageMessage { Kind = StageWorkKind.ConnectionChanged, Actor = actor, Session = session, Connected = false });
        }
    }

    /// <summary>Binds a joined (or re-joined) actor to the session; false when the session closed meanwhile.</summary>
    internal bool CompleteJoin(ClientSession session, ActorHost actor)
    {
        if (!_sessions.TryBind(session, actor, out var replaced))
        {
            return false;
        }

        EndWait(actor);
        if (replaced is not null)
        {
            _sessions.Close(replaced, $"account {actor.AccountId} logged in on session {session.SessionId}");
        }

        return true;
    }

    internal void OnJoinFailed(ClientSession session) => _sessions.OnJoinFailed(session);

    internal void UnbindActor(ActorHost actor) => _sessions.Unbind(actor);

    internal override void SendToSession(ClientSession session, string msgId, ushort msgSeq, long stageId, ushort errorCode, Payload payload) =>
        _sessions.Send(session, msgId, msgSeq, stageId, errorCode, payload);

    // ---- Mesh ----

    protected override void OnInboundMessage(in MeshMessage message) => _mesh.Route(message);

    /// <summary>Refuses a message its stage's mailbox did not take: the stage is full, or closed between lookup and post.</summary>
    internal void RefuseStageMessage(StageHost stage, in StageMessage message)
    {
        var closed = stage.IsClosed;
        var errorCode = closed ? ErrorCodes.StageNotFound : ErrorCodes.MailboxFull;
        if (closed)
        {
            if (message.Reply.IsRequest)
            {
                Counters.AddUnknownStageRequest();
            }
            else
            {
                Counters.AddUnknownStageSend();
            }
        }
        else
        {
            Counters.AddMailboxRefused();
        }

        Observer.OnDropped(NodeId, ErrorCodes.Describe(errorCode), message.MsgId);
        message.Payload.DisposeIfOwner();
        TryReplyError(message.Reply, errorCode, stage.StageId);
    }

    // ---- Node-wide counts ----

    /// <summary>A stage handler starts (called on the stage's turn, before its call).</summary>
    internal void OnHandlerStarted()
    {
        if (_handlerCounts is null)
        {
            _handlersInProgress++;
        }
        else
        {
            _handlerCounts.Start();
        }
    }

    /// <summary>A stage handler's work, awaits included, ended (called by the handler-completion part).</summary>
    /// <remarks>With threads, an end without a start is found when the count is next read, not here.</remarks>
    internal void OnHandlerEnded()
    {
        if (_handlerCounts is not null)
        {
            _handlerCounts.End();
            return;
        }

        if (--_handlersInProgress < 0)
        {
            throw MoreEndedThanStarted();
        }
    }

    private InvalidOperationException MoreEndedThanStarted() => new($"Node {NodeId}: more stage handlers ended than started.");

    internal long NextActorInstance() => Interlocked.Increment(ref _nextActorInstance);

    internal void OnActorAdded()
    {
        var now = Interlocked.Increment(ref _actors);
        var high = Volatile.Read(ref _actorsHighWater);
        while (now > high)
        {
            var seen = Interlocked.CompareExchange(ref _actorsHighWater, now, high);
            if (seen == high)
            {
                break;
            }

            high = seen;
        }
    }

    internal void OnActorRemoved()
    {
        if (Interlocked.Decrement(ref _actors) < 0)
        {
            throw new InvalidOperationException($"Node {NodeId}: more actors left than joined.");
        }
    }

    /// <summary>The actor no longer waits for its account (it is bound again or gone); called from its stage's turn.</summary>
    internal void EndWait(ActorHost actor)
    {
        if (actor.Wait is { } wait)
        {
            actor.Wait = null;
            wait.Actor = null;
            WaitingActors.End(wait);
        }
    }
}

/// <summary>Mailbox statistics of one stage.</summary>
public readonly record struct StageStatistics(long StageId, string StageType, int MailboxLength, int MailboxHighWater, int ActorCount);
