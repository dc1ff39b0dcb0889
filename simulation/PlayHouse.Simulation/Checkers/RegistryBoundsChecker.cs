using System.Globalization;
using PlayHouse.Core.Runtime;

namespace PlayHouse.Simulation.Checkers;

/// <summary>
/// The play servers' registries stay bounded, as their <see cref="ServerOptions"/> promise: no more live stages than
/// <see cref="ServerOptions.StagesMax"/>, no stage with more actors than <see cref="ServerOptions.ActorsPerStageMax"/>,
/// no disconnected actor held longer than <see cref="ServerOptions.DisconnectedActorExpiry"/> (plus a grace for a
/// stage busy with a long handler) unless its account reconnected, no more disconnected actors held across the server
/// than <see cref="ServerOptions.DisconnectedActorsMax"/> for longer than the grace (an eviction is a message to the
/// actor's stage, so the count may pass the cap until it comes up), and no stage left empty and inactive longer than
/// <see cref="ServerOptions.IdleStageCloseAfter"/> plus the grace. Judged from lifecycle and handler hooks as events
/// happen and after every step (the earliest deadline only, so a step costs a heap peek); at quiescence, where nothing
/// is scheduled any more, a disconnected actor or an idle stage still held is one that would be held forever.
/// </summary>
/// <remarks>
/// A stage counts from its StagePostCreate to its StageDestroy; an actor from its ActorPostJoinStage to its
/// ActorDestroy. Any handler of a stage other than its housekeeping restarts its idle span (a timer tick, a message from
/// another stage), so the check never closes earlier than the core would. Thread-safe (one lock per hook call).
/// </remarks>
public sealed class RegistryBoundsChecker : RuntimeInvariantChecker, INodeCrashAware
{
    public const string CheckerName = "RegistryBounds";

    private readonly Lock _gate = new();
    private readonly TimeSpan _grace;
    private readonly Dictionary<string, ServerOptions> _options = new(StringComparer.Ordinal);
    private readonly Dictionary<string, int> _liveStages = new(StringComparer.Ordinal);
    private readonly Dictionary<(string NodeId, long StageId), StageState> _stages = [];
    private readonly Dictionary<(string NodeId, long ActorInstance), ActorState> _actors = [];
    private readonly PriorityQueue<Deadline, (long Ticks, long Sequence)> _actorDeadlines = new();
    private readonly PriorityQueue<Deadline, (long Ticks, long Sequence)> _stageDeadlines = new();
    private readonly Dictionary<string, int> _waiting = new(StringComparer.Ordinal);
    private readonly Dictionary<string, long> _overCapSince = new(StringComparer.Ordinal);
    private long _sequence;

    // One counter for every stage's generations, so a stage closed and created again under its id never matches a
    // deadline of its predecessor.
    private long _generations;

