using PlayHouse.Core.Collections;

namespace PlayHouse.Core.Runtime;

/// <summary>
/// The queue of a stage: messages wait here, in order, until the stage's turn runs them. A mailbox counts the
/// messages from outside the stage (clients, other stages) apart from the stage's own completions, because only
/// the outside ones are capped here: every completion holds a slot capped where its work started (pending ticks per
/// timer, off-stage work in flight, pending requests).
/// </summary>
/// <remarks>Not thread-safe; the stage guards it with its lock.</remarks>
internal interface IStageMailbox
{
    /// <summary>Messages queued, from outside and the stage's own.</summary>
    int Count { get; }

    /// <summary>Messages from outside queued (<see cref="StageMessage.External"/>).</summary>
    int ExternalCount { get; }

    /// <summary>Queues a message; false when the mailbox refuses it (an outside message at the cap): it is then not queued.</summary>
    bool TryEnqueue(in StageMessage message);

    /// <summary>Moves the oldest message into <paramref name="message"/>; false when the mailbox is empty.</summary>
    bool TryDequeue(out StageMessage message);

    /// <summary>Lets go of the storage when empty (the stage has no actor left); the next message allocates it again.</summary>
    void ReleaseStorageIfEmpty();
}

/// <summary>
/// The standard mailbox: messages from outside beyond <see cref="ServerOptions.MailboxCapacityMax"/> are refused, not
/// queued, so an overloaded stage answers <see cref="ErrorCodes.MailboxFull"/> at once instead of buffering without a
/// bound (PlayHouse's stage queue had no cap: at 10k CCU in send mode its RTT p99 was 17.8 s, B15).
/// </summary>
/// <remarks>Not thread-safe; the stage guards it with its lock.</remarks>
internal sealed class StageMailbox : IStageMailbox
{
    // Inline in the mailbox (not readonly: a mutable struct); see RingQueue for why not Queue<T>.
    private RingQueue<StageMessage> _messages = new(4);
    private readonly int _externalCapacityMax;
    private int _external;

    public StageMailbox(int externalCapacityMax)
    {
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(externalCapacityMax);
        _externalCapacityMax = externalCapacityMax;
    }

    public int Count => _messages.Count;

    public int ExternalCount => _external;

    public bool TryEnqueue(in StageMessage message)
    {
        if (message.External)
        {
            if (_external >= _externalCapacityMax)
            {
                return false;
            }

            _external++;
        }

        _messages.Enqueue(message);
        return true;
    }

    // An entry is 128 bytes and the ring starts at four: 536 bytes per stage, a quarter of what an idle stage holds,
    // and a server may hold many idle stages (StagesMax) until they close.
    public void ReleaseStorageIfEmpty() => _messages.ReleaseIfEmpty();

    public bool TryDequeue(out StageMessage message)
    {
        if (_messages.Count == 0)
        {
            message = default;
            return false;
        }

        _messages.Dequeue(out message);
        if (message.External)
        {
            _external--;
        }

        return true;
    }
}
