using System.Runtime.InteropServices;
using System.Text;
using PlayHouse.Core.Runtime;

namespace PlayHouse.Simulation.Checkers;

/// <summary>
/// Lifecycle callbacks fire exactly once per step and in order (B11, B16).
/// <para>Per stage: StageCreate, then StagePostCreate, then StageDestroy last. A failed create shows StageCreate
/// alone (the Create message completes without StagePostCreate); the id may then be created again, as it may
/// after StageDestroy. At StageDestroy every actor of the stage has been destroyed.</para>
/// <para>Per actor instance (unique per node): ActorCreate, ActorAuthenticate, then either ActorDestroy (refused
/// authentication, or the probe actor of a reconnect) or ActorPostAuthenticate, ActorJoinStage, then either
/// ActorDestroy (join refused) or ActorPostJoinStage, then ActorDisconnected / ActorConnected alternating
/// (starting with ActorDisconnected), then ActorDestroy. Actor events happen only on a running stage, on the
/// stage that created the actor, and nothing follows ActorDestroy.</para>
/// <para>Per account and stage, one actor at a time: an actor's ActorJoinStage while another actor of the same
/// account is joining or joined in that stage (connected or not) is a violation, since a reconnect must keep the one
/// live actor instead of joining a second one (B11). A message handed to an actor must find it joined (connected or
/// not) and registered for its account (<see cref="OnActorMessage"/>).</para>
/// <para>With the servers' stage registries in view (<see cref="WatchRegistries"/>): a stage whose create failed is no
/// longer registered when its Create message completes (B16: a zombie that later joins reach), and at quiescence every
/// registered stage is one that was created and not destroyed.</para>
/// <para>At quiescence no stage is still creating and no actor is stuck between ActorCreate and a joined or
/// destroyed state.</para>
/// </summary>
/// <remarks>
/// Thread-safe (one lock per hook call). Needs both <see cref="OnLifecycle"/> and <see cref="OnMessageCompleted"/>:
/// the completion of the Create message is how a failed create is told from one still running.
/// Destroyed actors are remembered so a late event is caught, so memory grows with the actors a run creates.
/// </remarks>
public sealed class LifecycleChecker : RuntimeInvariantChecker, INodeCrashAware
{
    public const string CheckerName = "Lifecycle";

    private const int HistoryEventsMax = 16;
    private const int CreateFailedMarker = 15;

    private readonly Lock _gate = new();
    private readonly Dictionary<(string NodeId, long StageId), StageLife> _stages = [];
    private readonly Dictionary<(string NodeId, long ActorInstance), ActorLife> _actors = [];

    // The actor each account has joined (or is joining) per stage: at most one at a time.
    private readonly Dictionary<(string NodeId, long StageId, long AccountId), long> _accountActors = [];
    private long _events;
    private IStageRegistryView? _registries;

    public LifecycleChecker(CheckerContext context)
        : base(CheckerName, context)
    {
    }

    public LifecycleChecker(TimeProvider time)
        : this(new CheckerContext(time))
    {
    }

    private enum StageState : byte
    {
        None,
        Creating,
        Running,
        CreateFailed,
        Destroyed,
    }

    private enum ActorState : byte
    {
        None,
        Created,
        Authenticated,
        PostAuthenticated,
        Joining,
        Joined,
        Disconnected,
        Destroyed,
    }

    /// <summary>Lifecycle events seen so far.</summary>
    public long EventCount => Interlocked.Read(ref _events);

    /// <summary>Stages whose last step was a successful create and that are not destroyed.</summary>
    public int RunningStageCount
    {
        get
        {
            using (Context.Enter(_gate))
            {
                var running = 0;
                foreach (var stage in _stages.Values)
                {
                    running += stage.State == StageState.Running ? 1 : 0;
                }

                return running;
            }
        }
    }

    /// <summary>Actor instances created and not yet destroyed.</summary>
    public int LiveActorCount
    {
        get
        {
            using (Context.Enter(_gate))
            {
                var live = 0;
                foreach (var actor in _actors.Values)
                {
                    live += actor.State == ActorState.Destroyed ? 0 : 1;
                }

                return live;
            }
        }
    }

