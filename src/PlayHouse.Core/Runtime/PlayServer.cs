using PlayHouse.Core.Collections;
using PlayHouse.Core.Pooling;

namespace PlayHouse.Core.Runtime;

/// <summary>
/// Hosts stages and client sessions. The dispatcher lives here: it routes client frames and mesh messages to
/// stages by id, creates stages exactly once, and answers requests for unknown stages with
/// <see cref="ErrorCodes.StageNotFound"/>.
/// </summary>
/// <remarks>Thread-safe: transports call in from any thread; stage work runs on the executor.</remarks>
public sealed class PlayServer : ServerNode
{
    /// <summary>The heartbeat msg id, echoed by the server before or after authentication.</summary>
    public const string HeartbeatMsgId = "@Heart@Beat@";

    /// <summary>The stage id a create names to have the server pick a new one (<see cref="NodeParts.StageIds"/>).</summary>
    public const long NewStageId = 0;

    /// <summary>The reason <see cref="RuntimeObserver.OnDropped"/> names when a session's first message was not authentication.</summary>
    public const string FirstMessageNotAuthenticateReason = "first-message-not-authenticate";

    private readonly Dictionary<string, StageRegistration> _stageTypes = new(StringComparer.Ordinal);
    private readonly Lock? _stagesGate;
    private readonly IStageRegistry _stages;
    private readonly IStageIdAllocator _stageIds;
    private readonly Func<long, bool> _isStageIdTaken;
    private readonly Lock? _sessionsGate;
    private readonly ISessionTable _sessions;
    private long _nextActorInstance;
    private int _stagesHighWater;
    private int _actors;
    private int _actorsHighWater;
    // Single-threaded: a plain count. Otherwise a count per thread, summed when read: one node-wide interlocked count,
    // written twice per message by every thread that runs turns, moved its cache line between the cores each time.
    private int _handlersInProgress;
    private readonly StartEndCount? _handlerCounts;

    // Read per frame and per handler: copied from the options and parts once.
    private readonly bool _singleThreaded;
    private readonly IClientFrameGate _frameGate;
    private readonly bool _sessionLookupsWithoutLock;

    // ServerOptions.ClientMessageQueueTimeMax in timestamp units (at least 1); 0 when client messages never go stale.
    private readonly long _clientQueueTimeDelta;

    public PlayServer(string nodeId, NodeSeams seams, ServerOptions? options = null)
        : base(nodeId, seams, options)
    {
        _stagesGate = NodeLock.Create(Options);
        _sessionsGate = NodeLock.Create(Options);
        _stages = Parts.StageRegistry(this);
        _sessions = Parts.Sessions(this);
        _stageIds = Parts.StageIds(this);
        _isStageIdTaken = id => _stages.TryGet(id, out _);
        _singleThreaded = Options.SingleThreaded;
        _handlerCounts = _singleThreaded ? null : new StartEndCount(ThreadSlots.StripesPerMachine);
        _frameGate = Parts.ClientFrameGate;
        _sessionLookupsWithoutLock = _sessions.ConcurrentLookups;
        ClientPushes = Parts.ClientPushes;
        WaitingActors = Parts.DisconnectedActorLedger(Options);
        EmptyStages = new OldestFirstCap<EmptyStage>(Options, Options.EmptyStagesMax);
        _clientQueueTimeDelta = Options.ClientMessageQueueTimeMax is { } queueTimeMax ? Math.Max(1, TimestampSpan.ToDelta(queueTimeMax, Time.TimestampFrequency)) : 0;
    }

    public int StageCount
    {
        get
        {
            using (NodeLock.Enter(_stagesGate))
            {
                return _stages.Count;
            }
        }
    }

    public int SessionCount
    {
        get
        {
            using (NodeLock.Enter(_sessionsGate))
            {
                return _sessions.Count;
            }
        }
    }

    /// <summary>Actors joined to this server's stages now, connected or waiting to reconnect.</summary>
    public int ActorCount => Volatile.Read(ref _actors);

    /// <summary>The most actors this server's stages held at once.</summary>
    public int ActorsHighWater => Volatile.Read(ref _actorsHighWater);

    /// <summary>Disconnected actors waiting for their accounts now, across the stages (at most <see cref="ServerOptions.DisconnectedActorsMax"/>).</summary>
    public int DisconnectedActorCount => WaitingActors.Count;

