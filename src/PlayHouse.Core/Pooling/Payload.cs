using System.Runtime.CompilerServices;

namespace PlayHouse.Core.Pooling;

/// <summary>
/// An owning handle to a pooled message buffer. Copies of the struct share the handle; ownership moves
/// only through <see cref="Move"/>, which invalidates every older copy. <see cref="Dispose"/> returns the
/// buffer once; any use of a stale handle (after Move or Dispose) throws <see cref="PoolOwnershipException"/>
/// naming the buffer and its last owner.
/// </summary>
/// <remarks>
/// Not thread-safe: a payload has one owner at a time, and the owner hands it to another thread only through
/// something that gives happens-before (a queue, a lock). The stale-handle check is a generation comparison and
/// stays on in every mode.
/// </remarks>
public readonly struct Payload : IDisposable
{
    private readonly PooledBuffer? _buffer;
    private readonly long _generation;

    internal Payload(PooledBuffer buffer, long generation)
    {
        _buffer = buffer;
        _generation = generation;
    }

    /// <summary>The empty payload: length 0, owns nothing, Dispose and Move are no-ops.</summary>
    public static Payload Empty => default;

    public bool IsEmpty => _buffer is null;

    /// <summary>True while this handle is the current owner of a live buffer.</summary>
    public bool IsOwner => _buffer is not null && _buffer.Generation == _generation && _buffer.IsRented;

    public int Length => _buffer is null ? 0 : Checked("read the length of").Length;

    /// <summary>The pool-wide id of the buffer, for diagnostics; 0 for the empty payload.</summary>
    public long BufferId => _buffer?.Id ?? 0;

    /// <summary>The label of the buffer's current owner, for diagnostics; null when empty or returned.</summary>
    public string? Owner => _buffer is { IsRented: true } ? _buffer.Owner : null;

    public ReadOnlySpan<byte> Span
    {
        get
        {
            if (_buffer is null)
            {
                return [];
            }

            var buffer = Checked("read");
            return buffer.Array.AsSpan(0, buffer.Length);
        }
    }

    public ReadOnlyMemory<byte> Memory
    {
        get
        {
            if (_buffer is null)
            {
                return ReadOnlyMemory<byte>.Empty;
            }

            var buffer = Checked("read");
            return buffer.Array.AsMemory(0, buffer.Length);
        }
    }

    /// <summary>The writable bytes; only the owner may write.</summary>
    public Span<byte> WritableSpan
    {
        get
        {
            if (_buffer is null)
            {
                return [];
            }

            var buffer = Checked("write");
            return buffer.Array.AsSpan(0, buffer.Length);
        }
    }

    /// <summary>The writable bytes as memory, for socket sends and receives.</summary>
    public Memory<byte> WritableMemory
    {
        get
        {
            if (_buffer is null)
            {
                return Memory<byte>.Empty;
            }

            var buffer = Checked("write");
            return buffer.Array.AsMemory(0, buffer.Length);
        }
    }

    /// <summary>The whole capacity of the underlying array (at least <see cref="Length"/>).</summary>
    public int Capacity => _buffer is null ? 0 : Checked("read the capacity of").Array.Length;

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

        var buffer = _buffer;
        if (buffer.Generation != _generation)
        {
            // The message is built only on failure, so a successful move allocates nothing.
            ThrowStale(buffer, _generation, "move", $" to '{newOwner}'");
        }

        var generation = buffer.Pool.NoteMove(buffer, newOwner);
        return new Payload(buffer, generation);
    }

    /// <summary>Returns the buffer to its pool; the handle and all its copies become stale.</summary>
    public void Dispose()
    {
        if (_buffer is null)
        {
            return;
        }

        var buffer = Checked("return");
        buffer.Pool.ReturnOwned(buffer);
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

        _buffer!.Pool.ReturnOwned(_buffer);
        return true;
    }

    public override string ToString() => _buffer is null ? "Payload(empty)" : $"Payload(#{_buffer.Id}, {_buffer.Length} B, owner '{_buffer.Owner}')";

    /// <summary>The buffer behind a non-empty handle, for the pool's own checks (which pool, which generation).</summary>
    internal PooledBuffer? Buffer => _buffer;

    internal long Generation => _generation;

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private PooledBuffer Checked(string action)
    {
        var buffer = _buffer!;

        // Every rent, move and return bumps the generation, so an equal generation also means "rented".
        if (buffer.Generation != _generation)
        {
            ThrowStale(buffer, _generation, action);
        }

        return buffer;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void ThrowStale(PooledBuffer buffer, long generation, string action, string? target = null) =>
        throw buffer.Pool.Fault(PoolOwnershipException.StaleHandle(buffer, generation, action, target));
}
