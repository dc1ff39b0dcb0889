namespace PlayHouse.Core.Pooling;

/// <summary>One pooled array and its ownership state. The pool keeps these; users hold <see cref="Payload"/> handles.</summary>
internal sealed class PooledBuffer(MessagePool pool, byte[] array, int sizeClass, long id)
{
    public MessagePool Pool { get; } = pool;

    public byte[] Array { get; } = array;

    /// <summary>Index of the size class, or -1 for an oversize buffer that is never cached.</summary>
    public int SizeClass { get; } = sizeClass;

    public long Id { get; } = id;

    public int Length { get; set; }

    /// <summary>Bumped on every Move and Return so that older handles become stale.</summary>
    public int Generation { get; set; }

    public bool IsRented { get; set; }

    public string? Owner { get; set; }

    /// <summary>The owner at the moment of the last return, kept to name it in use-after-return errors.</summary>
    public string? LastOwner { get; set; }
}
