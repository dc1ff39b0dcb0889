using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using PlayHouse.Core.Runtime;
using PlayHouse.Simulation.Cluster;

namespace PlayHouse.Simulation.Checkers;

/// <summary>
/// A reply ends its request: it never reaches a handler and never produces another message (B12). Three places
/// report to it. The simulated mesh (as an <see cref="IMeshTrafficObserver"/>) reports every request a node receives
/// and every reply it sends: each reply must answer a request its target sent to that node and that is not answered
/// yet, so a reply produced by a reply (an error answer to a late reply, two servers bouncing it forever) is a
/// violation at its first send. User code reports what it received that nobody sent it as such: a stage handler
/// given a one-way message its protocol never sends one-way, a client given a push that carries its own request's
/// body (a late reply turned into a "ghost push").
/// </summary>
/// <remarks>
/// Thread-safe (one lock per call). Requests sent by a node to itself never cross the mesh and are not judged here.
/// A node that crashes forgets the requests it received: its next incarnation cannot answer them.
/// </remarks>
public sealed class StrayReplyChecker(CheckerContext context) : InvariantChecker(CheckerName, context), IMeshTrafficObserver, INodeCrashAware
{
    public const string CheckerName = "StrayReply";

    private readonly Lock _gate = new();

    // Requests each node received and has not answered yet, by (receiving node, requesting node, msg seq): a count,
    // since a duplicated datagram delivers one request twice and each copy is a request of its own to the node.
    private readonly Dictionary<(string NodeId, string FromNodeId, ulong MsgSeq), int> _unanswered = new(RequestKeyComparer.Instance);

    /// <summary>Replies judged so far (each answered a request received).</summary>
    public long RepliesMatched { get; private set; }

    /// <summary>Requests received over the mesh and not answered yet.</summary>
    public int UnansweredCount
    {
        get
        {
            using (Context.Enter(_gate))
            {
                return _unanswered.Count;
            }
        }
    }

    public void OnMeshDelivered(string nodeId, in MeshMessage message)
    {
        if (!message.IsRequest)
        {
            return;
        }

        using (Context.Enter(_gate))
        {
            ref var count = ref CollectionsMarshal.GetValueRefOrAddDefault(_unanswered, (nodeId, message.From, message.MsgSeq), out _);
            count++;
        }
    }

    public void OnMeshSent(string nodeId, string targetNodeId, in MeshMessage message)
    {
        if (!message.IsReply)
        {
            return;
        }

        using (Context.Enter(_gate))
        {
            // One lookup for the usual reply (its request received once); a duplicated request keeps the rest of its count.
            var key = (nodeId, targetNodeId, message.MsgSeq);
            if (_unanswered.Remove(key, out var count))
            {
                RepliesMatched++;
                if (count > 1)
                {
                    _unanswered.Add(key, count - 1);
                }

                return;
            }

            ReportReplyWithoutRequest(nodeId, targetNodeId, message.MsgSeq, message.MsgId, message.ErrorCode);
        }
    }

    /// <summary>A stage handler received a one-way message that no sender of its protocol sends one-way.</summary>
    public void OnStageMessageNobodySent(string nodeId, long stageId, string msgId)
    {
        using (Context.Enter(_gate))
        {
            Log.Record($"stage {nodeId}/{stageId}: its handler received a one-way '{msgId}', which nobody sends one-way: a reply dispatched to a handler as a new message");
        }
    }

    /// <summary>A client that only sends requests (no stage pushes to it) received a push carrying a request's body.</summary>
    public void OnPushOfARequest(long clientId, string msgId, long requestClientId, long requestSeq)
    {
        using (Context.Enter(_gate))
        {
            Log.Record($"client {clientId}: received push '{msgId}' carrying the body of request #{requestSeq} of client {requestClientId}, while no stage pushes to it: a reply turned into a push (a ghost push)");
        }
    }

    public void OnNodeCrashed(string nodeId)
    {
        using (Context.Enter(_gate))
        {
            foreach (var key in _unanswered.Keys.Where(k => k.NodeId == nodeId).ToList())
            {
                _unanswered.Remove(key);
            }
        }
    }

    /// <summary>
    /// Hashes a request by its msg seq and the lengths of its node ids, and compares the ids only when that matches:
    /// every request and reply of a run hashes here, and the seq alone tells nearly all of them apart, where hashing
    /// both id strings cost more than the rest of the checker.
    /// </summary>
    private sealed class RequestKeyComparer : IEqualityComparer<(string NodeId, string FromNodeId, ulong MsgSeq)>
    {
        public static readonly RequestKeyComparer Instance = new();

        public bool Equals((string NodeId, string FromNodeId, ulong MsgSeq) x, (string NodeId, string FromNodeId, ulong MsgSeq) y) =>
            x.MsgSeq == y.MsgSeq && string.Equals(x.NodeId, y.NodeId, StringComparison.Ordinal) && string.Equals(x.FromNodeId, y.FromNodeId, StringComparison.Ordinal);

        public int GetHashCode((string NodeId, string FromNodeId, ulong MsgSeq) key) =>
            HashCode.Combine(key.MsgSeq, key.NodeId.Length, key.FromNodeId.Length);
    }

    // Built out of line: a message's formatting state would otherwise widen the stack frame of every call.
    [MethodImpl(MethodImplOptions.NoInlining)]
    private void ReportReplyWithoutRequest(string nodeId, string targetNodeId, ulong msgSeq, string msgId, ushort errorCode) =>
        Log.Record($"node {nodeId} sent a reply ('{msgId}', seq {msgSeq}, {ErrorCodes.Describe(errorCode)}) to {targetNodeId}, which sent it no such request: a reply produced another message");
}
