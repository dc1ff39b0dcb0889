namespace PlayHouse.Simulation.Clients;

/// <summary>
/// Round-trip tracking of one client: the client asks before each send, reports each reply, and expires
/// requests periodically. <see cref="RttTracker"/> is the correct implementation; the fixtures' flawed
/// <c>FifoRttTracker</c> models PlayHouse's original flaw (bug B1) so checkers can be shown to catch it.
/// </summary>
/// <remarks>Not thread-safe; one tracker per client.</remarks>
public interface IRttTracker
{
    /// <summary>
    /// Registers a request about to be sent. False means the client must not send it now (see the
    /// implementation for the reasons).
    /// </summary>
    bool TryBeginRequest(ushort seq, long sentTicks);

    /// <summary>Classifies a reply and, when it is matched, records its round trip.</summary>
    RttOutcome OnReply(ushort seq, long receivedTicks);

    /// <summary>
    /// Classifies a reply and, when it is matched, records its round trip and returns it in
    /// <paramref name="rttTicks"/> (0 otherwise), for trace lines and for checking against ground truth.
    /// </summary>
    RttOutcome OnReply(ushort seq, long receivedTicks, out long rttTicks);

    /// <summary>Releases requests sent at least <paramref name="timeout"/> before <paramref name="nowTicks"/>;
    /// returns how many were released.</summary>
    int ExpireOlderThan(long nowTicks, TimeSpan timeout);

    /// <summary>Ends the warm-up: requests (or, for the flawed tracker, replies) from now on are measured.</summary>
    void BeginMeasuredPhase();

    /// <summary>True once <see cref="BeginMeasuredPhase"/> has been called.</summary>
    bool IsMeasuring { get; }

    /// <summary>Requests begun.</summary>
    long Sent { get; }

    /// <summary>Replies matched to a request in flight.</summary>
    long Matched { get; }

    /// <summary>Replies to requests that had already timed out.</summary>
    long Late { get; }

    /// <summary>Extra copies of replies already matched or answered late.</summary>
    long Duplicate { get; }

    /// <summary>Replies that matched no request.</summary>
    long Unknown { get; }

    /// <summary>Requests released by a timeout.</summary>
    long Lost { get; }

    /// <summary>Matched replies counted as warm-up (not recorded in the measured histogram).</summary>
    long WarmUpMatched { get; }

    /// <summary>Matched replies recorded in the measured histogram.</summary>
    long MeasuredMatched { get; }

    /// <summary>Requests (or timestamps) currently held by the tracker.</summary>
    int InFlight { get; }

    /// <summary>The most requests (or timestamps) the tracker has held at once.</summary>
    int InFlightHighWater { get; }
}
