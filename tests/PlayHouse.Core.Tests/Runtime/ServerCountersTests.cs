using PlayHouse.Core.Runtime;

namespace PlayHouse.Core.Tests.Runtime;

/// <summary>
/// The server's outcome counters: each one counts only its own outcome, and the snapshot lists every counter once, by
/// name in name order, with the value its property reads.
/// </summary>
public sealed class ServerCountersTests
{
    // Each counter with the call that counts its outcome once (the two that take an amount are given 2).
    private static readonly Dictionary<string, Action<ServerCounters>> Counts = new()
    {
        { nameof(ServerCounters.MailboxRefused), c => c.AddMailboxRefused() },
        { nameof(ServerCounters.UnknownStageRequests), c => c.AddUnknownStageRequest() },
        { nameof(ServerCounters.UnknownStageSends), c => c.AddUnknownStageSend() },
        { nameof(ServerCounters.LateReplies), c => c.AddLateReply() },
        { nameof(ServerCounters.DuplicateReplies), c => c.AddDuplicateReply() },
        { nameof(ServerCounters.UnknownReplies), c => c.AddUnknownReply() },
        { nameof(ServerCounters.MisaddressedReplies), c => c.AddMisaddressedReply() },
        { nameof(ServerCounters.RequestTimeouts), c => c.AddRequestTimeout() },
        { nameof(ServerCounters.SelfRequestsRefused), c => c.AddSelfRequestRefused() },
        { nameof(ServerCounters.CycleRequestsRefused), c => c.AddCycleRequestRefused() },
        { nameof(ServerCounters.PendingRequestsRefused), c => c.AddPendingRequestRefused() },
        { nameof(ServerCounters.TimerTicksCoalesced), c => c.AddTimerTickCoalesced() },
        { nameof(ServerCounters.GameLoopStepsDropped), c => c.AddGameLoopStepsDropped(2) },
        { nameof(ServerCounters.HandlerFailures), c => c.AddHandlerFailure() },
        { nameof(ServerCounters.ClientSendsRefused), c => c.AddClientSendRefused() },
        { nameof(ServerCounters.ClientPushesToDisconnected), c => c.AddClientPushToDisconnected() },
        { nameof(ServerCounters.RepliesToClosedSessions), c => c.AddReplyToClosedSession() },
        { nameof(ServerCounters.SessionsClosedBeforeAuthentication), c => c.AddSessionClosedBeforeAuthentication() },
        { nameof(ServerCounters.ClientMessagesBeforeAuthentication), c => c.AddClientMessageBeforeAuthentication() },
        { nameof(ServerCounters.SecondReplyAttempts), c => c.AddSecondReplyAttempt() },
        { nameof(ServerCounters.OffStageRefused), c => c.AddOffStageRefused() },
        { nameof(ServerCounters.UnknownApiMessages), c => c.AddUnknownApiMessage() },
        { nameof(ServerCounters.MeshSendsToUnknownServers), c => c.AddMeshSendToUnknownServer() },
        { nameof(ServerCounters.MeshSendsRefused), c => c.AddMeshSendRefused() },
        { nameof(ServerCounters.OffStageResultsDiscarded), c => c.AddOffStageResultDiscarded() },
        { nameof(ServerCounters.UnansweredRequestsRefused), c => c.AddUnansweredRequestRefused() },
        { nameof(ServerCounters.UnansweredRequestsExpired), c => c.AddUnansweredRequestsExpired(2) },
        { nameof(ServerCounters.RepliesAfterExpiry), c => c.AddReplyAfterExpiry() },
        { nameof(ServerCounters.StagesRefusedAtCap), c => c.AddStageRefusedAtCap() },
        { nameof(ServerCounters.JoinsRefusedAtCap), c => c.AddJoinRefusedAtCap() },
        { nameof(ServerCounters.DisconnectedActorsExpired), c => c.AddDisconnectedActorExpired() },
        { nameof(ServerCounters.DisconnectedActorsEvictedAtCap), c => c.AddDisconnectedActorEvictedAtCap() },
        { nameof(ServerCounters.EmptyStagesClosedAtCap), c => c.AddEmptyStageClosedAtCap() },
        { nameof(ServerCounters.IdleStagesClosed), c => c.AddIdleStageClosed() },
        { nameof(ServerCounters.RequestsExpiredInMailbox), c => c.AddRequestExpiredInMailbox() },
        { nameof(ServerCounters.SendsExpiredInMailbox), c => c.AddSendExpiredInMailbox() },
    };

    [Fact]
    public void EachCounter_CountsOnlyItsOwnOutcome_AndTheSnapshotReadsItByName()
    {
        var counters = new ServerCounters();
        var expected = new Dictionary<string, long>();
        var index = 0;
        foreach (var (name, count) in Counts)
        {
            // A different number of outcomes per counter, so two counters that share a field could not both match.
            index++;
            for (var i = 0; i < index; i++)
            {
                count(counters);
            }

            expected[name] = name is nameof(ServerCounters.GameLoopStepsDropped) or nameof(ServerCounters.UnansweredRequestsExpired) ? 2 * index : index;
        }

        var snapshot = counters.Snapshot();
        var properties = typeof(ServerCounters).GetProperties().Where(p => p.PropertyType == typeof(long)).ToDictionary(p => p.Name, p => (long)p.GetValue(counters)!);

        Assert.Equal(expected.Keys.Order(StringComparer.Ordinal), snapshot.Select(c => c.Key));
        Assert.All(snapshot, c => Assert.Equal(expected[c.Key], c.Value));
        Assert.Equal(expected.OrderBy(c => c.Key, StringComparer.Ordinal), properties.OrderBy(c => c.Key, StringComparer.Ordinal));
    }

    [Fact]
    public void FreshCounters_AreAllZero()
    {
        var snapshot = new ServerCounters().Snapshot();

        Assert.Equal(Counts.Count, snapshot.Count);
        Assert.All(snapshot, c => Assert.Equal(0, c.Value));
    }
}
