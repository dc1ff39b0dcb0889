using Microsoft.Extensions.Time.Testing;
using PlayHouse.Core.Runtime;
using PlayHouse.Simulation.Checkers;

namespace PlayHouse.Simulation.Tests.Checkers;

public sealed class ExactlyOnceRequestCheckerTests
{
    private readonly FakeTimeProvider _clock = CheckerClock.AtZero();

    // ---- Node requests ----

    [Fact]
    public void ExactlyOnce_CompletionWithoutIssue_ReportsNodeAndRequest()
    {
        var checker = new ExactlyOnceRequestChecker(_clock);
        checker.OnRequestCompleted("play-1", 9, "api-1", RequestOutcome.Replied, 0);

        var violation = Assert.Single(checker.Violations);
        Assert.Equal("node play-1: request #9 to api-1 completed without having been issued (Replied, error 0)", violation.Message);
    }

    [Fact]
    public void ExactlyOnce_SecondCompletion_IsReported()
    {
        var checker = new ExactlyOnceRequestChecker(_clock);
        checker.OnRequestIssued("play-1", 1, "api-1", 0, "Lookup");
        checker.OnRequestCompleted("play-1", 1, "api-1", RequestOutcome.TimedOut, ErrorCodes.RequestTimeout);
        checker.OnRequestCompleted("play-1", 1, "api-1", RequestOutcome.Replied, 0);

        var violation = Assert.Single(checker.Violations);
        Assert.Contains("node play-1: request #1 to api-1 completed a second time (Replied, error 0)", violation.Message, StringComparison.Ordinal);
        Assert.Equal(1, checker.CompletedCount);
    }

    [Fact]
    public void ExactlyOnce_SecondCompletionOfAnOldRequest_IsStillCaughtAfterCompaction()
    {
        var checker = new ExactlyOnceRequestChecker(_clock);
        for (ulong seq = 1; seq <= 5; seq++)
        {
            checker.OnRequestIssued("play-1", seq, "play-2", 10, "Ping");
        }

        // Out of order, so some completions wait above the prefix before it catches up.
        foreach (var seq in new ulong[] { 3, 1, 2, 5, 4 })
        {
            checker.OnRequestCompleted("play-1", seq, "play-2", RequestOutcome.Replied, 0);
        }

        Assert.False(checker.HasViolations);
        checker.OnRequestCompleted("play-1", 2, "play-2", RequestOutcome.Replied, 0);
        checker.OnRequestCompleted("play-1", 6, "play-2", RequestOutcome.Replied, 0);

        Assert.Equal(2, checker.ViolationCount);
        Assert.Contains("request #2 to play-2 completed a second time", checker.Violations[0].Message, StringComparison.Ordinal);
        Assert.Contains("request #6 to play-2 completed without having been issued", checker.Violations[1].Message, StringComparison.Ordinal);
    }

    [Fact]
    public void ExactlyOnce_IssuedRequestNeverCompleted_IsReportedAtQuiescenceOnce()
    {
        var checker = new ExactlyOnceRequestChecker(_clock);
        _clock.Advance(TimeSpan.FromSeconds(1));
        checker.OnRequestIssued("api-1", 4, "play-1", 12, "Ping");
        checker.CheckStep();
        Assert.False(checker.HasViolations);

        checker.CheckQuiescent();
        checker.CheckQuiescent();

        var violation = Assert.Single(checker.Violations);
        Assert.Equal("node api-1: request #4 ('Ping' to play-1/12, issued at 00:00:01) never completed: no reply, timeout or error", violation.Message);
        Assert.Equal(1, checker.PendingCount);
    }