    public override void OnLifecycle(string nodeId, long stageId, long actorInstance, long accountId, LifecycleEvent lifecycleEvent)
    {
        using (Context.Enter(_gate))
        {
            _events++;
            switch (lifecycleEvent)
            {
                case LifecycleEvent.StageCreate:
                case LifecycleEvent.StagePostCreate:
                case LifecycleEvent.StageDestroy:
                    OnStageEvent(nodeId, stageId, lifecycleEvent);
                    break;
                default:
                    OnActorEvent(nodeId, stageId, actorInstance, accountId, lifecycleEvent);
                    break;
            }
        }
    }

    public override void OnMessageCompleted(string nodeId, long stageId, StageWorkKind kind, string? msgId)
    {
        if (kind != StageWorkKind.Create)
        {
            return;
        }

        using (Context.Enter(_gate))
        {
            ref var stage = ref CollectionsMarshal.GetValueRefOrAddDefault(_stages, (nodeId, stageId), out _);
            switch (stage.State)
            {
                case StageState.Creating:
                    // The Create message finished without StagePostCreate: the create failed and the stage is gone.
                    stage.State = StageState.CreateFailed;
                    Push(ref stage.History, ref stage.EventCount, CreateFailedMarker);
                    if (_registries?.IsRegistered(nodeId, stageId) == true)
                    {
                        Log.Record($"stage {nodeId}/{stageId}: its create failed but the stage is still registered; a failed stage must be gone, or later joins reach a stage that never started (a zombie)");
                    }

                    break;
                case StageState.None:
                    Log.Record($"stage {nodeId}/{stageId}: its Create message completed but StageCreate never fired");
                    break;
                default:
                    break;
            }
        }
    }

    /// <summary>At quiescence nothing can finish a create or a join any more.</summary>
    /// <summary>
    /// A crash ends every stage and actor of the node without their destroy callbacks, and a restarted node numbers
    /// its actors afresh: the lost incarnation's lives are forgotten, not judged.
    /// </summary>
    public void OnNodeCrashed(string nodeId)
    {
        using (Context.Enter(_gate))
        {
            foreach (var key in _stages.Keys.Where(k => k.NodeId == nodeId).ToList())
            {
                _stages.Remove(key);
            }

            foreach (var key in _actors.Keys.Where(k => k.NodeId == nodeId).ToList())
            {
                _actors.Remove(key);
            }

            foreach (var key in _accountActors.Keys.Where(k => k.NodeId == nodeId).ToList())
            {
                _accountActors.Remove(key);
            }
        }
    }

    /// <summary>
    /// Lets the checker read the servers' stage registries, to judge that a failed create leaves no stage registered and
    /// that at quiescence every registered stage is a running one. Set before the run starts.
    /// </summary>
    public void WatchRegistries(IStageRegistryView registries)
    {
        ArgumentNullException.ThrowIfNull(registries);
        _registries = registries;
    }

    public override void CheckQuiescent()
    {
        using (Context.Enter(_gate))
        {
            CheckRegistries();
            var creating = new List<(string NodeId, long StageId)>();
            foreach (var pair in _stages)
            {
                if (pair.Value.State == StageState.Creating && !pair.Value.ReportedStuck)
                {
                    creating.Add(pair.Key);
                }
            }

            creating.Sort(CompareKeys);
            foreach (var key in creating)
            {
                ref var stage = ref CollectionsMarshal.GetValueRefOrNullRef(_stages, key);
                stage.ReportedStuck = true;
                Log.Record($"stage {key.NodeId}/{key.StageId}: still creating at quiescence after [{Format(stage.History, stage.EventCount)}]; expected StagePostCreate or a failed create");
            }

            var stuck = new List<(string NodeId, long ActorInstance)>();
            foreach (var pair in _actors)
            {
                if ((pair.Value.State is ActorState.Created or ActorState.Authenticated or ActorState.PostAuthenticated or ActorState.Joining)
                    && !pair.Value.ReportedStuck)
                {
                    stuck.Add(pair.Key);
                }
            }

            stuck.Sort(CompareKeys);
            foreach (var key in stuck)
            {
                ref var actor = ref CollectionsMarshal.GetValueRefOrNullRef(_actors, key);
                actor.ReportedStuck = true;
                Log.Record($"{DescribeActor(key.NodeId, actor.StageId, key.ActorInstance, actor.AccountId)}: stuck at quiescence after [{Format(actor.History, actor.EventCount)}]; expected {ExpectedAfter(actor.State)} (OnCreate ran, but the actor neither joined nor was destroyed)");
            }
        }
    }

