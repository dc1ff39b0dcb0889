using PlayHouse.Core.Seams;
using PlayHouse.Simulation.Network;

namespace PlayHouse.Simulation.Tests.Network;

public sealed class StreamDeliveryTests
{
    public static TheoryData<int> Seeds { get; } = [.. Enumerable.Range(1, 30)];

    [Fact]
    public void ZeroFaults_EveryStreamByteAndDatagramArrivesOnceInOrder_AndCountersBalance()
    {
        // Default options except a fixed latency: splitting stays at its default, since it is not a fault.
        var h = new NetworkHarness(seed: 11, new PathOptions { Latency = LatencyModel.Fixed(TimeSpan.FromMilliseconds(5)) });
        var random = new Xoshiro256StarStar(99);
        h.Listen("server");
        var pairs = Enumerable.Range(0, 3).Select(i => h.Connect($"client{i}", "server")).ToList();
        var atServer = new DatagramProbe(h.Network, "server");
        var atClient = new DatagramProbe(h.Network, "client0");
        h.RunQuiet();

        for (var round = 0; round < 200; round++)
        {
            foreach (var pair in pairs)
            {
                Assert.True(pair.Client.Send(1 + random.NextInt(400), random));
                Assert.True(pair.Server.Send(1 + random.NextInt(400), random));
            }

            h.Network.SendDatagram("client0", "server", DatagramProbe.Datagram(round));
            h.Network.SendDatagram("server", "client0", DatagramProbe.Datagram(round));
            if (round % 10 == 0)
            {
                h.RunFor(TimeSpan.FromMilliseconds(random.NextInt(8)));
            }
        }

        h.RunQuiet();

        foreach (var pair in pairs)
        {
            Assert.Equal(pair.Client.Sent, pair.Server.Received);
            Assert.Equal(pair.Server.Sent, pair.Client.Received);
            Assert.Empty(pair.Client.CloseReasons);
            Assert.Empty(pair.Server.CloseReasons);
        }

        Assert.Equal(Enumerable.Range(0, 200), atServer.Arrivals);
        Assert.Equal(Enumerable.Range(0, 200), atClient.Arrivals);
        Assert.Equal(1200, h.Counters.StreamSegmentsSent);
        Assert.Equal(h.Counters.StreamSegmentsSent, h.Counters.StreamSegmentsDelivered);
        Assert.Equal(h.Counters.StreamBytesSent, h.Counters.StreamBytesDelivered);
        Assert.Equal(400, h.Counters.DatagramsSent);
        Assert.Equal(h.Counters.DatagramsSent, h.Counters.DatagramsDelivered);
        Assert.Equal(0, h.Counters.DatagramsDropped + h.Counters.DatagramsDuplicated + h.Counters.DatagramsReordered);
        Assert.Equal(0, h.Counters.StreamRetransmits + h.Counters.ConnectionResets + h.Counters.StreamSendsRefused);
        Assert.Equal(3, h.Counters.ConnectionsOpened);
        Assert.Equal(6, h.Network.OpenConnections.Count);
        h.AssertNoBytesInFlight();
    }

