using Microsoft.Extensions.Time.Testing;
using PlayHouse.Fixtures.Workload;
using PlayHouse.Simulation.Checkers;
using PlayHouse.Simulation.Clients;

namespace PlayHouse.Scenarios.Tests;

/// <summary>
/// The handles of the workload's own checkers: the <see cref="HandlerStage"/> of
/// <see cref="WorkloadHandlerChecker"/> and the registration <see cref="RttTrackerChecker.Tracked"/>. Workload
/// stages and drivers report through them, so they must judge as the calls by id do and share their state.
/// </summary>
public sealed class WorkloadCheckerHandleTests
{
    private const long Millisecond = TimeSpan.TicksPerMillisecond;

    // Timestamps start at 0, as the simulated world's do.
    private readonly CheckerContext _context = new(new FakeTimeProvider(DateTimeOffset.MinValue));

    // ---- WorkloadHandlerChecker.ForStage ----

    [Fact]
    public void WorkloadHandlerHandle_SecondHandlerStartsWhileOneIsInProgress_ReportsTheSameMessageAsTheIdPath()
    {
        // Arrange
        var byId = new WorkloadHandlerChecker(_context);
        var byHandle = new WorkloadHandlerChecker(_context);
        var stage = byHandle.ForStage("play-1", 3);

        // Act
        byId.Entered("play-1", 3, "ClientMessage 'Chat'");
        byId.Entered("play-1", 3, "ReplyCallback 'Lookup'");
        byHandle.Entered(stage, "ClientMessage 'Chat'");
        byHandle.Entered(stage, "ReplyCallback 'Lookup'");

        // Assert
        var violation = Assert.Single(byHandle.Violations);
        Assert.Equal("stage play-1/3: handler ReplyCallback 'Lookup' started while ClientMessage 'Chat' was still in progress (2 handlers in progress at once)", violation.Message);
        Assert.Equal(Assert.Single(byId.Violations).Message, violation.Message);
        Assert.Equal(2, byHandle.HighWater);
        Assert.False(byHandle.Verdict.Passed);
    }

    [Fact]
    public void WorkloadHandlerHandle_CompletionWithoutStart_IsReported()
    {
        var checker = new WorkloadHandlerChecker(_context);
        var stage = checker.ForStage("play-1", 3);

        checker.Exited(stage);

        Assert.Equal("stage play-1/3: a handler completed while none was in progress", Assert.Single(checker.Violations).Message);
    }

    [Fact]
    public void WorkloadHandlerIdPathThenHandle_HandlerStartedByIdStillInProgress_IsCaughtByTheHandle()
    {
        // Arrange: the id path starts a handler; the handle is taken afterwards.
        var checker = new WorkloadHandlerChecker(_context);
        checker.Entered("play-1", 3, "Timer");
        var stage = checker.ForStage("play-1", 3);

        // Act
        checker.Entered(stage, "ClientMessage 'Chat'");

        // Assert
        Assert.Equal("stage play-1/3: handler ClientMessage 'Chat' started while Timer was still in progress (2 handlers in progress at once)", Assert.Single(checker.Violations).Message);
        Assert.Same(stage, checker.ForStage("play-1", 3));
        Assert.NotSame(stage, checker.ForStage("play-1", 4));
        Assert.NotSame(stage, checker.ForStage("play-2", 3));
    }

    [Fact]
    public void WorkloadHandlerHandleThenIdPath_HandlerCompletedOnBothPaths_IsCaught()
    {
        // Arrange
        var checker = new WorkloadHandlerChecker(_context);
        var stage = checker.ForStage("play-1", 3);
        checker.Entered(stage, "ClientMessage 'Chat'");

        // Act: the id path completes it, and the handle completes it again.
        checker.Exited("play-1", 3);
        checker.Exited(stage);

        // Assert
        Assert.Equal("stage play-1/3: a handler completed while none was in progress", Assert.Single(checker.Violations).Message);
    }

    [Fact]
    public async Task WorkloadHandlerHandle_TrackedHandlerStillAwaiting_CatchesASecondHandlerUntilItsWorkCompletes()
    {
        // Arrange: a handler whose work awaits something that has not completed yet.
        var checker = new WorkloadHandlerChecker(_context);
        var stage = checker.ForStage("play-1", 3);
        var pending = new TaskCompletionSource();
        checker.Entered(stage, "ClientMessage 'Lookup'");
        var tracked = checker.Track(stage, new ValueTask(pending.Task));

        // Act: a reply callback starts while the first handler is still awaiting, and ends; then the work completes.
        checker.Entered("play-1", 3, "ReplyCallback 'Lookup'");
        _ = checker.Track(stage, ValueTask.CompletedTask);
        pending.SetResult();
        await tracked;
        checker.Entered(stage, "ClientMessage 'Chat'");
        checker.Exited(stage);
        checker.CheckQuiescent();

        // Assert
        Assert.Equal(
            "stage play-1/3: handler ReplyCallback 'Lookup' started while ClientMessage 'Lookup' was still in progress (2 handlers in progress at once)",
            Assert.Single(checker.Violations).Message);
    }