    public RegistryBoundsChecker(CheckerContext context, TimeSpan grace)
        : base(CheckerName, context)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(grace, TimeSpan.Zero);
        _grace = grace;
    }

    /// <summary>Judges the stages of <paramref name="nodeId"/> against <paramref name="options"/>; call before the run.</summary>
    public void Watch(string nodeId, ServerOptions options)
    {
        ArgumentException.ThrowIfNullOrEmpty(nodeId);
        ArgumentNullException.ThrowIfNull(options);
        using (Context.Enter(_gate))
        {
            _options[nodeId] = options;
        }
    }

    /// <summary>Disconnected actors the checker sees held now (for tests and reports).</summary>
    public int DisconnectedActorsHeld
    {
        get
        {
            using (Context.Enter(_gate))
            {
                return _actors.Values.Count(a => a.DisconnectedSinceTicks >= 0);
            }
        }
    }

    public override void OnLifecycle(string nodeId, long stageId, long actorInstance, long accountId, LifecycleEvent lifecycleEvent)
    {
        using (Context.Enter(_gate))
        {
            if (!_options.TryGetValue(nodeId, out var options))
            {
                return;
            }

            var now = Context.NowTicks;
            switch (lifecycleEvent)
            {
                case LifecycleEvent.StagePostCreate:
                    OnStageCreated(nodeId, stageId, options, now);
                    break;
                case LifecycleEvent.StageDestroy:
                    if (_stages.Remove((nodeId, stageId)))
                    {
                        _liveStages[nodeId]--;
                    }

                    break;
                case LifecycleEvent.ActorPostJoinStage:
                    OnActorJoined(nodeId, stageId, actorInstance, accountId, options, now);
                    break;
                case LifecycleEvent.ActorDisconnected:
                    if (_actors.TryGetValue((nodeId, actorInstance), out var actor))
                    {
                        actor.DisconnectedSinceTicks = now;
                        actor.Generation++;
                        SetWaiting(nodeId, actor, true, options, now);
                        if (options.DisconnectedActorExpiry is { } expiry)
                        {
                            _actorDeadlines.Enqueue(new Deadline(nodeId, stageId, actorInstance, actor.Generation), (now + expiry.Ticks + _grace.Ticks, _sequence++));
                        }
                    }

                    break;
                case LifecycleEvent.ActorConnected:
                    if (_actors.TryGetValue((nodeId, actorInstance), out var reconnected))
                    {
                        reconnected.DisconnectedSinceTicks = -1;
                        SetWaiting(nodeId, reconnected, false, options, now);
                    }

                    break;
                case LifecycleEvent.ActorDestroy:
                    if (_actors.Remove((nodeId, actorInstance), out var destroyed))
                    {
                        SetWaiting(nodeId, destroyed, false, options, now);
                    }

                    if (destroyed is not null && _stages.TryGetValue((nodeId, stageId), out var stage))
                    {
                        stage.Actors--;
                        if (stage.Actors == 0)
                        {
                            BecameEmpty(nodeId, stageId, stage, options, now);
                        }
                    }

                    break;
                default:
                    break;
            }
        }
    }

    public override void OnHandlerEntered(string nodeId, long stageId, StageWorkKind kind, string? msgId)
    {
        if (kind is StageWorkKind.Housekeeping or StageWorkKind.EvictDisconnected)
        {
            return;
        }

        using (Context.Enter(_gate))
        {
            if (_stages.TryGetValue((nodeId, stageId), out var stage) && stage.Actors == 0 && _options.TryGetValue(nodeId, out var options))
            {
                // Activity on an empty stage: its idle span starts again (the core may close it sooner, never later).
                BecameEmpty(nodeId, stageId, stage, options, Context.NowTicks);
            }
        }
    }

    public override void CheckStep()
    {
        using (Context.Enter(_gate))
        {
            var now = Context.NowTicks;
            while (_actorDeadlines.TryPeek(out var due, out var key) && key.Ticks < now)
            {
                _actorDeadlines.Dequeue();
                if (_actors.TryGetValue((due.NodeId, due.Id), out var actor) && actor.Generation == due.Generation && actor.DisconnectedSinceTicks >= 0)
                {
                    Log.Record(string.Create(CultureInfo.InvariantCulture, $"actor #{due.Id} (account {actor.AccountId}) of stage {due.NodeId}/{due.StageId}: disconnected at {Seconds(actor.DisconnectedSinceTicks)} and still held at {Seconds(now)}, past its expiry of {Seconds(_options[due.NodeId].DisconnectedActorExpiry!.Value.Ticks)} (grace {Seconds(_grace.Ticks)})"));
                    actor.DisconnectedSinceTicks = -1;
                }
            }

            if (_overCapSince.Count > 0)
            {
                CheckWaitingCap(now);
            }

            while (_stageDeadlines.TryPeek(out var due, out var key) && key.Ticks < now)
            {
                _stageDeadlines.Dequeue();
                if (_stages.TryGetValue((due.NodeId, due.StageId), out var stage) && stage.Actors == 0 && stage.Generation == due.Generation)
                {
                    Log.Record(string.Create(CultureInfo.InvariantCulture, $"stage {due.NodeId}/{due.StageId}: empty and inactive since {Seconds(stage.EmptySinceTicks)} and still open at {Seconds(now)}, past its idle close of {Seconds(_options[due.NodeId].IdleStageCloseAfter!.Value.Ticks)} (grace {Seconds(_grace.Ticks)})"));
                    stage.Generation = ++_generations;
                }
            }
        }
    }

    public override void CheckQuiescent()
    {
        using (Context.Enter(_gate))
        {
            // Nothing is scheduled in a quiet world: whatever was due to expire or close and has not is held forever.
            foreach (var ((nodeId, instance), actor) in _actors.OrderBy(a => a.Key.NodeId, StringComparer.Ordinal).ThenBy(a => a.Key.ActorInstance))
            {
                if (actor.DisconnectedSinceTicks >= 0 && _options[nodeId].DisconnectedActorExpiry is not null)
                {
                    Log.Record(string.Create(CultureInfo.InvariantCulture, $"actor #{instance} (account {actor.AccountId}) of stage {nodeId}/{actor.StageId}: disconnected at {Seconds(actor.DisconnectedSinceTicks)} and still held when the world went quiet; nothing will expire it"));
                    actor.DisconnectedSinceTicks = -1;
                }
            }

            foreach (var ((nodeId, stageId), stage) in _stages.OrderBy(s => s.Key.NodeId, StringComparer.Ordinal).ThenBy(s => s.Key.StageId))
            {
                if (stage.Actors == 0 && _options[nodeId].IdleStageCloseAfter is not null)
                {
                    Log.Record(string.Create(CultureInfo.InvariantCulture, $"stage {nodeId}/{stageId}: empty since {Seconds(stage.EmptySinceTicks)} and still open when the world went quiet; nothing will close it"));
                    stage.Generation = ++_generations;
                }
            }
        }
    }

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

            _waiting.Remove(nodeId);
            _overCapSince.Remove(nodeId);

            _liveStages[nodeId] = 0;
        }
    }

    /// <summary>Counts <paramref name="actor"/> in or out of its server's waiting actors and notes when the count passes the cap.</summary>
    private void SetWaiting(string nodeId, ActorState actor, bool waiting, ServerOptions options, long now)
    {
        if (actor.Waiting == waiting)
        {
            return;
        }

        actor.Waiting = waiting;
        var count = _waiting[nodeId] = _waiting.GetValueOrDefault(nodeId) + (waiting ? 1 : -1);
        if (count <= options.DisconnectedActorsMax)
        {
            _overCapSince.Remove(nodeId);
        }
        else
        {
            _overCapSince.TryAdd(nodeId, now);
        }
    }

    private void CheckWaitingCap(long now)
    {
        foreach (var (nodeId, since) in _overCapSince.OrderBy(n => n.Key, StringComparer.Ordinal).ToList())
        {
            if (now - since > _grace.Ticks)
            {
                Log.Record(string.Create(CultureInfo.InvariantCulture, $"node {nodeId}: {_waiting[nodeId]} disconnected actors held at {Seconds(now)}, over DisconnectedActorsMax={_options[nodeId].DisconnectedActorsMax} since {Seconds(since)} (grace {Seconds(_grace.Ticks)})"));

                // Once per grace span, however long it stays over.
                _overCapSince[nodeId] = now;
            }
        }
    }

    private void OnStageCreated(string nodeId, long stageId, ServerOptions options, long now)
    {
        var stage = new StageState();
        _stages[(nodeId, stageId)] = stage;
        var live = _liveStages[nodeId] = _liveStages.GetValueOrDefault(nodeId) + 1;
        if (live > options.StagesMax)
        {
            Log.Record(string.Create(CultureInfo.InvariantCulture, $"node {nodeId}: {live} live stages after stage {stageId} was created, over StagesMax={options.StagesMax}"));
        }

        BecameEmpty(nodeId, stageId, stage, options, now);
    }

    private void OnActorJoined(string nodeId, long stageId, long actorInstance, long accountId, ServerOptions options, long now)
    {
        _actors[(nodeId, actorInstance)] = new ActorState { AccountId = accountId, StageId = stageId };
        if (!_stages.TryGetValue((nodeId, stageId), out var stage))
        {
            return;
        }

        stage.Actors++;
        stage.Generation = ++_generations;
        if (stage.Actors > options.ActorsPerStageMax)
        {
            Log.Record(string.Create(CultureInfo.InvariantCulture, $"stage {nodeId}/{stageId}: {stage.Actors} actors after account {accountId} joined at {Seconds(now)}, over ActorsPerStageMax={options.ActorsPerStageMax}"));
        }
    }

    private void BecameEmpty(string nodeId, long stageId, StageState stage, ServerOptions options, long now)
    {
        stage.EmptySinceTicks = now;
        stage.Generation = ++_generations;
        if (options.IdleStageCloseAfter is { } idle)
        {
            _stageDeadlines.Enqueue(new Deadline(nodeId, stageId, 0, stage.Generation), (now + idle.Ticks + _grace.Ticks, _sequence++));
        }
    }

    private static string Seconds(long ticks) => (ticks / (double)TimeSpan.TicksPerSecond).ToString("0.######", CultureInfo.InvariantCulture) + " s";

    private readonly record struct Deadline(string NodeId, long StageId, long Id, long Generation);

    private sealed class StageState
    {
        public int Actors;
        public long EmptySinceTicks;
        public long Generation;
    }

    private sealed class ActorState
    {
        public long AccountId;
        public long StageId;
        public long DisconnectedSinceTicks = -1;
        public long Generation;
        public bool Waiting;
    }
}
