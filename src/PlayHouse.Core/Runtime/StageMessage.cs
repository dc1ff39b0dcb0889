using System.Runtime.CompilerServices;
using PlayHouse.Core.Pooling;

namespace PlayHouse.Core.Runtime;

/// <summary>One mailbox entry. A struct, so a steady stream of messages allocates nothing in the queue.</summary>
internal struct StageMessage
{
    public StageWorkKind Kind;

    /// <summary>True for messages from outside the stage (clients, other stages); only these count against the cap.</summary>
    public bool External;
    public string? MsgId;
    public Payload Payload;
    public ReplyToken Reply;
    public ActorHost? Actor;
    public ClientSession? Session;
    public object? State;
    public ushort ErrorCode;
    public bool Connected;

    /// <summary>For a stage-to-stage request whose sender awaits it: the sending stage's id (its node and request id
    /// are in <see cref="Reply"/>); 0 when no stage waits on this message's handler.</summary>
    public long WaiterStageId;

    /// <summary>The stages upstream of the waiter that also wait on this handler (the request's await chain).</summary>
    public AwaitingStage[]? AwaitChain;
}

/// <summary>A completion that runs on the stage when its mailbox entry comes up.</summary>
internal interface IStageCompletion
{
    void Complete(StageHost stage);

    /// <summary>The stage closed before the completion could be queued: release what it owns instead.</summary>
    void Discard();
}

/// <summary>
/// A stage's mailbox: a growable ring of <see cref="StageMessage"/> entries in FIFO order, like <see cref="Queue{T}"/>,
/// but dequeuing straight into the caller's variable. Queue's Dequeue returns the entry through a temporary that is
/// copied again, and the second copy read the first one's stores back at once, stalling on every message.
/// </summary>
/// <remarks>Not thread-safe; the stage's lock guards it.</remarks>
internal sealed class StageMailbox
{
    private StageMessage[] _items = [];
    private int _head;
    private int _count;

    public int Count => _count;

    public void Enqueue(in StageMessage message)
    {
        if (_count == _items.Length)
        {
            Grow();
        }

        var tail = _head + _count;
        if (tail >= _items.Length)
        {
            tail -= _items.Length;
        }

        _items[tail] = message;
        _count++;
    }

    /// <summary>Moves the oldest entry into <paramref name="message"/>; the mailbox must not be empty.</summary>
    public void Dequeue(out StageMessage message)
    {
        if (_count == 0)
        {
            ThrowEmpty();
        }

        ref var slot = ref _items[_head];
        message = slot;

        // Cleared so that a delivered message's payload and references are not kept reachable from the ring.
        slot = default;
        var head = _head + 1;
        _head = head == _items.Length ? 0 : head;
        _count--;
    }

    /// <summary>Takes every entry out, oldest first.</summary>
    public List<StageMessage> DrainToList()
    {
        var drained = new List<StageMessage>(_count);
        while (_count > 0)
        {
            Dequeue(out var message);
            drained.Add(message);
        }

        _head = 0;
        return drained;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void ThrowEmpty() => throw new InvalidOperationException("The stage mailbox is empty.");

    private void Grow()
    {
        // Doubling, as Queue does; the entries are re-laid from the head so the ring starts at 0 again.
        var grown = new StageMessage[Math.Max(4, _items.Length * 2)];
        for (var i = 0; i < _count; i++)
        {
            var from = _head + i;
            if (from >= _items.Length)
            {
                from -= _items.Length;
            }

            grown[i] = _items[from];
        }

        _items = grown;
        _head = 0;
    }
}
