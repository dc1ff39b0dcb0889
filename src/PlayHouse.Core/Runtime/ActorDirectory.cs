namespace PlayHouse.Core.Runtime;

/// <summary>
/// A stage's actors: who joins (the join steps, a reconnect through the rejoin part, the cap per stage), who
/// disconnects (the actor stays and waits for its account), and who goes (a leave, an expiry, an eviction at the
/// server's cap, the stage's destroy). It tells the stage's housekeeping when the stage becomes empty or stops being so,
/// and when a disconnected actor starts to wait.
/// </summary>
/// <remarks>
/// Invariant: an actor is joined exactly while it is in both the account map and the join order, one actor per account;
/// the two are changed together and their counts asserted equal after each change.
/// Threading: not thread-safe; called only from the stage's turns (asserted at the entry points).
/// </remarks>
internal sealed class ActorDirectory(StageHost stage, StageRegistration registration)
{
    private readonly Dictionary<long, ActorHost> _byAccount = [];
    private readonly List<IActor> _inJoinOrder = [];

    /// <summary>Actors joined now.</summary>
    public int Count => _byAccount.Count;

    /// <summary>The joined actors' user objects, in join order.</summary>
    public IReadOnlyList<IActor> InJoinOrder => _inJoinOrder;

    /// <summary>Runs a join: a new actor authenticates and joins, or an account already here reconnects (the rejoin part).</summary>
    public async ValueTask RunJoin(StageMessage message)
    {
        stage.AssertInTurn(nameof(RunJoin));
        var session = message.Session!;
        var server = stage.Server;
        var actorHost = new ActorHost(stage, server.NextActorInstance());
        try
        {
            await RunJoinSteps(message, session, actorHost);
        }
        catch (Exception ex) when (!actorHost.IsJoined)
        {
            // A join callback threw before the actor joined: the client hears HandlerFailed, its session may
            // authenticate again, and an actor that was created is destroyed, so no session or actor is stuck.
            stage.HandlerFailed(StageWorkKind.Join, message.MsgId, ex);
            server.TryReplyError(message.Reply, ErrorCodes.HandlerFailed, stage.StageId);
            server.OnJoinFailed(session);
            if (actorHost.User is not null && !actorHost.IsDestroyed)
            {
                actorHost.IsDestroyed = true;
                stage.ReportLifecycle(actorHost, LifecycleEvent.ActorDestroy);
                try
                {
                    await actorHost.User.OnDestroy();
                }
                catch (Exception destroyError)
                {
                    stage.HandlerFailed(StageWorkKind.Join, message.MsgId, destroyError);
                }
            }
        }
    }

    private async ValueTask RunJoinSteps(StageMessage message, ClientSession session, ActorHost actorHost)
    {
        var server = stage.Server;
        var actor = registration.ActorFactory(actorHost);
        actorHost.User = actor;
        var packet = new Packet(message.MsgId!, message.Payload, message.Reply);

        stage.ReportLifecycle(actorHost, LifecycleEvent.ActorCreate);
        await actor.OnCreate();
        stage.ReportLifecycle(actorHost, LifecycleEvent.ActorAuthenticate);
        var auth = await actor.OnAuthenticate(packet);
        if (!auth.Ok)
        {
            auth.ReplyPayload.DisposeIfOwner();
            server.TryReplyError(message.Reply, auth.ErrorCode == ErrorCodes.Success ? ErrorCodes.AuthenticationFailed : auth.ErrorCode, stage.StageId);
            await RefuseJoin(session, actorHost);
            return;
        }

        if (_byAccount.TryGetValue(auth.AccountId, out var existing))
        {
            // A reconnect: the account already has its actor here (the rejoin part decides what happens, B11).
            await server.Parts.Rejoin.RejoinAsync(new ActorRejoin(stage, message, session, actorHost, auth, existing));
            return;
        }

        if (_byAccount.Count >= stage.Options.ActorsPerStageMax)
        {
            // At the cap only an account that is already here (a reconnect, above) gets in; a new one is refused before
            // any join callback runs, and the actor made for it is destroyed.
            stage.Counters.AddJoinRefusedAtCap();
            auth.ReplyPayload.DisposeIfOwner();
            server.TryReplyError(message.Reply, ErrorCodes.StageFull, stage.StageId);
            await RefuseJoin(session, actorHost);
            return;
        }

        actorHost.AccountId = auth.AccountId;
        stage.ReportLifecycle(actorHost, LifecycleEvent.ActorPostAuthenticate);
        await actor.OnPostAuthenticate();
        stage.ReportLifecycle(actorHost, LifecycleEvent.ActorJoinStage);
        var joined = await stage.User.OnJoinStage(actor);
        if (!joined)
        {
            auth.ReplyPayload.DisposeIfOwner();
            server.TryReplyError(message.Reply, ErrorCodes.JoinStageRejected, stage.StageId);
            await RefuseJoin(session, actorHost);
            return;
        }

        actorHost.IsJoined = true;
        _byAccount.Add(auth.AccountId, actorHost);
        _inJoinOrder.Add(actor);
        AssertCountsAgree();
        stage.Housekeeping.OnNoLongerEmpty();
        server.OnActorAdded();
        var bound = server.CompleteJoin(session, actorHost);
        if (bound)
        {
            server.SendReply(message.Reply, StageHost.ReplyMsgId(auth.ReplyMsgId, message.MsgId!), auth.ReplyPayload.Move("reply"), ErrorCodes.Success, stage.StageId);
        }
        else
        {
            auth.ReplyPayload.DisposeIfOwner();
        }

        stage.ReportLifecycle(actorHost, LifecycleEvent.ActorPostJoinStage);
        await stage.User.OnPostJoinStage(actor);
        if (!bound)
        {
            // The client left while joining: the actor stays, disconnected, as after any disconnect.
            stage.Housekeeping.BeginExpiry(actorHost);
            stage.ReportLifecycle(actorHost, LifecycleEvent.ActorDisconnected);
            await stage.User.OnConnectionChanged(actor, false);
        }
    }

