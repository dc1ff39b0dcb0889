namespace PlayHouse.Core.Pooling;

/// <summary>
/// An owning handle to a pooled message buffer. Copies of the struct share the handle; ownership moves
/// only through <see cref="Move"/>, which invalidates every older copy. <see cref="Dispose"/> returns the
/// buffer once; any use of a stale handle (after Move or Dispose) throws <see cref="PoolOwnershipException"/>
/// naming the buffer and its last owner.
/// </summary>
public readonly struct Payload : IDisposable
{
    private readonly PooledBuffer? _buffer;
    private readonly int _generation;

    internal Payload(PooledBuffer buffer, int generation)
    {
        _buffer = buffer;
        _generation = generation;
    }

    /// <summary>The empty payload: length 0, owns nothing, Dispose and Move are no-ops.</summary>
    public static Payload Empty => default;

    public bool IsEmpty => _buffer is null;

    /// <summary>True while this handle is the current owner of a live buffer.</summary>
    public bool IsOwner => _buffer is not null && _buffer.Generation == _generation && _buffer.IsRented;

    public int Length => _buffer is null ? 0 : Checked("read Length").Length;

    /// <summary>The pool-wide id of the buffer, for diagnostics; 0 for the empty payload.</summary>
    public long BufferId => _buffer?.Id ?? 0;

    /// <summary>The label of the current owner, for diagnostics.</summary>
    public string? Owner => _buffer?.Owner;

    public ReadOnlySpan<byte> Span => _buffer is null ? [] : Checked("read").Array.AsSpan(0, _buffer.Length);

    public ReadOnlyMemory<byte> Memory => _buffer is null ? ReadOnlyMemory<byte>.Empty : Checked("read").Array.AsMemory(0, _buffer.Length);

    /// <summary>The writable bytes; only the owner may write.</summary>
    public Span<byte> WritableSpan => _buffer is null ? [] : Checked("write").Array.AsSpan(0, _buffer.Length);

    /// <summary>The writable bytes as memory, for socket sends and receives.</summary>
    public Memory<byte> WritableMemory => _buffer is null ? Memory<byte>.Empty : Checked("write").Array.AsMemory(0, _buffer.Length);

    /// <summary>The whole capacity of the underlying array (at least <see cref="Length"/>).</summary>
    public int Capacity => _buffer is null ? 0 : Checked("read Capacity").Array.Length;

    /// <summary>Shrinks or grows the visible length within the capacity.</summary>
    public void SetLength(int length)
    {
        if (_buffer is null)
        {
            if (length != 0)
            {
                throw new InvalidOperationException("The empty payload has no capacity.");
            }

            return;
        }

        var buffer = Checked("set length");
        ArgumentOutOfRangeException.ThrowIfNegative(length);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(length, buffer.Array.Length);
        buffer.Length = length;
    }

    /// <summary>
    /// Transfers ownership to <paramref name="newOwner"/>: the returned handle owns the buffer and every
    /// copy of this one becomes stale.
    /// </summary>
    public Payload Move(string newOwner)
    {
        if (_buffer is null)
        {
            return default;
        }

        var buffer = Checked($"move to '{newOwner}'");
        buffer.Pool.NoteMove(buffer, newOwner);
        return new Payload(buffer, buffer.Generation);
    }

    /// <summary>Returns the buffer to its pool; the handle and all its copies become stale.</summary>
    public void Dispose()
    {
        if (_buffer is null)
        {
            return;
        }

        var buffer = Checked("return");
        buffer.Pool.Return(buffer);
    }

    /// <summary>
    /// Returns the buffer if this handle still owns it, and does nothing if ownership was moved on.
    /// Used by the runtime for payloads it lent to a handler that may have taken them with <see cref="Move"/>.
    /// </summary>
    public bool DisposeIfOwner()
    {
        if (!IsOwner)
        {
            return false;
        }

        _buffer!.Pool.Return(_buffer);
        return true;
    }

    public override string ToString() => _buffer is null ? "Payload(empty)" : $"Payload(#{_buffer.Id}, {_buffer.Length} B, owner '{_buffer.Owner}')";

    private PooledBuffer Checked(string action)
    {
        var buffer = _buffer!;
        if (buffer.Generation != _generation || !buffer.IsRented)
        {
            throw PoolOwnershipException.StaleHandle(buffer, action);
        }

        return buffer;
    }
}