    [Theory]
    [MemberData(nameof(Seeds))]
    public void Streams_UnderSplittingJitterAndRetransmits_EveryConnectionReceivesExactlyWhatWasSent(int seed)
    {
        var options = new PathOptions
        {
            Latency = LatencyModel.LongTail(TimeSpan.FromMilliseconds(1), TimeSpan.FromMilliseconds(5), TimeSpan.FromMilliseconds(150)),
            LossProbability = 0.1,
            StreamLoss = StreamLossMode.Retransmit,
            SplitProbability = 0.5,
        };
        var h = new NetworkHarness((ulong)seed, options);
        var random = new Xoshiro256StarStar((ulong)seed + 1000);
        h.Listen("server");
        var pairs = Enumerable.Range(0, 3).Select(i => h.Connect($"client{i}", "server")).ToList();

        for (var round = 0; round < 80; round++)
        {
            foreach (var pair in pairs)
            {
                Assert.True(pair.Client.Send(1 + random.NextInt(300), random));
                if (pair.IsAccepted)
                {
                    Assert.True(pair.Server.Send(1 + random.NextInt(300), random));
                }
            }

            h.RunFor(TimeSpan.FromTicks(random.NextLong(0, TimeSpan.TicksPerMillisecond * 3)));
        }

        h.RunQuiet();

        foreach (var pair in pairs)
        {
            Assert.Equal(pair.Client.Sent, pair.Server.Received);
            Assert.Equal(pair.Server.Sent, pair.Client.Received);
            Assert.True(pair.Client.Connection.IsOpen && pair.Server.Connection.IsOpen);
        }

        Assert.True(h.Counters.StreamRetransmits > 0, "the loss setting should have caused retransmits");
        Assert.Equal(h.Counters.StreamRetransmits, h.TraceCount("net.retransmit"));
        Assert.Equal(h.Counters.StreamSegmentsSent, h.Counters.StreamSegmentsDelivered);
        Assert.Equal(h.Counters.StreamBytesSent, h.Counters.StreamBytesDelivered);
        h.AssertNoBytesInFlight();
    }

    [Theory]
    [InlineData(1)]
    [InlineData(2)]
    [InlineData(3)]
    [InlineData(4)]
    [InlineData(5)]
    public void Streams_WithScheduleExploration_StillArriveInOrderAndAfterTheAccept(int seed)
    {
        // Chunks of one send, and sends made at one instant over a fixed latency, share an arrival instant; a
        // world that shuffles same-instant events must not shuffle the bytes of a stream.
        var options = new PathOptions { Latency = LatencyModel.Fixed(TimeSpan.FromMilliseconds(2)), SplitProbability = 1 };
        var h = new NetworkHarness((ulong)seed, options, new SimWorldOptions { ExploreSchedules = true });
        var random = new Xoshiro256StarStar((ulong)seed);
        h.Listen("server");
        var pair = h.Connect("client", "server");
        for (var i = 0; i < 50; i++)
        {
            Assert.True(pair.Client.Send(2 + random.NextInt(100), random));
        }

        h.RunQuiet();

        Assert.Equal(pair.Client.Sent, pair.Server.Received);
        Assert.True(pair.Server.ChunkLengths.Count >= 100, "every send should have been split");
        h.AssertNoBytesInFlight();
    }

    [Theory]
    [InlineData(1)]
    [InlineData(2)]
    [InlineData(3)]
    [InlineData(4)]
    [InlineData(5)]
    [InlineData(6)]
    [InlineData(7)]
    [InlineData(8)]
    public void StreamLossInResetMode_BreaksTheConnection_BothEndsClosedOnceAndNothingLeaks(int seed)
    {
        var h = new NetworkHarness((ulong)seed, new PathOptions { Latency = LatencyModel.Uniform(TimeSpan.FromMilliseconds(1), TimeSpan.FromMilliseconds(10)), SplitProbability = 0.3 });
        var random = new Xoshiro256StarStar((ulong)seed);
        h.Listen("server");
        var pair = h.Connect("client", "server");
        h.RunQuiet();
        h.Network.SetPath("client", "server", h.Network.GetPath("client", "server") with { LossProbability = 0.2, StreamLoss = StreamLossMode.Reset });

        var sends = 0;
        while (pair.Client.Connection.IsOpen)
        {
            // A lost segment resets at once, yet the send itself was accepted, as a socket write would be.
            Assert.True(pair.Client.Send(1 + random.NextInt(200), random));
            Assert.Equal(pair.Client.Connection.IsOpen, pair.Server.Send(1 + random.NextInt(200), random));
            sends++;
            h.RunFor(TimeSpan.FromMilliseconds(random.NextInt(4)));
        }

        Assert.True(sends < 1000, "a 20% loss should have broken the connection long before 1000 sends");
        h.RunQuiet();

        Assert.Equal(["segment lost"], pair.Client.CloseReasons);
        Assert.Equal(["segment lost"], pair.Server.CloseReasons);
        Assert.False(pair.Client.Connection.Send([1, 2, 3]));
        Assert.False(pair.Server.Connection.Send([1, 2, 3]));
        Assert.Equal(1, h.Counters.ConnectionResets);
        Assert.Equal(1, h.TraceCount("net.loss-reset"));

        // TCP's promise: whatever arrived is a prefix of what was sent, in order.
        Assert.Equal(pair.Client.Sent.Take(pair.Server.Received.Count), pair.Server.Received);
        Assert.Equal(pair.Server.Sent.Take(pair.Client.Received.Count), pair.Client.Received);
        Assert.Empty(h.Network.OpenConnections);
        h.AssertNoBytesInFlight();
        Assert.Equal(h.Counters.StreamBytesSent, h.Counters.StreamBytesDelivered + h.Counters.StreamBytesDiscarded);
        Assert.Equal(h.Counters.StreamSegmentsSent, h.Counters.StreamSegmentsDelivered + h.Counters.StreamSegmentsDiscarded);
    }

