namespace PlayHouse.Core.Runtime;

/// <summary>
/// Decides whether a tick of a timer or game loop goes into its stage's mailbox. Ticks are the stage's own work, so
/// the mailbox's cap on outside messages does not bound them; this does.
/// </summary>
/// <remarks>Called under the stage's lock; not thread-safe on its own.</remarks>
internal interface ITickAdmission
{
    /// <summary>
    /// True when the tick is to be posted (and then counted in <see cref="ITickSource.PendingTicks"/>); false when it
    /// is coalesced into a tick already waiting.
    /// </summary>
    bool Admit(ITickSource source);
}

/// <summary>
/// The standard admission: at most <see cref="ServerOptions.TimerPendingTicksMax"/> ticks of one timer or game loop
/// wait in the mailbox; further ticks are coalesced (counted by the caller). A tick rate above the stage's handler
/// rate then costs nothing: PlayHouse posted every tick, and such a stage's mailbox grew without a bound (B15).
/// </summary>
internal sealed class CoalescingTickAdmission : ITickAdmission
{
    private readonly int _pendingTicksMax;

    public CoalescingTickAdmission(int pendingTicksMax)
    {
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(pendingTicksMax);
        _pendingTicksMax = pendingTicksMax;
    }

    public bool Admit(ITickSource source)
    {
        if (source.PendingTicks >= _pendingTicksMax)
        {
            return false;
        }

        source.PendingTicks++;
        return true;
    }
}