    [Fact]
    public void ExactlyOnce_SameIdIssuedTwice_IsReported()
    {
        var checker = new ExactlyOnceRequestChecker(_clock);
        checker.OnRequestIssued("play-1", 1, "api-1", 0, "Lookup");
        checker.OnRequestIssued("play-1", 1, "api-1", 0, "Lookup");

        var violation = Assert.Single(checker.Violations);
        Assert.Contains("node play-1: request #1 ('Lookup' to api-1/0) was issued twice", violation.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void ExactlyOnce_CompletedAsRequestToAnotherNode_IsReported()
    {
        var checker = new ExactlyOnceRequestChecker(_clock);
        checker.OnRequestIssued("play-1", 1, "api-1", 0, "Lookup");
        checker.OnRequestCompleted("play-1", 1, "api-2", RequestOutcome.Replied, 0);

        var violation = Assert.Single(checker.Violations);
        Assert.Contains("request #1 ('Lookup') was issued to api-1 but completed as a request to api-2", violation.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void ExactlyOnce_EveryIssuedRequestCompletedOnceAndRefusalsBeforeIssue_Passes()
    {
        var checker = new ExactlyOnceRequestChecker(_clock);
        checker.OnRequestIssued("play-1", 1, "api-1", 0, "Lookup");
        checker.OnRequestIssued("api-1", 1, "play-1", 5, "Ping");
        checker.OnRequestIssued("play-1", 2, "play-1", 6, "Ping");
        checker.OnRequestCompleted("api-1", 1, "play-1", RequestOutcome.Replied, 0);
        checker.OnRequestCompleted("play-1", 2, "play-1", RequestOutcome.FailedFast, ErrorCodes.RequestCycle);
        checker.OnRequestCompleted("play-1", 1, "api-1", RequestOutcome.TimedOut, ErrorCodes.RequestTimeout);

        // A self request fails fast before it gets an id: it completes with seq 0 and was never issued.
        checker.OnRequestCompleted("play-1", 0, "play-1", RequestOutcome.FailedFast, ErrorCodes.SelfRequest);
        checker.CheckQuiescent();

        Assert.False(checker.HasViolations);
        Assert.Equal(3, checker.IssuedCount);
        Assert.Equal(3, checker.CompletedCount);
        Assert.Equal(1, checker.RefusedBeforeIssueCount);
        Assert.Equal(0, checker.PendingCount);
    }

    // ---- Client requests ----

    [Fact]
    public void ExactlyOnce_ClientReplyCarryingAnotherNonce_ReportsMisPairing()
    {
        var checker = new ExactlyOnceRequestChecker(_clock);
        checker.OnClientRequestSent(clientId: 3, requestKey: 17, nonce: 1001);
        checker.OnClientRequestSent(clientId: 3, requestKey: 18, nonce: 1002);
        checker.OnClientRequestCompleted(3, 17, replyNonce: 1002);

        var violation = Assert.Single(checker.Violations);
        Assert.Equal("client 3: request key 17 (nonce 1001) completed with the reply to nonce 1002 (mis-paired reply)", violation.Message);
    }

    [Fact]
    public void ExactlyOnce_ClientRequestCompletedTwice_ReportsBothCompletions()
    {
        var checker = new ExactlyOnceRequestChecker(_clock);
        checker.OnClientRequestSent(3, 17, 1001);
        checker.OnClientRequestFailed(3, 17, ErrorCodes.RequestTimeout);
        checker.OnClientRequestCompleted(3, 17, 1001);

        var violation = Assert.Single(checker.Violations);
        Assert.Equal($"client 3: request key 17 (nonce 1001) completed a second time (reply nonce 1001); it had completed with error {ErrorCodes.RequestTimeout}", violation.Message);
        Assert.Equal(1, checker.ClientCompletedCount);
    }

    [Fact]
    public void ExactlyOnce_ClientCompletionOfUnsentRequest_IsReported()
    {
        var checker = new ExactlyOnceRequestChecker(_clock);
        checker.OnClientRequestCompleted(3, 17, 1001);

        Assert.Equal("client 3: request key 17 completed (reply nonce 1001) but was never sent", Assert.Single(checker.Violations).Message);
    }

    [Fact]
    public void ExactlyOnce_ClientKeyReusedWhileOutstanding_IsReported()
    {
        var checker = new ExactlyOnceRequestChecker(_clock);
        checker.OnClientRequestSent(3, 17, 1001);
        checker.OnClientRequestSent(3, 17, 66_537);

        Assert.Equal("client 3: request key 17 reused for nonce 66537 while nonce 1001 was still outstanding", Assert.Single(checker.Violations).Message);
    }

    [Fact]
    public void ExactlyOnce_ClientRequestNeverCompleted_IsReportedAtQuiescence()
    {
        var checker = new ExactlyOnceRequestChecker(_clock);
        checker.OnClientRequestSent(4, 2, 2002);
        checker.OnClientRequestSent(3, 9, 1009);
        checker.CheckStep();
        Assert.False(checker.HasViolations);

        checker.CheckQuiescent();

        Assert.Equal(2, checker.ViolationCount);
        Assert.Equal("client 3: request key 9 (nonce 1009, sent at 00:00:00) never completed: no reply, error or timeout", checker.Violations[0].Message);
        Assert.StartsWith("client 4: request key 2 (nonce 2002", checker.Violations[1].Message, StringComparison.Ordinal);
    }

    [Fact]
    public void ExactlyOnce_ClientRequestsEachCompletedOnceWithOwnNonce_Passes()
    {
        var checker = new ExactlyOnceRequestChecker(_clock);
        checker.OnClientRequestSent(3, 1, 1001);
        checker.OnClientRequestSent(3, 2, 1002);
        checker.OnClientRequestSent(4, 1, 2001);
        checker.OnClientRequestCompleted(3, 2, 1002);
        checker.OnClientRequestFailed(4, 1, ErrorCodes.StageNotFound);
        checker.OnClientRequestCompleted(3, 1, 1001);

        // A key may be reused once its request completed (a 16-bit sequence wrapping with nothing pending).
        checker.OnClientRequestSent(3, 1, 66_537);
        checker.OnClientRequestCompleted(3, 1, 66_537);
        checker.CheckQuiescent();

        Assert.False(checker.HasViolations);
        Assert.Equal(4, checker.ClientSentCount);
        Assert.Equal(4, checker.ClientCompletedCount);
        Assert.Equal(0, checker.ClientOutstandingCount);
    }

    [Fact]
    public void ExactlyOnce_ManyClientRequestsCompleted_HoldsOnlyTheOutstandingOnes()
    {
        var checker = new ExactlyOnceRequestChecker(_clock);
        checker.OnClientRequestSent(3, 1, 1);
        for (long key = 2; key <= 10_000; key++)
        {
            checker.OnClientRequestSent(3, key, key);
            checker.OnClientRequestCompleted(3, key, key);
        }

        // Key 1 is still open, so everything after it waits above the watermark; its completion folds them all in.
        Assert.Equal(10_000, checker.ClientHeldCount);
        checker.OnClientRequestCompleted(3, 1, 1);

        Assert.Equal(0, checker.ClientHeldCount);
        Assert.False(checker.HasViolations);
    }

    [Fact]
    public void ExactlyOnce_SecondCompletionOfALongCompactedClientRequest_IsStillReported()
    {
        var checker = new ExactlyOnceRequestChecker(_clock);
        for (long key = 1; key <= 100; key++)
        {
            checker.OnClientRequestSent(3, key, key * 10);
            checker.OnClientRequestCompleted(3, key, key * 10);
        }

        checker.OnClientRequestCompleted(3, 5, 50);
        checker.OnClientRequestFailed(3, 99, ErrorCodes.RequestTimeout);
        checker.OnClientRequestCompleted(3, 101, 1010);

        Assert.Equal(3, checker.ViolationCount);
        Assert.Equal("client 3: request key 5 completed a second time (reply nonce 50); it had completed before", checker.Violations[0].Message);
        Assert.Equal($"client 3: request key 99 (nonce 990) completed a second time (error {ErrorCodes.RequestTimeout}); it had completed with reply nonce 990", checker.Violations[1].Message);
        Assert.Equal("client 3: request key 101 completed (reply nonce 1010) but was never sent", checker.Violations[2].Message);
        Assert.Equal(100, checker.ClientCompletedCount);
    }

    [Fact]
    public void ExactlyOnce_ReusedKeyBelowTheWatermark_IsTrackedAgainUntilItCompletes()
    {
        var checker = new ExactlyOnceRequestChecker(_clock);
        checker.OnClientRequestSent(3, 1, 11);
        checker.OnClientRequestCompleted(3, 1, 11);
        checker.OnClientRequestSent(3, 1, 12);

        Assert.Equal(1, checker.ClientOutstandingCount);
        checker.OnClientRequestCompleted(3, 1, 13);
        checker.OnClientRequestCompleted(3, 1, 12);
        checker.OnClientRequestSent(3, 2, 21);
        checker.CheckQuiescent();

        Assert.Equal(3, checker.ViolationCount);
        Assert.Equal("client 3: request key 1 (nonce 12) completed with the reply to nonce 13 (mis-paired reply)", checker.Violations[0].Message);
        Assert.Equal("client 3: request key 1 (nonce 12) completed a second time (reply nonce 12); it had completed with reply nonce 13", checker.Violations[1].Message);
        Assert.StartsWith("client 3: request key 2 (nonce 21", checker.Violations[2].Message, StringComparison.Ordinal);
    }
}