    [Fact]
    public void GracefulClose_BytesSentBeforeCloseArrive_ThenThePeerHearsTheCloseOnce()
    {
        var h = new NetworkHarness(seed: 3, new PathOptions { Latency = LatencyModel.Uniform(TimeSpan.FromMilliseconds(1), TimeSpan.FromMilliseconds(30)), SplitProbability = 0.5 });
        var random = new Xoshiro256StarStar(3);
        h.Listen("server");
        var pair = h.Connect("client", "server");
        for (var i = 0; i < 20; i++)
        {
            Assert.True(pair.Client.Send(1 + random.NextInt(100), random));
        }

        pair.Client.Connection.Close("bye");
        h.RunQuiet();
        var server = pair.Server;

        Assert.Equal(pair.Client.Sent, server.Received);
        Assert.Equal(["bye"], server.CloseReasons);
        Assert.Empty(pair.Client.CloseReasons);
        Assert.Equal("bye", server.Connection.CloseReason);
        Assert.Equal("bye", pair.Client.Connection.CloseReason);
        Assert.True(server.ChunkArrivalTicks.Max() <= h.World.NowTicks);
        Assert.False(pair.Client.Connection.IsOpen);
        Assert.False(server.Connection.IsOpen);
        Assert.False(pair.Client.Connection.Send([1]));
        Assert.False(server.Connection.Send([1]));
        Assert.Equal(1, h.Counters.ConnectionsClosed);
        Assert.Equal(0, h.Counters.ConnectionResets);
        Assert.Empty(h.Network.OpenConnections);
        h.AssertNoBytesInFlight();
    }

    [Fact]
    public void GracefulClose_ArrivesAfterTheLastByte_NeverBeforeIt()
    {
        // The close must travel behind the data even when the data's path is slower than a fresh latency draw.
        var h = new NetworkHarness(seed: 4, new PathOptions { Latency = LatencyModel.Fixed(TimeSpan.FromMilliseconds(10)), SplitProbability = 0, RetransmitDelay = TimeSpan.FromSeconds(1), LossProbability = 1 });
        h.Listen("server");
        var pair = h.Connect("client", "server");
        long closedAtTicks = -1;
        h.RunQuiet();
        pair.Server.Connection.Closed = _ => closedAtTicks = h.World.NowTicks;
        Assert.True(pair.Client.Send([1, 2, 3]));
        pair.Client.Connection.Close("done");
        h.RunQuiet();

        Assert.Equal([1, 2, 3], pair.Server.Received);
        Assert.True(closedAtTicks >= pair.Server.ChunkArrivalTicks.Last(), "the close overtook the data");
    }

