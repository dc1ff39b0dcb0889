using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;
using PlayHouse.Core.Seams;

namespace PlayHouse.Core.Tests.Runtime;

/// <summary>
/// Cycles of awaiting stages of any length, in one node and across nodes, fail fast with RequestCycle at the request
/// that would close them (B9); a chain that is not a cycle runs to the end.
/// </summary>
public sealed class RequestCycleTests
{
    private const string SecondPlayNode = "play-2";
    private static readonly TimeSpan Timeout = TimeSpan.FromSeconds(30);

    [Fact]
    public void ThreeStageCycle_InOneNode_FailsFastAtTheClosingRequest_AndEveryHandlerFinishes()
    {
        using var h = new RuntimeHarness();
        var outcomes = Ring(h, [(RuntimeHarness.PlayNode, 1), (RuntimeHarness.PlayNode, 2), (RuntimeHarness.PlayNode, 3)], closeTheRing: true);

        h.Api.SendToStage(RuntimeHarness.PlayNode, 1, "Start", Payload.Empty);
        h.Pump();

        // Stage 3's request back to stage 1 closes the cycle; its error travels back along the chain.
        Assert.Equal([(3L, ErrorCodes.RequestCycle), (2L, ErrorCodes.RequestCycle), (1L, ErrorCodes.RequestCycle)], outcomes);
        Assert.Equal(1, h.Play.Counters.CycleRequestsRefused);
        Assert.Equal(0, h.Play.Counters.RequestTimeouts);
        Assert.Equal(0, h.Clock.NowTicks);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void ThreeStageCycle_OfIndependentlyStartedHandlers_InOneNode_FailsFastAndEveryHandlerFinishes()
    {
        // Three handlers, each started by its own message, each await the next stage: no request carries a chain that
        // names the others, so only the stages' own waits show the cycle.
        using var h = new RuntimeHarness();
        var outcomes = new List<(long StageId, ushort ErrorCode)>();
        for (long stageId = 1; stageId <= 3; stageId++)
        {
            var create = h.Api.CreateStage(RuntimeHarness.PlayNode, RuntimeHarness.StageType, stageId, "create", Payload.Empty);
            h.Pump();
            Assert.True(RuntimeHarness.Completed(create).IsSuccess);
            var next = (stageId % 3) + 1;
            h.Stages[stageId].OnServer = async (s, packet) =>
            {
                if (packet.MsgId != "Start")
                {
                    s.Link.Reply(packet, ErrorCodes.Success);
                    return;
                }

                using var response = await s.Link.RequestToStage(RuntimeHarness.PlayNode, next, "Ask", Payload.Empty, Timeout);
                outcomes.Add((s.Link.StageId, response.ErrorCode));
            };
        }

        for (long stageId = 1; stageId <= 3; stageId++)
        {
            h.Api.SendToStage(RuntimeHarness.PlayNode, stageId, "Start", Payload.Empty);
        }

        h.Pump();

        // Stage 3's request to stage 1 closes the cycle and is refused at once; that frees stage 3 to answer stage 2,
        // which then answers stage 1.
        Assert.Equal([(3L, ErrorCodes.RequestCycle), (2L, ErrorCodes.Success), (1L, ErrorCodes.Success)], outcomes);
        Assert.Equal(1, h.Play.Counters.CycleRequestsRefused);
        Assert.Equal(0, h.Play.Counters.RequestTimeouts);
        Assert.Equal(0, h.Clock.NowTicks);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void IndependentWaitsThatDoNotCloseACycle_AreNotRefused()
    {
        // Stages 1 and 2 await stage 3, which answers: two waits on one stage are not a cycle.
        using var h = new RuntimeHarness();
        var outcomes = new List<(long StageId, ushort ErrorCode)>();
        for (long stageId = 1; stageId <= 3; stageId++)
        {
            var create = h.Api.CreateStage(RuntimeHarness.PlayNode, RuntimeHarness.StageType, stageId, "create", Payload.Empty);
            h.Pump();
            Assert.True(RuntimeHarness.Completed(create).IsSuccess);
            h.Stages[stageId].OnServer = async (s, packet) =>
            {
                if (packet.MsgId != "Start")
                {
                    s.Link.Reply(packet, ErrorCodes.Success);
                    return;
                }

                using var response = await s.Link.RequestToStage(RuntimeHarness.PlayNode, 3, "Ask", Payload.Empty, Timeout);
                outcomes.Add((s.Link.StageId, response.ErrorCode));
            };
        }

        h.Api.SendToStage(RuntimeHarness.PlayNode, 1, "Start", Payload.Empty);
        h.Api.SendToStage(RuntimeHarness.PlayNode, 2, "Start", Payload.Empty);
        h.Pump();

        Assert.Equal([(1L, ErrorCodes.Success), (2L, ErrorCodes.Success)], outcomes);
        Assert.Equal(0, h.Play.Counters.CycleRequestsRefused);
        Assert.Equal(0, h.Clock.NowTicks);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void FourStageCycle_InOneNode_FailsFastAtTheClosingRequest()
    {
        using var h = new RuntimeHarness();
        var outcomes = Ring(h, [(RuntimeHarness.PlayNode, 1), (RuntimeHarness.PlayNode, 2), (RuntimeHarness.PlayNode, 3), (RuntimeHarness.PlayNode, 4)], closeTheRing: true);

        h.Api.SendToStage(RuntimeHarness.PlayNode, 1, "Start", Payload.Empty);
        h.Pump();

        Assert.Equal((4L, ErrorCodes.RequestCycle), outcomes[0]);
        Assert.Equal(4, outcomes.Count);
        Assert.Equal(1, h.Play.Counters.CycleRequestsRefused);
        Assert.Equal(0, h.Clock.NowTicks);
    }

    [Fact]
    public void ChainThatIsNotACycle_IsNotRefused_AndEveryStageGetsItsReply()
    {
        using var h = new RuntimeHarness();
        var outcomes = Ring(h, [(RuntimeHarness.PlayNode, 1), (RuntimeHarness.PlayNode, 2), (RuntimeHarness.PlayNode, 3), (RuntimeHarness.PlayNode, 4)], closeTheRing: false);

        h.Api.SendToStage(RuntimeHarness.PlayNode, 1, "Start", Payload.Empty);
        h.Pump();

        // 1 -> 2 -> 3 -> 4, and 4 answers: every request in the chain succeeds.
        Assert.Equal([(3L, ErrorCodes.Success), (2L, ErrorCodes.Success), (1L, ErrorCodes.Success)], outcomes);
        Assert.Equal(0, h.Play.Counters.CycleRequestsRefused);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void RequestBackToAStageThatStoppedWaiting_IsNotACycle()
    {
        using var h = new RuntimeHarness();
        foreach (var id in new long[] { 1, 2, 3 })
        {
            h.CreateStage(id);
        }

        ushort backReply = ushort.MaxValue;
        h.Stages[1].OnServer = async (stage, packet) =>
        {
            if (packet.MsgId == "Back")
            {
                stage.Link.Reply(packet, ErrorCodes.Success);
                return;
            }

            // Gives up after one second, long before the chain comes back to it.
            using var response = await stage.Link.RequestToStage(RuntimeHarness.PlayNode, 2, "Ask", Payload.Empty, TimeSpan.FromSeconds(1));
        };
        h.Stages[2].OnServer = async (stage, packet) =>
        {
            using var response = await stage.Link.RequestToStage(RuntimeHarness.PlayNode, 3, "Ask", Payload.Empty, Timeout);
            stage.Link.Reply(packet, response.ErrorCode);
        };
        h.Stages[3].OnServer = async (stage, packet) =>
        {
            await Task.Delay(TimeSpan.FromSeconds(2), stage.Link.Time);
            using var response = await stage.Link.RequestToStage(RuntimeHarness.PlayNode, 1, "Back", Payload.Empty, Timeout);
            backReply = response.ErrorCode;
            stage.Link.Reply(packet, response.ErrorCode);
        };

        h.Api.SendToStage(RuntimeHarness.PlayNode, 1, "Start", Payload.Empty);
        h.Advance(TimeSpan.FromSeconds(3));

        // The chain names stage 1's first request, which timed out: stage 1 is free, so the request is served.
        Assert.Equal(ErrorCodes.Success, backReply);
        Assert.Equal(0, h.Play.Counters.CycleRequestsRefused);
        Assert.Equal(1, h.Play.Counters.RequestTimeouts);
    }

    [Fact]
    public void RequestFromAStageTheHandlerAwaitedEarlier_IsNotACycle_OnceThatRequestWasAnswered()
    {
        using var h = new RuntimeHarness();
        foreach (var id in new long[] { 1, 2, 3 })
        {
            h.CreateStage(id);
        }

        ushort backReply = ushort.MaxValue;
        h.Stages[1].OnServer = async (stage, packet) =>
        {
            if (packet.MsgId == "Back")
            {
                stage.Link.Reply(packet, ErrorCodes.Success);
                return;
            }

            // Stage 2 answers at once; stage 3 only after two seconds, while stage 2 asks this stage from a handler of its own.
            using var first = await stage.Link.RequestToStage(RuntimeHarness.PlayNode, 2, "Ask", Payload.Empty, Timeout);
            using var second = await stage.Link.RequestToStage(RuntimeHarness.PlayNode, 3, "Slow", Payload.Empty, Timeout);
        };
        h.Stages[2].OnServer = async (stage, packet) =>
        {
            if (packet.MsgId == "Ask")
            {
                stage.Link.Reply(packet, ErrorCodes.Success);
                return;
            }

            using var response = await stage.Link.RequestToStage(RuntimeHarness.PlayNode, 1, "Back", Payload.Empty, Timeout);
            backReply = response.ErrorCode;
        };
        h.Stages[3].OnServer = async (stage, packet) =>
        {
            await Task.Delay(TimeSpan.FromSeconds(2), stage.Link.Time);
            stage.Link.Reply(packet, ErrorCodes.Success);
        };

        h.Api.SendToStage(RuntimeHarness.PlayNode, 1, "Start", Payload.Empty);
        h.Advance(TimeSpan.FromSeconds(1));
        h.Api.SendToStage(RuntimeHarness.PlayNode, 2, "Poke", Payload.Empty);
        h.Advance(TimeSpan.FromSeconds(2));

        // Stage 1 awaits only stage 3 when stage 2 asks it: the request waits for stage 1's handler and is served.
        Assert.Equal(ErrorCodes.Success, backReply);
        Assert.Equal(0, h.Play.Counters.CycleRequestsRefused);
        Assert.Equal(0, h.Play.Counters.RequestTimeouts);
    }

    [Fact]
    public void TwoStagesOnTwoNodes_AwaitingEachOtherFromIndependentHandlers_FailFastWithoutATimeout()
    {
        using var h = new RuntimeHarness();
        using var second = AddPlayServer(h, out var secondStages);
        h.CreateStage(1);
        var created = h.Api.CreateStage(SecondPlayNode, RuntimeHarness.StageType, 2, "create", Payload.Empty);
        h.Pump();
        Assert.True(RuntimeHarness.Completed(created).IsSuccess);
        var outcomes = new List<(long StageId, ushort ErrorCode)>();
        Func<ScriptedStage, Packet, ValueTask> AskThe(string node, long stageId) => async (stage, packet) =>
        {
            if (packet.MsgId == "Ask")
            {
                stage.Link.Reply(packet, ErrorCodes.Success);
                return;
            }

            using var response = await stage.Link.RequestToStage(node, stageId, "Ask", Payload.Empty, Timeout);
            outcomes.Add((stage.Link.StageId, response.ErrorCode));
        };
        h.Stages[1].OnServer = AskThe(SecondPlayNode, 2);
        secondStages[2].OnServer = AskThe(RuntimeHarness.PlayNode, 1);

        // Neither request carries an await chain: each handler started on its own, so only the direct check sees the cycle.
        h.Api.SendToStage(RuntimeHarness.PlayNode, 1, "Start", Payload.Empty);
        h.Api.SendToStage(SecondPlayNode, 2, "Start", Payload.Empty);
        h.Pump();

        // Both handlers await when the other's request arrives, so each node refuses the request it receives.
        Assert.Equal([(1L, ErrorCodes.RequestCycle), (2L, ErrorCodes.RequestCycle)], outcomes.OrderBy(o => o.StageId));
        Assert.Equal((1L, 1L), (h.Play.Counters.CycleRequestsRefused, second.Counters.CycleRequestsRefused));
        Assert.Equal(0, h.Clock.NowTicks);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void ThreeStageCycle_AcrossTwoNodes_FailsFastAtTheClosingRequest()
    {
        using var h = new RuntimeHarness();
        using var second = AddPlayServer(h, out var secondStages);

        // play-1/1 -> play-2/2 -> play-2/3 -> play-1/1: the chain crosses the mesh twice.
        var outcomes = Ring(h, [(RuntimeHarness.PlayNode, 1), (SecondPlayNode, 2), (SecondPlayNode, 3)], closeTheRing: true, secondStages);

        h.Api.SendToStage(RuntimeHarness.PlayNode, 1, "Start", Payload.Empty);
        h.Pump();

        Assert.Equal([(3L, ErrorCodes.RequestCycle), (2L, ErrorCodes.RequestCycle), (1L, ErrorCodes.RequestCycle)], outcomes);
        Assert.Equal((1L, 0L), (h.Play.Counters.CycleRequestsRefused, second.Counters.CycleRequestsRefused));
        Assert.Equal(0, h.Play.Counters.RequestTimeouts + second.Counters.RequestTimeouts);
        Assert.Equal(0, h.Clock.NowTicks);
        h.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void FourStageCycle_AlternatingNodes_FailsFastAtTheClosingRequest()
    {
        using var h = new RuntimeHarness();
        using var second = AddPlayServer(h, out var secondStages);
        var outcomes = Ring(h, [(RuntimeHarness.PlayNode, 1), (SecondPlayNode, 2), (RuntimeHarness.PlayNode, 3), (SecondPlayNode, 4)], closeTheRing: true, secondStages);

        h.Api.SendToStage(RuntimeHarness.PlayNode, 1, "Start", Payload.Empty);
        h.Pump();

        Assert.Equal((4L, ErrorCodes.RequestCycle), outcomes[0]);
        Assert.Equal(1, h.Play.Counters.CycleRequestsRefused);
        Assert.Equal(0, h.Clock.NowTicks);
    }

    /// <summary>
    /// Creates the stages and scripts each to await a request to the next; the last awaits the first when
    /// <paramref name="closeTheRing"/>, else it answers. Each stage records (its id, the error its request got) and
    /// replies with that error, so a refusal travels back along the chain.
    /// </summary>
    private static List<(long StageId, ushort ErrorCode)> Ring(RuntimeHarness h, (string Node, long StageId)[] ring, bool closeTheRing, Dictionary<long, ScriptedStage>? secondStages = null)
    {
        var outcomes = new List<(long, ushort)>();
        for (var i = 0; i < ring.Length; i++)
        {
            var (node, stageId) = ring[i];
            var create = node == RuntimeHarness.PlayNode
                ? h.Api.CreateStage(RuntimeHarness.PlayNode, RuntimeHarness.StageType, stageId, "create", Payload.Empty)
                : h.Api.CreateStage(SecondPlayNode, RuntimeHarness.StageType, stageId, "create", Payload.Empty);
            h.Pump();
            Assert.True(RuntimeHarness.Completed(create).IsSuccess);
            var stage = node == RuntimeHarness.PlayNode ? h.Stages[stageId] : secondStages![stageId];
            var last = i == ring.Length - 1;
            var next = last ? ring[0] : ring[i + 1];
            stage.OnServer = async (s, packet) =>
            {
                if (last && !closeTheRing)
                {
                    s.Link.Reply(packet, ErrorCodes.Success);
                    return;
                }

                using var response = await s.Link.RequestToStage(next.Node, next.StageId, "Ask", Payload.Empty, Timeout);
                outcomes.Add((s.Link.StageId, response.ErrorCode));
                if (packet.IsRequest)
                {
                    s.Link.Reply(packet, response.ErrorCode);
                }
            };
        }

        return outcomes;
    }

    private static PlayServer AddPlayServer(RuntimeHarness h, out Dictionary<long, ScriptedStage> stages)
    {
        var made = new Dictionary<long, ScriptedStage>();
        stages = made;
        var seams = new NodeSeams(h.Clock, h.Executor, new Xoshiro256StarStar(7), h.Pool) { Observer = h.Events };
        var server = new PlayServer(SecondPlayNode, seams, new ServerOptions { DefaultStageType = RuntimeHarness.StageType });
        server.RegisterStage(RuntimeHarness.StageType, link => made[link.StageId] = new ScriptedStage(link), link => new ScriptedActor(link));
        h.Mesh.Join(server);
        return server;
    }
}
