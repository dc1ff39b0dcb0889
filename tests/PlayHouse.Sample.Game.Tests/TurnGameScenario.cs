using System.Globalization;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Seams;
using PlayHouse.Simulation.Checkers;
using PlayHouse.Simulation.Cluster;
using PlayHouse.Simulation.Runs;

namespace PlayHouse.Sample.Game.Tests;

/// <summary>
/// The game as a simulation scenario: one play server with the lobby and the rooms, one API server that makes
/// rooms, and one scripted player per simulated client (an even number: players come in pairs). The run is done
/// when every player finished its game or gave up; the built-in checkers watch the runtime throughout, the
/// <see cref="TurnLedgerChecker"/> watches the turns, and at quiescence every player must have finished.
/// </summary>
public sealed class TurnGameScenario(GameOptions game) : IScenario
{
    public TurnGameScenario()
        : this(new GameOptions())
    {
    }

    public GameOptions Game { get; } = game;

    public string Name => "turn-game";

    public string Description => "players meet in the lobby, are paired into rooms by the API server and play to 21 against a turn timer";

    public SimOptions Defaults { get; } = new()
    {
        Scenario = "turn-game",
        Clients = 4,
        LatencyMsMin = 1,
        LatencyMsMean = 20,
        LatencyMsMax = 80,
        LossPercent = 1,
        VirtualTimeLimitMs = 300_000,
    };

    /// <summary>The ledger of the current run (after <see cref="Start"/>).</summary>
    public TurnLedgerChecker? Ledger { get; private set; }

    public void Configure(SimClusterBuilder builder, SimOptions options)
    {
        ArgumentNullException.ThrowIfNull(builder);
        ArgumentNullException.ThrowIfNull(options);
        if (options.Clients % 2 != 0 || options.PlayServers != 1 || options.ApiServers != 1)
        {
            throw new ArgumentException($"The turn game needs an even number of clients, one play server and one API server (clients={options.Clients}, playServers={options.PlayServers}, apiServers={options.ApiServers}).", nameof(options));
        }

        builder
            .WithServerOptions(GameServer.ServerOptions(Game, TimeSpan.FromMilliseconds(options.RequestTimeoutMs)))
            .WithStage(LobbyStage.StageType, GameServer.Lobby(Game), GameServer.Player)
            .WithStage(RoomStage.StageType, GameServer.Room(Game), GameServer.Player)
            .WithApiHandlers(api => api.HandleCreateRoom(Game));
    }

    public IScenarioRun Start(SimCluster cluster, ScenarioContext context)
    {
        ArgumentNullException.ThrowIfNull(cluster);
        ArgumentNullException.ThrowIfNull(context);
        Ledger = new TurnLedgerChecker(context.Checkers.Context);
        context.Checkers.Add(Ledger);
        var outcome = new OutcomeChecker(context.Checkers.Context, Name);
        context.Checkers.Add(outcome);
        var run = new Run(cluster, Game);
        outcome.Run = run;
        for (var i = 0; i < cluster.Clients.Count; i++)
        {
            var client = cluster.Clients[i];

            // Each player draws from its own generator, seeded from the workload's, so one player's draws never
            // shift another's.
            var script = new PlayerScript(i + 1L, new SimGameConnection(client, TimeSpan.FromMilliseconds(Game.RequestTimeoutMs)), Game, cluster.World.Time, new Xoshiro256StarStar(context.Random.NextUInt64()))
            {
                TurnSeen = (s, room, turn, seat, move) => Ledger.Played(s.AccountId, room, turn, seat, move),
            };
            client.PushReceived = (_, msgId, stageId, payload) => script.OnPush(msgId, stageId, payload.Span);
            run.Scripts.Add(script);
        }

        run.Begin();
        return run;
    }

    private sealed class Run(SimCluster cluster, GameOptions game) : IScenarioRun
    {
        public List<PlayerScript> Scripts { get; } = [];

        public bool LobbyFailed { get; private set; }

        public bool IsDone => LobbyFailed || Scripts.TrueForAll(s => s.IsDone);

        public string Progress => string.Create(CultureInfo.InvariantCulture, $"{Scripts.Count(s => s.State == ScriptState.Finished)}/{Scripts.Count} players finished");

        public IReadOnlyList<KeyValuePair<string, string>> Metrics =>
        [
            Metric("players", Scripts.Count),
            Metric("players.finished", Scripts.Count(s => s.State == ScriptState.Finished)),
            Metric("players.gaveUp", Scripts.Count(s => s.State == ScriptState.GaveUp)),
            Metric("requests.succeeded", Scripts.Sum(s => s.MovesAccepted)),
            Metric("moves.sent", Scripts.Sum(s => s.MovesSent)),
            Metric("moves.rejected", Scripts.Sum(s => s.MovesRejected)),
            Metric("turns.seen", Scripts.Sum(s => s.TurnsSeen)),
        ];

        /// <summary>Creates the lobby, then connects every player and starts its script.</summary>
        public async void Begin()
        {
            // Runs on the simulation thread (the runner starts scenarios in the world's context).
            var play = cluster.PlayServers.Single();
            using var lobby = await play.Play!.CreateStage(LobbyStage.StageType, game.LobbyStageId, "CreateLobby", Payload.Empty);
            if (!lobby.IsSuccess)
            {
                LobbyFailed = true;
                return;
            }

            foreach (var (client, script) in cluster.Clients.Zip(Scripts))
            {
                client.Connect(play.ClientEndpoint);
                script.Start();
            }
        }

        public void OnFault(FaultStep step)
        {
        }

        public void Finish()
        {
            foreach (var script in Scripts)
            {
                script.Stop();
            }

            foreach (var client in cluster.Clients)
            {
                client.Disconnect("run finished");
            }

            cluster.PlayServers.Single().Play!.CloseStage(game.LobbyStageId);
        }

        public string? Problem() =>
            LobbyFailed ? "the lobby could not be created"
            : Scripts.FirstOrDefault(s => s.State != ScriptState.Finished) is { } player ? $"player {player.AccountId} did not finish its game: {player.State} {player.Problem}"
            : null;

        private static KeyValuePair<string, string> Metric(string key, long value) => new(key, value.ToString(CultureInfo.InvariantCulture));
    }

    /// <summary>At quiescence: every player finished its game.</summary>
    private sealed class OutcomeChecker(CheckerContext context, string name) : InvariantChecker("Scenario:" + name, context)
    {
        public Run? Run { get; set; }

        public override void CheckQuiescent()
        {
            if (Run?.Problem() is { } problem)
            {
                Log.Record(problem);
            }
        }
    }
}
