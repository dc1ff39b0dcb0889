namespace PlayHouse.Core.Runtime;

/// <summary>
/// A join by an account that already has an actor in the stage: the stage, the join message, the joining session,
/// the probe actor made for the join (created and authenticated, not joined), its authentication result, and the
/// account's live actor.
/// </summary>
internal readonly record struct ActorRejoin(StageHost Stage, StageMessage Message, ClientSession Session, ActorHost Probe, AuthenticateResult Auth, ActorHost Existing);

/// <summary>
/// What a stage does with a join whose account already has an actor there (a reconnect): the part
/// <see cref="NodeParts.Rejoin"/> picks. It runs inside the join's turn, on the stage.
/// </summary>
internal interface IActorRejoin
{
    ValueTask RejoinAsync(ActorRejoin rejoin);
}

/// <summary>
/// The standard rejoin (B11): the account keeps its one actor. The probe actor that authenticated is destroyed before
/// it joins anything, the session is bound to the live actor, the join is answered, and the live actor is told it is
/// connected again (when it was not). No join callback runs a second time for the account.
/// </summary>
internal sealed class KeepLiveActorRejoin : IActorRejoin
{
    public static KeepLiveActorRejoin Instance { get; } = new();

    public async ValueTask RejoinAsync(ActorRejoin rejoin)
    {
        var (stage, message, session, probe, auth, existing) = rejoin;
        probe.IsDestroyed = true;
        stage.ReportLifecycle(probe, LifecycleEvent.ActorDestroy);
        await probe.User.OnDestroy();
        var wasConnected = existing.Session is not null;
        if (!stage.Server.CompleteJoin(session, existing))
        {
            auth.ReplyPayload.DisposeIfOwner();
            return;
        }

        stage.Server.SendReply(message.Reply, StageHost.ReplyMsgId(auth.ReplyMsgId, message.MsgId!), auth.ReplyPayload.Move("reply"), ErrorCodes.Success, stage.StageId);
        if (!wasConnected)
        {
            stage.ReportLifecycle(existing, LifecycleEvent.ActorConnected);
            await stage.User.OnConnectionChanged(existing.User, true);
        }
    }
}
