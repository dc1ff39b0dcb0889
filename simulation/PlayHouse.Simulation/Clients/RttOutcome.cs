namespace PlayHouse.Simulation.Clients;

/// <summary>What a tracker made of one reply.</summary>
public enum RttOutcome
{
    /// <summary>The reply answered a request still in flight; its round trip was counted.</summary>
    Matched,

    /// <summary>The reply answered a request that had already timed out (and was counted as lost).</summary>
    Late,

    /// <summary>The reply answered a request that had already been matched or answered late.</summary>
    Duplicate,

    /// <summary>No request with this sequence was sent, or its slot has since been reused.</summary>
    Unknown,
}