    /// <summary>The most disconnected actors that waited at once.</summary>
    public int DisconnectedActorsHighWater => WaitingActors.HighWater;

    /// <summary>The ledger of disconnected actors waiting for their accounts, across this server's stages.</summary>
    internal IDisconnectedActorLedger WaitingActors { get; }

    /// <summary>Stages with no actor open now, waiting for their idle close (at most <see cref="ServerOptions.EmptyStagesMax"/>).</summary>
    public int EmptyStageCount => EmptyStages.Count;

    /// <summary>The list of this server's empty stages, in the order they became empty.</summary>
    internal OldestFirstCap<EmptyStage> EmptyStages { get; }

    /// <summary>The most stages this server held at once.</summary>
    public int StagesHighWater
    {
        get
        {
            using (NodeLock.Enter(_stagesGate))
            {
                return _stagesHighWater;
            }
        }
    }

    /// <summary>Registers a stage type with its stage and actor factories.</summary>
    public PlayServer RegisterStage(string stageType, Func<IStageLink, IStage> stageFactory, Func<IActorLink, IActor> actorFactory)
    {
        ArgumentException.ThrowIfNullOrEmpty(stageType);
        ArgumentNullException.ThrowIfNull(stageFactory);
        ArgumentNullException.ThrowIfNull(actorFactory);
        using (NodeLock.Enter(_stagesGate))
        {
            if (!_stageTypes.TryAdd(stageType, new StageRegistration(stageType, stageFactory, actorFactory)))
            {
                throw new InvalidOperationException($"Stage type '{stageType}' is already registered on {NodeId}.");
            }
        }

        return this;
    }

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
    public bool IsDrained
    {
        get
        {
            if (HandlersInProgress != 0 || PendingRequestCount != 0 || UnansweredRequestCount != 0)
            {
                return false;
            }

            using (NodeLock.Enter(_stagesGate))
            {
                foreach (var stage in _stages.Stages)
                {
                    if (stage.MailboxLength != 0)
                    {
                        return false;
                    }
                }
            }

            return true;
        }
    }

    /// <summary>
    /// True when <paramref name="target"/>'s current handler awaits, through stages of this server that each await the
    /// next, the stage <paramref name="senderStageId"/> (at most <see cref="AwaitingStage.ChainLengthMax"/> hops). A
    /// request from that stage to <paramref name="target"/> would then close a cycle of waits.
    /// </summary>
    /// <remarks>
    /// Each stage is read under its own lock, one at a time, never two at once, so the walk cannot deadlock with a
    /// walk that starts elsewhere. Across threads a wait may end while the walk reads the next stage; the walk then
    /// sees a cycle that just dissolved, which refuses one request that would have waited briefly. In simulation (one
    /// thread) the walk is exact.
    /// </remarks>
    internal bool AwaitsLocalStage(StageHost target, long senderStageId)
    {
        var frontier = new List<long>();
        target.CollectLocalAwaitTargets(frontier);
        if (frontier.Count == 0)
        {
            return false;
        }

        var seen = new HashSet<long> { target.StageId };
        for (var hop = 0; hop < AwaitingStage.ChainLengthMax && frontier.Count > 0; hop++)
        {
            var next = new List<long>();
            foreach (var stageId in frontier)
            {
                if (stageId == senderStageId)
                {
                    return true;
                }

                if (!seen.Add(stageId))
                {
                    continue;
                }

                StageHost? stage;
                using (NodeLock.Enter(_stagesGate))
                {
                    _stages.TryGet(stageId, out stage);
                }

                stage?.CollectLocalAwaitTargets(next);
            }

            frontier = next;
        }

        return false;
    }

    public bool HasStage(long stageId)
    {
        using (NodeLock.Enter(_stagesGate))
        {
            return _stages.TryGet(stageId, out _);
        }
    }

    /// <summary>Mailbox statistics of every live stage, in stage id order.</summary>
    public IReadOnlyList<StageStatistics> GetStageStatistics()
    {
        using (NodeLock.Enter(_stagesGate))
        {
            return [.. _stages.Stages.OrderBy(s => s.StageId).Select(s => new StageStatistics(s.StageId, s.StageType, s.MailboxLength, s.MailboxHighWater, s.Actors.Count))];
        }
    }

