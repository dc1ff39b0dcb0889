using PlayHouse.Core.Codec;
using PlayHouse.Core.Runtime;

namespace PlayHouse.Transport.Tcp.Tests;

/// <summary>
/// The transport counters on their own: runtime error replies are kept per code within the runtime's range only, the
/// snapshot names every non-zero counter in ordinal name order, and the send queue's high water only rises.
/// </summary>
public sealed class TransportCountersTests
{
    [Fact]
    public void ErrorReplies_AtBothEndsOfTheRuntimeRange_AreCountedPerCode()
    {
        var counters = new TcpTransportCounters();

        counters.AddErrorReply(60000);
        counters.AddErrorReply(60063);
        counters.AddErrorReply(60063);

        Assert.Equal(1, counters.ErrorReplies(60000));
        Assert.Equal(2, counters.ErrorReplies(60063));
        Assert.Equal(0, counters.ErrorReplies(60001));
    }

    [Fact]
    public void ErrorReplies_OutsideTheRuntimeRange_AreIgnoredAndReadAsZero()
    {
        var counters = new TcpTransportCounters();

        counters.AddErrorReply(59999);
        counters.AddErrorReply(60064);
        counters.AddErrorReply(0);

        Assert.Equal(0, counters.ErrorReplies(59999));
        Assert.Equal(0, counters.ErrorReplies(60064));
        Assert.Equal(0, counters.ErrorReplies(0));
        Assert.Empty(counters.Snapshot());
    }

    [Fact]
    public void Snapshot_OfAFreshCounterSet_IsEmpty()
    {
        var counters = new TcpTransportCounters();

        var snapshot = counters.Snapshot();

        Assert.Empty(snapshot);
        Assert.Equal(0, counters.ConnectionsClosed);
    }

    [Fact]
    public void Snapshot_NamesEveryNonZeroCounter_InOrdinalOrder()
    {
        var counters = new TcpTransportCounters();
        counters.AddAccepted();
        counters.AddClosed(SessionCloseReason.PeerClosed);
        counters.AddClosed(SessionCloseReason.PeerClosed);
        counters.AddMalformed(FrameError.LengthTooLarge);
        counters.AddErrorReply(ErrorCodes.StageNotFound);
        counters.AddErrorReply(ErrorCodes.ServerStopping);
        counters.AddBytesSent(7);

        var snapshot = counters.Snapshot();

        var expected = new[]
        {
            KeyValuePair.Create("BytesSent", 7L),
            KeyValuePair.Create("Closed.PeerClosed", 2L),
            KeyValuePair.Create("ConnectionsAccepted", 1L),
            KeyValuePair.Create("ConnectionsClosed", 2L),
            KeyValuePair.Create("ErrorReplies." + ErrorCodes.Describe(ErrorCodes.ServerStopping), 1L),
            KeyValuePair.Create("ErrorReplies." + ErrorCodes.Describe(ErrorCodes.StageNotFound), 1L),
            KeyValuePair.Create("Malformed.LengthTooLarge", 1L),
            KeyValuePair.Create("SendCalls", 1L),
        };
        Assert.Equal(expected, snapshot);
        Assert.Equal("ErrorReplies.ServerStopping", snapshot[4].Key);
    }

    [Fact]
    public void BytesReceived_CountsTheBytesAndOneReceiveCallPerCompletion()
    {
        var counters = new TcpTransportCounters();

        counters.AddBytesReceived(10);
        counters.AddBytesReceived(5);

        Assert.Equal(15, counters.BytesReceived);
        Assert.Equal(2, counters.ReceiveCalls);
    }

    [Fact]
    public void SendQueueHighWater_RisesToTheLargestNotedSize_AndNeverFalls()
    {
        var counters = new TcpTransportCounters();

        counters.NoteSendQueueBytes(100);
        var afterFirst = counters.SendQueueHighWaterBytes;
        counters.NoteSendQueueBytes(40);
        counters.NoteSendQueueBytes(250);
        counters.NoteSendQueueBytes(250);

        Assert.Equal(100, afterFirst);
        Assert.Equal(250, counters.SendQueueHighWaterBytes);
    }
}
