using PlayHouse.Core.Codec;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;
using PlayHouse.Fixtures.Flawed.Codec;
using PlayHouse.Fixtures.Flawed.Sessions;
using PlayHouse.Fixtures.Scenarios;
using PlayHouse.Simulation.Checkers;
using PlayHouse.Simulation.Cluster;
using PlayHouse.Simulation.Network;
using PlayHouse.Simulation.Runs;
using Shouldly;

namespace PlayHouse.Properties.Tests.Zoo;

/// <summary>
/// The mechanisms of the payload-ownership and session twins on their own, beside the zoo's search: each flawed part
/// does what PlayHouse's did, and the correct part in the same situation does not, so what the zoo catches is the flaw.
/// </summary>
public sealed class TwinMechanismTests
{
    [Fact]
    public void CharCountingEncoder_WithAnAsciiMsgId_WritesTheSameFrameAsTheCorrectEncoder()
    {
        var correct = Encode("EchoReply", (id, n) => ServerFrameEncoder.GetEncodedLength(id, n), (d, id, p) => ServerFrameEncoder.Encode(d, id, 3, 9, 0, p));
        var flawed = Encode("EchoReply", (id, n) => CharCountingServerFrameEncoder.GetEncodedLength(id, n), (d, id, p) => CharCountingServerFrameEncoder.Encode(d, id, 3, 9, 0, p));

        // Counting chars is right for ASCII: the flaw hides until a msg id has a character of more than one byte.
        flawed.ShouldBe(correct);
    }

    [Fact]
    public void CharCountingEncoder_WithANonAsciiMsgId_Throws_WhereTheCorrectEncoderWritesItWhole()
    {
        var correct = Encode("에코응답", (id, n) => ServerFrameEncoder.GetEncodedLength(id, n), (d, id, p) => ServerFrameEncoder.Encode(d, id, 3, 9, 0, p));

        DecodeMsgId(correct).ShouldBe("에코응답");
        Should.Throw<ArgumentException>(() => Encode("에코응답", (id, n) => CharCountingServerFrameEncoder.GetEncodedLength(id, n), (d, id, p) => CharCountingServerFrameEncoder.Encode(d, id, 3, 9, 0, p)));
    }

    [Fact]
    public void CharCountingEncoder_WithAMsgIdOver255Bytes_WrapsTheLengthByte_WhereTheCorrectEncoderRefusesIt()
    {
        var longId = new string('m', 300);

        Should.Throw<ArgumentException>(() => ServerFrameEncoder.GetEncodedLength(longId, 8)).Message.ShouldContain("255");
        var flawed = Encode(longId, (id, n) => CharCountingServerFrameEncoder.GetEncodedLength(id, n), (d, id, p) => CharCountingServerFrameEncoder.Encode(d, id, 3, 9, 0, p));

        // The length byte says 300 mod 256 = 44: the decoder takes a 44-char msg id and reads the fixed fields from the
        // rest of its text (here an original size of 0x6D6D6D6D, a compressed frame that is not one).
        flawed[WireProtocol.LengthPrefixBytes].ShouldBe((byte)44);
        Should.Throw<FrameDecodeException>(() => DecodeMsgId(flawed)).Message.ShouldContain($"msg id '{new string('m', 44)}'");
    }

