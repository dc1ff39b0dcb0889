using PlayHouse.Core.Pooling;

namespace PlayHouse.Core.Runtime;

/// <summary>
/// Where a client's frame goes: the session protocol's gate (<see cref="NodeParts.ClientFrameGate"/>: heartbeats, the
/// first message must authenticate, nothing but waiting while a join runs), the join into a stage (found or created),
/// and every other message into the ledger of unanswered requests and its actor's stage, or refused with its error.
/// A transport's receive loop may hand a receive's frames over in a <see cref="ClientFrameBatch"/>: plain messages to
/// the session's stage are held there and enter the ledger and the mailbox together, in order.
/// </summary>
/// <remarks>
/// Invariant: every frame is answered or released exactly once: queued in a mailbox (which then owns its payload), or
/// refused (its payload released, a request answered with the error); held messages are flushed, in order, before any
/// frame that is not held and before the receive loop hands its thread back.
/// Threading: thread-safe; called from the transports' receive loops on any thread. A batch belongs to one receive
/// loop. It holds no lock of its own: the sessions, the ledger and the stages each take theirs.
/// </remarks>
internal sealed class ClientFrameRouting
{
    private readonly PlayServer _server;
    private readonly ClientSessions _sessions;
    private readonly IClientFrameGate _gate;
    private readonly string _authenticateMsgId;

    // ServerOptions.ClientMessageQueueTimeMax in timestamp units (at least 1); 0 when client messages never go stale.
    private readonly long _queueTimeDelta;

    public ClientFrameRouting(PlayServer server, ClientSessions sessions)
    {
        _server = server;
        _sessions = sessions;
        _gate = server.Parts.ClientFrameGate;
        _authenticateMsgId = server.Options.AuthenticateMsgId;
        _queueTimeDelta = server.Options.ClientMessageQueueTimeMax is { } queueTimeMax ? Math.Max(1, TimestampSpan.ToDelta(queueTimeMax, server.Time.TimestampFrequency)) : 0;
    }

    /// <summary>Routes one frame; ownership of <paramref name="payload"/> passes here. With a batch, see the type's summary.</summary>
    public void Dispatch(long sessionId, string msgId, ushort msgSeq, long stageId, Payload payload, long? receivedTimestamp, ClientFrameBatch? batch)
    {
        if (!_sessions.TryGetOpen(sessionId, out var session, out var state))
        {
            DropFromClosedSession(msgId, payload, batch);
            return;
        }

        Route(session, state, msgId, msgSeq, stageId, payload, receivedTimestamp, batch);
    }

    /// <summary><see cref="Dispatch(long, string, ushort, long, Payload, long?, ClientFrameBatch?)"/> from a transport that holds its session.</summary>
    public void Dispatch(ClientSession held, string msgId, ushort msgSeq, long stageId, Payload payload)
    {
        if (!_sessions.TryGetOpen(held, out var session, out var state))
        {
            DropFromClosedSession(msgId, payload, batch: null);
            return;
        }

        Route(session, state, msgId, msgSeq, stageId, payload, receivedTimestamp: null, batch: null);
    }

    private void DropFromClosedSession(string msgId, Payload payload, ClientFrameBatch? batch)
    {
        FlushHeld(batch, payload);
        _server.Observer.OnDropped(_server.NodeId, "frame-from-closed-session", msgId);
        payload.DisposeIfOwner();
    }

    private void Route(ClientSession session, SessionState state, string msgId, ushort msgSeq, long stageId, Payload payload, long? receivedTimestamp, ClientFrameBatch? batch)
    {
        var admission = _gate.Admit(state, msgId, _authenticateMsgId);
        var actor = session.Actor;
        if (batch is not null && admission == FrameAdmission.Authenticated && actor is not null && actor.Host.StageId == stageId
            && !string.Equals(msgId, _authenticateMsgId, StringComparison.Ordinal))
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
                session.Send(PlayServer.HeartbeatMsgId, msgSeq, stageId, ErrorCodes.Success, Payload.Empty);
                return;
            case FrameAdmission.FirstMessageNotAuthenticate:
                payload.DisposeIfOwner();
                _server.Counters.AddSessionClosedBeforeAuthentication();
                _server.Observer.OnDropped(_server.NodeId, PlayServer.FirstMessageNotAuthenticateReason, msgId);
                _sessions.Close(session, $"first message was '{msgId}', expected '{_authenticateMsgId}'");
                return;
            case FrameAdmission.Join:
                BeginJoin(session, msgId, msgSeq, stageId, payload);
                return;
            case FrameAdmission.NotAuthenticatedYet:
                _server.Counters.AddClientMessageBeforeAuthentication();
                Refuse(session, msgId, msgSeq, stageId, payload, ErrorCodes.NotAuthenticated);
                return;
            default:
                break;
        }