    /// <summary>A join was refused after the actor was made (the reply is sent): the session may try again, the actor is destroyed.</summary>
    private async ValueTask RefuseJoin(ClientSession session, ActorHost actorHost)
    {
        stage.Server.OnJoinFailed(session);
        actorHost.IsDestroyed = true;
        stage.ReportLifecycle(actorHost, LifecycleEvent.ActorDestroy);
        await actorHost.User.OnDestroy();
    }

    /// <summary>Runs a disconnect: the actor stays, disconnected, and waits for its account, unless the news is stale.</summary>
    public async ValueTask RunConnectionChanged(StageMessage message)
    {
        stage.AssertInTurn(nameof(RunConnectionChanged));
        var actor = message.Actor!;
        if (!actor.IsJoined || !ReferenceEquals(actor.Session, message.Session))
        {
            // The actor was rebound to a newer session or left; this news is stale.
            return;
        }

        actor.Session = null;
        stage.Housekeeping.BeginExpiry(actor);
        stage.ReportLifecycle(actor, LifecycleEvent.ActorDisconnected);
        await stage.User.OnConnectionChanged(actor.User, false);
    }

    /// <summary>Runs an actor's leave: it is removed and destroyed.</summary>
    public async ValueTask RunLeave(ActorHost actor)
    {
        stage.AssertInTurn(nameof(RunLeave));
        if (!actor.IsJoined)
        {
            return;
        }

        Remove(actor);
        if (_byAccount.Count == 0)
        {
            stage.Housekeeping.BecameEmpty();
        }

        stage.ReportLifecycle(actor, LifecycleEvent.ActorDestroy);
        await actor.User.OnDestroy();
    }

    /// <summary>Runs the eviction of a waiting actor the server's cap chose, unless it stopped waiting meanwhile.</summary>
    public async ValueTask RunEviction(WaitingActor entry)
    {
        stage.AssertInTurn(nameof(RunEviction));
        var actor = entry.Actor;
        if (actor is null || !actor.IsJoined || actor.Session is not null || !ReferenceEquals(actor.Wait, entry))
        {
            // The account reconnected or the actor left before the eviction came up; it is no longer waiting.
            return;
        }

        stage.Counters.AddDisconnectedActorEvictedAtCap();
        await DestroyWaitingActor(actor, StageWorkKind.EvictDisconnected);
    }

    /// <summary>Destroys a disconnected actor as if it had left: its expiry came, or the server's cap evicted it.</summary>
    public async ValueTask DestroyWaitingActor(ActorHost actor, StageWorkKind kind)
    {
        Remove(actor);
        if (_byAccount.Count == 0)
        {
            stage.Housekeeping.BecameEmpty();
        }

        stage.ReportLifecycle(actor, LifecycleEvent.ActorDestroy);
        try
        {
            await actor.User.OnDestroy();
        }
        catch (Exception ex)
        {
            // One actor's failing OnDestroy must not keep the others past their expiry or over the cap.
            stage.HandlerFailed(kind, null, ex);
        }
    }

    /// <summary>Destroys every actor, in the order they were made (the stage is being destroyed).</summary>
    public async ValueTask DestroyAll()
    {
        foreach (var actor in _byAccount.Values.OrderBy(a => a.Instance).ToList())
        {
            Remove(actor);
            stage.ReportLifecycle(actor, LifecycleEvent.ActorDestroy);
            await actor.User.OnDestroy();
        }
    }

    private void Remove(ActorHost actor)
    {
        var server = stage.Server;
        actor.IsJoined = false;
        if (_byAccount.Remove(actor.AccountId))
        {
            server.OnActorRemoved();
        }

        _inJoinOrder.Remove(actor.User);
        AssertCountsAgree();
        server.UnbindActor(actor);
        server.EndWait(actor);
        actor.Session = null;
    }

    private void AssertCountsAgree()
    {
        if (_byAccount.Count != _inJoinOrder.Count)
        {
            throw new InvalidOperationException($"Stage {stage.StageId} on {stage.NodeId} holds {_byAccount.Count} actors by account but {_inJoinOrder.Count} in join order.");
        }
    }
}
