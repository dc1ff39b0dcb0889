using PlayHouse.Core.Pooling;

namespace PlayHouse.Core.Runtime;

/// <summary>
/// Where a play server's inbound mesh message goes (replies never come here, <see cref="ServerNode.OnMeshMessage"/>
/// completes them): a system message creates a stage (exactly once per id, or with a new id); any other message goes
/// into the ledger of unanswered requests and its stage's mailbox, unless the stage is unknown, or the request would
/// close a cycle of awaiting stages (B9), or the ledger is full; those are refused at once with their error.
/// </summary>
/// <remarks>
/// Invariant: every inbound message is answered or released exactly once: queued (the mailbox owns its payload), or
/// refused (payload released, a request answered with the error).
/// Threading: thread-safe; called from the mesh transports' receive loops on any thread, and from a node's own sends.
/// </remarks>
internal sealed class MeshRouting(PlayServer server)
{
    public void Route(in MeshMessage message)
    {
        if (message.IsSystem)
        {
            RouteSystem(message);
            return;
        }

        var stage = server.Stages.Find(message.StageId);
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
            server.Counters.AddCycleRequestRefused();
            message.Payload.DisposeIfOwner();
            server.ReplyErrorNow(message, ErrorCodes.RequestCycle, message.StageId);
            return;
        }

        if (!server.TryOpenMeshToken(message, message.StageId, out var reply, out var staleAt))
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
            server.RefuseStageMessage(stage, stageMessage);
        }
    }

    private bool ClosesCycle(StageHost stage, in MeshMessage message) =>
        server.Parts.CycleGuard is { } guard ? guard.RefusesCycle(stage, message) : stage.IsInCycleWith(message);

    private void RouteSystem(in MeshMessage message)
    {
        if (!server.TryOpenMeshToken(message, message.StageId, out var reply))
        {
            message.Payload.DisposeIfOwner();
            return;
        }

        var op = (SystemOp)message.ServiceId;
        var getOrCreate = op == SystemOp.GetOrCreateStage;
        if (op is not (SystemOp.CreateStage or SystemOp.GetOrCreateStage))
        {
            server.Counters.AddUnknownApiMessage();
            message.Payload.DisposeIfOwner();
            server.TryReplyError(reply, ErrorCodes.HandlerNotFound, message.StageId);
            return;
        }

        // A create that names no stage gets a new id, picked under the registry lock so nothing can take it meanwhile.
        var allocate = !getOrCreate && message.StageId == PlayServer.NewStageId;
        var createMessage = new StageMessage { Kind = StageWorkKind.Create, MsgId = message.MsgId, Payload = message.Payload, Reply = reply };
        var stage = server.Stages.GetOrCreate(message.StageType ?? string.Empty, message.StageId, createMessage, out var created, out var errorCode, allocate);
        if (stage is null)
        {
            message.Payload.DisposeIfOwner();
            server.TryReplyError(reply, errorCode, message.StageId);
            return;
        }

        if (created)
        {
            return;
        }

        message.Payload.DisposeIfOwner();
        if (getOrCreate)
        {
            server.SendReply(reply, SystemMsgIds.StageExisted, Payload.Empty, ErrorCodes.Success, message.StageId);
        }
        else
        {
            server.TryReplyError(reply, ErrorCodes.StageAlreadyExists, message.StageId);
        }
    }

    private void RefuseUnknownStage(in MeshMessage message)
    {
        message.Payload.DisposeIfOwner();
        server.Observer.OnDropped(server.NodeId, "unknown-stage", message.MsgId);
        if (message.IsRequest)
        {
            server.Counters.AddUnknownStageRequest();
            server.ReplyErrorNow(message, ErrorCodes.StageNotFound, message.StageId);
        }
        else
        {
            server.Counters.AddUnknownStageSend();
        }
    }
}
