using System.Collections.Immutable;
using System.Globalization;
using FsCheck;
using FsCheck.Experimental;
using FsCheck.Fluent;
using Microsoft.Extensions.Time.Testing;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;
using PlayHouse.Core.Seams;
using PlayHouse.Fixtures.Flawed;
using PlayHouse.Fixtures.Properties;
using PlayHouse.Fixtures.Scenarios;
using PlayHouse.Fixtures.Workload;
using PlayHouse.Properties.Tests.Infrastructure;
using PlayHouse.Simulation.Checkers;
using Shouldly;
using Xunit.Abstractions;

namespace PlayHouse.Properties.Tests.Model;

/// <summary>
/// Model-based test of stage lifecycle with FsCheck's state-machine API: random sequences of create, join,
/// disconnect, reconnect (a join with an account already in the stage), leave and close against a real
/// <see cref="PlayServer"/> on a manual executor and clock. The model is the actors of each stage (by account) and
/// which client each is bound to; after every step the server must agree with it, and the runtime's lifecycle
/// checker and the user-level one (callbacks as the workload stage and actors receive them) must have nothing to say.
/// </summary>
public sealed class StageLifecycleModelTests(ITestOutputHelper output)
{
    [Fact]
    [Trait("Category", "Deep")]
    public void StageLifecycle_UnderRandomJoinsReconnectsLeavesAndCloses_MatchesTheModel()
    {
        var machine = new LifecycleMachine(flawedReconnect: false);
        var runner = new ModelRunner();
        Check.One(ModelRunner.Config(runner, PropertyDepth.Cases(200), "stage-lifecycle-model"), StateMachine.ToProperty(machine));

        runner.ThrowIfFailed();
        machine.Sequences.ShouldBeGreaterThan(0);
    }

    [Fact]
    public void StageLifecycleModel_WithAStageThatRejoinsOnReconnect_FailsOnTheReconnect()
    {
        var machine = new LifecycleMachine(flawedReconnect: true);
        var runner = new ModelRunner();
        Check.One(ModelRunner.Config(runner, 200, "stage-lifecycle-model-flawed"), StateMachine.ToProperty(machine));

        output.WriteLine(runner.FailureText);
        runner.Failed.ShouldBeTrue("a join replayed on reconnect went unnoticed");
        runner.FailureText.ShouldContain(WorkloadLifecycleChecker.CheckerName);
        runner.FailureText.ShouldContain("ActorJoinStage after");
    }

    /// <summary>One actor in the model: the client it is bound to, or null when disconnected.</summary>
    public sealed record ActorModel(int? Client);

    /// <summary>The model: stages and their actors by account, and which clients are still open.</summary>
    public sealed record LifecycleModel(ImmutableSortedDictionary<long, ImmutableSortedDictionary<long, ActorModel>> Stages, ImmutableSortedSet<int> OpenClients, int NextClient)
    {
        public static LifecycleModel Empty { get; } = new(ImmutableSortedDictionary<long, ImmutableSortedDictionary<long, ActorModel>>.Empty, [], 1);

        public override string ToString() =>
            string.Join(" ", Stages.Select(s => $"stage {s.Key}: [{string.Join(", ", s.Value.Select(a => a.Value.Client is { } c ? $"{a.Key}@client{c}" : $"{a.Key} (disconnected)"))}]"))
            + $" open clients [{string.Join(", ", OpenClients)}]";
    }

    /// <summary>A play server with workload stages and actors reporting to a full checker set.</summary>
    public sealed class LifecycleHarness : IDisposable
    {
        private readonly Dictionary<long, IStageLink> _stageLinks = [];
        private long _actorInstances;

