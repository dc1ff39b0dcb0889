using System.Collections.Immutable;
using System.Globalization;
using FsCheck;
using FsCheck.Experimental;
using FsCheck.Fluent;
using Microsoft.Extensions.Time.Testing;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;
using PlayHouse.Core.Seams;
using PlayHouse.Fixtures.Properties;
using PlayHouse.Properties.Tests.Infrastructure;
using PlayHouse.Simulation.Checkers;
using Shouldly;
using Xunit.Abstractions;

namespace PlayHouse.Properties.Tests.Model;

/// <summary>
/// Model-based test of the request/reply table with FsCheck's state-machine API (FsCheck.Experimental, usable from
/// C# in 3.6): random sequences of issue / reply / duplicate reply / late reply / unknown reply / misaddressed
/// reply / time passing, run against a real <see cref="ApiServer"/> on a manual executor and clock, and compared
/// after every step with a model that is a dictionary of pending request ids. FsCheck shrinks a failing sequence
/// to the shortest one (its list shrinker over operations).
/// </summary>
public sealed class RequestTableModelTests(ITestOutputHelper output)
{
    [Fact]
    [Trait("Category", "Deep")]
    public void RequestTable_UnderRandomRepliesDuplicatesLateRepliesAndTimeouts_MatchesTheModel()
    {
        var machine = new RequestTableMachine();
        var runner = new ModelRunner();
        Check.One(ModelRunner.Config(runner, PropertyDepth.Cases(200), "request-table-model"), StateMachine.ToProperty(machine));

        runner.ThrowIfFailed();
        machine.Sequences.ShouldBeGreaterThan(0);
    }

    [Fact]
    public void RequestTableModel_WithATableThatCompletesDuplicatesAgain_Fails()
    {
        // The harness can be told to deliver every duplicate reply to its awaiter as a fresh completion (B12's
        // "ghost" reply); the model must catch it, or it proves nothing.
        var machine = new RequestTableMachine { DuplicatesBecomeCompletions = true };
        var runner = new ModelRunner();
        Check.One(ModelRunner.Config(runner, 200, "request-table-model-flawed"), StateMachine.ToProperty(machine));

        output.WriteLine(runner.FailureText);
        runner.Failed.ShouldBeTrue("a duplicate reply completed a request twice and the model did not notice");
        runner.FailureText.ShouldContain("completed 2 time(s), the model says 1");
    }

    /// <summary>The model: requests by id with their deadline and how they ended; counters the table must match.</summary>
    public sealed record TableModel(
        long NowMs,
        int NextIndex,
        ImmutableSortedDictionary<int, long> Pending,
        ImmutableSortedSet<int> Replied,
        ImmutableSortedSet<int> TimedOut,
        long Duplicates,
        long Late,
        long Unknown,
        long Misaddressed)
    {
        public static TableModel Empty { get; } = new(0, 1, ImmutableSortedDictionary<int, long>.Empty, [], [], 0, 0, 0, 0);

        public override string ToString() => string.Create(
            CultureInfo.InvariantCulture,
            $"t={NowMs}ms pending [{string.Join(", ", Pending.Select(p => $"{p.Key} until {p.Value}ms"))}] replied [{string.Join(", ", Replied)}] timed out [{string.Join(", ", TimedOut)}] duplicate/late/unknown/misaddressed {Duplicates}/{Late}/{Unknown}/{Misaddressed}");
    }

    /// <summary>
    /// The system under test: an API server whose requests go to a capturing mesh (nothing answers them by itself),
    /// with the exactly-once checker as its observer. Replies are injected as mesh messages.
    /// </summary>
    public sealed class TableHarness : IMeshTransport
    {
        public const string Target = "play-1";
        public const int TimeoutMs = 100;

        private readonly Dictionary<int, ulong> _msgSeqByIndex = [];