    [Fact]
    public void WorkloadHandlerHandle_NodeCrash_ForgetsOnlyThatNodesHandlersAndTheHandleStaysLive()
    {
        // Arrange: handlers in progress on play-1 (through a handle) and on play-2 (by id).
        var checker = new WorkloadHandlerChecker(_context);
        var stage = checker.ForStage("play-1", 3);
        checker.Entered(stage, "ClientMessage 'Chat'");
        checker.Entered("play-2", 3, "Timer");

        // Act: play-1 crashes and restarts; its new stage object takes the handle again and runs one handler.
        checker.OnNodeCrashed("play-1");
        var restarted = checker.ForStage("play-1", 3);
        checker.Entered(restarted, "ClientMessage 'Chat'");
        checker.Exited(stage);
        checker.CheckQuiescent();

        // Assert: the crash forgot play-1's handler (no false alarm), not play-2's.
        Assert.Same(stage, restarted);
        Assert.Equal("stage play-2/3: handler Timer still in progress at quiescence", Assert.Single(checker.Violations).Message);
    }

    [Fact]
    public void WorkloadHandlerHandles_HandlersOneAtATimeOnEachStage_Pass()
    {
        // Arrange
        var checker = new WorkloadHandlerChecker(_context);
        var stages = new[] { checker.ForStage("play-1", 3), checker.ForStage("play-1", 4), checker.ForStage("play-2", 3) };

        // Act: stages overlap each other, never themselves; both paths used on each.
        for (var turn = 0; turn < 3; turn++)
        {
            foreach (var stage in stages)
            {
                checker.Entered(stage, "ClientMessage 'Chat'");
            }

            foreach (var stage in stages)
            {
                if (turn % 2 == 0)
                {
                    checker.Exited(stage);
                }
                else
                {
                    checker.Exited(stage.NodeId, stage.StageId);
                }
            }
        }

        checker.CheckQuiescent();

        // Assert
        Assert.False(checker.HasViolations, checker.FirstViolation?.Message);
        Assert.Equal(1, checker.HighWater);
    }

    // ---- RttTrackerChecker.Register ----

    [Fact]
    public void RttRegistration_TrackerOverItsWindow_ReportsTheSameMessageAsTheIdPathOnce()
    {
        // Arrange
        var byId = new RttTrackerChecker(_context);
        var byRegistration = new RttTrackerChecker(_context);
        var tracker = new StubTracker { InFlight = 3 };
        byId.Register(5, tracker, window: 2);
        var tracked = byRegistration.Register(5, tracker, window: 2);

        // Act: both paths report a begin over the window on the registration checker.
        byId.OnBegin(5);
        byRegistration.OnBegin(tracked);
        byRegistration.OnBegin(5);
        byRegistration.OnBegin(tracked);

        // Assert
        var violation = Assert.Single(byRegistration.Violations);
        Assert.Equal("client 5: the RTT tracker holds 3 requests, over its in-flight window of 2", violation.Message);
        Assert.Equal(Assert.Single(byId.Violations).Message, violation.Message);
    }

    [Fact]
    public void RttRegistration_RepliesJudgedWrongly_ReportTheSameMessagesAsTheIdPath()
    {
        // Arrange
        var byId = new RttTrackerChecker(_context);
        var byRegistration = new RttTrackerChecker(_context);
        byId.Register(5, new StubTracker(), 4);
        var tracked = byRegistration.Register(5, new StubTracker(), 4);

        // Act: a match with the wrong round trip, a match of a request no longer in flight, a reply in flight not matched.
        byId.OnReply(5, 7, RttOutcome.Matched, 12 * Millisecond, 30 * Millisecond, truthMeasured: true);
        byId.OnReply(5, 8, RttOutcome.Matched, 5 * Millisecond, null, truthMeasured: false);
        byId.OnReply(5, 9, RttOutcome.Late, 0, 40 * Millisecond, truthMeasured: true);
        byRegistration.OnReply(tracked, 7, RttOutcome.Matched, 12 * Millisecond, 30 * Millisecond, truthMeasured: true);
        byRegistration.OnReply(tracked, 8, RttOutcome.Matched, 5 * Millisecond, null, truthMeasured: false);
        byRegistration.OnReply(tracked, 9, RttOutcome.Late, 0, 40 * Millisecond, truthMeasured: true);

        // Assert
        Assert.Equal(
            [
                "client 5: reply 7 was paired with the wrong request: measured 12 ms, its own round trip was 30 ms",
                "client 5: reply 8 was counted as matched (round trip 5 ms), but its request was no longer in flight: a late reply must be counted as late",
                "client 5: reply 9 answers a request in flight but the tracker called it Late",
            ],
            byRegistration.Violations.Select(v => v.Message));
        Assert.Equal(byId.Violations.Select(v => v.Message), byRegistration.Violations.Select(v => v.Message));
        Assert.Equal(3, byRegistration.RepliesChecked);
    }

