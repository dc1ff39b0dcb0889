using System.Runtime.CompilerServices;

namespace PlayHouse.Simulation.Checkers;

/// <summary>
/// Per stage, per sender, the sequence numbers a workload stage sees must strictly increase. Gaps are allowed
/// (a message may be lost), but a sequence that goes backwards or repeats means the path reordered or
/// duplicated a message it promised to deliver in order.
/// </summary>
/// <remarks>
/// Thread-safe (one lock per delivery, uncontended in simulation). Called by workload stages from their
/// handlers, so in real mode many stages call at once. A stage that reports every delivery resolves its
/// <see cref="FifoStage"/> once with <see cref="ForStage"/>, so a delivery costs no lookup by node id.
/// </remarks>
public sealed class FifoPerSenderChecker : InvariantChecker
{
    public const string CheckerName = "FifoPerSender";

    private readonly Lock _gate = new();
    private readonly Dictionary<(string NodeId, long StageId), FifoStage> _stages = [];
    private int _pathCount;
    private long _deliveriesChecked;

    public FifoPerSenderChecker(CheckerContext context)
        : base(CheckerName, context)
    {
    }

    public FifoPerSenderChecker(TimeProvider time)
        : this(new CheckerContext(time))
    {
    }

    /// <summary>Deliveries seen so far.</summary>
    public long DeliveriesChecked => Interlocked.Read(ref _deliveriesChecked);

    /// <summary>Distinct (stage, sender) pairs seen so far.</summary>
    public int PathCount
    {
        get
        {
            using (Context.Enter(_gate))
            {
                return _pathCount;
            }
        }
    }

    /// <summary>The senders' state of one stage, to report that stage's deliveries without a lookup by node id.</summary>
    public FifoStage ForStage(string nodeId, long stageId)
    {
        ArgumentNullException.ThrowIfNull(nodeId);
        using (Context.Enter(_gate))
        {
            return StageOf(nodeId, stageId);
        }
    }

    /// <summary>A workload stage received message <paramref name="senderSeq"/> of <paramref name="senderId"/>.</summary>
    public void OnDelivered(string nodeId, long stageId, long senderId, long senderSeq)
    {
        ArgumentNullException.ThrowIfNull(nodeId);
        using (Context.Enter(_gate))
        {
            Deliver(StageOf(nodeId, stageId), senderId, senderSeq);
        }
    }

    /// <summary>The stage of <paramref name="stage"/> (from <see cref="ForStage"/> of this checker) received message <paramref name="senderSeq"/> of <paramref name="senderId"/>.</summary>
    public void OnDelivered(FifoStage stage, long senderId, long senderSeq)
    {
        ArgumentNullException.ThrowIfNull(stage);
        using (Context.Enter(_gate))
        {
            Deliver(stage, senderId, senderSeq);
        }
    }

    private FifoStage StageOf(string nodeId, long stageId)
    {
        if (!_stages.TryGetValue((nodeId, stageId), out var stage))
        {
            stage = new FifoStage(nodeId, stageId);
            _stages.Add((nodeId, stageId), stage);
        }

        return stage;
    }

    private void Deliver(FifoStage stage, long senderId, long senderSeq)
    {
        _deliveriesChecked++;
        ref var last = ref stage.LastSeqOf(senderId, out var seen);
        if (!seen)
        {
            _pathCount++;
        }

        if (!seen || senderSeq > last)
        {
            last = senderSeq;
            return;
        }

        // The highest sequence stays the reference, so one late message is one violation, not a cascade.
        ReportOutOfOrder(stage, senderId, senderSeq, last);
    }

    // Built out of line: a message's formatting state would otherwise widen the stack frame of every call.
    [MethodImpl(MethodImplOptions.NoInlining)]
    private void ReportOutOfOrder(FifoStage stage, long senderId, long senderSeq, long last)
    {
        var what = senderSeq == last ? "was delivered twice" : $"arrived after seq {last} (order went backwards)";
        Log.Record($"stage {stage.NodeId}/{stage.StageId}: sender {senderId} seq {senderSeq} {what}");
    }
}

/// <summary>
/// The last sequence of every sender one stage has seen, for <see cref="FifoPerSenderChecker"/>. Sender ids are
/// small numbers in the workloads (one per client), so they index an array; any other id goes to a map.
/// </summary>
/// <remarks>Not thread-safe on its own; the checker that made it guards it with its lock.</remarks>
public sealed class FifoStage
{
    // Ids up to this many index the array (grown as ids appear); an array this size costs half a megabyte at most.
    private const int DenseSendersMax = 1 << 15;

    private readonly Dictionary<long, long> _sparse = [];
    private Sender[] _dense = [];

    internal FifoStage(string nodeId, long stageId)
    {
        NodeId = nodeId;
        StageId = stageId;
    }

    public string NodeId { get; }

    public long StageId { get; }

    /// <summary>The last sequence of <paramref name="senderId"/>, to read and write; <paramref name="seen"/> is false (and the slot now taken) at its first delivery.</summary>
    internal ref long LastSeqOf(long senderId, out bool seen)
    {
        if ((ulong)senderId < (ulong)_dense.Length || (senderId >= 0 && senderId < DenseSendersMax && Grow(senderId)))
        {
            ref var sender = ref _dense[senderId];
            seen = sender.Seen;
            sender.Seen = true;
            return ref sender.LastSeq;
        }

        return ref System.Runtime.InteropServices.CollectionsMarshal.GetValueRefOrAddDefault(_sparse, senderId, out seen);
    }

    private bool Grow(long senderId)
    {
        var length = Math.Max(16, _dense.Length);
        while (length <= senderId)
        {
            length *= 2;
        }

        Array.Resize(ref _dense, Math.Min(length, DenseSendersMax));
        return true;
    }

    private struct Sender
    {
        public long LastSeq;
        public bool Seen;
    }
}
