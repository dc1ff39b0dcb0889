using System.Buffers.Binary;
using System.Net;
using System.Net.Sockets;
using System.Text;

namespace PlayHouse.Transport.Tcp.Tests;

/// <summary>The client connector against a hand-written server that answers late or not at all.</summary>
public sealed class ClientConnectorTests
{
    [Fact]
    public async Task Request_WithoutReply_TimesOutOnce_AndALateReplyIsCountedNotPushed()
    {
        using var listener = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        listener.Bind(new IPEndPoint(IPAddress.Loopback, 0));
        listener.Listen(1);
        var accepted = listener.AcceptAsync();
        using var client = await TcpPlayClient.ConnectAsync((IPEndPoint)listener.LocalEndPoint!, new TcpPlayClientOptions { RequestTimeout = TimeSpan.FromMilliseconds(200) });
        using var peer = await accepted.WaitAsync(TestServer.Patience);
        var pushes = 0;
        client.PushReceived = (TcpPlayClient c, in PlayHouse.Core.Codec.ServerFrame push) => Interlocked.Increment(ref pushes);

        var reply = await client.RequestAsync("EchoRequest", 1, [1]).WaitAsync(TestServer.Patience);
        await peer.SendAsync(ServerFrame("EchoReply", reply.MsgSeq, [1]));
        await Eventually.True(() => client.Statistics.LateOrUnknownReplies == 1, TestServer.Patience);

        Assert.True(reply.TimedOut);
        Assert.Equal(1, client.Statistics.Timeouts);
        Assert.Equal(0, pushes);
        Assert.Equal(0, client.InFlight);
    }

    [Fact]
    public async Task PendingRequests_WhenTheServerCloses_CompleteAsDisconnectedExactlyOnce()
    {
        using var listener = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        listener.Bind(new IPEndPoint(IPAddress.Loopback, 0));
        listener.Listen(1);
        var accepted = listener.AcceptAsync();
        using var client = await TcpPlayClient.ConnectAsync((IPEndPoint)listener.LocalEndPoint!, new TcpPlayClientOptions { RequestTimeout = TestServer.Patience });
        var peer = await accepted.WaitAsync(TestServer.Patience);
        var completions = 0;
        var all = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        for (var i = 0; i < 10; i++)
        {
            Assert.NotEqual(0, client.Request("EchoRequest", 1, [1], (TcpPlayClient c, in ClientReply r) =>
            {
                Assert.True(r.Disconnected);
                if (Interlocked.Increment(ref completions) == 10)
                {
                    all.TrySetResult();
                }
            }));
        }

        peer.Dispose();
        await all.Task.WaitAsync(TestServer.Patience);
        await client.Closed.WaitAsync(TestServer.Patience);

        Assert.Equal(10, completions);
        Assert.Equal(10, client.Statistics.FailedByDisconnect);
        Assert.Equal(0, client.Request("EchoRequest", 1, [1], (TcpPlayClient c, in ClientReply r) => Assert.Fail("a refused request must not complete")));
    }

    [Fact]
    public async Task PacketQueue_PastItsCap_DropsPushesAndCompletesTheReplyOnceWithPacketQueueFull()
    {
        using var listener = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        listener.Bind(new IPEndPoint(IPAddress.Loopback, 0));
        listener.Listen(1);
        var accepted = listener.AcceptAsync();
        using var client = await TcpPlayClient.ConnectAsync((IPEndPoint)listener.LocalEndPoint!, new TcpPlayClientOptions { PacketQueueMax = 2, RequestTimeout = TestServer.Patience });
        using var peer = await accepted.WaitAsync(TestServer.Patience);
        var pushes = 0;
        client.PushReceived = (TcpPlayClient c, in PlayHouse.Core.Codec.ServerFrame push) => pushes++;
        var replied = new TaskCompletionSource<ushort>(TaskCreationOptions.RunContinuationsAsynchronously);
        var seq = client.Request("EchoRequest", 1, [1], (TcpPlayClient c, in ClientReply r) => replied.TrySetResult(r.ErrorCode));

        // Two pushes fill the queue nobody reads yet; the third push and the reply behind it meet it full.
        await peer.SendAsync(ServerFrame("Push", 0, [1]).Concat(ServerFrame("Push", 0, [2])).Concat(ServerFrame("Push", 0, [3])).Concat(ServerFrame("EchoReply", seq, [1])).ToArray());
        var errorCode = await replied.Task.WaitAsync(TestServer.Patience);

        Assert.Equal(TcpPlayClient.PacketQueueFullErrorCode, errorCode);
        Assert.Equal(1, client.Statistics.PushesDropped);
        Assert.Equal(1, client.Statistics.RepliesRefused);
        Assert.Equal(0, pushes);
        Assert.Equal(2, client.PacketsQueued);
        Assert.Equal(2, client.ReadPackets());
        Assert.Equal(2, pushes);
        Assert.Equal(2, client.PacketQueueHighWater);
        Assert.Equal(0, client.InFlight);
    }

    [Fact]
    public async Task InFlightCap_RefusesRequestsBeyondIt()
    {
        using var listener = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        listener.Bind(new IPEndPoint(IPAddress.Loopback, 0));
        listener.Listen(1);
        var accepted = listener.AcceptAsync();
        using var client = await TcpPlayClient.ConnectAsync((IPEndPoint)listener.LocalEndPoint!, new TcpPlayClientOptions { InFlightMax = 3, RequestTimeout = TestServer.Patience });
        using var peer = await accepted.WaitAsync(TestServer.Patience);

        var seqs = Enumerable.Range(0, 4).Select(_ => client.Request("EchoRequest", 1, [], (TcpPlayClient c, in ClientReply r) => { })).ToList();

        Assert.Equal(new ushort[] { 1, 2, 3, 0 }, seqs);
        Assert.Equal(1, client.Statistics.RequestsRefused);
        Assert.Equal(3, client.InFlightHighWater);
    }

    private static byte[] ServerFrame(string msgId, ushort seq, byte[] payload)
    {
        var id = Encoding.UTF8.GetBytes(msgId);
        var frame = new byte[4 + 1 + id.Length + 16 + payload.Length];
        BinaryPrimitives.WriteInt32LittleEndian(frame, frame.Length - 4);
        frame[4] = (byte)id.Length;
        id.CopyTo(frame, 5);
        BinaryPrimitives.WriteUInt16LittleEndian(frame.AsSpan(5 + id.Length), seq);
        payload.CopyTo(frame, 5 + id.Length + 16);
        return frame;
    }
}