    [Fact]
    public void Close_WithBytesInFlightTowardsTheClosingEnd_DiscardsThemAndLeaksNothing()
    {
        var h = new NetworkHarness(seed: 5, new PathOptions { Latency = LatencyModel.Fixed(TimeSpan.FromMilliseconds(10)) });
        h.Listen("server");
        var pair = h.Connect("client", "server");
        h.RunQuiet();
        Assert.True(pair.Server.Send(new byte[500]));
        pair.Client.Connection.Close("leaving");
        h.RunQuiet();

        Assert.Empty(pair.Client.Received);
        Assert.Equal(["leaving"], pair.Server.CloseReasons);
        Assert.Equal(0, pair.Server.Connection.QueuedBytes);
        Assert.Equal(500, h.Counters.StreamBytesDiscarded);
        Assert.Empty(h.Network.OpenConnections);
        h.AssertNoBytesInFlight();
    }

    [Fact]
    public void BothEndsCloseAtOnce_NeitherHearsAClose_AndBothAreGone()
    {
        var h = new NetworkHarness(seed: 6, new PathOptions { Latency = LatencyModel.Fixed(TimeSpan.FromMilliseconds(10)) });
        h.Listen("server");
        var pair = h.Connect("client", "server");
        h.RunQuiet();
        pair.Client.Connection.Close("a");
        pair.Server.Connection.Close("b");
        h.RunQuiet();

        Assert.Empty(pair.Client.CloseReasons);
        Assert.Empty(pair.Server.CloseReasons);
        Assert.Equal(2, h.Counters.ConnectionsClosed);
        Assert.Empty(h.Network.OpenConnections);
        h.AssertNoBytesInFlight();
    }

    [Fact]
    public void ResetEndpoint_ResetsEveryConnectionOfTheEndpoint_EachEndClosedOnce()
    {
        var h = new NetworkHarness(seed: 7, new PathOptions { Latency = LatencyModel.Fixed(TimeSpan.FromMilliseconds(10)) });
        h.Listen("server");
        h.Listen("other");
        var toServer = Enumerable.Range(0, 3).Select(i => h.Connect($"client{i}", "server")).ToList();
        var toOther = h.Connect("client0", "other");
        h.RunQuiet();
        foreach (var pair in toServer)
        {
            Assert.True(pair.Client.Send(new byte[100]));
            Assert.True(pair.Server.Send(new byte[100]));
        }

        h.Network.ResetEndpoint("server", "crash");
        h.RunQuiet();

        foreach (var pair in toServer)
        {
            Assert.Equal(["crash"], pair.Client.CloseReasons);
            Assert.Equal(["crash"], pair.Server.CloseReasons);
            Assert.Empty(pair.Server.Received);
            Assert.False(pair.Client.Connection.Send([1]));
        }

        Assert.Empty(toOther.Client.CloseReasons);
        Assert.True(toOther.Client.Send([1, 2]));
        h.RunQuiet();
        Assert.Equal([1, 2], toOther.Server.Received);
        Assert.Equal(3, h.Counters.ConnectionResets);
        Assert.Equal(3, h.TraceCount("net.reset"));
        Assert.Equal([toOther.Client.Connection.ConnectionId, toOther.Server.Connection.ConnectionId], h.Network.OpenConnections.Select(c => c.ConnectionId));
        Assert.Equal(0, h.OutstandingBuffers);
    }

    [Fact]
    public void ResetTwice_CountsOneReset_AndEachEndHearsItOnce()
    {
        var h = new NetworkHarness(seed: 8);
        h.Listen("server");
        var pair = h.Connect("client", "server");
        h.RunQuiet();
        pair.Client.Connection.Reset("first");
        pair.Server.Connection.Reset("second");
        pair.Client.Connection.Reset("third");
        h.RunQuiet();

        Assert.Equal(["first"], pair.Client.CloseReasons);
        Assert.Equal(["first"], pair.Server.CloseReasons);
        Assert.Equal(1, h.Counters.ConnectionResets);
        Assert.Equal(1, h.TraceCount("net.reset"));
    }

