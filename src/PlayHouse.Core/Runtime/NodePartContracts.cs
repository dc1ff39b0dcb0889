namespace PlayHouse.Core.Runtime;

/// <summary>
/// Where a reply goes when a handler calls <c>Reply(packet, ...)</c>. The standard node needs no such part: the
/// address is the <see cref="ReplyToken"/> the packet carries. A variant (<see cref="NodeParts.ReplyAddressing"/>)
/// hears every request a handler starts on and picks the address itself.
/// </summary>
/// <remarks>Called from the node's executor; an implementation shared by handlers of many stages keeps its own state.</remarks>
internal interface IReplyAddressing
{
    /// <summary>A handler starts on a request (a stage turn, or an API handler) that carries <paramref name="token"/>.</summary>
    void OnRequestDispatched(in ReplyToken token);

    /// <summary>The address of a reply to <paramref name="request"/>.</summary>
    ReplyToken AddressOf(in Packet request);
}

/// <summary>
/// How a reply callback of a request sent from a stage reaches that stage. The standard node needs no such part:
/// <see cref="ServerNode.DeliverCallback"/> posts the callback into the stage's mailbox, where it runs in a turn like
/// every other piece of the stage's work. A variant (<see cref="NodeParts.CallbackDispatch"/>) hears every stage turn
/// start and may run a callback at once instead.
/// </summary>
internal interface IReplyCallbackDispatch
{
    /// <summary>A turn of <paramref name="stage"/> starts on the executor.</summary>
    void OnTurnStarting(StageHost stage);

    /// <summary>True when the part ran <paramref name="request"/>'s callback itself (and released the response); false posts it as usual.</summary>
    bool TryRunNow(PendingRequest request, in Response response);
}

/// <summary>
/// Which requests between stages would wait for their own timeout: a stage requesting itself, or a request that
/// closes a cycle of awaiting stages. The standard node refuses both at once (<see cref="ErrorCodes.SelfRequest"/>,
/// <see cref="ErrorCodes.RequestCycle"/>); a variant (<see cref="NodeParts.CycleGuard"/>) decides instead.
/// </summary>
internal interface IRequestCycleGuard
{
    /// <summary>True when a request from <paramref name="fromStage"/> to <paramref name="targetNodeId"/>/<paramref name="stageId"/> is refused as a self request.</summary>
    bool RefusesSelfRequest(ServerNode node, StageHost fromStage, string targetNodeId, long stageId);

    /// <summary>True when <paramref name="request"/>, awaited by its sender, is refused because queuing it at <paramref name="target"/> closes a cycle.</summary>
    bool RefusesCycle(StageHost target, in MeshMessage request);
}
