namespace PlayHouse.Simulation.Clients;

/// <summary>
/// Counts of one phase (warm-up or measured) of an <see cref="RttTracker"/>, by the phase the request was sent
/// in. They balance at any time: <c>Sent == Matched + Lost + InFlight</c>.
/// </summary>
public readonly record struct RttPhaseCounts(long Sent, long Matched, long Lost, int InFlight, long Late, long Duplicate)
{
    /// <summary>True when every request sent in this phase is matched, lost or still in flight, exactly once.</summary>
    public bool IsBalanced => Sent == Matched + Lost + InFlight;
}
