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

    internal static PoolOwnershipException StaleHandle(PooledBuffer buffer, string action)
    {
        var reason = buffer.IsRented
            ? $"ownership moved to '{buffer.Owner}'"
            : $"it was already returned (last owner '{buffer.LastOwner}')";
        return new PoolOwnershipException($"Cannot {action} buffer #{buffer.Id} ({buffer.Array.Length} B): this handle is stale because {reason}.");
    }
}