        public TableHarness(bool duplicatesBecomeCompletions)
        {
            DuplicatesBecomeCompletions = duplicatesBecomeCompletions;
            Executor = new ManualExecutor();
            // Timestamps start at 0, as the simulated world's do, so the checkers' times read as in a simulated run.
            Clock = new FakeTimeProvider(DateTimeOffset.MinValue);
            Pool = new MessagePool(new MessagePoolOptions { CheckedMode = true });
            Checker = new ExactlyOnceRequestChecker(Clock);
            Api = new ApiServer("api-1", new NodeSeams(Clock, Executor, new Xoshiro256StarStar(7), Pool) { Observer = Checker }, new ServerOptions { RequestTimeout = TimeSpan.FromMilliseconds(TimeoutMs) })
            {
                Mesh = this,
            };
        }

        public bool DuplicatesBecomeCompletions { get; }

        public ManualExecutor Executor { get; }

        public FakeTimeProvider Clock { get; }

        public MessagePool Pool { get; }

        public ExactlyOnceRequestChecker Checker { get; }

        public ApiServer Api { get; }

        /// <summary>Each issued request's task, by model index.</summary>
        public Dictionary<int, Task<Response>> Tasks { get; } = [];

        /// <summary>Completions the (flawed) harness handed out on top of the task's own.</summary>
        public Dictionary<int, int> ExtraCompletions { get; } = [];

        /// <summary>How often request <paramref name="index"/> completed: its task (at most once) plus any extra.</summary>
        public int CompletionsOf(int index) => (Tasks[index].IsCompleted ? 1 : 0) + ExtraCompletions.GetValueOrDefault(index);

        public ushort ErrorCodeOf(int index) => Tasks[index].Result.ErrorCode;

        private ulong _lastSentMsgSeq;

        public bool Send(string targetNodeId, in MeshMessage message)
        {
            _lastSentMsgSeq = message.MsgSeq;
            message.Payload.DisposeIfOwner();
            return true;
        }

        public void Issue(int index)
        {
            var task = Api.RequestToStage(Target, 1, "Ask", Pool.Copy([(byte)index], "request"));
            _msgSeqByIndex[index] = _lastSentMsgSeq;
            Tasks[index] = task;
            Pump();
        }

        public void Reply(int index, string from = Target)
        {
            var msgSeq = _msgSeqByIndex.TryGetValue(index, out var seq) ? seq : (ulong)(1_000_000 + index);
            Api.OnMeshMessage(new MeshMessage { IsReply = true, MsgSeq = msgSeq, From = from, MsgId = "Answer", Payload = Pool.Copy([(byte)index], "reply") });
            if (DuplicatesBecomeCompletions && Tasks.TryGetValue(index, out var task) && task.IsCompleted)
            {
                // The flaw under test: the duplicate is handed to the awaiter again as if it were new.
                ExtraCompletions[index] = ExtraCompletions.GetValueOrDefault(index) + 1;
            }

            Pump();
        }

        public void Advance(int ms)
        {
            Pump();
            // The request table's timer times out every request due by the new instant inline and re-arms itself, so
            // one advance ends as stepping through each deadline would; the continuations then run in deadline order.
            Clock.Advance(TimeSpan.FromMilliseconds(ms));
            Pump();
        }

        private void Pump() => Executor.RunUntilIdle();
    }

    /// <summary>The state machine: which operations may come next given the model, and how each is checked.</summary>
    public sealed class RequestTableMachine : Machine<TableHarness, TableModel>
    {
        public RequestTableMachine()
            : base(30)
        {
        }

        public bool DuplicatesBecomeCompletions { get; init; }

        /// <summary>Sequences set up so far (each is a fresh harness).</summary>
        public int Sequences { get; private set; }

        public override Arbitrary<Setup<TableHarness, TableModel>> Setup =>
            Arb.From(Gen.Fresh(() => (Setup<TableHarness, TableModel>)new TableSetup(this)));

