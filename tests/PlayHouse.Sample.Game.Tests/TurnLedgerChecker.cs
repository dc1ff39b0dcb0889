using PlayHouse.Simulation.Checkers;

namespace PlayHouse.Sample.Game.Tests;

/// <summary>
/// The game's own invariant: a turn is never played twice. Every player reports each played turn it is told of;
/// a player told twice of the same turn of the same room is a violation. Thread-safe (over TCP, pushes arrive on
/// I/O threads).
/// </summary>
public sealed class TurnLedgerChecker(CheckerContext context) : InvariantChecker(CheckerName, context)
{
    public const string CheckerName = "TurnNeverPlayedTwice";

    private readonly Lock _gate = new();
    private readonly HashSet<(long Account, long Room, int Turn)> _seen = [];

    /// <summary>Played turns reported so far.</summary>
    public int TurnsReported { get; private set; }

    /// <summary>Records that <paramref name="account"/> was told turn <paramref name="turn"/> of <paramref name="room"/> was played.</summary>
    public void Played(long account, long room, int turn, int seat, int move)
    {
        lock (_gate)
        {
            TurnsReported++;
            if (!_seen.Add((account, room, turn)))
            {
                Log.Record($"room {room}: turn {turn} was played twice (account {account} was told again: seat {seat}, move {move})");
            }
        }
    }
}
