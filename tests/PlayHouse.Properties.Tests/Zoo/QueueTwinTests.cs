using System.Globalization;
using PlayHouse.Fixtures.Flawed.Queues;
using PlayHouse.Fixtures.Scenarios;
using PlayHouse.Simulation;
using PlayHouse.Simulation.Checkers;
using PlayHouse.Simulation.Network;
using PlayHouse.Simulation.Runs;
using Shouldly;

namespace PlayHouse.Properties.Tests.Zoo;

/// <summary>
/// The unbounded-queue entries (B15) side by side on one overload run each: the correct part refuses (or coalesces)
/// the overload and counts it while every queue stays within its cap; its flawed twin, on the very same run, refuses
/// nothing and the queue-cap checker catches the queue past its cap.
/// </summary>
public sealed class QueueTwinTests
{
    public static TheoryData<string, string, string, string> OverloadRuns() => new()
    {
        // id, scenario, options over the scenario's defaults, the counter of the correct part's refusals
        { "B15a", "slow-consumer", "clients=1 inFlight=6 requestsPerClient=6 mailboxCapacity=4", "server:MailboxRefused" },
        { "B15b", "slow-consumer", "clients=1 inFlight=1 requestsPerClient=2", "server:TimerTicksCoalesced" },
        { "B15c", "clogged-peer", "messageBytes=8192", "server:MeshSendsRefused" },
        { "B15d", "slow-reader", "clients=1 messageBytes=8192 requestsPerClient=8", "server:ClientSendsRefused" },
        { "B15e", "push-flood", "clients=1 requestsPerClient=4", "metric:clients.pushesDropped" },
    };

    [Theory]
    [MemberData(nameof(OverloadRuns))]
    public void Overload_TheCorrectPartRefusesAndCounts_WhileItsFlawedTwinBuffersPastTheCap(string id, string scenario, string options, string refusals)
    {
        var correct = Run(scenario, options, flaws: string.Empty);
        var flawed = Run(scenario, options, flaws: id);

        correct.Passed.ShouldBeTrue(correct.Failure);
        Count(correct, refusals).ShouldBeGreaterThan(0, $"the run never overloaded the correct part ({refusals})");
        Verdict(flawed).Passed.ShouldBeFalse($"{id} escaped the queue-cap checker");
        Verdict(flawed).FirstViolationMessage.ShouldNotBeNull().ShouldContain("over");
        Count(flawed, refusals).ShouldBe(0, $"the flawed twin of {id} still refused overload ({refusals})");
    }

    [Fact]
    public void UnboundedSendQueue_BehindAClog_TakesEverySendAndDeliversAllOfItInOrderAfterTheUnclog()
    {
        // The flawed channel is a real channel, not a sink: it buffers what the link refuses and drains it in order.
        var world = new SimWorld(5);
        var network = new SimNetwork(world, world.CreateRandom(), new PathOptions { Latency = LatencyModel.Fixed(TimeSpan.FromMilliseconds(2)), SplitProbability = 0.5, QueueCapacityBytes = 1_000 });
        var received = new List<byte>();
        network.Listen("server", connection => connection.Received = data => received.AddRange(data.ToArray()));
        var client = network.Connect("client", "server");
        var queue = (UnboundedSendQueue)UnboundedSendQueue.Factory(network, client, 100);
        network.Clog("client", "server");
        var sent = Enumerable.Range(0, 5_000).Select(i => (byte)i).ToArray();

        for (var i = 0; i < sent.Length; i += 250)
        {
            queue.TrySend(sent.AsSpan(i, 250)).ShouldBeTrue();
        }

        queue.QueuedBytes.ShouldBe(sent.Length);
        client.QueuedBytes.ShouldBeLessThanOrEqualTo(1_000);
        world.RunUntilQuiet(world.NowTicks + TimeSpan.FromMilliseconds(50).Ticks);
        received.ShouldBeEmpty();

        network.Unclog("client", "server");
        world.RunUntilQuiet(TimeSpan.FromMinutes(1).Ticks);
        received.ShouldBe(sent);
        queue.QueuedBytes.ShouldBe(0);
    }

    private static SimReport Run(string scenario, string options, string flaws)
    {
        var run = ScenarioCatalog.Create(scenario);
        var pairs = options.Split(' ', StringSplitOptions.RemoveEmptyEntries).Select(p => p.Split('=')).Select(p => new KeyValuePair<string, string>(p[0], p[1]));
        return SimRunner.Run(run, 11, run.Defaults.With(pairs) with { Flaws = flaws });
    }

    private static CheckerVerdict Verdict(SimReport report) => report.Verdicts.Single(v => v.CheckerName == QueueCapChecker.CheckerName);

    private static long Count(SimReport report, string counter)
    {
        var (source, name) = (counter[..counter.IndexOf(':', StringComparison.Ordinal)], counter[(counter.IndexOf(':', StringComparison.Ordinal) + 1)..]);
        return source == "server"
            ? report.ServerCounters.FirstOrDefault(c => c.Key == name).Value
            : long.Parse(report.ScenarioMetrics.Single(m => m.Key == name).Value, CultureInfo.InvariantCulture);
    }
}
