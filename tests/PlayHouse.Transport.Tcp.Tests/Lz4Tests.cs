using FsCheck;
using FsCheck.Fluent;
using K4os.Compression.LZ4;
using PlayHouse.Core.Codec;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Seams;
using PlayHouse.Sim.Tcp;

namespace PlayHouse.Transport.Tcp.Tests;

/// <summary>
/// The optional payload compression: pickles in K4os's LZ4Pickler format (what PlayHouse's C# connector unpickles),
/// and compressed replies over loopback.
/// </summary>
public sealed class Lz4Tests
{
    [Fact]
    public void Compress_ThenDecompress_RestoresAnyInput_AndIsCompressedOnlyWhenSmaller() =>
        Check.One(
            Config.QuickThrowOnFailure.WithMaxTest(300),
            Prop.ForAll(Arb.From(InputGen()), input =>
            {
                var pickle = new byte[Lz4Payloads.MaxCompressedLength(input.Length)];
                var written = Lz4Payloads.Compress(input, pickle);
                if (input.Length == 0)
                {
                    // Nothing to pickle; the server never compresses an empty payload.
                    return written == 0;
                }

                var restored = new byte[input.Length];
                var read = Lz4PayloadDecompressor.Instance.Decompress(pickle.AsSpan(0, written), restored);
                // Header byte 0 marks a pickle holding the bytes as they are: one byte longer than the input. A compressed
                // pickle's LZ4 block is shorter than the input, but its header (1 to 5 bytes) can make the whole pickle as
                // long as the input or longer, which is why the session compares the pickle's length before using it.
                var stored = pickle[0] == 0;
                return read == input.Length
                    && restored.AsSpan().SequenceEqual(input)
                    && (stored ? written == input.Length + 1 : written < Lz4Payloads.MaxCompressedLength(input.Length));
            }));

    [Fact]
    public void ShortRepetitiveInput_CompressesToAPickleNoShorterThanItself_WhichTheSessionThenSendsRaw()
    {
        // 35 bytes with one repeated run of 12: LZ4 shortens the block, and the pickle's header takes the saving back.
        byte[] input = [.. Enumerable.Range(0, 23).Select(i => (byte)i), .. Enumerable.Range(0, 12).Select(i => (byte)i)];
        var pickle = new byte[Lz4Payloads.MaxCompressedLength(input.Length)];

        var written = Lz4Payloads.Compress(input, pickle);
        var restored = new byte[input.Length];
        var read = Lz4PayloadDecompressor.Instance.Decompress(pickle.AsSpan(0, written), restored);

        Assert.NotEqual(0, pickle[0]);
        Assert.InRange(written, input.Length, Lz4Payloads.MaxCompressedLength(input.Length) - 1);
        Assert.Equal(input.Length, read);
        Assert.Equal(input, restored);
    }

    [Fact]
    public void OurPickle_IsReadByLZ4PicklerUnpickle_AsPlayHouseConnectorReadsIt()
    {
        var input = RepetitiveInput(10_000);
        var pickle = new byte[Lz4Payloads.MaxCompressedLength(input.Length)];

        var written = Lz4Payloads.Compress(input, pickle);
        var unpickled = LZ4Pickler.Unpickle(pickle.AsSpan(0, written));

        Assert.Equal(input, unpickled);
        Assert.InRange(written, 1, input.Length / 10);
    }

    [Theory]
    [InlineData(LZ4Level.L00_FAST, 10_000)]
    [InlineData(LZ4Level.L12_MAX, 10_000)]
    [InlineData(LZ4Level.L00_FAST, 300)]
    [InlineData(LZ4Level.L00_FAST, 100_000)]
    public void PayloadMadeByLZ4PicklerPickle_Decompresses(LZ4Level level, int sizeBytes)
    {
        var input = RepetitiveInput(sizeBytes);
        var pickle = LZ4Pickler.Pickle(input, level);
        var restored = new byte[input.Length];

        var read = Lz4PayloadDecompressor.Instance.Decompress(pickle, restored);

        Assert.True(pickle.Length < input.Length, "the pickle is compressed, not stored");
        Assert.Equal(input.Length, read);
        Assert.Equal(input, restored);
    }

    [Fact]
    public void StoredPickleOfIncompressibleBytes_Decompresses()
    {
        var input = Enumerable.Range(0, 256).Select(i => (byte)((i * 167) + 13)).ToArray();
        var pickle = LZ4Pickler.Pickle(input);
        var restored = new byte[input.Length];

        var read = Lz4PayloadDecompressor.Instance.Decompress(pickle, restored);

        Assert.Equal(input.Length + 1, pickle.Length);
        Assert.Equal(input.Length, read);
        Assert.Equal(input, restored);
    }

    [Fact]
    public void BareLz4Block_IsRejected_AsByPlayHouseConnector()
    {
        var input = RepetitiveInput(10_000);
        var block = new byte[LZ4Codec.MaximumOutputSize(input.Length)];
        var blockBytes = LZ4Codec.Encode(input, block);

        Assert.ThrowsAny<Exception>(() => LZ4Pickler.Unpickle(block.AsSpan(0, blockBytes)));
        Assert.ThrowsAny<Exception>(() => Lz4PayloadDecompressor.Instance.Decompress(block.AsSpan(0, blockBytes), new byte[input.Length]));
    }