    private void CheckRegistries()
    {
        if (_registries is null)
        {
            return;
        }

        var registered = _registries.RegisteredStages().ToList();
        registered.Sort(CompareKeys);
        foreach (var key in registered)
        {
            var state = _stages.TryGetValue(key, out var stage) ? stage.State : StageState.None;
            if (state is StageState.Running or StageState.Creating)
            {
                continue;
            }

            Log.Record($"stage {key.NodeId}/{key.StageId}: registered at quiescence while it is {DescribeStageState(state)}; the registry holds only stages that are creating or running");
        }
    }

    private void OnStageEvent(string nodeId, long stageId, LifecycleEvent lifecycleEvent)
    {
        ref var stage = ref CollectionsMarshal.GetValueRefOrAddDefault(_stages, (nodeId, stageId), out _);
        var before = stage.State;
        var valid = lifecycleEvent switch
        {
            LifecycleEvent.StageCreate => before is StageState.None or StageState.CreateFailed or StageState.Destroyed,
            LifecycleEvent.StagePostCreate => before == StageState.Creating,
            _ => before == StageState.Running,
        };
        if (!valid)
        {
            Log.Record($"stage {nodeId}/{stageId}: {lifecycleEvent} after [{Format(stage.History, stage.EventCount)}]; expected {ExpectedAfter(before)}");
        }

        Push(ref stage.History, ref stage.EventCount, (int)lifecycleEvent);

        // Resynchronise on the event, so one missing step is one violation rather than one per later event.
        stage.State = lifecycleEvent switch
        {
            LifecycleEvent.StageCreate => StageState.Creating,
            LifecycleEvent.StagePostCreate => StageState.Running,
            _ => StageState.Destroyed,
        };
        if (lifecycleEvent == LifecycleEvent.StageCreate)
        {
            stage.ReportedStuck = false;
        }

        if (lifecycleEvent == LifecycleEvent.StageDestroy && stage.LiveActors > 0)
        {
            ReportActorsOutlivingStage(nodeId, stageId, stage.LiveActors);
        }
    }

    private void ReportActorsOutlivingStage(string nodeId, long stageId, int liveActors)
    {
        var alive = new List<long>();
        foreach (var pair in _actors)
        {
            if (string.Equals(pair.Key.NodeId, nodeId, StringComparison.Ordinal) && pair.Value.StageId == stageId && pair.Value.State != ActorState.Destroyed)
            {
                alive.Add(pair.Key.ActorInstance);
            }
        }

        alive.Sort();
        var names = new StringBuilder();
        for (var i = 0; i < alive.Count && i < 10; i++)
        {
            names.Append(i == 0 ? "#" : ", #").Append(alive[i]);
        }

        Log.Record($"stage {nodeId}/{stageId}: StageDestroy while {liveActors} actor(s) were not destroyed ({names}); every actor's ActorDestroy must come first");
    }

    private void OnActorEvent(string nodeId, long stageId, long actorInstance, long accountId, LifecycleEvent lifecycleEvent)
    {
        ref var actor = ref CollectionsMarshal.GetValueRefOrAddDefault(_actors, (nodeId, actorInstance), out var seen);
        if (!seen)
        {
            actor.StageId = stageId;
            ref var owner = ref CollectionsMarshal.GetValueRefOrAddDefault(_stages, (nodeId, stageId), out _);
            if (lifecycleEvent != LifecycleEvent.ActorDestroy)
            {
                owner.LiveActors++;
            }
        }

        if (accountId != 0)
        {
            actor.AccountId = accountId;
        }

        ref var stage = ref CollectionsMarshal.GetValueRefOrAddDefault(_stages, (nodeId, stageId), out _);
        if (stage.State != StageState.Running)
        {
            Log.Record($"{DescribeActor(nodeId, stageId, actorInstance, actor.AccountId)}: {lifecycleEvent} while the stage is {DescribeStageState(stage.State)} (stage history [{Format(stage.History, stage.EventCount)}])");
        }
        else if (actor.StageId != stageId)
        {
            Log.Record($"{DescribeActor(nodeId, actor.StageId, actorInstance, actor.AccountId)}: {lifecycleEvent} reported on stage {stageId}, not on the stage that created the actor");
        }

        var before = actor.State;
        var after = Next(before, lifecycleEvent);
        if (after == ActorState.None)
        {
            var what = before switch
            {
                ActorState.None => $"{lifecycleEvent} before ActorCreate",
                ActorState.Destroyed => $"{lifecycleEvent} after ActorDestroy in [{Format(actor.History, actor.EventCount)}]; nothing may follow ActorDestroy",
                _ => $"{lifecycleEvent} after [{Format(actor.History, actor.EventCount)}]; expected {ExpectedAfter(before)}",
            };
            Log.Record($"{DescribeActor(nodeId, actor.StageId, actorInstance, actor.AccountId)}: {what}");
            after = before == ActorState.Destroyed ? ActorState.Destroyed : StateAfter(lifecycleEvent);
        }

        Push(ref actor.History, ref actor.EventCount, (int)lifecycleEvent);
        if (after == ActorState.Destroyed && before != ActorState.Destroyed && seen)
        {
            ref var owner = ref CollectionsMarshal.GetValueRefOrAddDefault(_stages, (nodeId, actor.StageId), out _);
            owner.LiveActors--;
        }

        TrackAccount(nodeId, actorInstance, ref actor, lifecycleEvent);
        actor.State = after;
    }

