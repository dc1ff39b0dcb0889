using System.Runtime.InteropServices;

namespace PlayHouse.Simulation.Checkers;

/// <summary>
/// Per stage, per sender, the sequence numbers a workload stage sees must strictly increase. Gaps are allowed
/// (a message may be lost), but a sequence that goes backwards or repeats means the path reordered or
/// duplicated a message it promised to deliver in order.
/// </summary>
/// <remarks>
/// Thread-safe (one lock per delivery, uncontended in simulation). Called by workload stages from their
/// handlers, so in real mode many stages call at once.
/// </remarks>
public sealed class FifoPerSenderChecker : InvariantChecker
{
    public const string CheckerName = "FifoPerSender";

    private readonly Lock _gate = new();
    private readonly Dictionary<(string NodeId, long StageId, long SenderId), long> _lastSeqBySender = [];
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
                return _lastSeqBySender.Count;
            }
        }
    }

    /// <summary>A workload stage received message <paramref name="senderSeq"/> of <paramref name="senderId"/>.</summary>
    public void OnDelivered(string nodeId, long stageId, long senderId, long senderSeq)
    {
        ArgumentNullException.ThrowIfNull(nodeId);
        using (Context.Enter(_gate))
        {
            _deliveriesChecked++;
            ref var last = ref CollectionsMarshal.GetValueRefOrAddDefault(_lastSeqBySender, (nodeId, stageId, senderId), out var seen);
            if (!seen || senderSeq > last)
            {
                last = senderSeq;
                return;
            }

            // The highest sequence stays the reference, so one late message is one violation, not a cascade.
            var what = senderSeq == last ? "was delivered twice" : $"arrived after seq {last} (order went backwards)";
            Log.Record($"stage {nodeId}/{stageId}: sender {senderId} seq {senderSeq} {what}");
        }
    }
}
