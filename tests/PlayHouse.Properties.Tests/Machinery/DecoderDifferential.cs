using System.Buffers;
using System.Buffers.Binary;
using System.Globalization;
using System.Numerics;
using PlayHouse.Core.Codec;
using PlayHouse.Core.Mesh;
using PlayHouse.Core.Mesh.Proto;
using PlayHouse.Core.Pooling;

namespace PlayHouse.Properties.Tests.Machinery;

/// <summary>
/// A framed-stream decoder seen by the differential: each decoded frame as one line of text (fields and a digest of
/// the payload, which the adapter returns to the pool at once), the span path and, where the decoder has one, the
/// <see cref="ReadOnlySequence{T}"/> path of System.IO.Pipelines.
/// </summary>
public interface IWireDecoder : IDisposable
{
    bool HasSequencePath { get; }

    bool TryDecode(ref ReadOnlySpan<byte> input, out string frame);

    bool TryDecode(ref ReadOnlySequence<byte> buffer, out string frame);

    void Complete();

    void Complete(ReadOnlySequence<byte> remaining);
}

/// <summary>
/// The decoder differential: a stream decoded as one chunk is the reference, and the same stream split at every byte
/// boundary into two chunks, and fed one byte at a time, must decode exactly like it: the same frames, the same error
/// at the same stream offset (or the same clean end or truncation), and no pooled buffer left outstanding. The
/// sequence path is held to the same, split into two segments at every boundary, and to the span path's frames and
/// errors (its offsets count whole frames only, so they are compared within the path).
/// </summary>
public static class DecoderDifferential
{
    public static Func<WireCase, MessagePool, IWireDecoder> Standard { get; } = (wire, pool) => wire.Kind switch
    {
        WireKind.Client => new ClientAdapter(new ClientFrameDecoder(pool, options: wire.FrameOptions)),
        WireKind.Server => new ServerAdapter(new ServerFrameDecoder(pool, options: wire.FrameOptions)),
        _ => new MeshAdapter(new MeshFrameDecoder(pool, wire.MeshOptions)),
    };