    [Fact]
    public void Decompress_OnGarbage_FailsOnlyWithInvalidData() =>
        Check.One(
            Config.QuickThrowOnFailure.WithMaxTest(500),
            Prop.ForAll(Arb.From(Gen.ArrayOf(Gen.Choose(0, 255).Select(b => (byte)b))), garbage =>
            {
                try
                {
                    Lz4PayloadDecompressor.Instance.Decompress(garbage, new byte[256]);
                }
                catch (InvalidDataException)
                {
                }

                return true;
            }));

    [Fact]
    public void DecoderWithTheDecompressor_FailsAPickleOfAnotherSize_AsDecompressionFailed()
    {
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = true });
        using var decoder = new ServerFrameDecoder(pool, options: new FrameDecoderOptions { Decompressor = Lz4PayloadDecompressor.Instance });
        var pickle = LZ4Pickler.Pickle(RepetitiveInput(1_000));
        var frame = new byte[ServerFrameEncoder.GetEncodedLength("Big", pickle.Length)];
        ServerFrameEncoder.Encode(frame, "Big", 1, 2, 0, pickle, originalSize: 999);

        var error = Assert.Throws<FrameDecodeException>(() =>
        {
            ReadOnlySpan<byte> input = frame;
            decoder.TryDecode(ref input, out _);
        });

        Assert.Equal(FrameError.DecompressionFailed, error.Error);
        Assert.IsType<InvalidDataException>(error.InnerException);
        Assert.Equal(0, pool.GetStatistics().Outstanding);
    }

    [Fact]
    public void Compress_AfterWarmUp_AllocatesNothing()
    {
        var input = RepetitiveInput(4_096);
        var pickle = new byte[Lz4Payloads.MaxCompressedLength(input.Length)];
        var written = Lz4Payloads.Compress(input, pickle);

        // An allocation per compression shows in every window of 100; a one-off refill of a shared buffer pool that a
        // collection trimmed (a few KiB, seen once under a heavily loaded test run) shows in one window only.
        var allocatedBytes = -1L;
        for (var window = 0; window < 3 && allocatedBytes != 0; window++)
        {
            var before = GC.GetAllocatedBytesForCurrentThread();
            for (var i = 0; i < 100; i++)
            {
                written = Lz4Payloads.Compress(input, pickle);
            }

            allocatedBytes = GC.GetAllocatedBytesForCurrentThread() - before;
        }

        Assert.Equal(0, allocatedBytes);
        Assert.InRange(written, 1, input.Length / 10);
    }

    [Fact]
    public void Compress_IntoTooSmallADestination_Throws()
    {
        var input = RepetitiveInput(100);

        Assert.Throws<ArgumentOutOfRangeException>(() => Lz4Payloads.Compress(input, new byte[Lz4Payloads.MaxCompressedLength(100) - 1]));
    }

    [Fact]
    public async Task CompressedEcho_OverLoopback_ArrivesIntactWithOriginalSizeSet_AndUnpicklesAsTheConnectorReadsIt()
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
        Assert.Equal(payload, LZ4Pickler.Unpickle(rawReply.Payload));
        Assert.Equal(new byte[] { 1, 2, 3 }, small.Payload);
        Assert.Equal(2, server.Counters.FramesCompressed);
    }

    [Fact]
    public async Task IncompressibleReply_AboveTheThreshold_IsSentRaw()
    {
        await using var server = TestServer.Start(new TcpTransportOptions { CompressAboveBytes = 256 });
        var random = new Xoshiro256StarStar(seed: 7);
        var payload = Enumerable.Range(0, 4_096).Select(_ => (byte)random.NextInt(256)).ToArray();
        using var raw = await RawClient.ConnectAsync(server.EndPoint);
        await raw.SendAsync(RawFrames.Client(EchoMsgIds.Authenticate, 1, 1, RawFrames.Account(2)));
        await raw.ReadFrameAsync();

        await raw.SendAsync(RawFrames.Client(EchoMsgIds.Echo, 2, 1, payload));
        var rawReply = await raw.ReadFrameAsync();

        Assert.Equal(0, rawReply.OriginalSize);
        Assert.Equal(payload, rawReply.Payload);
        Assert.Equal(0, server.Counters.FramesCompressed);
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

    private static byte[] RepetitiveInput(int sizeBytes) =>
        [.. Enumerable.Range(0, sizeBytes).Select(i => (byte)(i % 17))];

    private static Gen<byte[]> InputGen() =>
        Gen.OneOf(
            Gen.ArrayOf(Gen.Choose(0, 255).Select(b => (byte)b)),
            from size in Gen.Choose(0, 5000)
            from period in Gen.Choose(1, 40)
            select Enumerable.Range(0, size).Select(i => (byte)(i % period)).ToArray());
}
