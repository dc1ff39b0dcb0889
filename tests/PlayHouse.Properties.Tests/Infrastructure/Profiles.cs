namespace PlayHouse.Properties.Tests.Infrastructure;

/// <summary>The generator profile of each property: the scenarios and faults that reach its invariant.</summary>
public static class Profiles
{
    public static WorkloadProfile Fifo { get; } = new()
    {
        Scenarios = ["echo", "send-push", "broadcast", "stage-to-stage", "reconnect"],
    };

    public static WorkloadProfile Handlers { get; } = new()
    {
        Scenarios = ["echo", "stage-to-stage", "api-create", "timers", "broadcast"],
    };

    public static WorkloadProfile ExactlyOnce { get; } = new()
    {
        Scenarios = ["echo", "stage-to-stage", "api-create", "send-push", "reconnect"],
    };

    public static WorkloadProfile Pools { get; } = new()
    {
        Scenarios = ["echo", "send-push", "broadcast", "stage-to-stage", "api-create", "timers", "reconnect"],
    };

    public static WorkloadProfile Rtt { get; } = new()
    {
        Scenarios = ["echo", "send-push", "stage-to-stage", "api-create"],
        EpisodeKinds =
        [
            (4, EpisodeKind.LatencySpike),
            (1, EpisodeKind.LossBurst),
            (3, EpisodeKind.DisconnectClient),
            (1, EpisodeKind.ClogMesh),
        ],
    };

    /// <summary>The RTT profile without warm-up, so only a late or lost reply can trip a tracker.</summary>
    public static WorkloadProfile RttWithoutWarmUp { get; } = Rtt with { WarmUpMax = 0 };

    public static WorkloadProfile Queues { get; } = new()
    {
        Scenarios = ["echo", "send-push", "broadcast", "stage-to-stage", "api-create", "timers"],
        MailboxCapacities = [4, 8, 64, 10_000],
    };

    public static WorkloadProfile Lifecycle { get; } = new()
    {
        Scenarios = ["echo", "broadcast", "reconnect", "api-create"],
        EpisodeKinds =
        [
            (5, EpisodeKind.DisconnectClient),
            (1, EpisodeKind.LatencySpike),
            (1, EpisodeKind.LossBurst),
            (2, EpisodeKind.CrashRestart),
        ],
    };

    /// <summary>
    /// Leaves out api-create: its stages await the API server one message at a time, so a mesh fault piles up a
    /// backlog of calls nobody waits for any more, and draining it can outlast any fixed window after the heal
    /// (head-of-line blocking, reported as a finding rather than judged here). Steady loss that resets connections
    /// is left out too: it is a fault that never heals.
    /// </summary>
    public static WorkloadProfile Liveness { get; } = new()
    {
        Scenarios = ["echo", "send-push", "stage-to-stage", "reconnect"],
        SteadyResets = false,
    };
}