    [Fact]
    public void EmptySend_IsAcceptedAndCarriesNothing()
    {
        var h = new NetworkHarness(seed: 10);
        h.Listen("server");
        var pair = h.Connect("client", "server");
        h.RunQuiet();

        Assert.True(pair.Client.Send([]));
        h.RunQuiet();

        Assert.Empty(pair.Server.ChunkLengths);
        Assert.Equal(0, h.Counters.StreamSegmentsSent);
        Assert.Equal(0, h.TraceCount("net.send"));
    }

    [Fact]
    public void SendsMadeBeforeTheAccept_ArriveAfterIt_AndThePeerCanAnswerAtOnce()
    {
        var h = new NetworkHarness(seed: 9, new PathOptions { Latency = LatencyModel.Uniform(TimeSpan.FromMilliseconds(1), TimeSpan.FromMilliseconds(20)) });
        h.Network.Listen("server", connection =>
        {
            // The server answers inside its accept callback, before its data handler is even set.
            Assert.True(connection.Send([42]));
            connection.Received = data => connection.Send(data);
        });
        var client = new StreamProbe(h.Network.Connect("client", "server"), h.World);
        Assert.True(client.Send([1, 2, 3]));
        Assert.True(client.Send([4]));
        h.RunQuiet();

        Assert.Equal([42, 1, 2, 3, 4], client.Received);
    }

    [Fact]
    public void SendsIntoTheDirectionBeingDelivered_DuringTheDelivery_NeitherMoveNorCorruptTheBytesBeingRead()
    {
        var h = new NetworkHarness(seed: 12);
        h.Listen("server");
        var pair = h.Connect("client", "server");
        h.RunQuiet();

        // While the server reads the third chunk (its bytes no longer at the start of the direction's store), its peer
        // sends into the same direction: enough to make the store compact, then grow. The chunk being read must stay
        // intact and every byte must still arrive once, in order.
        var random = new Xoshiro256StarStar(3);
        var seen = new List<byte[]>();
        pair.Server.Connection.Received = data =>
        {
            var before = data.ToArray();
            if (seen.Count == 2)
            {
                foreach (var length in new[] { 285, 30, 30, 400, 1000 })
                {
                    Assert.True(pair.Client.Send(length, random));
                    Assert.Equal(before, data.ToArray());
                }
            }

            seen.Add(before);
        };
        Assert.True(pair.Client.Send(300, random));
        Assert.True(pair.Client.Send(10, random));
        Assert.True(pair.Client.Send(10, random));
        h.RunQuiet();

        Assert.Equal(8, seen.Count);
        Assert.Equal(pair.Client.Sent, seen.SelectMany(chunk => chunk));
        h.AssertNoBytesInFlight();
    }

    [Fact]
    public void AResetDuringADelivery_DiscardsWhatIsQueuedBehindIt_AndTheChunkBeingReadStaysIntact()
    {
        var h = new NetworkHarness(seed: 13);
        h.Listen("server");
        var pair = h.Connect("client", "server");
        h.RunQuiet();

        var random = new Xoshiro256StarStar(4);
        var first = StreamProbe.Bytes(64, random);
        var seen = new List<byte[]>();
        pair.Server.Connection.Received = data =>
        {
            var before = data.ToArray();
            pair.Server.Connection.Reset("reader gave up");

            // The reset dropped what was queued behind this chunk; a send to the broken end is refused.
            Assert.False(pair.Client.Send(32, random));
            Assert.Equal(before, data.ToArray());
            seen.Add(before);
        };
        Assert.True(pair.Client.Send(first));
        Assert.True(pair.Client.Send(48, random));
        h.RunQuiet();

        Assert.Equal([first], seen);
        Assert.Equal(48, h.Counters.StreamBytesDiscarded);
        h.AssertNoBytesInFlight();
    }
}