    /// <summary>What the span path makes of the whole stream in one chunk.</summary>
    public static IReadOnlyList<string> Transcript(WireCase wire, Func<WireCase, MessagePool, IWireDecoder> createDecoder)
    {
        ArgumentNullException.ThrowIfNull(wire);
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = true, SingleThreaded = true });
        return Span(pool, p => createDecoder(wire, p), [wire.Build()]);
    }

    /// <summary>The first way a split decode differs from the whole one, or null when none does.</summary>
    public static string? FirstDifference(WireCase wire, Func<WireCase, MessagePool, IWireDecoder> createDecoder)
    {
        ArgumentNullException.ThrowIfNull(wire);
        return FirstDifference(wire.Build(), pool => createDecoder(wire, pool), boundaries: null);
    }

    /// <summary>
    /// The differential over <paramref name="bytes"/>, split at each of <paramref name="boundaries"/> (every boundary
    /// when null; the byte-at-a-time feed only then, since a huge frame fed so would take too long).
    /// </summary>
    public static string? FirstDifference(byte[] bytes, Func<MessagePool, IWireDecoder> createDecoder, IEnumerable<int>? boundaries)
    {
        ArgumentNullException.ThrowIfNull(bytes);
        ArgumentNullException.ThrowIfNull(createDecoder);
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = true, SingleThreaded = true });
        var whole = Span(pool, createDecoder, [bytes]);
        bool hasSequencePath;
        using (var probe = createDecoder(pool))
        {
            hasSequencePath = probe.HasSequencePath;
        }

        var sequenceWhole = hasSequencePath ? Sequence(pool, createDecoder, [bytes]) : null;
        if (sequenceWhole is not null && !WithoutOffsets(sequenceWhole).SequenceEqual(WithoutOffsets(whole)))
        {
            return $"the sequence path decoded the whole stream as {Show(sequenceWhole)}, the span path as {Show(whole)}";
        }

        foreach (var i in boundaries ?? Enumerable.Range(0, bytes.Length + 1))
        {
            var split = Span(pool, createDecoder, [bytes[..i], bytes[i..]]);
            if (!split.SequenceEqual(whole))
            {
                return $"split at byte {i} of {bytes.Length}: decoded {Show(split)}; whole: {Show(whole)}";
            }

            if (sequenceWhole is not null)
            {
                var sequenceSplit = Sequence(pool, createDecoder, [bytes[..i], bytes[i..]]);
                if (!sequenceSplit.SequenceEqual(sequenceWhole))
                {
                    return $"sequence path, split at byte {i} of {bytes.Length}: decoded {Show(sequenceSplit)}; whole: {Show(sequenceWhole)}";
                }
            }
        }

        if (boundaries is null)
        {
            var bytewise = Span(pool, createDecoder, [.. bytes.Select(b => new[] { b })]);
            if (!bytewise.SequenceEqual(whole))
            {
                return $"fed one byte at a time: decoded {Show(bytewise)}; whole: {Show(whole)}";
            }
        }

        return null;
    }

    /// <summary>Feeds span chunks; the transcript is the frames, then how the stream ended, then any leak.</summary>
    private static List<string> Span(MessagePool pool, Func<MessagePool, IWireDecoder> createDecoder, IReadOnlyList<byte[]> chunks)
    {
        var transcript = new List<string>();
        var before = pool.GetStatistics().Outstanding;
        var decoder = createDecoder(pool);
        try
        {
            foreach (var chunk in chunks)
            {
                ReadOnlySpan<byte> input = chunk;
                while (decoder.TryDecode(ref input, out var frame))
                {
                    transcript.Add(frame);
                }

                if (!input.IsEmpty)
                {
                    transcript.Add($"left {input.Length} byte(s) of a chunk unread");
                }
            }

            decoder.Complete();
            transcript.Add("end");
        }
        catch (Exception e)
        {
            transcript.Add(Describe(e));
        }
        finally
        {
            decoder.Dispose();
        }

        AddLeak(transcript, pool, before);
        return transcript;
    }

    /// <summary>Feeds chunks as a pipe would: what a call leaves stays buffered, and the next chunk is appended as a segment.</summary>
    private static List<string> Sequence(MessagePool pool, Func<MessagePool, IWireDecoder> createDecoder, IReadOnlyList<byte[]> chunks)
    {
        var transcript = new List<string>();
        var before = pool.GetStatistics().Outstanding;
        var decoder = createDecoder(pool);
        var buffered = new List<byte[]>();
        var buffer = ReadOnlySequence<byte>.Empty;
        try
        {
            foreach (var chunk in chunks)
            {
                buffered = [.. Segments(buffer)];
                if (chunk.Length > 0)
                {
                    buffered.Add(chunk);
                }

                buffer = Chain(buffered);
                while (decoder.TryDecode(ref buffer, out var frame))
                {
                    transcript.Add(frame);
                }
            }

            decoder.Complete(buffer);
            transcript.Add("end");
        }
        catch (Exception e)
        {
            transcript.Add(Describe(e));
        }
        finally
        {
            decoder.Dispose();
        }

        AddLeak(transcript, pool, before);
        return transcript;
    }

    private static string Describe(Exception e) => e is FrameDecodeException decode
        ? string.Create(CultureInfo.InvariantCulture, $"error {decode.Error} at offset {decode.StreamOffsetBytes}")
        : $"crash {e.GetType().Name}: {e.Message}";

    private static void AddLeak(List<string> transcript, MessagePool pool, long before)
    {
        var leaked = pool.GetStatistics().Outstanding - before;
        if (leaked != 0)
        {
            transcript.Add(string.Create(CultureInfo.InvariantCulture, $"{leaked} pooled buffer(s) left outstanding"));
        }
    }

    private static IEnumerable<string> WithoutOffsets(IEnumerable<string> transcript) =>
        transcript.Select(line => line.StartsWith("error ", StringComparison.Ordinal) ? line[..line.IndexOf(" at offset", StringComparison.Ordinal)] : line);

    private static string Show(List<string> transcript) => "[" + string.Join("; ", transcript.Select(t => t.Length > 160 ? t[..160] + "..." : t)) + "]";

    private static IEnumerable<byte[]> Segments(ReadOnlySequence<byte> buffer)
    {
        foreach (var memory in buffer)
        {
            if (!memory.IsEmpty)
            {
                yield return memory.ToArray();
            }
        }
    }

    private static ReadOnlySequence<byte> Chain(List<byte[]> arrays)
    {
        if (arrays.Count == 0)
        {
            return ReadOnlySequence<byte>.Empty;
        }

        var first = new Segment(arrays[0], 0);
        var last = first;
        foreach (var array in arrays.Skip(1))
        {
            last = last.Append(array);
        }

        return new ReadOnlySequence<byte>(first, 0, last, last.Memory.Length);
    }

    /// <summary>A payload's length and a 64-bit digest of its bytes (a word at a time, so 2 MiB payloads stay cheap).</summary>
    public static string Digest(ReadOnlySpan<byte> payload)
    {
        var hash = 0x9E3779B97F4A7C15UL ^ (ulong)payload.Length;
        var i = 0;
        for (; i + 8 <= payload.Length; i += 8)
        {
            hash = BitOperations.RotateLeft((hash ^ BinaryPrimitives.ReadUInt64LittleEndian(payload[i..])) * 0xFF51AFD7ED558CCDUL, 29);
        }

        for (; i < payload.Length; i++)
        {
            hash = BitOperations.RotateLeft((hash ^ payload[i]) * 0xC4CEB9FE1A85EC53UL, 23);
        }

        return string.Create(CultureInfo.InvariantCulture, $"{payload.Length} B #{hash:x16}");
    }

    private sealed class Segment : ReadOnlySequenceSegment<byte>
    {
        public Segment(byte[] bytes, long runningIndex)
        {
            Memory = bytes;
            RunningIndex = runningIndex;
        }

        public Segment Append(byte[] bytes)
        {
            var next = new Segment(bytes, RunningIndex + Memory.Length);
            Next = next;
            return next;
        }
    }

    private sealed class ClientAdapter(ClientFrameDecoder decoder) : IWireDecoder
    {
        public bool HasSequencePath => true;

        public bool TryDecode(ref ReadOnlySpan<byte> input, out string frame) => Take(decoder.TryDecode(ref input, out var f), f, out frame);

        public bool TryDecode(ref ReadOnlySequence<byte> buffer, out string frame) => Take(decoder.TryDecode(ref buffer, out var f), f, out frame);

        public void Complete() => decoder.Complete();

        public void Complete(ReadOnlySequence<byte> remaining) => decoder.Complete(remaining);

        public void Dispose() => decoder.Dispose();

        private static bool Take(bool decoded, ClientFrame f, out string frame)
        {
            frame = decoded ? string.Create(CultureInfo.InvariantCulture, $"frame '{f.MsgId}' seq {f.MsgSeq} stage {f.StageId} payload {Digest(f.Payload.Span)}") : string.Empty;
            f.Dispose();
            return decoded;
        }
    }

    private sealed class ServerAdapter(ServerFrameDecoder decoder) : IWireDecoder
    {
        public bool HasSequencePath => true;

        public bool TryDecode(ref ReadOnlySpan<byte> input, out string frame) => Take(decoder.TryDecode(ref input, out var f), f, out frame);

        public bool TryDecode(ref ReadOnlySequence<byte> buffer, out string frame) => Take(decoder.TryDecode(ref buffer, out var f), f, out frame);

        public void Complete() => decoder.Complete();

        public void Complete(ReadOnlySequence<byte> remaining) => decoder.Complete(remaining);

        public void Dispose() => decoder.Dispose();

        private static bool Take(bool decoded, ServerFrame f, out string frame)
        {
            frame = decoded ? string.Create(CultureInfo.InvariantCulture, $"frame '{f.MsgId}' seq {f.MsgSeq} stage {f.StageId} error {f.ErrorCode} original {f.OriginalSize} payload {Digest(f.Payload.Span)}") : string.Empty;
            f.Dispose();
            return decoded;
        }
    }

    private sealed class MeshAdapter(MeshFrameDecoder decoder) : IWireDecoder
    {
        // One reused header, as a transport keeps it: the decoder must clear it between frames.
        private readonly RouteHeader _header = new();

        public bool HasSequencePath => true;

        public bool TryDecode(ref ReadOnlySpan<byte> input, out string frame) => Take(decoder.TryDecode(ref input, _header, out var payload), payload, out frame);

        public bool TryDecode(ref ReadOnlySequence<byte> buffer, out string frame) => Take(decoder.TryDecode(ref buffer, _header, out var payload), payload, out frame);

        public void Complete() => decoder.Complete();

        public void Complete(ReadOnlySequence<byte> remaining) => decoder.Complete(remaining);

        public void Dispose() => decoder.Dispose();

        private bool Take(bool decoded, Payload payload, out string frame)
        {
            frame = decoded ? $"frame {_header} payload {Digest(payload.Span)}" : string.Empty;
            payload.Dispose();
            return decoded;
        }
    }
}
