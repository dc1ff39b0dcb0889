using Microsoft.Extensions.Time.Testing;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;
using PlayHouse.Core.Seams;
using PlayHouse.Fixtures.Flawed.Requests;
using PlayHouse.Fixtures.Properties;
using PlayHouse.Fixtures.Scenarios;
using PlayHouse.Fixtures.Zoo.Twins;
using PlayHouse.Simulation.Checkers;
using PlayHouse.Simulation.Runs;
using Shouldly;

namespace PlayHouse.Properties.Tests.Zoo;

/// <summary>
/// B8, the 16-bit request id: what the flawed request table does (a reply to a request sent over a held id completes
/// the older request), that the correct table does not, and that the simulation catches the flaw from a lost reply
/// where before only the core's unit test of 70,000 requests could (and that one passes on the flawed table too,
/// since no reply is lost there).
/// </summary>
public sealed class WrappingRequestIdTests
{
    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public void ReplyToTheRequestThatWrapsOntoAHeldId_CompletesOnlyItsOwnRequestInTheCorrectTable(bool wrapping)
    {
        using var pair = new ApiPair(wrapping);

        // Request 0's reply is lost (its handler never replies); 65,535 further requests reach its id again.
        var held = pair.Request(0);
        var replied = new List<Task<Response>>();
        for (var value = 1; value <= 65_535; value++)
        {
            replied.Add(pair.Request(value));
            if (value % 1_000 == 0)
            {
                pair.Executor.RunUntilIdle();
            }
        }

        pair.Executor.RunUntilIdle();
        var last = replied[^1];
        if (wrapping)
        {
            // The last request wrapped onto request 0's id: its reply completed request 0, and it waits on unanswered.
            held.IsCompleted.ShouldBeTrue();
            using (var response = ApiPair.Completed(held))
            {
                BitConverter.ToInt32(response.Payload.Span).ShouldBe(65_535);
            }

            last.IsCompleted.ShouldBeFalse();
        }
        else
        {
            held.IsCompleted.ShouldBeFalse();
            using (var response = ApiPair.Completed(last))
            {
                BitConverter.ToInt32(response.Payload.Span).ShouldBe(65_535);
            }
        }

        foreach (var task in replied.Take(65_534))
        {
            ApiPair.Completed(task).Dispose();
        }
    }

    [Fact]
    public void WrappingIds_TheTimeoutArmedForARequestSentOverAHeldId_LaterCancelsANewerRequest()
    {
        using var pair = new ApiPair(wrapping: true);

        // At 0 s request 0 takes id 1 and loses its reply; at 10 s the id comes round again, and the request sent over
        // it completes request 0 while the timeout armed for it (due at 40 s) stays keyed by id 1.
        var held = pair.Request(0);
        pair.Clock.Advance(TimeSpan.FromSeconds(10));
        pair.RequestAll(1, 65_534);
        var sentOverHeld = pair.Request(65_535);
        pair.Executor.RunUntilIdle();
        held.IsCompleted.ShouldBeTrue();
        sentOverHeld.IsCompleted.ShouldBeFalse();

        // At 20 s id 1 comes round once more, for a request whose own timeout is due at 50 s.
        pair.Clock.Advance(TimeSpan.FromSeconds(10));
        pair.RequestAll(65_536, 65_534);
        var newer = pair.Request(-1);
        pair.Executor.RunUntilIdle();
        pair.Clock.Advance(TimeSpan.FromSeconds(20));
        pair.Executor.RunUntilIdle();

        newer.IsCompleted.ShouldBeTrue();
        using (var response = ApiPair.Completed(newer))
        {
            response.ErrorCode.ShouldBe(ErrorCodes.RequestTimeout);
        }

        sentOverHeld.IsCompleted.ShouldBeFalse();
        ApiPair.Completed(held).Dispose();
    }