        public override Gen<Operation<TableHarness, TableModel>> Next(TableModel model)
        {
            var choices = new List<(int, Gen<Operation<TableHarness, TableModel>>)>
            {
                (4, Gen.Constant<Operation<TableHarness, TableModel>>(new Issue())),
                (2, Gen.Choose(1, TableHarness.TimeoutMs + 20).Select(ms => (Operation<TableHarness, TableModel>)new Advance(ms))),
                (1, Gen.Constant<Operation<TableHarness, TableModel>>(new UnknownReply())),
            };
            if (!model.Pending.IsEmpty)
            {
                choices.Add((4, Gen.Elements(model.Pending.Keys.ToArray()).Select(i => (Operation<TableHarness, TableModel>)new Reply(i))));
                choices.Add((1, Gen.Elements(model.Pending.Keys.ToArray()).Select(i => (Operation<TableHarness, TableModel>)new MisaddressedReply(i))));
            }

            if (!model.Replied.IsEmpty)
            {
                choices.Add((2, Gen.Elements(model.Replied.ToArray()).Select(i => (Operation<TableHarness, TableModel>)new DuplicateReply(i))));
            }

            if (!model.TimedOut.IsEmpty)
            {
                choices.Add((2, Gen.Elements(model.TimedOut.ToArray()).Select(i => (Operation<TableHarness, TableModel>)new LateReply(i))));
            }

            return Gen.Frequency(choices);
        }

        private sealed class TableSetup(RequestTableMachine machine) : Setup<TableHarness, TableModel>
        {
            public override TableHarness Actual()
            {
                machine.Sequences++;
                return new TableHarness(machine.DuplicatesBecomeCompletions);
            }

            public override TableModel Model() => TableModel.Empty;

            public override string ToString() => "fresh ApiServer on a manual clock";
        }
    }

    /// <summary>Checks every request of the harness against the model, and the counters and the checker.</summary>
    private static Property Agrees(TableHarness actual, TableModel model, string after)
    {
        var problems = new List<string>();
        foreach (var index in actual.Tasks.Keys.Order())
        {
            var count = actual.CompletionsOf(index);
            var expected = model.Pending.ContainsKey(index) ? 0 : 1;
            if (count != expected)
            {
                problems.Add(string.Create(CultureInfo.InvariantCulture, $"request {index} completed {count} time(s), the model says {expected}"));
            }
            else if (model.Replied.Contains(index) && actual.ErrorCodeOf(index) != ErrorCodes.Success)
            {
                problems.Add(string.Create(CultureInfo.InvariantCulture, $"request {index} was replied to but completed with error {actual.ErrorCodeOf(index)}"));
            }
            else if (model.TimedOut.Contains(index) && actual.ErrorCodeOf(index) != ErrorCodes.RequestTimeout)
            {
                problems.Add(string.Create(CultureInfo.InvariantCulture, $"request {index} timed out in the model but completed with error {actual.ErrorCodeOf(index)}"));
            }
        }

        var counters = actual.Api.Counters;
        if (counters.DuplicateReplies != model.Duplicates || counters.LateReplies != model.Late || counters.UnknownReplies != model.Unknown || counters.MisaddressedReplies != model.Misaddressed)
        {
            problems.Add(string.Create(CultureInfo.InvariantCulture, $"counters duplicate/late/unknown/misaddressed {counters.DuplicateReplies}/{counters.LateReplies}/{counters.UnknownReplies}/{counters.MisaddressedReplies}, the model says {model.Duplicates}/{model.Late}/{model.Unknown}/{model.Misaddressed}"));
        }

        if (actual.Api.PendingRequestCount != model.Pending.Count)
        {
            problems.Add(string.Create(CultureInfo.InvariantCulture, $"{actual.Api.PendingRequestCount} request(s) pending, the model says {model.Pending.Count}"));
        }

        if (actual.Checker.HasViolations)
        {
            problems.Add("exactly-once checker: " + actual.Checker.FirstViolation);
        }

        // Thrown rather than labelled: FsCheck's state machine prints the exception with the shrunk operations.
        if (problems.Count > 0)
        {
            throw new PropertyViolationException($"after {after}: {string.Join("; ", problems)}");
        }

        return Prop.ToProperty(true);
    }

