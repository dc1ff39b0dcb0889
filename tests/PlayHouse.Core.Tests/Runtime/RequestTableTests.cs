using Microsoft.Extensions.Time.Testing;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;
using PlayHouse.Core.Seams;

namespace PlayHouse.Core.Tests.Runtime;

/// <summary>
/// The request table seen from one API server whose requests go to a capturing mesh: deadlines fire in order and on
/// time, replies removed from the middle leave the deadline heap sound, recent completions are bounded, and the
/// fail-fast and fail-all paths complete each request once.
/// </summary>
public sealed class RequestTableTests
{
    private const string Target = "play-1";

    [Fact]
    public void Timeouts_OfMixedDeadlinesWithTiesAndRepliesFromTheMiddle_FireAtTheirDeadlinesInDeadlineThenIdOrder()
    {
        int[] timeoutsMs = [7, 3, 12, 3, 9, 1, 5, 12, 2, 6, 10, 4, 8, 3, 11, 5, 1, 9, 7, 2, 12, 6, 4, 10];
        int[] repliedFirst = [2, 5, 9, 14, 17, 21];
        int[] repliedAtFourMs = [6, 15];
        using var bench = new TableBench();
        var tasks = timeoutsMs.Select(ms => bench.Issue(TimeSpan.FromMilliseconds(ms))).ToArray();
        Array.ForEach(repliedFirst, i => bench.Reply(bench.SentSeqs[i]));

        for (var nowMs = 1; nowMs <= 13; nowMs++)
        {
            if (nowMs == 4)
            {
                Array.ForEach(repliedAtFourMs, i => bench.Reply(bench.SentSeqs[i]));
            }

            bench.Advance(TimeSpan.FromMilliseconds(1));
            for (var i = 0; i < tasks.Length; i++)
            {
                var replied = repliedFirst.Contains(i) || (repliedAtFourMs.Contains(i) && nowMs >= 4);
                Assert.True(tasks[i].IsCompleted == (replied || timeoutsMs[i] <= nowMs), $"request {i} (timeout {timeoutsMs[i]} ms) at {nowMs} ms");
            }
        }

        var timedOut = Enumerable.Range(0, tasks.Length).Where(i => !repliedFirst.Contains(i) && !repliedAtFourMs.Contains(i)).ToArray();
        Assert.All(timedOut, i => Assert.Equal(ErrorCodes.RequestTimeout, RuntimeHarness.Completed(tasks[i]).ErrorCode));
        Assert.All(repliedFirst.Concat(repliedAtFourMs), i => Assert.Equal(ErrorCodes.Success, RuntimeHarness.Completed(tasks[i]).ErrorCode));

        // Each request completed once; the timeouts in (deadline, id) order, as the heap orders them.
        var expectedOrder = timedOut.OrderBy(i => timeoutsMs[i]).ThenBy(i => i).Select(i => bench.SentSeqs[i]);
        Assert.Equal(expectedOrder, bench.Observer.Completions.Where(c => c.Outcome == RequestOutcome.TimedOut).Select(c => c.MsgSeq));
        Assert.Equal(tasks.Length, bench.Observer.Completions.Select(c => c.MsgSeq).Distinct().Count());
        Assert.Equal(tasks.Length, bench.Observer.Completions.Count);
        Assert.Equal(0, bench.Api.PendingRequestCount);
        Array.ForEach(tasks, t => RuntimeHarness.Completed(t).Dispose());
        bench.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void Timeout_OfAnEntryThatMustMoveUpWhenAReplyRemovesAnother_StillFiresAtItsDeadline()
    {
        // Removing request 3 moves the heap's last entry (request 6, 2 ms) under a parent due at 5 ms; only a sift up
        // puts it back above that parent, otherwise it would wait for the parent and fire 3 ms late.
        int[] timeoutsMs = [7, 5, 11, 11, 1, 2, 2];
        using var bench = new TableBench();
        var tasks = timeoutsMs.Select(ms => bench.Issue(TimeSpan.FromMilliseconds(ms))).ToArray();
        bench.Reply(bench.SentSeqs[3]);

        for (var nowMs = 1; nowMs <= 12; nowMs++)
        {
            bench.Advance(TimeSpan.FromMilliseconds(1));
            for (var i = 0; i < tasks.Length; i++)
            {
                Assert.True(tasks[i].IsCompleted == (i == 3 || timeoutsMs[i] <= nowMs), $"request {i} (timeout {timeoutsMs[i]} ms) at {nowMs} ms");
            }
        }

        Assert.Equal(ErrorCodes.RequestTimeout, RuntimeHarness.Completed(tasks[6]).ErrorCode);
        Assert.Equal(ErrorCodes.Success, RuntimeHarness.Completed(tasks[3]).ErrorCode);
        RuntimeHarness.Completed(tasks[3]).Dispose();
        bench.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void RecentCompletions_BeyondTheirCap_ForgetTheOldest_SoItsLateReplyCountsAsUnknown()
    {
        using var bench = new TableBench(new ServerOptions { RecentCompletionsMax = 2 });
        var tasks = Enumerable.Range(0, 3).Select(_ => bench.Issue(TimeSpan.FromMilliseconds(10))).ToArray();
        bench.Advance(TimeSpan.FromMilliseconds(10));
        Assert.All(tasks, t => Assert.Equal(ErrorCodes.RequestTimeout, RuntimeHarness.Completed(t).ErrorCode));

        bench.Reply(bench.SentSeqs[0]);
        bench.Reply(bench.SentSeqs[1]);
        bench.Reply(bench.SentSeqs[2]);

        Assert.Equal(1, bench.Api.Counters.UnknownReplies);
        Assert.Equal(2, bench.Api.Counters.LateReplies);
        bench.Pool.ThrowIfLeaks();
    }

    [Theory]
    [InlineData(2)]
    [InlineData(3)]
    [InlineData(4)]
    public void LateReplies_AreToldFromUnknownOnes_ForAsManyCompletionsAsRecentCompletionsMax(int completed)
    {
        // The cap is 3: one completion below it, at it and one past it; only the ones past it are forgotten, oldest first.
        using var bench = new TableBench(new ServerOptions { RecentCompletionsMax = 3 });
        var tasks = Enumerable.Range(0, completed).Select(_ => bench.Issue(TimeSpan.FromMilliseconds(10))).ToArray();
        bench.Advance(TimeSpan.FromMilliseconds(10));
        Assert.All(tasks, t => Assert.Equal(ErrorCodes.RequestTimeout, RuntimeHarness.Completed(t).ErrorCode));

        bench.Reply(bench.SentSeqs[0]);
        var firstIsUnknown = bench.Api.Counters.UnknownReplies;
        foreach (var seq in bench.SentSeqs.Skip(1))
        {
            bench.Reply(seq);
        }

        Assert.Equal(completed > 3 ? 1 : 0, firstIsUnknown);
        Assert.Equal(Math.Max(0, completed - 3), bench.Api.Counters.UnknownReplies);
        Assert.Equal(Math.Min(completed, 3), bench.Api.Counters.LateReplies);
        bench.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void RecentCompletions_WithNoRoom_CountEveryLateReplyAsUnknown()
    {
        using var bench = new TableBench(new ServerOptions { RecentCompletionsMax = 0 });
        var task = bench.Issue(TimeSpan.FromMilliseconds(10));
        bench.Advance(TimeSpan.FromMilliseconds(10));

        bench.Reply(bench.SentSeqs[0]);

        Assert.Equal(ErrorCodes.RequestTimeout, RuntimeHarness.Completed(task).ErrorCode);
        Assert.Equal(1, bench.Api.Counters.UnknownReplies);
        Assert.Equal(0, bench.Api.Counters.LateReplies);
        bench.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void ReplyWithoutRequest_IsReportedDroppedAndItsPayloadReturned()
    {
        using var bench = new TableBench();

        bench.Reply(msgSeq: 77);

        Assert.Equal([("reply-without-request", "Answer")], bench.Observer.Drops);
        Assert.Equal(1, bench.Api.Counters.UnknownReplies);
        bench.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void RefusedSend_FailsFastOnce_AndTheReplyThatStillComesCountsAsLate()
    {
        using var bench = new TableBench { SendResult = _ => false };

        var task = bench.Issue(TimeSpan.FromMilliseconds(10));
        bench.Reply(bench.SentSeqs[0]);

        Assert.Equal(ErrorCodes.ServerNotFound, RuntimeHarness.Completed(task).ErrorCode);
        Assert.Equal(1, bench.Api.Counters.LateReplies);
        Assert.Equal(0, bench.Api.Counters.UnknownReplies);
        Assert.Equal([RequestOutcome.FailedFast], bench.Observer.Completions.Select(c => c.Outcome));
        bench.Advance(TimeSpan.FromMilliseconds(10));
        Assert.Single(bench.Observer.Completions);
        bench.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void RefusedSend_AfterTheReplyAlreadyCompletedTheRequest_LeavesTheReplyAsTheOnlyCompletion()
    {
        // On real threads the reply can overtake the sender learning that its send failed; the fail-fast is then a no-op.
        using var bench = new TableBench();
        bench.SendResult = message =>
        {
            bench.Reply(message.MsgSeq);
            return false;
        };

        var task = bench.Issue(TimeSpan.FromMilliseconds(10));

        Assert.Equal(ErrorCodes.Success, RuntimeHarness.Completed(task).ErrorCode);
        Assert.Equal([RequestOutcome.Replied], bench.Observer.Completions.Select(c => c.Outcome));
        RuntimeHarness.Completed(task).Dispose();
        bench.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void FailAll_CompletesEveryPendingRequestInIdOrder_AndLaterRepliesAndDeadlinesFindNothing()
    {
        using var bench = new TableBench();
        var tasks = Enumerable.Range(0, 3).Select(_ => bench.Issue(TimeSpan.FromMilliseconds(10))).ToArray();
        bench.Reply(bench.SentSeqs[1]);

        bench.Api.Requests.FailAll(ErrorCodes.ServerStopping);

        Assert.Equal(ErrorCodes.ServerStopping, RuntimeHarness.Completed(tasks[0]).ErrorCode);
        Assert.Equal(ErrorCodes.Success, RuntimeHarness.Completed(tasks[1]).ErrorCode);
        Assert.Equal(ErrorCodes.ServerStopping, RuntimeHarness.Completed(tasks[2]).ErrorCode);
        Assert.Equal(0, bench.Api.PendingRequestCount);
        Assert.Equal(
            [(bench.SentSeqs[1], RequestOutcome.Replied), (bench.SentSeqs[0], RequestOutcome.FailedFast), (bench.SentSeqs[2], RequestOutcome.FailedFast)],
            bench.Observer.Completions.Select(c => (c.MsgSeq, c.Outcome)));

        bench.Reply(bench.SentSeqs[0]);
        bench.Advance(TimeSpan.FromMilliseconds(10));

        Assert.Equal(1, bench.Api.Counters.LateReplies);
        Assert.Equal(0, bench.Api.Counters.RequestTimeouts);
        Assert.Equal(3, bench.Observer.Completions.Count);
        RuntimeHarness.Completed(tasks[1]).Dispose();
        bench.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void Dispose_OfANodeWithRequestsStillWaiting_FailsEachOnceWithServerStopping_AndTheirDeadlinesNeverFire()
    {
        using var bench = new TableBench();
        var tasks = Enumerable.Range(0, 2).Select(_ => bench.Issue(TimeSpan.FromMilliseconds(10))).ToArray();

        bench.Api.Dispose();
        bench.Advance(TimeSpan.FromMilliseconds(20));

        Assert.All(tasks, t => Assert.Equal(ErrorCodes.ServerStopping, RuntimeHarness.Completed(t).ErrorCode));
        Assert.Equal([RequestOutcome.FailedFast, RequestOutcome.FailedFast], bench.Observer.Completions.Select(c => c.Outcome));
        Assert.Equal(0, bench.Api.PendingRequestCount);
        Assert.Equal(0, bench.Api.Counters.RequestTimeouts);
        bench.Pool.ThrowIfLeaks();
    }

    [Fact]
    public void Timeout_OnAClockWhoseTicksDoNotDivideIntoTimestamps_FiresOnTheFirstTickAtTheDeadlineNotBefore()
    {
        // Three timestamps a second: a deadline one timestamp away lies 3,333,333.3 ticks ahead, so the timer must round up.
        var clock = new ThirdsOfASecondClock();
        using var bench = new TableBench(clock: clock);
        var task = bench.Issue(TimeSpan.FromMilliseconds(500));

        bench.Advance(TimeSpan.FromTicks(3_333_333));
        Assert.False(task.IsCompleted);

        bench.Advance(TimeSpan.FromTicks(1));
        Assert.True(task.IsCompleted);
        Assert.Equal(ErrorCodes.RequestTimeout, RuntimeHarness.Completed(task).ErrorCode);
        Assert.Equal(1, bench.Api.Counters.RequestTimeouts);
    }

    /// <summary>An API server on a manual executor and a fake clock whose mesh captures each request's id.</summary>
    private sealed class TableBench : IMeshTransport, IDisposable
    {
        private readonly ManualExecutor _executor = new();

        public TableBench(ServerOptions? options = null, FakeTimeProvider? clock = null)
        {
            Clock = clock ?? new FakeTimeProvider();
            Pool = new MessagePool(new MessagePoolOptions { CheckedMode = true });
            Api = new ApiServer("api-1", new NodeSeams(Clock, _executor, new Xoshiro256StarStar(5), Pool) { Observer = Observer }, options ?? new ServerOptions())
            {
                Mesh = this,
            };
        }

        public FakeTimeProvider Clock { get; }

        public MessagePool Pool { get; }

        public ApiServer Api { get; }

        public CompletionRecorder Observer { get; } = new();

        /// <summary>The id of each request sent, in issue order.</summary>
        public List<ulong> SentSeqs { get; } = [];

        /// <summary>Decides each send's answer; true (sent) unless a test says otherwise.</summary>
        public Func<MeshMessage, bool> SendResult { get; set; } = _ => true;

        public bool Send(string targetNodeId, in MeshMessage message)
        {
            SentSeqs.Add(message.MsgSeq);
            message.Payload.DisposeIfOwner();
            return SendResult(message);
        }

        public Task<Response> Issue(TimeSpan timeout)
        {
            var task = Api.RequestToStage(Target, 1, "Ask", Pool.Copy([1, 2, 3], "request"), timeout);
            _executor.RunUntilIdle();
            return task;
        }

        public void Reply(ulong msgSeq)
        {
            Api.OnMeshMessage(new MeshMessage { IsReply = true, MsgSeq = msgSeq, From = Target, MsgId = "Answer", Payload = Pool.Copy([9], "reply") });
            _executor.RunUntilIdle();
        }

        public void Advance(TimeSpan delta)
        {
            _executor.RunUntilIdle();
            Clock.Advance(delta);
            _executor.RunUntilIdle();
        }

        public void Dispose() => Api.Dispose();
    }

    private sealed class CompletionRecorder : RuntimeObserver
    {
        public List<(ulong MsgSeq, RequestOutcome Outcome)> Completions { get; } = [];

        public List<(string Reason, string? MsgId)> Drops { get; } = [];

        public override void OnRequestCompleted(string nodeId, ulong msgSeq, string targetNodeId, RequestOutcome outcome, ushort errorCode) =>
            Completions.Add((msgSeq, outcome));

        public override void OnDropped(string nodeId, string reason, string? msgId) => Drops.Add((reason, msgId));
    }

    /// <summary>A fake clock whose timestamps count thirds of a second, a frequency that does not divide a second's ticks.</summary>
    private sealed class ThirdsOfASecondClock : FakeTimeProvider
    {
        public override long TimestampFrequency => 3;

        public override long GetTimestamp() => (long)((Int128)GetUtcNow().UtcTicks * 3 / TimeSpan.TicksPerSecond);
    }
}