        public LifecycleHarness(bool flawedReconnect)
        {
            Executor = new ManualExecutor();
            // Timestamps start at 0, as the simulated world's do, so the checkers' times read as in a simulated run.
            Clock = new FakeTimeProvider(DateTimeOffset.MinValue);
            Pool = new MessagePool(new MessagePoolOptions { CheckedMode = true });
            Checkers = new CheckerSet(Clock);
            Workload = new WorkloadCheckers(Checkers);
            Play = new PlayServer("play-1", new NodeSeams(Clock, Executor, new Xoshiro256StarStar(11), Pool) { Observer = Checkers }, new ServerOptions { DefaultStageType = WorkloadScenario.StageType });
            var stageOptions = new WorkloadStageOptions { Checkers = Checkers, Workload = Workload };
            Play.RegisterStage(
                WorkloadScenario.StageType,
                link =>
                {
                    _stageLinks[link.StageId] = link;
                    return flawedReconnect ? new RejoinsOnReconnectStage(link, stageOptions) : new WorkloadStage(link, stageOptions);
                },
                link => new WorkloadActor(link, ++_actorInstances, Workload.Lifecycle));
        }

        public ManualExecutor Executor { get; }

        public FakeTimeProvider Clock { get; }

        public MessagePool Pool { get; }

        public CheckerSet Checkers { get; }

        public WorkloadCheckers Workload { get; }

        public PlayServer Play { get; }

        public Dictionary<int, TestClient> Clients { get; } = [];

        /// <summary>Accounts joined to a stage, with whether each is connected, as the stage itself lists them.</summary>
        public IReadOnlyDictionary<long, bool> ActorsOf(long stageId) =>
            _stageLinks.TryGetValue(stageId, out var link) && Play.HasStage(stageId)
                ? link.Actors.ToDictionary(a => a.Link.AccountId, a => a.Link.IsConnected)
                : new Dictionary<long, bool>();

        public void Leave(long stageId, long account) =>
            _stageLinks[stageId].Actors.Single(a => a.Link.AccountId == account).Link.LeaveStage();

        public void Pump() => Executor.RunUntilIdle();

        public void Dispose() => Play.Dispose();
    }

    /// <summary>A client connection that records replies and whether the server closed it.</summary>
    public sealed class TestClient : IClientConnection
    {
        private readonly LifecycleHarness _harness;
        private ushort _lastSeq;

        public TestClient(LifecycleHarness harness)
        {
            _harness = harness;
            SessionId = harness.Play.Connect(this);
        }

        public long SessionId { get; }

        public bool ClosedByServer { get; private set; }

        public List<(ushort Seq, ushort ErrorCode)> Replies { get; } = [];

        public bool TrySend(string msgId, ushort msgSeq, long stageId, ushort errorCode, Payload payload)
        {
            payload.DisposeIfOwner();
            if (msgSeq != 0)
            {
                Replies.Add((msgSeq, errorCode));
            }

            return true;
        }

        public void Close(string reason) => ClosedByServer = true;

        public ushort Authenticate(long stageId, long account)
        {
            _lastSeq++;
            _harness.Play.OnClientFrame(SessionId, _harness.Play.Options.AuthenticateMsgId, _lastSeq, stageId, _harness.Pool.Copy(BitConverter.GetBytes(account), "auth"));
            return _lastSeq;
        }
    }

    public sealed class LifecycleMachine(bool flawedReconnect) : Machine<LifecycleHarness, LifecycleModel>(25)
    {
        private const int StageCount = 2;
        private const int AccountCount = 3;

        public int Sequences { get; private set; }

        public override Arbitrary<Setup<LifecycleHarness, LifecycleModel>> Setup =>
            Arb.From(Gen.Fresh(() => (Setup<LifecycleHarness, LifecycleModel>)new LifecycleSetup(this)));

        public override TearDown<LifecycleHarness> TearDown => new HarnessTearDown();

