namespace PlayHouse.Core.Runtime;

/// <summary>
/// A stage's creation and its end: the Create step (OnCreate, then OnPostCreate), the Destroy step (every actor, then
/// the stage) and the close that follows either a failed create or a destroy: timers and the game loop stop, the
/// registry forgets the stage, and what its mailbox still held fails with an error.
/// </summary>
/// <remarks>
/// Invariant: a stage goes Creating, then Running (its create succeeded) or straight to Closed (it failed, so no zombie
/// keeps its id, B16), and Closed is final: it closes once, and a closed stage refuses every post.
/// Threading: called only from the stage's turns (asserted); the state changes are made under the stage's lock, which
/// posting threads read.
/// </remarks>
internal sealed class StageLifecycle(StageHost stage)
{
    private bool _closed;

    /// <summary>Runs the Create step: on success the stage runs and the creator hears so; on failure it closes at once.</summary>
    public async ValueTask RunCreate(StageMessage message)
    {
        stage.AssertInTurn(nameof(RunCreate));
        var server = stage.Server;
        CreateResult result;
        try
        {
            stage.ReportLifecycle(null, LifecycleEvent.StageCreate);
            result = await stage.User.OnCreate(new Packet(message.MsgId ?? string.Empty, message.Payload, message.Reply));
        }
        catch (Exception ex)
        {
            stage.HandlerFailed(StageWorkKind.Create, message.MsgId, ex);
            result = CreateResult.Refuse(ErrorCodes.CreateStageFailed);
        }

        if (!result.Ok)
        {
            result.ReplyPayload.DisposeIfOwner();
            var code = result.ErrorCode == ErrorCodes.Success ? ErrorCodes.CreateStageFailed : result.ErrorCode;
            if (message.Reply.IsRequest)
            {
                server.TryReplyError(message.Reply, code, stage.StageId);
            }

            // A stage whose creation failed is removed at once, so no zombie keeps its id (B16).
            CloseNow(ErrorCodes.CreateStageFailed, StageRemoval.CreateFailed);
            return;
        }

        stage.MarkRunning();
        server.OnStageCreated(stage);
        if (stage.ActorDirectory.Count == 0)
        {
            // Usually the first join is queued right behind the create: the idle timer is armed only if the stage is
            // still empty once its queue has drained, so a stage created for a join leaves no idle wake-up behind (in
            // simulation that would be an event a minute ahead, keeping a world that is otherwise quiet busy).
            stage.Housekeeping.OnCreatedEmpty();
        }

        if (message.Reply.IsRequest)
        {
            server.SendReply(message.Reply, SystemMsgIds.StageCreated, result.ReplyPayload.Move("reply"), ErrorCodes.Success, stage.StageId);
        }
        else
        {
            result.ReplyPayload.DisposeIfOwner();
        }

        stage.ReportLifecycle(null, LifecycleEvent.StagePostCreate);
        await stage.User.OnPostCreate();
    }

    /// <summary>Runs the Destroy step unless the stage closed already.</summary>
    public async ValueTask RunDestroy()
    {
        if (stage.IsClosed)
        {
            return;
        }

        await DestroyStage();
    }

    /// <summary>Destroys every actor, then the stage, and closes it (the stage may already refuse posts).</summary>
    public async ValueTask DestroyStage()
    {
        stage.AssertInTurn(nameof(DestroyStage));
        await stage.ActorDirectory.DestroyAll();
        stage.ReportLifecycle(null, LifecycleEvent.StageDestroy);
        await stage.User.OnDestroy();
        CloseNow(ErrorCodes.StageNotFound, StageRemoval.Destroyed);
    }

    /// <summary>Closes the stage: timers stop, the registry forgets it, and queued messages fail with <paramref name="errorCode"/>.</summary>
    private void CloseNow(ushort errorCode, StageRemoval why)
    {
        if (_closed)
        {
            throw new InvalidOperationException($"Stage {stage.StageId} on {stage.NodeId} closed twice ({why}).");
        }

        _closed = true;
        stage.Housekeeping.UnlistEmpty();
        var orphans = stage.CloseMailbox();
        stage.Timers.StopAll();
        stage.Housekeeping.StopTimer();
        stage.Server.RemoveStage(stage, why);
        for (var i = 0; i < orphans.Count; i++)
        {
            var orphan = orphans[i];
            stage.FailMessage(ref orphan, errorCode);
        }
    }
}