    [Fact]
    public void RttRegistrationAndIdPath_TruthCountedOnBothPaths_IsJudgedAsOneClientsAtQuiescence()
    {
        // Arrange: client 5's tracker counts every matched reply; client 6's misses one of those reported by id.
        var checker = new RttTrackerChecker(_context);
        var right = checker.Register(5, new StubTracker { Sent = 4, Matched = 4, WarmUpMatched = 1, MeasuredMatched = 3 }, 4);
        var wrong = checker.Register(6, new StubTracker { Sent = 4, Matched = 4, WarmUpMatched = 1, MeasuredMatched = 2 }, 4);

        // Act: per client, one warm-up and one measured reply by id, two measured replies by registration.
        foreach (var (clientId, tracked) in new[] { (5L, right), (6L, wrong) })
        {
            checker.OnReply(clientId, 1, RttOutcome.Matched, 10 * Millisecond, 10 * Millisecond, truthMeasured: false);
            checker.OnReply(tracked, 2, RttOutcome.Matched, 11 * Millisecond, 11 * Millisecond, truthMeasured: true);
            checker.OnReply(clientId, 3, RttOutcome.Matched, 12 * Millisecond, 12 * Millisecond, truthMeasured: true);
            checker.OnReply(tracked, 4, RttOutcome.Matched, 13 * Millisecond, 13 * Millisecond, truthMeasured: true);
        }

        Assert.False(checker.HasViolations, checker.FirstViolation?.Message);
        checker.CheckQuiescent();

        // Assert
        Assert.Equal(
            "client 6: at quiescence the RTT tracker phases do not match the requests' own: warm-up 1 (truth 1), measured 2 (truth 3)",
            Assert.Single(checker.Violations).Message);
    }

    [Fact]
    public void RttRegistration_ReRegisteredClient_IdPathAndNewRegistrationShareTheNewState()
    {
        // Arrange: the client registers again (a new tracker); its new registration replaces the old one.
        var checker = new RttTrackerChecker(_context);
        _ = checker.Register(5, new StubTracker { InFlight = 9 }, 2);
        var tracker = new StubTracker { Sent = 2, Matched = 2, MeasuredMatched = 2 };
        var tracked = checker.Register(5, tracker, 2);

        // Act
        checker.OnBegin(5);
        checker.OnReply(5, 1, RttOutcome.Matched, 10 * Millisecond, 10 * Millisecond, truthMeasured: true);
        checker.OnBegin(tracked);
        checker.OnReply(tracked, 2, RttOutcome.Matched, 11 * Millisecond, 11 * Millisecond, truthMeasured: true);
        checker.OnReply(tracked, 3, RttOutcome.Duplicate, 0, null, truthMeasured: false);
        checker.CheckQuiescent();

        // Assert: the old tracker (over its window) is no longer judged; the new one balances.
        Assert.False(checker.HasViolations, checker.FirstViolation?.Message);
        Assert.True(checker.Verdict.Passed);
        Assert.Equal(3, checker.RepliesChecked);
    }

    [Fact]
    public void RttRegistration_TrackerStillHoldingRequestsAtQuiescence_IsReportedOnce()
    {
        var checker = new RttTrackerChecker(_context);
        var tracked = checker.Register(5, new StubTracker { Sent = 3, Matched = 1, InFlight = 1 }, 4);
        checker.OnReply(tracked, 1, RttOutcome.Matched, 10 * Millisecond, 10 * Millisecond, truthMeasured: false);

        checker.CheckQuiescent();
        checker.CheckQuiescent();

        Assert.Equal(
            "client 5: at quiescence the RTT tracker still holds 1 request(s) that no reply or timeout released; counts do not balance: sent 3 != matched 1 + lost 0 + in flight 1; phases do not match the requests' own: warm-up 0 (truth 1), measured 0 (truth 0)",
            Assert.Single(checker.Violations).Message);
    }

    /// <summary>A tracker whose counters the test sets; the checker only reads them.</summary>
    private sealed class StubTracker : IRttTracker
    {
        public bool IsMeasuring => false;

        public long Sent { get; init; }

        public long Matched { get; init; }

        public long Late { get; init; }

        public long Duplicate { get; init; }

        public long Unknown { get; init; }

        public long Lost { get; init; }

        public long WarmUpMatched { get; init; }

        public long MeasuredMatched { get; init; }

        public int InFlight { get; init; }

        public int InFlightHighWater => InFlight;

        public bool TryBeginRequest(ushort seq, long sentTicks) => throw new NotSupportedException();

        public RttOutcome OnReply(ushort seq, long receivedTicks) => throw new NotSupportedException();

        public RttOutcome OnReply(ushort seq, long receivedTicks, out long rttTicks) => throw new NotSupportedException();

        public int ExpireOlderThan(long nowTicks, TimeSpan timeout) => throw new NotSupportedException();

        public void BeginMeasuredPhase() => throw new NotSupportedException();
    }
}
