using System.Collections.Immutable;
using FsCheck;
using FsCheck.Fluent;
using PlayHouse.Core.Codec;
using PlayHouse.Core.Mesh;
using PlayHouse.Core.Pooling;
using PlayHouse.Fixtures.Properties;
using PlayHouse.Properties.Tests.Infrastructure;
using Shouldly;
using Xunit.Abstractions;

namespace PlayHouse.Properties.Tests.Machinery;

/// <summary>
/// The decoders against themselves (<see cref="DecoderDifferential"/>): client frames in both directions and mesh
/// frames, one to three per stream, sized at the decoder's limit, one byte past it and below it, some malformed or cut
/// short, each decoded as one chunk, split at every byte boundary, and fed a byte at a time, over the span and the
/// sequence paths. A flawed decoder that mishandles the boundary at the limit is caught.
/// </summary>
public sealed class DecoderDifferentialTests(ITestOutputHelper output)
{
    [Fact]
    [Trait("Category", "Deep")]
    public void Decoders_FramesSplitAtEveryByteBoundaryAtAndPastTheLimit_DecodeExactlyLikeTheWholeStream()
    {
        var atMaxDecoded = new Dictionary<WireKind, int>();
        var overMaxRefused = new Dictionary<WireKind, int>();
        var runner = Check(WireCase.Arbitrary(), DecoderDifferential.Standard, PropertyDepth.Cases(240), "decoder-differential", wire =>
        {
            var whole = DecoderDifferential.Transcript(wire, DecoderDifferential.Standard);
            if (wire.Frames[0].Size == FrameSize.AtMax && whole[0].StartsWith("frame", StringComparison.Ordinal))
            {
                atMaxDecoded[wire.Kind] = atMaxDecoded.GetValueOrDefault(wire.Kind) + 1;
            }

            if (whole[^1].Contains(nameof(FrameError.LengthTooLarge), StringComparison.Ordinal))
            {
                overMaxRefused[wire.Kind] = overMaxRefused.GetValueOrDefault(wire.Kind) + 1;
            }
        });

        output.WriteLine($"frames at the limit decoded: {string.Join(", ", atMaxDecoded)}; streams refused past the limit: {string.Join(", ", overMaxRefused)}");
        runner.ThrowIfFailed();

        // Every kind must reach both sides of its limit, or the boundary was never tested.
        foreach (var kind in Enum.GetValues<WireKind>())
        {
            atMaxDecoded.GetValueOrDefault(kind).ShouldBeGreaterThan(5, $"{kind}: frames at the limit decoded");
            overMaxRefused.GetValueOrDefault(kind).ShouldBeGreaterThan(5, $"{kind}: frames past the limit refused");
        }
    }

    [Theory]
    [InlineData(WireKind.Client)]
    [InlineData(WireKind.Server)]
    [InlineData(WireKind.Mesh)]
    public void Decoders_FrameAtTheProtocolLimitAndOnePast_SplitAtBoundaries_DecodeExactlyLikeTheWholeFrame(WireKind kind)
    {
        // The protocol's own limit (2 MiB), too large to split at every boundary: every boundary within the first and
        // last 40 bytes (the prefix, the header, the end of the payload) and 24 spread over the payload.
        var limit = kind == WireKind.Mesh ? MeshFrameCodec.MaxPayloadBytes : WireProtocol.MaxBodyBytes;
        var frame = new WireFrame(FrameSize.AtMax, 12, false, 7, 42, 0, 0, 3);
        foreach (var size in new[] { FrameSize.AtMax, FrameSize.OverMaxByOne, FrameSize.FrameOverMaxByOne })
        {
            // Header slack 5: a mesh payload one byte past its limit then still fits the largest FrameLen, so the payload
            // check refuses it (after HeaderLen, offset 8) rather than the FrameLen check (offset 4).
            var wire = new WireCase(kind, limit, 5, [frame with { Size = size }, frame with { Size = FrameSize.Small, SmallPayloadBytes = 9 }], WireTamper.None);
            var bytes = wire.Build();
            var boundaries = Enumerable.Range(0, 41).Concat(Enumerable.Range(bytes.Length - 40, 41)).Concat(Enumerable.Range(1, 24).Select(i => (int)((long)bytes.Length * i / 25))).Distinct().Order();
            var whole = DecoderDifferential.Transcript(wire, DecoderDifferential.Standard);
            output.WriteLine($"{kind} {size}: {bytes.Length} bytes -> {string.Join("; ", whole)}");

            DecoderDifferential.FirstDifference(bytes, pool => DecoderDifferential.Standard(wire, pool), boundaries).ShouldBeNull();
            if (size == FrameSize.AtMax)
            {
                whole.ShouldBe([whole[0], whole[1], "end"]);
                whole[0].ShouldContain($"payload {limit - (kind == WireKind.Mesh ? 0 : 1 + 12 + (kind == WireKind.Server ? WireProtocol.ServerFixedFieldsBytes : WireProtocol.ClientFixedFieldsBytes))} B");
            }
            else
            {
                whole.ShouldBe([$"error {nameof(FrameError.LengthTooLarge)} at offset {(kind == WireKind.Mesh && size == FrameSize.OverMaxByOne ? MeshFrameCodec.PrefixBytes : WireProtocol.LengthPrefixBytes)}"]);
            }
        }
    }

    [Fact]
    public void DecoderDifferential_WithADecoderWhoseStagingBufferForgetsThePrefix_FailsAtTheLimit()
    {
        var flawed = (WireCase wire, MessagePool pool) => (IWireDecoder)new StagingClientFrameDecoder(pool, wire.LimitBytes);
        var runner = Check(WireCase.Arbitrary(WireKind.Client), flawed, 240, "decoder-differential-staging");

        var shrunk = runner.Result is TestResult.Failed failed ? (WireCase)failed.Item3.Head : throw new ShouldAssertException("the differential did not catch the flawed decoder");
        var difference = DecoderDifferential.FirstDifference(shrunk, flawed);
        output.WriteLine($"{shrunk}\n{difference}");

        // Caught at the limit: a frame of the largest body, split, overflows the staging buffer; whole, it decodes.
        difference.ShouldNotBeNull();
        difference.ShouldStartWith("split at byte");
        difference.ShouldContain("crash ArgumentException");
        shrunk.Frames.ShouldHaveSingleItem().Size.ShouldBe(FrameSize.AtMax);
        shrunk.Tamper.ShouldBe(WireTamper.None);

        // The flaw needs no more than the limit: the standard decoder passes the same case, and the flawed one passes
        // frames four bytes below the limit.
        DecoderDifferential.FirstDifference(shrunk, DecoderDifferential.Standard).ShouldBeNull();
        var belowLimit = shrunk with { Frames = [shrunk.Frames[0] with { Size = FrameSize.Small, SmallPayloadBytes = 0 }], LimitBytes = shrunk.LimitBytes };
        DecoderDifferential.FirstDifference(belowLimit with { LimitBytes = belowLimit.LimitBytes + 4 }, flawed).ShouldBeNull();
    }

    private static ModelRunner Check(Arbitrary<WireCase> cases, Func<WireCase, MessagePool, IWireDecoder> decoder, int count, string name, Action<WireCase>? observe = null)
    {
        var runner = new ModelRunner();
        var property = Prop.ForAll(cases, wire =>
        {
            observe?.Invoke(wire);
            if (DecoderDifferential.FirstDifference(wire, decoder) is { } difference)
            {
                throw new PropertyViolationException(difference);
            }
        });
        FsCheck.Check.One(ModelRunner.Config(runner, count, name), property);
        return runner;
    }
}
