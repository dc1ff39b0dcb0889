using Google.Protobuf;
using PlayHouse.Core.Mesh;
using PlayHouse.Core.Mesh.Proto;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Tests.Codec;

namespace PlayHouse.Core.Tests.Mesh;

/// <summary>Mesh decoding with a sender-id cache: the header parses exactly as without one, and the sender is a shared string.</summary>
public sealed class SenderIdCacheDecodeTests
{
    [Fact]
    public void Decode_WithSenderIdCache_ParsesEveryFieldAsWithoutAndSharesTheSenderString()
    {
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = true });
        var payload = WireBytes.Pattern(64);
        var sent = MeshFrameCodecTests.FullHeader(payload.Length);
        var bytes = MeshFrameCodecTests.Encode(sent, payload);
        var cache = new Utf8SenderIdCache(singleThreaded: true);

        var plain = new RouteHeader();
        Assert.True(MeshFrameCodec.TryDecode(bytes, plain, pool, out var plainPayload, out _));
        plainPayload.Dispose();
        var first = new RouteHeader();
        Assert.True(MeshFrameCodec.TryDecode(bytes, first, pool, out var firstPayload, out _, senderIds: cache));
        firstPayload.Dispose();
        var second = new RouteHeader();
        using (var decoder = new MeshFrameDecoder(pool, senderIds: cache))
        {
            // Split at every byte, so the header is parsed from the decoder's own buffer.
            var decoded = false;
            for (var i = 0; i < bytes.Length; i++)
            {
                ReadOnlySpan<byte> chunk = bytes.AsSpan(i, 1);
                if (decoder.TryDecode(ref chunk, second, out var secondPayload))
                {
                    secondPayload.Dispose();
                    decoded = true;
                }
            }

            Assert.True(decoded);
        }

        Assert.Equal(sent, plain);
        Assert.Equal(sent, first);
        Assert.Equal(sent, second);
        Assert.Same(first.From, second.From);
        Assert.Equal(1, cache.Count);
        Assert.Equal(0, pool.GetStatistics().Outstanding);
    }

    [Fact]
    public void Decode_HeaderWithTheSenderFieldTwice_KeepsTheLastAsProtobufDoes()
    {
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = true });
        var header = new RouteHeader { MsgSeq = 7, From = "play-1", StageId = 3 }.ToByteArray();

        // A second from field appended: protobuf merges it over the first.
        byte[] twice = [.. header, 0x2A, 6, .. "play-2"u8];
        var frame = MeshFrameCodecTests.Raw(null, null, twice, []);

        var decoded = new RouteHeader();
        Assert.True(MeshFrameCodec.TryDecode(frame, decoded, pool, out _, out _, senderIds: new Utf8SenderIdCache(singleThreaded: true)));

        Assert.Equal("play-2", decoded.From);
        Assert.Equal(7UL, decoded.MsgSeq);
        Assert.Equal(3, decoded.StageId);
    }
}
