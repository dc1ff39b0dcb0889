namespace PlayHouse.Transport.Tcp;

/// <summary>
/// Writes one whole frame into the send queue. Struct (or ref struct) implementations keep enqueueing free of
/// allocations: the generic <c>TryEnqueue&lt;TWriter&gt;</c> is specialised per writer type, so nothing is boxed.
/// </summary>
internal interface IFrameWriter
{
    /// <summary>The exact number of bytes <see cref="Write"/> writes.</summary>
    int FrameBytes { get; }

    /// <summary>Writes the frame into <paramref name="destination"/>, which is exactly <see cref="FrameBytes"/> long.</summary>
    void Write(Span<byte> destination);
}