        if (string.Equals(msgId, _authenticateMsgId, StringComparison.Ordinal))
        {
            // A session whose actor left its stage may authenticate into a stage again.
            if (actor is null)
            {
                BeginJoin(session, msgId, msgSeq, stageId, payload);
            }
            else
            {
                Refuse(session, msgId, msgSeq, stageId, payload, ErrorCodes.AlreadyAuthenticated);
            }

            return;
        }

        if (actor is null || actor.Host.StageId != stageId)
        {
            Refuse(session, msgId, msgSeq, stageId, payload, ErrorCodes.NotInStage);
            return;
        }

        if (!_server.TryOpenClientToken(session, msgSeq, stageId, msgId, receivedTimestamp, out var reply))
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
            StaleAtTimestamp = _queueTimeDelta == 0 ? 0 : _server.Time.GetTimestamp() + _queueTimeDelta,
        };
        if (!actor.Host.Post(message))
        {
            _server.RefuseStageMessage(actor.Host, message);
        }
    }

    /// <summary>
    /// Opens the ledger entries of the messages held in <paramref name="batch"/> under one lock and queues them in their
    /// stage's mailbox under one lock; a message the ledger or the mailbox refuses is answered and counted as a single
    /// frame would be. Leaves the batch empty.
    /// </summary>
    public void Flush(ClientFrameBatch batch)
    {
        if (batch.Count == 0)
        {
            return;
        }

        var stage = batch.Stage!;
        try
        {
            // The receive's one clock reading dates the batch: its ledger entries' deadlines and, when client messages
            // may go stale in a mailbox (ClientMessageQueueTimeMax), the instant from which they are stale.
            var now = batch.ReceivedTimestamp ?? _server.Time.GetTimestamp();
            _server.OpenClientTokens(batch, now);
            stage.PostBatch(batch, _queueTimeDelta == 0 ? 0 : now + _queueTimeDelta);
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
                            _server.RefuseOverLedgerCap(entry);
                            break;
                        case BatchedFrameState.RefusedByStage:
                        case BatchedFrameState.Held:
                            _server.RefuseStageMessage(stage, entry.ToStageMessage());
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

    /// <summary>Flushes the held messages before the frame whose <paramref name="payload"/> is in hand.</summary>
    private void FlushHeld(ClientFrameBatch? batch, Payload payload)
    {
        if (batch is not { Count: > 0 })
        {
            return;
        }

        try
        {
            Flush(batch);
        }
        catch
        {
            // A hook threw while the held messages were queued: the frame in hand goes no further (its connection's
            // receive loop closes on the exception), and its payload is released here, its owner.
            payload.DisposeIfOwner();
            throw;
        }
    }

    private void Refuse(ClientSession session, string msgId, ushort msgSeq, long stageId, Payload payload, ushort errorCode)
    {
        payload.DisposeIfOwner();
        _server.Observer.OnDropped(_server.NodeId, ErrorCodes.Describe(errorCode), msgId);
        if (msgSeq != 0)
        {
            session.Send(msgId, msgSeq, stageId, errorCode, Payload.Empty);
        }
    }

    private void BeginJoin(ClientSession session, string msgId, ushort msgSeq, long stageId, Payload payload)
    {
        _sessions.BeginAuthenticating(session);
        if (!_server.TryOpenClientToken(session, msgSeq == 0 ? (ushort)1 : msgSeq, stageId, msgId, receivedTimestamp: null, out var reply))
        {
            payload.DisposeIfOwner();
            _sessions.OnJoinFailed(session);
            return;
        }

        var stages = _server.Stages;
        var stage = stages.FindOrCreateForJoin(stageId, out var errorCode);
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
            FailJoin(session, payload, reply, errorCode, stageId);
            return;
        }

        if (stage.Post(message))
        {
            return;
        }

        if (stage.IsClosed && _server.Options.DefaultStageType is not null)
        {
            // The stage closed between the lookup and the post (it had stayed idle): an idle stage leaves the registry as
            // it closes, so a second lookup finds or creates its successor.
            var successor = stages.FindOrCreateForJoin(stageId, out errorCode);
            if (successor is null)
            {
                FailJoin(session, payload, reply, errorCode, stageId);
                return;
            }

            stage = successor;
            if (stage.Post(message))
            {
                return;
            }
        }

        _server.RefuseStageMessage(stage, message);
        _sessions.OnJoinFailed(session);
    }

    private void FailJoin(ClientSession session, Payload payload, in ReplyToken reply, ushort errorCode, long stageId)
    {
        payload.DisposeIfOwner();
        _server.TryReplyError(reply, errorCode, stageId);
        _sessions.OnJoinFailed(session);
    }
}
