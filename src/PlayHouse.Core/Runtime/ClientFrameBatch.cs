using PlayHouse.Core.Pooling;

namespace PlayHouse.Core.Runtime;

/// <summary>
/// The client messages of one receive that are bound for one stage, held by a transport's receive loop between
/// <see cref="PlayServer.OnClientFrame(long, string, ushort, long, Payload, long, ClientFrameBatch)"/> and
/// <see cref="PlayServer.FlushClientFrames"/>: the flush opens their entries in the ledger of unanswered requests under
/// one lock and queues them in the stage's mailbox under one lock, where frame by frame each took both locks. Every
/// frame is still checked, refused, counted and observed one by one, in order; only the two locked steps are shared.
/// </summary>
/// <remarks>
/// One per connection, used by its receive loop only (one callback at a time), and flushed before the loop hands the
/// thread back. A frame that is not a plain message to the held stage (a heartbeat, an authentication, a refusal, a
/// message to another stage) flushes the held ones first, so the stage sees them in the order they arrived. At most
/// <see cref="CapacityMax"/> messages are held; the next one flushes them.
/// </remarks>
public sealed class ClientFrameBatch
{
    /// <summary>The most messages held before a flush.</summary>
    public const int CapacityMax = 32;

    private readonly Entry[] _entries = new Entry[CapacityMax];

    /// <summary>Messages held, not yet flushed.</summary>
    public int Count { get; private set; }

    /// <summary>The stage the held messages are bound for (null when none is held).</summary>
    internal StageHost? Stage { get; private set; }

    /// <summary>The receive's clock reading on the server's clock, which dates the held requests in the ledger.</summary>
    internal long? ReceivedTimestamp { get; private set; }

    internal ref Entry this[int index] => ref _entries[index];

    internal void Add(ActorHost actor, long? receivedTimestamp, ClientSession session, string msgId, ushort msgSeq, long stageId, Payload payload)
    {
        Stage = actor.Host;
        ReceivedTimestamp = receivedTimestamp;
        ref var entry = ref _entries[Count++];
        entry.Actor = actor;
        entry.Session = session;
        entry.MsgId = msgId;
        entry.Payload = payload;
        entry.MsgSeq = msgSeq;
        entry.StageId = stageId;
        entry.InboundId = 0;
        entry.State = BatchedFrameState.Held;
    }

    /// <summary>Forgets the held messages, whose payloads and tokens have passed on (clears the references too).</summary>
    internal void Clear()
    {
        Array.Clear(_entries, 0, Count);
        Count = 0;
        Stage = null;
        ReceivedTimestamp = null;
    }

    /// <summary>
    /// A held frame: only what its mailbox entry and reply token are built from, so holding it copies a few words,
    /// not a whole <see cref="StageMessage"/> (whose references a copy into an array moves with write barriers).
    /// </summary>
    internal struct Entry
    {
        public ActorHost Actor;
        public ClientSession Session;
        public string MsgId;
        public Payload Payload;
        public long StageId;

        /// <summary>The request's ledger entry, opened at the flush (0 for a one-way message).</summary>
        public long InboundId;
        public ushort MsgSeq;

        /// <summary>What the flush did with the message.</summary>
        public BatchedFrameState State;

        /// <summary>The mailbox's length and its outside messages right after this one was queued (for the hooks).</summary>
        public int MailboxLength;

        public int MailboxExternalLength;

        /// <summary>The token the reply answers through: the ledger entry's, or none for a one-way message (or a request whose entry was never opened).</summary>
        public readonly ReplyToken Reply => MsgSeq == 0 || InboundId == 0 ? default : ReplyToken.ToClient(InboundId, MsgId, Session, MsgSeq, StageId);

        /// <summary>The mailbox entry of this frame, as a single frame's post builds it.</summary>
        /// <param name="staleAtTimestamp">From when the message is stale in the mailbox (0: never).</param>
        public readonly StageMessage ToStageMessage(long staleAtTimestamp = 0) => new()
        {
            Kind = StageWorkKind.ClientMessage,
            External = true,
            MsgId = MsgId,
            Payload = Payload,
            Reply = Reply,
            Actor = Actor,
            StaleAtTimestamp = staleAtTimestamp,
        };
    }
}

/// <summary>What a <see cref="ClientFrameBatch"/> flush did with one held message.</summary>
internal enum BatchedFrameState
{
    Held,

    /// <summary>The ledger of unanswered requests was at its cap; the request is answered with an error.</summary>
    RefusedByLedger,

    /// <summary>Queued in the stage's mailbox, which owns it now.</summary>
    Posted,

    /// <summary>The stage closed or its mailbox was at its cap; the message is refused as a single post would be.</summary>
    RefusedByStage,
}