        public override Gen<Operation<LifecycleHarness, LifecycleModel>> Next(LifecycleModel model)
        {
            var choices = new List<(int, Gen<Operation<LifecycleHarness, LifecycleModel>>)>
            {
                (5, from stage in Gen.Choose(1, StageCount) from account in Gen.Choose(1, AccountCount) select (Operation<LifecycleHarness, LifecycleModel>)new Join(stage, account)),
                (1, Gen.Choose(1, StageCount).Select(stage => (Operation<LifecycleHarness, LifecycleModel>)new Create(stage))),
            };
            if (!model.OpenClients.IsEmpty)
            {
                choices.Add((3, Gen.Elements(model.OpenClients.ToArray()).Select(c => (Operation<LifecycleHarness, LifecycleModel>)new Disconnect(c))));
            }

            var actors = model.Stages.SelectMany(s => s.Value.Keys.Select(a => (Stage: s.Key, Account: a))).ToArray();
            if (actors.Length > 0)
            {
                choices.Add((1, Gen.Elements(actors).Select(x => (Operation<LifecycleHarness, LifecycleModel>)new Leave(x.Stage, x.Account))));
            }

            if (!model.Stages.IsEmpty)
            {
                choices.Add((1, Gen.Elements(model.Stages.Keys.ToArray()).Select(s => (Operation<LifecycleHarness, LifecycleModel>)new Close(s))));
            }

            return Gen.Frequency(choices);
        }

        private sealed class LifecycleSetup(LifecycleMachine machine) : Setup<LifecycleHarness, LifecycleModel>
        {
            public override LifecycleHarness Actual()
            {
                machine.Sequences++;
                return new LifecycleHarness(machine.FlawedReconnect);
            }

            public override LifecycleModel Model() => LifecycleModel.Empty;

            public override string ToString() => machine.FlawedReconnect ? "play server with a stage that rejoins on reconnect" : "play server with workload stages";
        }

        private sealed class HarnessTearDown : TearDown<LifecycleHarness>
        {
            public override void Actual(LifecycleHarness actual) => actual.Dispose();
        }

        private bool FlawedReconnect => flawedReconnect;
    }

    /// <summary>Checks the server against the model, and every checker of the set (runtime and user level).</summary>
    private static Property Agrees(LifecycleHarness actual, LifecycleModel model, string after)
    {
        var problems = new List<string>();
        if (actual.Play.StageCount != model.Stages.Count)
        {
            problems.Add(string.Create(CultureInfo.InvariantCulture, $"{actual.Play.StageCount} stage(s) live, the model says {model.Stages.Count}"));
        }

        foreach (var (stageId, actors) in model.Stages)
        {
            var real = actual.ActorsOf(stageId);
            var expected = actors.ToDictionary(a => a.Key, a => a.Value.Client is not null);
            if (real.Count != expected.Count || expected.Any(e => !real.TryGetValue(e.Key, out var connected) || connected != e.Value))
            {
                problems.Add($"stage {stageId} has [{string.Join(", ", real.OrderBy(r => r.Key).Select(r => $"{r.Key}{(r.Value ? string.Empty : " (disconnected)")}"))}], the model says [{string.Join(", ", expected.Select(e => $"{e.Key}{(e.Value ? string.Empty : " (disconnected)")}"))}]");
            }
        }

        foreach (var (id, client) in actual.Clients)
        {
            if (client.ClosedByServer == model.OpenClients.Contains(id))
            {
                problems.Add($"client {id} is {(client.ClosedByServer ? "closed" : "open")} on the server, the model says {(model.OpenClients.Contains(id) ? "open" : "closed")}");
            }
        }

        foreach (var violation in actual.Checkers.AllViolations.Take(3))
        {
            problems.Add(violation.ToString());
        }

        if (problems.Count > 0)
        {
            throw new PropertyViolationException($"after {after}: {string.Join("; ", problems)}");
        }

        return Prop.ToProperty(true);
    }

    private sealed class Join(long stage, long account) : Operation<LifecycleHarness, LifecycleModel>
    {
        public override LifecycleModel Run(LifecycleModel model)
        {
            var client = model.NextClient;
            var actors = model.Stages.GetValueOrDefault(stage) ?? ImmutableSortedDictionary<long, ActorModel>.Empty;
            var open = model.OpenClients.Add(client);

            // A reconnect binds the live actor to the new client; the server closes the client it replaced.
            if (actors.TryGetValue(account, out var existing) && existing.Client is { } replaced)
            {
                open = open.Remove(replaced);
            }

            return model with
            {
                NextClient = client + 1,
                OpenClients = open,
                Stages = model.Stages.SetItem(stage, actors.SetItem(account, new ActorModel(client))),
            };
        }

