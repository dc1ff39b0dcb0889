using PlayHouse.Simulation.Clients;

namespace PlayHouse.Sample.Game.Tests;

/// <summary>The game's connection over a simulated client.</summary>
public sealed class SimGameConnection(SimClient client, TimeSpan requestTimeout) : IGameConnection
{
    public bool Request(string msgId, long stageId, ReadOnlySpan<byte> payload, Action<GameReply> onReply) =>
        client.Request(msgId, stageId, payload, requestTimeout, (_, reply) => onReply(new GameReply(reply.ErrorCode, reply.TimedOut, reply.Payload))) != 0;
}