    [Fact]
    public void WrappingIds_WithNoReplyLost_PassEveryCheckerDespiteTheWrap()
    {
        // The wrap alone is harmless: with every reply arriving, no id is ever held twice.
        var report = SimRunner.Run(new ApiCallScenario(), 11, Options() with { Flaws = "B8" });

        report.ExitCode.ShouldBe(RunExitCodes.Pass, report.Failure);
        report.RequestsSucceeded.ShouldBe(WrappingRequestIdTwin.RequestsPerClient);
    }

    [Fact]
    public void WrappingIds_WithRepliesLostInALossBurst_AreCaughtByTheExactlyOnceChecker()
    {
        // A burst the profile can draw: it starts by EpisodeAtMsMax and is over within EpisodeDurationMsMax.
        var options = Options() with { Faults = FaultPlan.Parse("40ms:lossburst:::20:100ms") };

        var flawed = SimRunner.Run(new ApiCallScenario(), 11, options with { Flaws = "B8" });
        var correct = SimRunner.Run(new ApiCallScenario(), 11, options);

        var violation = Invariants.ExactlyOnce.Violation(flawed).ShouldNotBeNull();
        violation.ShouldStartWith(ExactlyOnceRequestChecker.CheckerName);
        violation.ShouldContain("was issued twice");
        Invariants.ExactlyOnce.Violation(correct).ShouldBeNull();
        correct.ExitCode.ShouldBe(RunExitCodes.Pass, correct.Failure);
    }

    /// <summary>The B8 profile's fixed options (one client, a window of <see cref="WrappingRequestIdTwin.InFlight"/>).</summary>
    private static SimOptions Options() => new WorkloadSpec
    {
        Scenario = "api-call",
        Seed = 11,
        RequestTimeoutMs = 1_000,
        Overrides = new WrappingRequestIdTwin().Profile.Overrides,
    }.ToOptions();

    /// <summary>Two API servers on a manual executor and clock: "a" requests "b", whose handler echoes every value above 0.</summary>
    private sealed class ApiPair : IDisposable
    {
        private readonly ApiServer _a;
        private readonly ApiServer _b;
        private readonly MessagePool _pool = new(new MessagePoolOptions());

        public ApiPair(bool wrapping)
        {
            var parts = wrapping ? NodeParts.Standard.WithWrappingRequestIds() : NodeParts.Standard;
            var seams = new NodeSeams(Clock, Executor, new Xoshiro256StarStar(1), _pool) { Parts = parts };
            var options = new ServerOptions { RequestTimeout = TimeSpan.FromSeconds(30), PendingRequestsMax = 100_000 };
            _a = new ApiServer("api-a", seams, options);
            _b = new ApiServer("api-b", seams, options);
            _b.Handle("Echo", (link, packet) =>
            {
                if (BitConverter.ToInt32(packet.Payload.Span) > 0)
                {
                    link.Reply(packet, "Echo", link.Pool.Copy(packet.Payload.Span, "test"));
                }

                return ValueTask.CompletedTask;
            });
            new InProcessMesh(Executor).Join(_a).Join(_b);
        }

        public ManualExecutor Executor { get; } = new();

        public FakeTimeProvider Clock { get; } = new();

        /// <summary>Sends <paramref name="count"/> requests from <paramref name="first"/> on, each answered, and runs them all.</summary>
        public void RequestAll(int first, int count)
        {
            var tasks = new List<Task<Response>>(count);
            for (var i = 0; i < count; i++)
            {
                tasks.Add(Request(first + i));
                if (i % 1_000 == 999)
                {
                    Executor.RunUntilIdle();
                }
            }

            Executor.RunUntilIdle();
            foreach (var task in tasks)
            {
                Completed(task).Dispose();
            }
        }

        /// <summary>The response of a task the manual executor has completed (it never blocks).</summary>
        public static Response Completed(Task<Response> task)
        {
            task.IsCompletedSuccessfully.ShouldBeTrue();
            return task.GetAwaiter().GetResult();
        }

        public Task<Response> Request(int value) => _a.RequestToStage("api-b", 0, "Echo", _pool.Copy(BitConverter.GetBytes(value), "test"));

        public void Dispose()
        {
            _a.Dispose();
            _b.Dispose();
        }
    }
}
