namespace PlayHouse.Core.Runtime;

/// <summary>
/// A stage's part of the request chains between stages: the requests its current handler sends and awaits, and who
/// awaits that handler in turn (the stage whose request it serves, and that request's own await chain). From these it
/// tells a request that would close a cycle of awaiting stages (A&lt;-&gt;B, A-&gt;B-&gt;C-&gt;A, across nodes), which
/// would wait behind a handler that waits for it until the timeout (B9).
/// </summary>
/// <remarks>
/// Invariant: a request is in the awaited list from its registration until it completes, and only while its sender
/// awaits it; the waiter of the current handler is known from its start until it finishes and forgotten then.
/// Threading: the waiter fields are used only from the stage's turns. The awaited list is written by the turn (a
/// request registered) and by whichever thread completes a request, and read by the cycle checks of other threads,
/// always under the stage's lock (<see cref="StageHost.Gate"/>), together with the stage's handler-in-progress flag.
/// </remarks>
internal sealed class StageRequestChains(StageHost stage)
{
    private readonly List<PendingRequest> _awaitedRequests = [];
    private long _waiterStageId;
    private string? _waiterNodeId;
    private ulong _waiterMsgSeq;
    private AwaitingStage[]? _chainIn;
    private AwaitingStage[]? _chainOut;

    /// <summary>The current handler serves <paramref name="message"/>, which a stage awaits (its waiter id is set).</summary>
    public void OnWaitedHandlerStarting(in StageMessage message)
    {
        stage.AssertInTurn(nameof(OnWaitedHandlerStarting));
        if (_waiterStageId != 0)
        {
            throw new InvalidOperationException($"Stage {stage.StageId} started a handler while the last one's waiter was not forgotten.");
        }

        _waiterStageId = message.WaiterStageId;
        _waiterNodeId = message.Reply.MeshNodeId;
        _waiterMsgSeq = message.Reply.MeshMsgSeq;
        _chainIn = message.AwaitChain;
        _chainOut = null;
    }

    /// <summary>The current handler finished: who awaited it is forgotten.</summary>
    public void OnHandlerFinished()
    {
        _waiterStageId = 0;
        _waiterNodeId = null;
        _chainIn = null;
        _chainOut = null;
    }

    /// <summary>
    /// The await chain for a request the current handler sends and awaits: the stage awaiting the message this handler
    /// serves, then that message's own chain (nearest first, cut at <see cref="AwaitingStage.ChainLengthMax"/>). Null
    /// when no stage awaits the handler, the common case, so it allocates only for chains of two awaiting hops or more.
    /// </summary>
    /// <remarks>Called only from this stage's turns.</remarks>
    public AwaitingStage[]? AwaitChainOfCurrentHandler()
    {
        if (_waiterStageId == 0)
        {
            return null;
        }

        if (_chainOut is not null)
        {
            return _chainOut;
        }

        var upstream = _chainIn;
        var chain = new AwaitingStage[Math.Min(AwaitingStage.ChainLengthMax, 1 + (upstream?.Length ?? 0))];
        chain[0] = new AwaitingStage(_waiterNodeId!, _waiterStageId, _waiterMsgSeq);
        for (var i = 1; i < chain.Length; i++)
        {
            chain[i] = upstream![i - 1];
        }

        _chainOut = chain;
        return chain;
    }

    /// <summary>The current handler sent <paramref name="request"/> and awaits it.</summary>
    public void NoteAwaiting(PendingRequest request)
    {
        if (!request.SenderAwaits || !ReferenceEquals(request.Stage, stage))
        {
            throw new InvalidOperationException($"Stage {stage.StageId} noted a request it does not await ({request.MsgId}).");
        }

        using (NodeLock.Enter(stage.Gate))
        {
            _awaitedRequests.Add(request);
        }
    }

    /// <summary>An awaited request completed (any thread): it no longer counts for the cycle checks.</summary>
    public void OnRequestCompleted(PendingRequest request)
    {
        using (NodeLock.Enter(stage.Gate))
        {
            _awaitedRequests.Remove(request);
        }
    }

    /// <summary>
    /// Adds the stages of this server that the current handler awaits to <paramref name="into"/>; nothing when no
    /// handler is in progress. Takes only this stage's lock.
    /// </summary>
    public void CollectLocalAwaitTargets(List<long> into)
    {
        using (NodeLock.Enter(stage.Gate))
        {
            if (!stage.IsHandlerInProgressUnderGate)
            {
                return;
            }

            foreach (var awaited in _awaitedRequests)
            {
                if (awaited.TargetStageId != 0 && string.Equals(awaited.TargetNodeId, stage.NodeId, StringComparison.Ordinal))
                {
                    into.Add(awaited.TargetStageId);
                }
            }
        }
    }

    /// <summary>
    /// True when the current handler awaits a request to <paramref name="request"/>'s sender (A&lt;-&gt;B), or this
    /// stage is in the request's await chain and still awaits the request named there (A-&gt;B-&gt;C-&gt;A).
    /// </summary>
    public bool IsInChainedCycleWith(in MeshMessage request)
    {
        using (NodeLock.Enter(stage.Gate))
        {
            if (!stage.IsHandlerInProgressUnderGate || _awaitedRequests.Count == 0)
            {
                return false;
            }

            foreach (var awaited in _awaitedRequests)
            {
                if (awaited.TargetStageId == request.FromStageId && string.Equals(awaited.TargetNodeId, request.From, StringComparison.Ordinal))
                {
                    return true;
                }
            }

            var chain = request.AwaitChain;
            if (chain is null)
            {
                return false;
            }

            foreach (var upstream in chain)
            {
                if (upstream.StageId != stage.StageId || !string.Equals(upstream.NodeId, stage.NodeId, StringComparison.Ordinal))
                {
                    continue;
                }

                // Still awaiting the very request the chain started from: the chain is live, not a memory of a wait
                // that has ended (a timed-out or answered request no longer counts).
                foreach (var awaited in _awaitedRequests)
                {
                    if (awaited.MsgSeq == upstream.MsgSeq)
                    {
                        return true;
                    }
                }
            }

            return false;
        }
    }
}