        public override Property Check(LifecycleHarness actual, LifecycleModel model)
        {
            var client = new TestClient(actual);
            actual.Clients[model.NextClient - 1] = client;
            var seq = client.Authenticate(stage, account);
            actual.Pump();
            if (!client.Replies.Contains((seq, ErrorCodes.Success)))
            {
                throw new PropertyViolationException($"{this}: the join was not answered with success ({string.Join(", ", client.Replies)})");
            }

            return Agrees(actual, model, ToString());
        }

        public override string ToString() => $"join stage {stage} as account {account}";
    }

    private sealed class Disconnect(int client) : Operation<LifecycleHarness, LifecycleModel>
    {
        public override bool Pre(LifecycleModel model) => model.OpenClients.Contains(client);

        public override LifecycleModel Run(LifecycleModel model) => model with
        {
            OpenClients = model.OpenClients.Remove(client),
            Stages = model.Stages.ToImmutableSortedDictionary(
                s => s.Key,
                s => s.Value.ToImmutableSortedDictionary(a => a.Key, a => a.Value.Client == client ? new ActorModel(null) : a.Value)),
        };

        public override Property Check(LifecycleHarness actual, LifecycleModel model)
        {
            var session = actual.Clients[client];
            actual.Play.Disconnect(session.SessionId);
            actual.Pump();

            // The server did not close it; the client went away, so it counts as closed from now on.
            session.Close("client disconnected");
            return Agrees(actual, model, ToString());
        }

        public override string ToString() => $"disconnect client {client}";
    }

    private sealed class Leave(long stage, long account) : Operation<LifecycleHarness, LifecycleModel>
    {
        public override bool Pre(LifecycleModel model) => model.Stages.TryGetValue(stage, out var actors) && actors.ContainsKey(account);

        public override LifecycleModel Run(LifecycleModel model) => model with { Stages = model.Stages.SetItem(stage, model.Stages[stage].Remove(account)) };

        public override Property Check(LifecycleHarness actual, LifecycleModel model)
        {
            actual.Leave(stage, account);
            actual.Pump();
            return Agrees(actual, model, ToString());
        }

        public override string ToString() => $"account {account} leaves stage {stage}";
    }

    private sealed class Close(long stage) : Operation<LifecycleHarness, LifecycleModel>
    {
        public override bool Pre(LifecycleModel model) => model.Stages.ContainsKey(stage);

        public override LifecycleModel Run(LifecycleModel model) => model with { Stages = model.Stages.Remove(stage) };

        public override Property Check(LifecycleHarness actual, LifecycleModel model)
        {
            actual.Play.CloseStage(stage).ShouldBeTrue();
            actual.Pump();
            return Agrees(actual, model, ToString());
        }

        public override string ToString() => $"close stage {stage}";
    }

    private sealed class Create(long stage) : Operation<LifecycleHarness, LifecycleModel>
    {
        public override LifecycleModel Run(LifecycleModel model) =>
            model.Stages.ContainsKey(stage) ? model : model with { Stages = model.Stages.Add(stage, ImmutableSortedDictionary<long, ActorModel>.Empty) };

        public override Property Check(LifecycleHarness actual, LifecycleModel model)
        {
            var existed = actual.Play.HasStage(stage);
            var task = actual.Play.CreateStage(WorkloadScenario.StageType, stage, "Create", Payload.Empty);
            actual.Pump();
            task.IsCompleted.ShouldBeTrue();
            using var response = task.Result;
            var expected = existed ? ErrorCodes.StageAlreadyExists : ErrorCodes.Success;
            if (response.ErrorCode != expected)
            {
                throw new PropertyViolationException($"{this}: answered {ErrorCodes.Describe(response.ErrorCode)}, expected {ErrorCodes.Describe(expected)}");
            }

            return Agrees(actual, model, ToString());
        }

        public override string ToString() => $"create stage {stage}";
    }
}
