using FsCheck;
using FsCheck.Fluent;
using PlayHouse.Core.Codec;

namespace PlayHouse.Transport.Tcp.Tests;

/// <summary>The optional LZ4 payload compression: the block codec, and compressed frames over loopback.</summary>
public sealed class Lz4Tests
{
    /// <summary>
    /// An LZ4 block made by the reference lz4 command-line tool (lz4 -9 --no-frame-crc -BD, block taken out of the
    /// frame) from <see cref="ReferenceInput"/>, so our decompressor is checked against another implementation.
    /// </summary>
    private const string ReferenceBlockHex =
        "ff09506c6179486f757365206563686f207061796c6f61643b201800ffffff98f0ff00000102030405060708090a0b0c" +
        "0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c" +
        "3d3e3f404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f606162636465666768696a6b6c" +
        "6d6e6f707172737475767778797a7b7c7d7e7f808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c" +
        "9d9e9fa0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0c1c2c3c4c5c6c7c8c9cacbcc" +
        "cdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedfe0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfc" +
        "fdfeff7461696c2d6c69746572616c7321";

    [Fact]
    public void Lz4Block_DecompressesABlockMadeByTheReferenceTool()
    {
        var expected = ReferenceInput();
        var restored = new byte[expected.Length];

        var read = Lz4Block.Decompress(Convert.FromHexString(ReferenceBlockHex), restored);

        Assert.Equal(expected.Length, read);
        Assert.Equal(expected, restored);
    }

    [Fact]
    public void Lz4Block_RoundTrip_RestoresAnyInput() =>
        Check.One(
            Config.QuickThrowOnFailure.WithMaxTest(300),
            Prop.ForAll(Arb.From(InputGen()), input =>
            {
                var compressed = new byte[Lz4Block.MaxCompressedLength(input.Length)];
                var written = Lz4Block.Compress(input, compressed);
                var restored = new byte[input.Length];
                var read = Lz4Block.Decompress(compressed.AsSpan(0, written), restored);
                return written > 0 && read == input.Length && restored.AsSpan().SequenceEqual(input);
            }));

    [Fact]
    public void Lz4Block_OnGarbage_FailsOnlyWithInvalidData() =>
        Check.One(
            Config.QuickThrowOnFailure.WithMaxTest(500),
            Prop.ForAll(Arb.From(Gen.ArrayOf(Gen.Choose(0, 255).Select(b => (byte)b))), garbage =>
            {
                try
                {
                    Lz4Block.Decompress(garbage, new byte[256]);
                }
                catch (InvalidDataException)
                {
                }

                return true;
            }));

    [Fact]
    public void Lz4Block_RepetitiveInput_GetsSmaller()
    {
        var input = Enumerable.Range(0, 10_000).Select(i => (byte)(i % 17)).ToArray();
        var compressed = new byte[Lz4Block.MaxCompressedLength(input.Length)];

        var written = Lz4Block.Compress(input, compressed);

        Assert.InRange(written, 1, input.Length / 10);
    }

    [Fact]
    public async Task CompressedEcho_OverLoopback_ArrivesIntactWithOriginalSizeSet()
    {
        await using var server = TestServer.Start(new TcpTransportOptions { CompressAboveBytes = 256 });
        var payload = Enumerable.Range(0, 10_000).Select(i => (byte)(i % 13)).ToArray();
        using var client = await server.ConnectAuthenticatedAsync(accountId: 1, options: new TcpPlayClientOptions { Decompressor = Lz4PayloadDecompressor.Instance, RequestTimeout = TestServer.Patience });
        using var raw = await RawClient.ConnectAsync(server.EndPoint);
        await raw.SendAsync(RawFrames.Client(EchoMsgIds.Authenticate, 1, 1, RawFrames.Account(2)));
        await raw.ReadFrameAsync();

        var reply = await client.RequestAsync(EchoMsgIds.Echo, 1, payload).WaitAsync(TestServer.Patience);
        await raw.SendAsync(RawFrames.Client(EchoMsgIds.Echo, 2, 1, payload));
        var rawReply = await raw.ReadFrameAsync();
        var small = await client.RequestAsync(EchoMsgIds.Echo, 1, [1, 2, 3]).WaitAsync(TestServer.Patience);

        Assert.Equal(payload, reply.Payload);
        Assert.Equal(payload.Length, rawReply.OriginalSize);
        Assert.InRange(rawReply.Payload.Length, 1, payload.Length / 10);
        Assert.Equal(new byte[] { 1, 2, 3 }, small.Payload);
        Assert.Equal(2, server.Counters.FramesCompressed);
    }

    [Fact]
    public async Task CompressedFrame_ToAClientWithoutDecompressor_ClosesItAsMalformed()
    {
        await using var server = TestServer.Start(new TcpTransportOptions { CompressAboveBytes = 256 });
        using var client = await server.ConnectAuthenticatedAsync(accountId: 1);

        var reply = await client.RequestAsync(EchoMsgIds.Echo, 1, new byte[4096]).WaitAsync(TestServer.Patience);
        await client.Closed.WaitAsync(TestServer.Patience);

        Assert.True(reply.Disconnected);
        Assert.Equal(SessionCloseReason.MalformedFrame, client.CloseReason);
        Assert.Equal(1, client.Counters.Malformed(FrameError.CompressionNotSupported));
    }

    private static byte[] ReferenceInput() =>
        [.. Enumerable.Repeat(System.Text.Encoding.ASCII.GetBytes("PlayHouse echo payload; "), 40).SelectMany(b => b), .. Enumerable.Range(0, 256).Select(i => (byte)i), .. System.Text.Encoding.ASCII.GetBytes("tail-literals!")];

    private static Gen<byte[]> InputGen() =>
        Gen.OneOf(
            Gen.ArrayOf(Gen.Choose(0, 255).Select(b => (byte)b)),
            from size in Gen.Choose(0, 5000)
            from period in Gen.Choose(1, 40)
            select Enumerable.Range(0, size).Select(i => (byte)(i % period)).ToArray());
}