    /// <summary>Creates a stage from inside this server (a test or a host); the reply says how it went. Stage id
    /// <see cref="NewStageId"/> has the server pick a new id, which the response's <see cref="Response.StageId"/> carries.</summary>
    public Task<Response> CreateStage(string stageType, long stageId, string msgId, Payload payload, TimeSpan? timeout = null) =>
        RequestAsync(NodeId, stageId, msgId, payload.Move("mesh"), timeout, null, SystemOp.CreateStage, stageType);

    /// <summary>Closes a stage from outside (a host or a test): every actor, then the stage, is destroyed after its current handler.</summary>
    public bool CloseStage(long stageId)
    {
        StageHost? stage;
        using (NodeLock.Enter(_stagesGate))
        {
            _stages.TryGet(stageId, out stage);
        }

        if (stage is null)
        {
            return false;
        }

        stage.RequestClose();
        return true;
    }

    // ---- Sessions ----

    /// <summary>Accepts a client connection and returns its session id, unique on this server whatever the transport (B14).</summary>
    public long Connect(IClientConnection connection) => ConnectSession(connection).SessionId;

    /// <summary><see cref="Connect"/> returning the session itself, for a transport that keeps it (the simulator hints it into the cache).</summary>
    internal ClientSession ConnectSession(IClientConnection connection)
    {
        ArgumentNullException.ThrowIfNull(connection);
        using (NodeLock.Enter(_sessionsGate))
        {
            return _sessions.Open(this, connection);
        }
    }

    /// <summary>A frame arrived from a client. Ownership of <paramref name="payload"/> passes to the server.</summary>
    public void OnClientFrame(long sessionId, string msgId, ushort msgSeq, long stageId, Payload payload) =>
        DispatchClientFrame(sessionId, msgId, msgSeq, stageId, payload, receivedTimestamp: null, batch: null);

