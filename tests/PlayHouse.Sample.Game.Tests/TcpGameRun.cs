using PlayHouse.Core.Pooling;
using PlayHouse.Core.Seams;
using PlayHouse.Simulation.Checkers;
using PlayHouse.Transport.Tcp;

namespace PlayHouse.Sample.Game.Tests;

/// <summary>What a game over loopback TCP did.</summary>
public sealed record TcpGameReport(IReadOnlyList<CheckerVerdict> Verdicts, IReadOnlyList<PlayerScript> Players, bool Quiesced, int TurnsReported)
{
    public IEnumerable<CheckerVerdict> Failed => Verdicts.Where(v => !v.Passed);
}

/// <summary>
/// The same game, client script and checkers over real sockets: a <see cref="TcpCluster"/> (one play server, one API
/// server, TCP mesh) on the thread pool and the system clock, one <see cref="TcpPlayClient"/> per player. Not
/// replayable (real time and threads), so it is judged by the same invariants, not by a trace.
/// </summary>
public static class TcpGameRun
{
    public static async Task<TcpGameReport> RunAsync(int pairs, GameOptions game, TimeSpan timeLimit)
    {
        ArgumentNullException.ThrowIfNull(game);
        var time = TimeProvider.System;
        var checkers = new CheckerSet(time, new CheckerSetOptions { LivenessWindow = timeLimit });
        var ledger = new TurnLedgerChecker(checkers.Context);
        checkers.Add(ledger);
        var players = new List<PlayerScript>();
        var clients = new List<TcpPlayClient>();
        var cluster = new TcpClusterBuilder()
            .WithPlayServers(1)
            .WithApiServers(1)
            .WithTime(time)
            .WithServerOptions(GameServer.ServerOptions(game, TimeSpan.FromSeconds(10)))
            .WithStage(LobbyStage.StageType, GameServer.Lobby(game), GameServer.Player)
            .WithStage(RoomStage.StageType, GameServer.Room(game), GameServer.Player)
            .WithApiHandlers(api => api.HandleCreateRoom(game))
            .WithObserver(_ => checkers)
            .Build();
        var quiesced = false;
        try
        {
            foreach (var node in cluster.Nodes)
            {
                checkers.Queues.WatchMailboxes(node.Server, checkers.Options.MailboxInternalEntriesAllowance);
            }

            using (var lobby = await cluster.PlayServers.Single().Play!.CreateStage(LobbyStage.StageType, game.LobbyStageId, "CreateLobby", Payload.Empty))
            {
                Assert.True(lobby.IsSuccess, $"the lobby could not be created: {lobby}");
            }

            var seeds = new Xoshiro256StarStar(1);
            for (var i = 0; i < pairs * 2; i++)
            {
                var client = await cluster.ConnectClientAsync(options: new TcpPlayClientOptions { RequestTimeout = TimeSpan.FromMilliseconds(game.RequestTimeoutMs) });
                clients.Add(client);
                var script = new PlayerScript(i + 1L, new TcpGameConnection(client), game, time, new Xoshiro256StarStar(seeds.NextUInt64()))
                {
                    TurnSeen = (s, room, turn, seat, move) => ledger.Played(s.AccountId, room, turn, seat, move),
                };
                client.PushReceived = (_, in push) => script.OnPush(push.MsgId, push.StageId, push.Payload.Span);
                players.Add(script);
            }

            players.ForEach(p => p.Start());
            var deadline = time.GetTimestamp() + (long)(timeLimit.TotalSeconds * time.TimestampFrequency);
            while (!players.TrueForAll(p => p.IsDone) && time.GetTimestamp() < deadline)
            {
                await Task.Delay(TimeSpan.FromMilliseconds(10), time);
            }

            players.ForEach(p => p.Stop());
            foreach (var client in clients)
            {
                client.Dispose();
            }

            cluster.PlayServers.Single().Play!.CloseStage(game.LobbyStageId);
            quiesced = await cluster.QuiesceAsync(TimeSpan.FromSeconds(20));
            foreach (var (name, pool) in cluster.LivePools())
            {
                checkers.Pools.Add("pool of " + name, pool);
            }

            checkers.CheckQuiescent();
        }
        finally
        {
            await cluster.DisposeAsync();
        }

        return new TcpGameReport(checkers.Verdicts, players, quiesced, ledger.TurnsReported);
    }

    private sealed class TcpGameConnection(TcpPlayClient client) : IGameConnection
    {
        public bool Request(string msgId, long stageId, ReadOnlySpan<byte> payload, Action<GameReply> onReply) =>
            client.Request(msgId, stageId, payload, static (_, in reply) => ((Action<GameReply>)reply.State!)(new GameReply(reply.ErrorCode, reply.TimedOut || reply.Disconnected, reply.Payload)), onReply) != 0;
    }
}
