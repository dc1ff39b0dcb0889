using System.Runtime.CompilerServices;

namespace PlayHouse.Core.Runtime;

/// <summary>
/// Sheds a message that comes up for dispatch past its deadline (<see cref="StageMessage.StaleAtTimestamp"/>) instead of
/// dispatching it: a request gets its one reply, <see cref="ErrorCodes.RequestExpired"/>; a one-way message is dropped.
/// Either way it is counted and its payload released, and no handler starts for it.
/// </summary>
/// <remarks>
/// Its requester has given up (a mesh request past the deadline it carried) or is assumed to have (a client message
/// older than <see cref="ServerOptions.ClientMessageQueueTimeMax"/>): running the handler would only spend the stage's
/// time on an answer that arrives too late, while the requests behind it wait longer still.
/// Invariant: a message is either shed or dispatched, never both; the turn loop asks <see cref="IsStale"/> once, as it
/// dequeues, and hands a stale message to <see cref="Shed"/> instead of a handler.
/// Threading: stateless; called from the stage's turns.
/// </remarks>
internal static class StaleMessageShedding
{
    /// <summary>True when a message stale from <paramref name="staleAtTimestamp"/> (0: never) is stale now.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static bool IsStale(long staleAtTimestamp, TimeProvider time) =>
        staleAtTimestamp != 0 && time.GetTimestamp() >= staleAtTimestamp;

    /// <summary>Answers or drops <paramref name="message"/>, counts it and releases its payload.</summary>
    /// <remarks>Out of line: it is the rare path of the turn loop.</remarks>
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void Shed(StageHost stage, ref StageMessage message)
    {
        stage.AssertInTurn(nameof(Shed));
        if (message.StaleAtTimestamp == 0)
        {
            throw new InvalidOperationException($"Stage {stage.StageId} shed a message with no deadline ({message.Kind} {message.MsgId}).");
        }

        var server = stage.Server;
        if (message.Reply.IsRequest)
        {
            stage.Counters.AddRequestExpiredInMailbox();
            server.TryReplyError(message.Reply, ErrorCodes.RequestExpired, stage.StageId);
        }
        else
        {
            stage.Counters.AddSendExpiredInMailbox();
        }

        server.Observer.OnDropped(stage.NodeId, nameof(ErrorCodes.RequestExpired), message.MsgId);
        message.Payload.DisposeIfOwner();
    }
}
