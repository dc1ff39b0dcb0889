namespace PlayHouse.Core.Pooling;

/// <summary>A pooled buffer was used, moved or returned by something that does not own it.</summary>
public sealed class PoolOwnershipException : InvalidOperationException
{
    public PoolOwnershipException(string message)
        : base(message)
    {
    }

    public PoolOwnershipException()
    {
    }

    public PoolOwnershipException(string message, Exception innerException)
        : base(message, innerException)
    {
    }

    /// <summary>The id of the buffer at fault, or 0 when the exception does not name one.</summary>
    public long BufferId { get; init; }

    internal static PoolOwnershipException StaleHandle(PooledBuffer buffer, long handleGeneration, string action, string? target = null)
    {
        string reason;
        if (!buffer.IsRented)
        {
            reason = $"it was already returned (last owner '{buffer.Owner}')";
        }
        else if (handleGeneration < buffer.RentGeneration)
        {
            // Checked mode records the previous owner at each rent; unchecked mode skips that store for speed.
            var previous = buffer.PreviousOwner is null ? string.Empty : $" (last owner '{buffer.PreviousOwner}')";
            reason = $"it was returned{previous} and re-rented by '{buffer.Owner}'";
        }
        else
        {
            reason = $"ownership moved to '{buffer.Owner}'";
        }

        var head = action == "return" && !buffer.IsRented
            ? $"Cannot return buffer {Describe(buffer)} twice"
            : $"Cannot {action} buffer {Describe(buffer)}{target}";
        var message = $"{head}: this handle is stale because {reason}.";
        return new PoolOwnershipException(message) { BufferId = buffer.Id };
    }

    internal static PoolOwnershipException NotInLedger(PooledBuffer buffer, string poolName) =>
        new($"Cannot return buffer {Describe(buffer)} (owner '{buffer.Owner}'): the ledger of pool {poolName} does not list it as outstanding.") { BufferId = buffer.Id };

    internal static PoolOwnershipException Foreign(PooledBuffer buffer, string poolName) =>
        new($"Cannot return buffer {Describe(buffer)} (owner '{buffer.Owner}') to pool {poolName}: it belongs to another pool, {buffer.Pool.DisplayName}.") { BufferId = buffer.Id };

    private static string Describe(PooledBuffer buffer) => $"#{buffer.Id} ({buffer.Array.Length} B)";
}