    /// <summary>
    /// A frame arrived from a client at <paramref name="receivedTimestamp"/>, a timestamp of this server's
    /// <see cref="ServerNode.Time"/>: a request's entry in the ledger of unanswered requests expires
    /// <see cref="ServerOptions.RequestTimeout"/> after it. A transport that reads the clock once per receive passes that
    /// reading for every frame of the receive, which spares the ledger a clock read per request. Ownership of
    /// <paramref name="payload"/> passes to the server.
    /// </summary>
    public void OnClientFrame(long sessionId, string msgId, ushort msgSeq, long stageId, Payload payload, long receivedTimestamp) =>
        DispatchClientFrame(sessionId, msgId, msgSeq, stageId, payload, receivedTimestamp, batch: null);

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
        DispatchClientFrame(sessionId, msgId, msgSeq, stageId, payload, receivedTimestamp, batch);
    }

    /// <summary>
    /// Opens the ledger entries of the messages held in <paramref name="batch"/> under one lock and queues them in their
    /// stage's mailbox under one lock; a message the ledger or the mailbox refuses is answered and counted as a single
    /// frame would be. Leaves the batch empty.
    /// </summary>
    public void FlushClientFrames(ClientFrameBatch batch)
    {
        ArgumentNullException.ThrowIfNull(batch);
        if (batch.Count == 0)
        {
            return;
        }

        var stage = batch.Stage!;
        try
        {
            // The receive's one clock reading dates the batch: its ledger entries' deadlines and, when client messages
            // may go stale in a mailbox (ClientMessageQueueTimeMax), the instant from which they are stale.
            var now = batch.ReceivedTimestamp ?? Time.GetTimestamp();
            OpenClientTokens(batch, now);
            stage.PostBatch(batch, _clientQueueTimeDelta == 0 ? 0 : now + _clientQueueTimeDelta);
        }
        finally
        {
            // Whatever threw, every held message is answered or released here, each exactly once: one that was not
            // queued owns its payload still, and its ledger entry (if opened) is closed by the error reply.
            List<Exception>? errors = null;
            for (var i = 0; i < batch.Count; i++)
            {
                ref var entry = ref batch[i];
                try
                {
                    switch (entry.State)
                    {
                        case BatchedFrameState.RefusedByLedger:
                            entry.Payload.DisposeIfOwner();
                            RefuseOverLedgerCap(entry);
                            break;
                        case BatchedFrameState.RefusedByStage:
                        case BatchedFrameState.Held:
                            RefuseStageMessage(stage, entry.ToStageMessage());
                            break;
                        default:
                            break;
                    }
                }
                catch (Exception e)
                {
                    (errors ??= []).Add(e);
                }
            }

            batch.Clear();
            if (errors is not null)
            {
                throw errors.Count == 1 ? errors[0] : new AggregateException(errors);
            }
        }
    }

    private void DispatchClientFrame(long sessionId, string msgId, ushort msgSeq, long stageId, Payload payload, long? receivedTimestamp, ClientFrameBatch? batch)
    {
        ClientSession? session;
        SessionState state;
        if (_sessionLookupsWithoutLock)
        {
            // The standard table looks up without the lock; the state is read after the lookup, as a close that
            // overtakes this frame would be seen by the next one anyway.
            _sessions.TryGet(sessionId, out session);
            state = session?.State ?? SessionState.Closed;
        }
        else
        {
            using (NodeLock.Enter(_sessionsGate))
            {
                _sessions.TryGet(sessionId, out session);
                state = session?.State ?? SessionState.Closed;
            }
        }

        if (session is null || state == SessionState.Closed)
        {
            FlushHeld(batch, payload);
            Observer.OnDropped(NodeId, "frame-from-closed-session", msgId);
            payload.DisposeIfOwner();
            return;
        }

        var admission = _frameGate.Admit(state, msgId, Options.AuthenticateMsgId);
        var actor = session.Actor;
        if (batch is not null && admission == FrameAdmission.Authenticated && actor is not null && actor.Host.StageId == stageId
            && !string.Equals(msgId, Options.AuthenticateMsgId, StringComparison.Ordinal))
        {
            // A plain message to the session's stage waits in the batch for the others of this receive; one for a
            // different stage than the held ones, or one past the batch's capacity, first sends the held ones on.
            if (batch.Stage != actor.Host || batch.Count == ClientFrameBatch.CapacityMax)
            {
                FlushHeld(batch, payload);
            }

            batch.Add(actor, receivedTimestamp, session, msgId, msgSeq, stageId, payload);
            return;
        }

        // Anything else goes after the held messages: a join, a refusal or a reply sees the stage's queue as the frames
        // before it left it.
        FlushHeld(batch, payload);
        switch (admission)
        {
            case FrameAdmission.Heartbeat:
                payload.DisposeIfOwner();
                session.Send(HeartbeatMsgId, msgSeq, stageId, ErrorCodes.Success, Payload.Empty);
                return;
            case FrameAdmission.FirstMessageNotAuthenticate:
                payload.DisposeIfOwner();
                Counters.AddSessionClosedBeforeAuthentication();
                Observer.OnDropped(NodeId, FirstMessageNotAuthenticateReason, msgId);
                CloseSession(session, $"first message was '{msgId}', expected '{Options.AuthenticateMsgId}'");
                return;
            case FrameAdmission.Join:
                BeginJoin(session, msgId, msgSeq, stageId, payload);
                return;
            case FrameAdmission.NotAuthenticatedYet:
                Counters.AddClientMessageBeforeAuthentication();
                RefuseClientFrame(session, msgId, msgSeq, stageId, payload, ErrorCodes.NotAuthenticated);
                return;
            default:
                break;
        }

        if (string.Equals(msgId, Options.AuthenticateMsgId, StringComparison.Ordinal))
        {
            // A session whose actor left its stage may authenticate into a stage again.
            if (actor is null)
            {
                BeginJoin(session, msgId, msgSeq, stageId, payload);
            }
            else
            {
                RefuseClientFrame(session, msgId, msgSeq, stageId, payload, ErrorCodes.AlreadyAuthenticated);
            }

            return;
        }

        if (actor is null || actor.Host.StageId != stageId)
        {
            RefuseClientFrame(session, msgId, msgSeq, stageId, payload, ErrorCodes.NotInStage);
            return;
        }

        if (!TryOpenClientToken(session, msgSeq, stageId, msgId, receivedTimestamp, out var reply))
        {
            payload.DisposeIfOwner();
            return;
        }

        var message = new StageMessage
        {
            Kind = StageWorkKind.ClientMessage,
            External = true,
            MsgId = msgId,
            Payload = payload,
            Reply = reply,
            Actor = actor,
            StaleAtTimestamp = _clientQueueTimeDelta == 0 ? 0 : Time.GetTimestamp() + _clientQueueTimeDelta,
        };
        if (!actor.Host.Post(message))
        {
            RefuseStageMessage(actor.Host, message);
        }
    }

    /// <summary>Flushes the held messages before the frame whose <paramref name="payload"/> is in hand.</summary>
    private void FlushHeld(ClientFrameBatch? batch, Payload payload)
    {
        if (batch is not { Count: > 0 })
        {
            return;
        }

        try
        {
            FlushClientFrames(batch);
        }
        catch
        {
            // A hook threw while the held messages were queued: the frame in hand goes no further (its connection's
            // receive loop closes on the exception), and its payload is released here, its owner.
            payload.DisposeIfOwner();
            throw;
        }
    }

    /// <summary>The client's connection closed; its actor (if any) stays in the stage, disconnected.</summary>
    public void Disconnect(long sessionId)
    {
        ClientSession? session;
        ActorHost? actor;
        using (NodeLock.Enter(_sessionsGate))
        {
            if (!_sessions.Remove(sessionId, out session))
            {
                return;
            }

            session.IsListed = false;
            session.State = SessionState.Closed;
            actor = session.Actor;
            session.Actor = null;
        }

        actor?.Host.Post(new StageMessage { Kind = StageWorkKind.ConnectionChanged, Actor = actor, Session = session, Connected = false });
    }

    private void CloseSession(ClientSession session, string reason)
    {
        using (NodeLock.Enter(_sessionsGate))
        {
            _sessions.Remove(session.SessionId, out _);
            session.IsListed = false;
            session.State = SessionState.Closed;
        }

        session.Connection.Close(reason);
    }

    private void RefuseClientFrame(ClientSession session, string msgId, ushort msgSeq, long stageId, Payload payload, ushort errorCode)
    {
        payload.DisposeIfOwner();
        Observer.OnDropped(NodeId, ErrorCodes.Describe(errorCode), msgId);
        if (msgSeq != 0)
        {
            session.Send(msgId, msgSeq, stageId, errorCode, Payload.Empty);
        }
    }

    private void BeginJoin(ClientSession session, string msgId, ushort msgSeq, long stageId, Payload payload)
    {
        using (NodeLock.Enter(_sessionsGate))
        {
            session.State = SessionState.Authenticating;
        }

        if (!TryOpenClientToken(session, msgSeq == 0 ? (ushort)1 : msgSeq, stageId, msgId, receivedTimestamp: null, out var reply))
        {
            payload.DisposeIfOwner();
            OnJoinFailed(session);
            return;
        }

        var stage = FindOrCreateForJoin(stageId, out var errorCode);
        var message = new StageMessage
        {
            Kind = StageWorkKind.Join,
            External = true,
            MsgId = msgId,
            Payload = payload,
            Reply = reply,
            Session = session,
        };
        if (stage is null)
        {
            payload.DisposeIfOwner();
            TryReplyError(reply, errorCode, stageId);
            OnJoinFailed(session);
            return;
        }

        if (stage.Post(message))
        {
            return;
        }

        if (stage.IsClosed && Options.DefaultStageType is not null)
        {
            // The stage closed between the lookup and the post (it had stayed idle): an idle stage leaves the registry as
            // it closes, so a second lookup finds or creates its successor.
            var successor = FindOrCreateForJoin(stageId, out errorCode);
            if (successor is null)
            {
                payload.DisposeIfOwner();
                TryReplyError(reply, errorCode, stageId);
                OnJoinFailed(session);
                return;
            }

            stage = successor;
            if (stage.Post(message))
            {
                return;
            }
        }

        RefuseStageMessage(stage, message);
        OnJoinFailed(session);
    }

    private StageHost? FindOrCreateForJoin(long stageId, out ushort errorCode)
    {
        errorCode = ErrorCodes.Success;
        if (Options.DefaultStageType is null)
        {
            using (NodeLock.Enter(_stagesGate))
            {
                if (_stages.TryGet(stageId, out var found))
                {
                    return found;
                }
            }

            errorCode = ErrorCodes.StageNotFound;
            return null;
        }

        return GetOrCreateHost(Options.DefaultStageType, stageId, new StageMessage { Kind = StageWorkKind.Create, MsgId = Options.AuthenticateMsgId }, out _, out errorCode);
    }

    /// <summary>
    /// Finds or makes the host of a stage under the registry lock, so concurrent first joins create it once
    /// (B16). A new host is instantiated and gets <paramref name="createMessage"/> before the lock is released, so the
    /// Create message is the first thing in its mailbox and a join from another thread always queues behind it (the
    /// TCP scenarios' lifecycle checker caught a join that found the host between its registration and its Create).
    /// </summary>
    private StageHost? GetOrCreateHost(string stageType, long stageId, in StageMessage createMessage, out bool created, out ushort errorCode, bool allocateId = false)
    {
        created = false;
        errorCode = ErrorCodes.Success;
        using (NodeLock.Enter(_stagesGate))
        {
            if (allocateId)
            {
                stageId = _stageIds.Next(_isStageIdTaken);
            }

            if (_stages.TryGet(stageId, out var existing))
            {
                return existing;
            }

            if (!_stageTypes.TryGetValue(stageType, out var registration))
            {
                errorCode = ErrorCodes.UnknownStageType;
                return null;
            }

            if (_stages.Count >= Options.StagesMax)
            {
                // Every stage id a client names would otherwise be a new stage: the registry stops at its cap.
                Counters.AddStageRefusedAtCap();
                errorCode = ErrorCodes.TooManyStages;
                return null;
            }

            var host = new StageHost(this, registration, stageId);
            try
            {
                host.Instantiate();
            }
            catch (Exception)
            {
                Counters.AddHandlerFailure();
                errorCode = ErrorCodes.CreateStageFailed;
                return null;
            }

            _stages.Add(host);
            _stagesHighWater = Math.Max(_stagesHighWater, _stages.Count);
            host.Post(createMessage);
            created = true;
            return host;
        }
    }

    /// <summary>The stage's create succeeded (called from its Create turn).</summary>
    internal void OnStageCreated(StageHost stage)
    {
        using (NodeLock.Enter(_stagesGate))
        {
            _stages.OnCreated(stage);
        }
    }

    internal void RemoveStage(StageHost stage, StageRemoval why)
    {
        using (NodeLock.Enter(_stagesGate))
        {
            _stages.Remove(stage, why);
        }
    }

    /// <summary>How an actor's push reaches its client's session (<see cref="NodeParts.ClientPushes"/>).</summary>
    internal IClientPushes ClientPushes { get; }

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

    /// <summary>An idle stage closes: under the registry lock it is marked closed (if nothing is queued for it) and leaves the registry at once.</summary>
    internal bool TryRetireIdleStage(StageHost stage)
    {
        using (NodeLock.Enter(_stagesGate))
        {
            if (!stage.TryCloseIfQuiet())
            {
                return false;
            }

            _stages.Remove(stage, StageRemoval.Destroyed);
            return true;
        }
    }

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

    internal void OnActorRemoved() => Interlocked.Decrement(ref _actors);

    /// <summary>Binds a joined (or re-joined) actor to the session; false when the session closed meanwhile.</summary>
    internal bool CompleteJoin(ClientSession session, ActorHost actor)
    {
        ClientSession? replaced = null;
        using (NodeLock.Enter(_sessionsGate))
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
        }

        EndWait(actor);

        if (replaced is not null)
        {
            CloseSession(replaced, $"account {actor.AccountId} logged in on session {session.SessionId}");
        }

        return true;
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

    internal void OnJoinFailed(ClientSession session)
    {
        using (NodeLock.Enter(_sessionsGate))
        {
            if (session.State == SessionState.Authenticating)
            {
                session.State = session.AuthenticatedBefore ? SessionState.Authenticated : SessionState.New;
            }
        }
    }

    internal void UnbindActor(ActorHost actor)
    {
        using (NodeLock.Enter(_sessionsGate))
        {
            var session = actor.Session;
            if (session is not null && ReferenceEquals(session.Actor, actor))
            {
                // The session stays authenticated; with no actor its messages get NotInStage until it joins again.
                session.Actor = null;
            }
        }
    }

    internal override void SendToSession(ClientSession session, string msgId, ushort msgSeq, long stageId, ushort errorCode, Payload payload)
    {
        // The flag follows the session's entry in the table, so this is the lookup by id without the hashing; it is
        // read without the session lock, which every frame of every session takes (one lock fewer per reply).
        if (!session.IsListed)
        {
            Counters.AddReplyToClosedSession();
            Observer.OnDropped(NodeId, "reply-to-closed-session", msgId);
            payload.DisposeIfOwner();
            return;
        }

        session.Send(msgId, msgSeq, stageId, errorCode, payload);
    }

    // ---- Mesh ----

    protected override void OnInboundMessage(in MeshMessage message)
    {
        if (message.IsSystem)
        {
            OnSystemMessage(message);
            return;
        }

        StageHost? stage;
        using (NodeLock.Enter(_stagesGate))
        {
            _stages.TryGet(message.StageId, out stage);
        }

        if (stage is null)
        {
            RefuseUnknownStage(message);
            return;
        }

        if (message.IsRequest && message.SenderAwaits && message.FromStageId != 0 && ClosesCycle(stage, message))
        {
            // The sender awaits this request, and the target awaits (directly or through a chain of awaiting stages)
            // a request that leads back to the sender: queuing it would deadlock them all until the timeout (B9),
            // so it fails now.
            Counters.AddCycleRequestRefused();
            message.Payload.DisposeIfOwner();
            ReplyErrorNow(message, ErrorCodes.RequestCycle, message.StageId);
            return;
        }

        if (!TryOpenMeshToken(message, message.StageId, out var reply, out var staleAt))
        {
            message.Payload.DisposeIfOwner();
            return;
        }

        var stageMessage = new StageMessage
        {
            Kind = StageWorkKind.ServerMessage,
            External = true,
            MsgId = message.MsgId,
            Payload = message.Payload,
            Reply = reply,
            WaiterStageId = message.IsRequest && message.SenderAwaits ? message.FromStageId : 0,
            AwaitChain = message.AwaitChain,
            StaleAtTimestamp = staleAt,
        };
        if (!stage.Post(stageMessage))
        {
            RefuseStageMessage(stage, stageMessage);
        }
    }

    private bool ClosesCycle(StageHost stage, in MeshMessage message) =>
        Parts.CycleGuard is { } guard ? guard.RefusesCycle(stage, message) : stage.IsInCycleWith(message);

    private void OnSystemMessage(in MeshMessage message)
    {
        if (!TryOpenMeshToken(message, message.StageId, out var reply))
        {
            message.Payload.DisposeIfOwner();
            return;
        }

        var op = (SystemOp)message.ServiceId;
        var getOrCreate = op == SystemOp.GetOrCreateStage;
        if (op is not (SystemOp.CreateStage or SystemOp.GetOrCreateStage))
        {
            Counters.AddUnknownApiMessage();
            message.Payload.DisposeIfOwner();
            TryReplyError(reply, ErrorCodes.HandlerNotFound, message.StageId);
            return;
        }

        // A create that names no stage gets a new id, picked under the registry lock so nothing can take it meanwhile.
        var allocate = !getOrCreate && message.StageId == NewStageId;
        var stage = GetOrCreateHost(message.StageType ?? string.Empty, message.StageId, new StageMessage { Kind = StageWorkKind.Create, MsgId = message.MsgId, Payload = message.Payload, Reply = reply }, out var created, out var errorCode, allocate);
        if (stage is null)
        {
            message.Payload.DisposeIfOwner();
            TryReplyError(reply, errorCode, message.StageId);
            return;
        }

        if (!created)
        {
            message.Payload.DisposeIfOwner();
            if (getOrCreate)
            {
                SendReply(reply, SystemMsgIds.StageExisted, Payload.Empty, ErrorCodes.Success, message.StageId);
            }
            else
            {
                TryReplyError(reply, ErrorCodes.StageAlreadyExists, message.StageId);
            }

            return;
        }
    }

    private void RefuseUnknownStage(in MeshMessage message)
    {
        message.Payload.DisposeIfOwner();
        Observer.OnDropped(NodeId, "unknown-stage", message.MsgId);
        if (message.IsRequest)
        {
            Counters.AddUnknownStageRequest();
            ReplyErrorNow(message, ErrorCodes.StageNotFound, message.StageId);
        }
        else
        {
            Counters.AddUnknownStageSend();
        }
    }

    private void RefuseStageMessage(StageHost stage, in StageMessage message)
    {
        // Post fails for a full mailbox or a stage that closed between lookup and post.
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
}

/// <summary>Mailbox statistics of one stage.</summary>
public readonly record struct StageStatistics(long StageId, string StageType, int MailboxLength, int MailboxHighWater, int ActorCount);