    /// <summary>
    /// One actor per account and stage: a join while another actor of the account is joined there is the account's
    /// join running a second time (B11); a destroy frees the account's place.
    /// </summary>
    private void TrackAccount(string nodeId, long actorInstance, ref ActorLife actor, LifecycleEvent lifecycleEvent)
    {
        if (actor.AccountId == 0)
        {
            return;
        }

        var key = (nodeId, actor.StageId, actor.AccountId);
        if (lifecycleEvent == LifecycleEvent.ActorJoinStage)
        {
            if (_accountActors.TryGetValue(key, out var other) && other != actorInstance
                && _actors.TryGetValue((nodeId, other), out var otherLife) && otherLife.State != ActorState.Destroyed)
            {
                Log.Record($"{DescribeActor(nodeId, actor.StageId, actorInstance, actor.AccountId)}: ActorJoinStage while actor #{other} of the same account is {DescribeActorState(otherLife.State)} in the stage; the account's join ran a second time (a reconnect must keep its one actor)");
            }

            _accountActors[key] = actorInstance;
        }
        else if (lifecycleEvent == LifecycleEvent.ActorDestroy && _accountActors.TryGetValue(key, out var registered) && registered == actorInstance)
        {
            _accountActors.Remove(key);
        }
    }

    /// <summary>
    /// A message of <paramref name="accountId"/> was handed to actor <paramref name="actorInstance"/>: the actor must be
    /// joined (connected or not), not destroyed or half-joined, and be the one registered for its account (B11).
    /// </summary>
    public void OnActorMessage(string nodeId, long stageId, long actorInstance, long accountId)
    {
        using (Context.Enter(_gate))
        {
            var state = _actors.TryGetValue((nodeId, actorInstance), out var actor) ? actor.State : ActorState.None;
            if (state is not (ActorState.Joined or ActorState.Disconnected))
            {
                Log.Record($"{DescribeActor(nodeId, stageId, actorInstance, accountId)}: a message was handed to the actor while it is {DescribeActorState(state)}; messages go to the live actor registered for the account");
                return;
            }

            if (accountId != 0 && _accountActors.TryGetValue((nodeId, stageId, accountId), out var registered) && registered != actorInstance)
            {
                Log.Record($"{DescribeActor(nodeId, stageId, actorInstance, accountId)}: a message was handed to the actor while actor #{registered} is registered for the account");
            }
        }
    }

    /// <summary>The state an actor reaches by <paramref name="lifecycleEvent"/>, or None when the event is out of order.</summary>
    private static ActorState Next(ActorState state, LifecycleEvent lifecycleEvent) => (state, lifecycleEvent) switch
    {
        (ActorState.None, LifecycleEvent.ActorCreate) => ActorState.Created,
        (ActorState.Created, LifecycleEvent.ActorAuthenticate) => ActorState.Authenticated,
        (ActorState.Authenticated, LifecycleEvent.ActorPostAuthenticate) => ActorState.PostAuthenticated,
        (ActorState.Authenticated, LifecycleEvent.ActorDestroy) => ActorState.Destroyed,
        (ActorState.PostAuthenticated, LifecycleEvent.ActorJoinStage) => ActorState.Joining,
        (ActorState.Joining, LifecycleEvent.ActorPostJoinStage) => ActorState.Joined,
        (ActorState.Joining, LifecycleEvent.ActorDestroy) => ActorState.Destroyed,
        (ActorState.Joined, LifecycleEvent.ActorDisconnected) => ActorState.Disconnected,
        (ActorState.Joined, LifecycleEvent.ActorDestroy) => ActorState.Destroyed,
        (ActorState.Disconnected, LifecycleEvent.ActorConnected) => ActorState.Joined,
        (ActorState.Disconnected, LifecycleEvent.ActorDestroy) => ActorState.Destroyed,
        _ => ActorState.None,
    };