    private sealed class Issue : Operation<TableHarness, TableModel>
    {
        public override TableModel Run(TableModel model) =>
            model with { NextIndex = model.NextIndex + 1, Pending = model.Pending.Add(model.NextIndex, model.NowMs + TableHarness.TimeoutMs) };

        public override Property Check(TableHarness actual, TableModel model)
        {
            actual.Issue(model.NextIndex - 1);
            return Agrees(actual, model, ToString());
        }

        public override string ToString() => "issue";
    }

    private sealed class Reply(int index) : Operation<TableHarness, TableModel>
    {
        public override bool Pre(TableModel model) => model.Pending.ContainsKey(index);

        public override TableModel Run(TableModel model) =>
            model with { Pending = model.Pending.Remove(index), Replied = model.Replied.Add(index) };

        public override Property Check(TableHarness actual, TableModel model)
        {
            actual.Reply(index);
            return Agrees(actual, model, ToString());
        }

        public override string ToString() => $"reply {index}";
    }

    private sealed class DuplicateReply(int index) : Operation<TableHarness, TableModel>
    {
        public override bool Pre(TableModel model) => model.Replied.Contains(index);

        public override TableModel Run(TableModel model) => model with { Duplicates = model.Duplicates + 1 };

        public override Property Check(TableHarness actual, TableModel model)
        {
            actual.Reply(index);
            return Agrees(actual, model, ToString());
        }

        public override string ToString() => $"duplicate reply {index}";
    }

    private sealed class LateReply(int index) : Operation<TableHarness, TableModel>
    {
        public override bool Pre(TableModel model) => model.TimedOut.Contains(index);

        public override TableModel Run(TableModel model) => model with { Late = model.Late + 1 };

        public override Property Check(TableHarness actual, TableModel model)
        {
            actual.Reply(index);
            return Agrees(actual, model, ToString());
        }

        public override string ToString() => $"late reply {index}";
    }

    private sealed class UnknownReply : Operation<TableHarness, TableModel>
    {
        public override TableModel Run(TableModel model) => model with { Unknown = model.Unknown + 1 };

        public override Property Check(TableHarness actual, TableModel model)
        {
            // An index the harness never issued: its msg seq is one no request ever had.
            actual.Reply(-1);
            return Agrees(actual, model, ToString());
        }

        public override string ToString() => "unknown reply";
    }

    private sealed class MisaddressedReply(int index) : Operation<TableHarness, TableModel>
    {
        public override bool Pre(TableModel model) => model.Pending.ContainsKey(index);

        public override TableModel Run(TableModel model) => model with { Misaddressed = model.Misaddressed + 1 };

        public override Property Check(TableHarness actual, TableModel model)
        {
            // A reply from a server the request was not sent to is refused; the request stays pending.
            actual.Reply(index, from: "play-2");
            return Agrees(actual, model, ToString());
        }

        public override string ToString() => $"reply {index} from the wrong server";
    }

    private sealed class Advance(int ms) : Operation<TableHarness, TableModel>
    {
        public override TableModel Run(TableModel model)
        {
            var now = model.NowMs + ms;
            var expired = model.Pending.Where(p => p.Value <= now).Select(p => p.Key).ToList();
            return model with
            {
                NowMs = now,
                Pending = model.Pending.RemoveRange(expired),
                TimedOut = model.TimedOut.Union(expired),
            };
        }

        public override Property Check(TableHarness actual, TableModel model)
        {
            actual.Advance(ms);
            return Agrees(actual, model, ToString());
        }

        public override string ToString() => $"advance {ms} ms";
    }
}
