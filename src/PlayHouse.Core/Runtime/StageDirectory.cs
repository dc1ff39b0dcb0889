namespace PlayHouse.Core.Runtime;

/// <summary>
/// A play server's stages: the registered stage types, the registry of live stages by id (a replaceable part,
/// <see cref="NodeParts.StageRegistry"/>), the ids it hands out for creates that name none, and its cap
/// (<see cref="ServerOptions.StagesMax"/>). A stage is created exactly once per id, its Create message first in its
/// mailbox, and leaves the registry when it closes (B16).
/// </summary>
/// <remarks>
/// Invariant: a stage id maps to at most one live stage, and the registry never holds more than
/// <see cref="ServerOptions.StagesMax"/> stages (checked where a stage is added, and after it).
/// Threading: thread-safe; one lock (none on a single-threaded node) guards the types, the registry and its high
/// water. A stage's own lock is taken inside it only by <see cref="TryRetireIdle"/>, never the other way round.
/// </remarks>
internal sealed class StageDirectory
{
    private readonly PlayServer _server;
    private readonly Dictionary<string, StageRegistration> _types = new(StringComparer.Ordinal);
    private readonly Lock? _gate;
    private readonly IStageRegistry _stages;
    private readonly IStageIdAllocator _ids;
    private readonly Func<long, bool> _isIdTaken;
    private int _highWater;

    public StageDirectory(PlayServer server)
    {
        _server = server;
        _gate = NodeLock.Create(server.Options);
        _stages = server.Parts.StageRegistry(server);
        _ids = server.Parts.StageIds(server);
        _isIdTaken = id => _stages.TryGet(id, out _);
    }

    public int Count
    {
        get
        {
            using (NodeLock.Enter(_gate))
            {
                return _stages.Count;
            }
        }
    }

    /// <summary>The most stages held at once.</summary>
    public int HighWater
    {
        get
        {
            using (NodeLock.Enter(_gate))
            {
                return _highWater;
            }
        }
    }

    /// <summary>Registers a stage type; a type registers once.</summary>
    public void Register(string stageType, Func<IStageLink, IStage> stageFactory, Func<IActorLink, IActor> actorFactory)
    {
        using (NodeLock.Enter(_gate))
        {
            if (!_types.TryAdd(stageType, new StageRegistration(stageType, stageFactory, actorFactory)))
            {
                throw new InvalidOperationException($"Stage type '{stageType}' is already registered on {_server.NodeId}.");
            }
        }
    }

    /// <summary>The live stage <paramref name="stageId"/>, or null.</summary>
    public StageHost? Find(long stageId)
    {
        using (NodeLock.Enter(_gate))
        {
            _stages.TryGet(stageId, out var stage);
            return stage;
        }
    }

    /// <summary>True when some live stage has messages waiting in its mailbox.</summary>
    public bool AnyMailboxHoldsMessages()
    {
        using (NodeLock.Enter(_gate))
        {
            foreach (var stage in _stages.Stages)
            {
                if (stage.MailboxLength != 0)
                {
                    return true;
                }
            }
        }

        return false;
    }

    /// <summary>Mailbox statistics of every live stage, in stage id order.</summary>
    public IReadOnlyList<StageStatistics> GetStatistics()
    {
        using (NodeLock.Enter(_gate))
        {
            return [.. _stages.Stages.OrderBy(s => s.StageId).Select(s => new StageStatistics(s.StageId, s.StageType, s.MailboxLength, s.MailboxHighWater, s.Actors.Count))];
        }
    }

    /// <summary>The stage a join names: found, or (with a default stage type) created; null with the error code otherwise.</summary>
    public StageHost? FindOrCreateForJoin(long stageId, out ushort errorCode)
    {
        errorCode = ErrorCodes.Success;
        var options = _server.Options;
        if (options.DefaultStageType is null)
        {
            if (Find(stageId) is { } found)
            {
                return found;
            }

            errorCode = ErrorCodes.StageNotFound;
            return null;
        }

        return GetOrCreate(options.DefaultStageType, stageId, new StageMessage { Kind = StageWorkKind.Create, MsgId = options.AuthenticateMsgId }, out _, out errorCode);
    }

    /// <summary>
    /// Finds or makes the host of a stage under the registry lock, so concurrent first joins create it once
    /// (B16). A new host is instantiated and gets <paramref name="createMessage"/> before the lock is released, so the
    /// Create message is the first thing in its mailbox and a join from another thread always queues behind it (the
    /// TCP scenarios' lifecycle checker caught a join that found the host between its registration and its Create).
    /// </summary>
    public StageHost? GetOrCreate(string stageType, long stageId, in StageMessage createMessage, out bool created, out ushort errorCode, bool allocateId = false)
    {
        created = false;
        errorCode = ErrorCodes.Success;
        using (NodeLock.Enter(_gate))
        {
            if (allocateId)
            {
                stageId = _ids.Next(_isIdTaken);
            }

            if (_stages.TryGet(stageId, out var existing))
            {
                return existing;
            }

            if (!_types.TryGetValue(stageType, out var registration))
            {
                errorCode = ErrorCodes.UnknownStageType;
                return null;
            }

            var stagesMax = _server.Options.StagesMax;
            if (_stages.Count >= stagesMax)
            {
                // Every stage id a client names would otherwise be a new stage: the registry stops at its cap.
                _server.Counters.AddStageRefusedAtCap();
                errorCode = ErrorCodes.TooManyStages;
                return null;
            }

            var host = new StageHost(_server, registration, stageId);
            try
            {
                host.Instantiate();
            }
            catch (Exception)
            {
                _server.Counters.AddHandlerFailure();
                errorCode = ErrorCodes.CreateStageFailed;
                return null;
            }

            _stages.Add(host);
            _highWater = Math.Max(_highWater, _stages.Count);
            if (_stages.Count > stagesMax)
            {
                throw new InvalidOperationException($"Node {_server.NodeId} holds {_stages.Count} stages, over StagesMax={stagesMax}.");
            }

            host.Post(createMessage);
            created = true;
            return host;
        }
    }

    /// <summary>The stage's create succeeded (called from its Create turn).</summary>
    public void OnCreated(StageHost stage)
    {
        using (NodeLock.Enter(_gate))
        {
            _stages.OnCreated(stage);
        }
    }

    public void Remove(StageHost stage, StageRemoval why)
    {
        using (NodeLock.Enter(_gate))
        {
            _stages.Remove(stage, why);
        }
    }

    /// <summary>An idle stage closes: under the registry lock it is marked closed (if nothing is queued for it) and leaves the registry at once.</summary>
    public bool TryRetireIdle(StageHost stage)
    {
        using (NodeLock.Enter(_gate))
        {
            if (!stage.TryCloseIfQuiet())
            {
                return false;
            }

            _stages.Remove(stage, StageRemoval.Destroyed);
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
    public bool AwaitsLocalStage(StageHost target, long senderStageId)
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

                Find(stageId)?.CollectLocalAwaitTargets(next);
            }

            frontier = next;
        }

        return false;
    }
}
