using PlayHouse.Fixtures.Flawed.Rtt;
using PlayHouse.Simulation.Clients;
using PlayHouse.Simulation.Metrics;

namespace PlayHouse.Simulation.Tests.Clients;

/// <summary>
/// Makes bug B1 visible: the deliberately flawed FIFO tracker, fed the same exchanges as <see cref="RttTracker"/>,
/// records wrong round trips and keeps growing, which is what the checkers must catch.
/// </summary>
public sealed class FifoRttTrackerTests
{
    private const long LatencyTicks = 100;
    private const long SendIntervalTicks = 10;

    private static LatencyHistogram ExactHistogram() => new(highestTrackableValue: 1_000_000, significantDigits: 3);

    [Fact]
    public void OneDroppedReply_ShiftsEveryLaterFifoSample_WhileRttTrackerMatchesGroundTruth()
    {
        var scenario = new ExchangeScenario
        {
            RequestCount = 50,
            SendIntervalTicks = SendIntervalTicks,
            LatencyTicksOf = _ => LatencyTicks,
            IsDropped = request => request == 5,
        };
        var fifo = new FifoRttTracker(ExactHistogram());
        var correct = new RttTracker(inFlightWindow: 16, ExactHistogram());

        var fifoResult = scenario.Run(fifo);
        var correctResult = scenario.Run(correct);

        // Before the drop the FIFO pairs correctly; after it, each reply takes the previous request's timestamp.
        Assert.All(fifoResult.Replies.Where(reply => reply.Request < 5), reply => Assert.Equal(reply.TruthTicks, reply.RttTicks));
        Assert.All(fifoResult.Replies.Where(reply => reply.Request > 5), reply => Assert.Equal(reply.TruthTicks + SendIntervalTicks, reply.RttTicks));
        Assert.All(correctResult.Replies, reply => Assert.Equal(reply.TruthTicks, reply.RttTicks));

        // The dropped request's timestamp stays queued forever; the correct tracker released it as lost.
        Assert.Equal(1, fifo.InFlight);
        Assert.Equal(0, fifo.ExpireOlderThan(nowTicks: long.MaxValue, TimeSpan.Zero));
        Assert.Equal(1, fifo.InFlight);
        Assert.Equal(0, fifo.Lost);
        Assert.Equal(0, correct.InFlight);
        Assert.Equal(1, correct.Lost);
    }

    [Fact]
    public void RepeatedLoss_GrowsTheFifoWithoutBound_WhileRttTrackerStaysWithinItsWindow()
    {
        var fifoLengths = new List<int>();
        foreach (var requestCount in new[] { 1_000, 2_000, 4_000 })
        {
            var scenario = new ExchangeScenario
            {
                RequestCount = requestCount,
                SendIntervalTicks = SendIntervalTicks,
                LatencyTicksOf = _ => LatencyTicks,
                IsDropped = request => request % 10 == 3,
            };
            var fifoHistogram = ExactHistogram();
            var fifo = new FifoRttTracker(fifoHistogram);
            fifo.BeginMeasuredPhase();
            var correctHistogram = ExactHistogram();
            var correct = new RttTracker(inFlightWindow: 16, correctHistogram);
            correct.BeginMeasuredPhase();

            scenario.Run(fifo);
            scenario.Run(correct);

            // One orphaned timestamp per lost reply, forever: the queue length is the loss count.
            Assert.Equal(requestCount / 10, fifo.InFlight);
            Assert.True(fifo.InFlightHighWater > correct.InFlightWindow);
            fifoLengths.Add(fifo.InFlight);
            Assert.Equal(0, correct.InFlight);
            Assert.InRange(correct.InFlightHighWater, 1, correct.InFlightWindow);
            Assert.Equal(requestCount / 10, correct.Lost);

            // Every true round trip is LatencyTicks; the FIFO's samples drift further off with every loss.
            Assert.Equal(LatencyTicks, correctHistogram.Min);
            Assert.Equal(LatencyTicks, correctHistogram.Max);
            Assert.True(fifoHistogram.Max >= LatencyTicks + ((requestCount / 10) - 1) * SendIntervalTicks);
        }

        Assert.Equal([100, 200, 400], fifoLengths);
    }

    [Fact]
    public void DuplicatedReply_IsTakenByTheFifoAsTheNextRequestsReply()
    {
        var fifo = new FifoRttTracker(ExactHistogram());
        Assert.True(fifo.TryBeginRequest(1, sentTicks: 100));
        Assert.True(fifo.TryBeginRequest(2, sentTicks: 110));

        Assert.Equal(RttOutcome.Matched, fifo.OnReply(1, receivedTicks: 150, out var firstRttTicks));
        Assert.Equal(RttOutcome.Matched, fifo.OnReply(1, receivedTicks: 155, out var duplicateRttTicks));
        Assert.Equal(RttOutcome.Unknown, fifo.OnReply(2, receivedTicks: 170));

        Assert.Equal(50, firstRttTicks);
        // The copy of reply 1 consumed request 2's timestamp; request 2's real reply then matched nothing.
        Assert.Equal(45, duplicateRttTicks);
        Assert.Equal(0, fifo.Duplicate);
        Assert.Equal(1, fifo.Unknown);
    }

    [Fact]
    public void WarmUpRepliesArrivingAfterTheSwitch_AreCountedAsMeasuredByTheFifo()
    {
        var fifoHistogram = ExactHistogram();
        var fifo = new FifoRttTracker(fifoHistogram);
        var correctHistogram = ExactHistogram();
        IRttTracker correct = new RttTracker(inFlightWindow: 8, correctHistogram);
        foreach (var tracker in new[] { fifo, correct })
        {
            for (ushort seq = 0; seq < 3; seq++)
            {
                Assert.True(tracker.TryBeginRequest(seq, sentTicks: seq * 10));
            }

            tracker.BeginMeasuredPhase();
            Assert.True(tracker.TryBeginRequest(3, sentTicks: 30));
            for (ushort seq = 0; seq < 4; seq++)
            {
                Assert.Equal(RttOutcome.Matched, tracker.OnReply(seq, receivedTicks: 1_000));
            }
        }

        Assert.Equal(4, fifo.MeasuredMatched);
        Assert.Equal(4, fifoHistogram.Count);
        Assert.Equal(1, correct.MeasuredMatched);
        Assert.Equal(1, correctHistogram.Count);
    }
}