    private static ActorState StateAfter(LifecycleEvent lifecycleEvent) => lifecycleEvent switch
    {
        LifecycleEvent.ActorCreate => ActorState.Created,
        LifecycleEvent.ActorAuthenticate => ActorState.Authenticated,
        LifecycleEvent.ActorPostAuthenticate => ActorState.PostAuthenticated,
        LifecycleEvent.ActorJoinStage => ActorState.Joining,
        LifecycleEvent.ActorPostJoinStage or LifecycleEvent.ActorConnected => ActorState.Joined,
        LifecycleEvent.ActorDisconnected => ActorState.Disconnected,
        _ => ActorState.Destroyed,
    };

    private static string ExpectedAfter(ActorState state) => state switch
    {
        ActorState.None => "ActorCreate",
        ActorState.Created => "ActorAuthenticate",
        ActorState.Authenticated => "ActorPostAuthenticate or ActorDestroy",
        ActorState.PostAuthenticated => "ActorJoinStage",
        ActorState.Joining => "ActorPostJoinStage or ActorDestroy",
        ActorState.Joined => "ActorDisconnected or ActorDestroy",
        ActorState.Disconnected => "ActorConnected or ActorDestroy",
        _ => "nothing",
    };

    private static string ExpectedAfter(StageState state) => state switch
    {
        StageState.None => "StageCreate",
        StageState.Creating => "StagePostCreate",
        StageState.Running => "StageDestroy",
        _ => "nothing, or StageCreate of a new stage with this id",
    };

    private static string DescribeStageState(StageState state) => state switch
    {
        StageState.None => "not created",
        StageState.Creating => "still creating",
        StageState.CreateFailed => "gone (its create failed)",
        StageState.Destroyed => "destroyed",
        _ => "running",
    };

    private static string DescribeActorState(ActorState state) => state switch
    {
        ActorState.None => "unknown (never created)",
        ActorState.Created => "created, not authenticated",
        ActorState.Authenticated or ActorState.PostAuthenticated => "authenticated, not joined",
        ActorState.Joining => "joining",
        ActorState.Joined => "joined",
        ActorState.Disconnected => "joined and disconnected",
        _ => "destroyed",
    };

    private static string DescribeActor(string nodeId, long stageId, long actorInstance, long accountId) =>
        $"stage {nodeId}/{stageId}, actor #{actorInstance} (account {accountId})";

    private static void Push(ref ulong history, ref int count, int code)
    {
        history = (history << 4) | (uint)code;
        count++;
    }

    /// <summary>The last events in order, oldest first; older ones are elided.</summary>
    private static string Format(ulong history, int count)
    {
        if (count == 0)
        {
            return "nothing";
        }

        var text = new StringBuilder();
        var shown = Math.Min(count, HistoryEventsMax);
        if (count > shown)
        {
            text.Append("..., ");
        }

        for (var i = shown - 1; i >= 0; i--)
        {
            var code = (int)((history >> (4 * i)) & 0xF);
            text.Append(code == CreateFailedMarker ? "(create failed)" : ((LifecycleEvent)code).ToString());
            if (i > 0)
            {
                text.Append(", ");
            }
        }

        return text.ToString();
    }

    private static int CompareKeys((string NodeId, long Id) a, (string NodeId, long Id) b)
    {
        var byNode = string.CompareOrdinal(a.NodeId, b.NodeId);
        return byNode != 0 ? byNode : a.Id.CompareTo(b.Id);
    }

    private struct StageLife
    {
        public StageState State;
        public ulong History;
        public int EventCount;
        public int LiveActors;
        public bool ReportedStuck;
    }

    private struct ActorLife
    {
        public long StageId;
        public long AccountId;
        public ActorState State;
        public ulong History;
        public int EventCount;
        public bool ReportedStuck;
    }
}

/// <summary>What <see cref="LifecycleChecker"/> reads of the servers' stage registries.</summary>
public interface IStageRegistryView
{
    /// <summary>True when the node is up and its registry holds a stage with this id.</summary>
    bool IsRegistered(string nodeId, long stageId);

    /// <summary>Every stage the registries of the live nodes hold.</summary>
    IEnumerable<(string NodeId, long StageId)> RegisteredStages();
}
