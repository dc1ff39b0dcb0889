namespace PlayHouse.Core.Runtime;

/// <summary>
/// Where a stage keeps the entries of its mailbox, as a replaceable part (<see cref="NodeParts.MailboxQueue"/>). The
/// standard mailbox is not one of these: it is a ring of structs held inline in the stage (no object per message, no
/// call through an interface on the hottest path), which a stage uses when the part is null. A test bed plugs another
/// queue in here to show what the struct path saves.
/// </summary>
/// <remarks>
/// Members are internal: an entry is the runtime's own struct, so only the core and the test fixtures subclass this.
/// Not thread-safe; the stage calls it under its own lock.
/// </remarks>
public abstract class StageMailboxQueue
{
    /// <summary>Entries queued.</summary>
    internal abstract int Count { get; }

    internal abstract void Enqueue(in StageMessage message);

    /// <summary>Takes the oldest entry; the queue must not be empty.</summary>
    internal abstract void Dequeue(out StageMessage message);
}