    [Fact]
    public void UnguardedCloseSession_WhenSendAndReceiveFailTogether_ReturnsItsReceiveBufferTwice()
    {
        var faults = new FaultRecorder();
        using var cluster = new SimClusterBuilder(4)
            .WithPlayServers(1)
            .WithApiServers(0)
            .WithClients(1)
            .WithServerOptions(new ServerOptions { DefaultStageType = WorkloadScenario.StageType })
            .WithStage(WorkloadScenario.StageType, link => new PlayHouse.Fixtures.Workload.WorkloadStage(link, new()), link => new PlayHouse.Fixtures.Workload.WorkloadActor(link))
            .WithObserver(_ => faults)
            .WithSessionConnections((connection, server, msgIds, statistics, sendQueue, transport) => _ = new UnguardedCloseSession(connection, server, msgIds, statistics, sendQueue, transport))
            .Build();
        var play = cluster.PlayServers.Single();
        var client = cluster.Clients[0];
        cluster.Network.SetPath(play.ClientEndpoint, client.Endpoint, new PathOptions { LossProbability = 1, StreamLoss = StreamLossMode.Reset });
        client.Connect(play.ClientEndpoint);
        client.Request("AuthenticateRequest", 1, BitConverter.GetBytes(7L), TimeSpan.FromSeconds(1), (_, _) => { });

        cluster.World.RunUntilQuiet(TimeSpan.FromMinutes(1).Ticks);

        // The standard session in the same situation returns the buffer once (SessionConnectionTests).
        var fault = faults.Faults.ShouldHaveSingleItem();
        fault.Pool.ShouldBe("play-1");
        fault.Fault.Message.ShouldContain("twice");
        fault.Fault.Message.ShouldContain("'session-receive-buffer'");
    }

    [Fact]
    public void DrainScenario_WithTheCorrectCore_StopsPlay1OnlyAfterItsAwaitingHandlers_AndWithB16gCutsOneOff()
    {
        var options = ScenarioCatalog.Create("drain").Defaults with { Clients = 2, RequestsPerClient = 4 };
        var correctTrace = new StringWriter();
        var correct = SimRunner.Run(ScenarioCatalog.Create("drain"), 3, options, new RunSettings { TraceWriter = correctTrace });
        var flawed = SimRunner.Run(ScenarioCatalog.Create("drain"), 3, options with { Flaws = "B16g" });

        correct.Passed.ShouldBeTrue(correct.Failure);
        correctTrace.ToString().ShouldContain("scenario.stop");
        flawed.ExitCode.ShouldBe(RunExitCodes.InvariantViolation);
        flawed.Failure.ShouldNotBeNull().ShouldStartWith(ShutdownDrainChecker.CheckerName);
    }

    [Fact]
    public void ReceiveFaultScenario_WithTheCorrectSession_ClosesTheFaultedSessionOnly_AndWithB16cTheRunCrashes()
    {
        var options = ScenarioCatalog.Create("receive-fault").Defaults with { Clients = 3, RequestsPerClient = 5 };
        var correctTrace = new StringWriter();
        var correct = SimRunner.Run(ScenarioCatalog.Create("receive-fault"), 8, options, new RunSettings { TraceWriter = correctTrace });
        var flawed = SimRunner.Run(ScenarioCatalog.Create("receive-fault"), 8, options with { Flaws = "B16c" });

        correct.Passed.ShouldBeTrue(correct.Failure);
        correctTrace.ToString().ShouldContain("the receive callback threw InvalidOperationException: injected fault");
        correct.RequestsSucceeded.ShouldBe(15);
        flawed.ExitCode.ShouldBe(RunExitCodes.Crash);
        flawed.Failure.ShouldNotBeNull().ShouldContain("injected fault");
    }

    private static byte[] Encode(string msgId, Func<string, int, int> length, Func<byte[], string, byte[], int> encode)
    {
        byte[] payload = [1, 2, 3, 4, 5, 6, 7, 8];
        var frame = new byte[length(msgId, payload.Length)];
        var written = encode(frame, msgId, payload);
        return frame[..written];
    }

    private static string DecodeMsgId(byte[] frame)
    {
        var pool = new MessagePool();
        using var decoder = new ServerFrameDecoder(pool);
        ReadOnlySpan<byte> input = frame;
        decoder.TryDecode(ref input, out var decoded).ShouldBeTrue();
        using (decoded)
        {
            return decoded.MsgId;
        }
    }

    /// <summary>Hears the pools' ownership faults, as the checkers do.</summary>
    private sealed class FaultRecorder : RuntimeObserver, IPoolFaultAware
    {
        public List<(string Pool, PoolOwnershipException Fault)> Faults { get; } = [];

        public void OnPoolOwnershipFault(string poolName, PoolOwnershipException fault) => Faults.Add((poolName, fault));
    }
}
