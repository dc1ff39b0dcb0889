using System.Buffers;
using FsCheck;
using FsCheck.Fluent;
using PlayHouse.Core.Codec;
using PlayHouse.Core.Pooling;

namespace PlayHouse.Transport.Tcp.Tests;

/// <summary>
/// FsCheck properties of the client frame decoder over random and mutated byte streams, split into random chunks:
/// it yields exactly the frames that were sent when nothing was mutated, throws nothing but
/// <see cref="FrameDecodeException"/> otherwise, and never leaks a pooled buffer either way.
/// </summary>
public sealed class DecoderFuzzTests
{
    private static readonly string[] MsgIds = ["AuthenticateRequest", "EchoRequest", "@Heart@Beat@", "에코", string.Empty, new string('x', 255)];

    public sealed record Sample(List<(string MsgId, ushort Seq, long Stage, byte[] Payload)> Frames, byte[] Bytes, bool Mutated, int[] Chunks);

    [Fact]
    public void SpanDecoder_OnRandomAndMutatedStreams_DecodesExactlyOrFailsCleanly() =>
        Check.One(Config.QuickThrowOnFailure.WithMaxTest(400), Prop.ForAll(Arb.From(SampleGen()), s => DecodeBySpan(s)));

    [Fact]
    public void SequenceDecoder_OnRandomAndMutatedStreams_DecodesExactlyOrFailsCleanly() =>
        Check.One(Config.QuickThrowOnFailure.WithMaxTest(400), Prop.ForAll(Arb.From(SampleGen()), s => DecodeBySequence(s)));

    [Fact]
    public void SpanDecoder_OnPureNoise_NeverThrowsAnythingButFrameErrors() =>
        Check.One(
            Config.QuickThrowOnFailure.WithMaxTest(400),
            Prop.ForAll(Arb.From(Gen.ArrayOf(Gen.Choose(0, 255).Select(b => (byte)b))), noise => DecodeBySpan(new Sample([], noise, Mutated: true, [Math.Max(1, noise.Length / 3)]))));

    private static Gen<Sample> SampleGen()
    {
        var frame =
            from id in Gen.Elements(MsgIds)
            from seq in Gen.Choose(0, ushort.MaxValue)
            from stage in Gen.Choose(int.MinValue, int.MaxValue)
            from payload in Gen.ArrayOf(Gen.Choose(0, 255).Select(b => (byte)b)).Resize(300)
            select (id, (ushort)seq, (long)stage * 31, payload);
        return
            from frames in Gen.ListOf(frame).Resize(6)
            from mutation in Gen.Choose(0, 5)
            from position in Gen.Choose(0, int.MaxValue)
            from value in Gen.Choose(int.MinValue, int.MaxValue)
            from chunks in Gen.ArrayOf(Gen.Choose(1, 64)).Resize(12)
            let clean = frames.SelectMany(f => RawFrames.Client(f.id, f.Item2, f.Item3, f.payload)).ToArray()
            let bytes = Mutate(clean, mutation, position, value)
            select new Sample([.. frames], bytes, mutation != 0, chunks.Length == 0 ? [7] : chunks);
    }

    /// <summary>0 leaves the stream alone; the others flip a byte, overwrite a length, cut the end, insert or delete bytes.</summary>
    private static byte[] Mutate(byte[] clean, int mutation, int position, int value)
    {
        if (clean.Length == 0 || mutation == 0)
        {
            return mutation == 0 ? clean : BitConverter.GetBytes(value);
        }

        var at = position % clean.Length;
        var bytes = clean.ToList();
        switch (mutation)
        {
            case 1:
                bytes[at] ^= (byte)(1 + (value & 0x7F));
                break;
            case 2:
                var lengthBytes = BitConverter.GetBytes(value);
                for (var i = 0; i < 4 && at + i < bytes.Count; i++)
                {
                    bytes[at + i] = lengthBytes[i];
                }

                break;
            case 3:
                bytes.RemoveRange(at, bytes.Count - at);
                break;
            case 4:
                bytes.InsertRange(at, BitConverter.GetBytes(value));
                break;
            default:
                bytes.RemoveRange(at, Math.Min(bytes.Count - at, 1 + (value & 15)));
                break;
        }

        return [.. bytes];
    }

    private static bool DecodeBySpan(Sample sample)
    {
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = true });
        var decoded = new List<(string, ushort, long, byte[])>();
        using (var decoder = new ClientFrameDecoder(pool))
        {
            var offset = 0;
            var chunkIndex = 0;
            try
            {
                while (offset < sample.Bytes.Length)
                {
                    var take = Math.Min(sample.Chunks[chunkIndex++ % sample.Chunks.Length], sample.Bytes.Length - offset);
                    ReadOnlySpan<byte> chunk = sample.Bytes.AsSpan(offset, take);
                    offset += take;
                    while (decoder.TryDecode(ref chunk, out var frame))
                    {
                        using (frame)
                        {
                            decoded.Add((frame.MsgId, frame.MsgSeq, frame.StageId, frame.Payload.Span.ToArray()));
                        }
                    }
                }

                decoder.Complete();
            }
            catch (FrameDecodeException)
            {
                // A clean failure: the stream is malformed. Any other exception fails the property.
                if (!sample.Mutated)
                {
                    return false;
                }
            }
        }

        return pool.GetStatistics().Outstanding == 0 && (sample.Mutated || SameFrames(sample, decoded));
    }

    private static bool DecodeBySequence(Sample sample)
    {
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = true });
        var decoded = new List<(string, ushort, long, byte[])>();
        using (var decoder = new ClientFrameDecoder(pool))
        {
            // A pipe reader sees everything received so far and consumes whole frames, as the chunks arrive.
            var received = 0;
            var consumed = 0;
            var chunkIndex = 0;
            try
            {
                while (received < sample.Bytes.Length)
                {
                    received += Math.Min(sample.Chunks[chunkIndex++ % sample.Chunks.Length], sample.Bytes.Length - received);
                    var buffer = new ReadOnlySequence<byte>(sample.Bytes, consumed, received - consumed);
                    while (decoder.TryDecode(ref buffer, out var frame))
                    {
                        using (frame)
                        {
                            decoded.Add((frame.MsgId, frame.MsgSeq, frame.StageId, frame.Payload.Span.ToArray()));
                        }
                    }

                    consumed = received - (int)buffer.Length;
                }

                decoder.Complete(new ReadOnlySequence<byte>(sample.Bytes, consumed, received - consumed));
            }
            catch (FrameDecodeException)
            {
                if (!sample.Mutated)
                {
                    return false;
                }
            }
        }

        return pool.GetStatistics().Outstanding == 0 && (sample.Mutated || SameFrames(sample, decoded));
    }

    private static bool SameFrames(Sample sample, List<(string MsgId, ushort Seq, long Stage, byte[] Payload)> decoded) =>
        decoded.Count == sample.Frames.Count
        && decoded.Zip(sample.Frames).All(p => p.First.MsgId == p.Second.MsgId && p.First.Seq == p.Second.Seq && p.First.Stage == p.Second.Stage && p.First.Payload.AsSpan().SequenceEqual(p.Second.Payload));
}
