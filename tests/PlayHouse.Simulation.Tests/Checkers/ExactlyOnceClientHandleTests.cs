using Microsoft.Extensions.Time.Testing;
using PlayHouse.Core.Runtime;
using PlayHouse.Simulation.Checkers;

namespace PlayHouse.Simulation.Tests.Checkers;

/// <summary>
/// The <see cref="ClientRequests"/> handle of <see cref="ExactlyOnceRequestChecker"/>: the runs report every client
/// request through it, so it must judge exactly as the calls by client id do, share their ledger, and keep every
/// request right in its 8 slots, in the overflow map behind them, and through out-of-order completions.
/// </summary>
public sealed class ExactlyOnceClientHandleTests
{
    private readonly FakeTimeProvider _clock = CheckerClock.AtZero();

    [Fact]
    public void ExactlyOnceHandle_ReplyCarryingAnotherNonce_ReportsTheSameMisPairingAsTheIdPath()
    {
        // Arrange
        var byId = new ExactlyOnceRequestChecker(_clock);
        var byHandle = new ExactlyOnceRequestChecker(_clock);
        var client = byHandle.ForClient(3);

        // Act: once for the oldest open key (the fast path), once for a key ahead of it.
        byId.OnClientRequestSent(3, 17, 1001);
        byId.OnClientRequestSent(3, 18, 1002);
        byId.OnClientRequestSent(3, 19, 1003);
        byId.OnClientRequestCompleted(3, 17, 1002);
        byId.OnClientRequestCompleted(3, 19, 1001);
        byHandle.OnClientRequestSent(client, 17, 1001);
        byHandle.OnClientRequestSent(client, 18, 1002);
        byHandle.OnClientRequestSent(client, 19, 1003);
        byHandle.OnClientRequestCompleted(client, 17, 1002);
        byHandle.OnClientRequestCompleted(client, 19, 1001);

        // Assert
        Assert.Equal(
            [
                "client 3: request key 17 (nonce 1001) completed with the reply to nonce 1002 (mis-paired reply)",
                "client 3: request key 19 (nonce 1003) completed with the reply to nonce 1001 (mis-paired reply)",
            ],
            byHandle.Violations.Select(v => v.Message));
        Assert.Equal(byId.Violations.Select(v => v.Message), byHandle.Violations.Select(v => v.Message));
        Assert.False(byHandle.Verdict.Passed);
    }

    [Fact]
    public void ExactlyOnceHandle_RequestCompletedTwice_ReportsBothCompletions()
    {
        var checker = new ExactlyOnceRequestChecker(_clock);
        var client = checker.ForClient(3);

        checker.OnClientRequestSent(client, 17, 1001);
        checker.OnClientRequestFailed(client, 17, ErrorCodes.RequestTimeout);
        checker.OnClientRequestCompleted(client, 17, 1001);

        var violation = Assert.Single(checker.Violations);
        Assert.Equal($"client 3: request key 17 (nonce 1001) completed a second time (reply nonce 1001); it had completed with error {ErrorCodes.RequestTimeout}", violation.Message);
        Assert.Equal(1, checker.ClientCompletedCount);
    }

    [Fact]
    public void ExactlyOnceHandle_CompletionBeforeTheClientEverSent_ReportsNeverSentAndStillBindsLater()
    {
        // Arrange: the handle's first call is a completion, so it has no ledger to bind to yet.
        var checker = new ExactlyOnceRequestChecker(_clock);
        var client = checker.ForClient(3);

        // Act
        checker.OnClientRequestFailed(client, 5, ErrorCodes.RequestTimeout);
        checker.OnClientRequestSent(client, 6, 600);
        checker.OnClientRequestCompleted(client, 6, 600);
        checker.OnClientRequestCompleted(client, 6, 600);

        // Assert
        Assert.Equal(
            [
                $"client 3: request key 5 completed (error {ErrorCodes.RequestTimeout}) but was never sent",
                "client 3: request key 6 (nonce 600) completed a second time (reply nonce 600); it had completed with reply nonce 600",
            ],
            checker.Violations.Select(v => v.Message));
        Assert.Equal(1, checker.ClientSentCount);
    }

    [Fact]
    public void ExactlyOnceHandle_KeyReusedWhileOutstanding_IsReported()
    {
        var checker = new ExactlyOnceRequestChecker(_clock);
        var client = checker.ForClient(3);

        checker.OnClientRequestSent(client, 17, 1001);
        checker.OnClientRequestSent(client, 17, 66_537);

        Assert.Equal("client 3: request key 17 reused for nonce 66537 while nonce 1001 was still outstanding", Assert.Single(checker.Violations).Message);
    }

    [Fact]
    public void ExactlyOnceHandle_RequestNeverCompleted_IsReportedAtQuiescence()
    {
        var checker = new ExactlyOnceRequestChecker(_clock);
        var client = checker.ForClient(3);
        checker.OnClientRequestSent(client, 1, 101);
        _clock.Advance(TimeSpan.FromSeconds(2));
        checker.OnClientRequestSent(client, 2, 102);
        checker.OnClientRequestCompleted(client, 1, 101);

        checker.CheckQuiescent();

        Assert.Equal("client 3: request key 2 (nonce 102, sent at 00:00:02) never completed: no reply, error or timeout", Assert.Single(checker.Violations).Message);
        Assert.Equal(1, checker.ClientOutstandingCount);
    }

    [Fact]
    public void ExactlyOnceIdPathThenHandle_RequestCompletedOnceOnEachPath_IsCaught()
    {
        // Arrange: the request is opened by id, before the handle exists.
        var checker = new ExactlyOnceRequestChecker(_clock);
        checker.OnClientRequestSent(3, 1, 101);
        var client = checker.ForClient(3);

        // Act: completed by the handle, then again by id.
        checker.OnClientRequestCompleted(client, 1, 101);
        checker.OnClientRequestCompleted(3, 1, 101);

        // Assert
        Assert.Equal("client 3: request key 1 (nonce 101) completed a second time (reply nonce 101); it had completed with reply nonce 101", Assert.Single(checker.Violations).Message);
        Assert.Equal(1, checker.ClientCompletedCount);
    }

    [Fact]
    public void ExactlyOnceHandleThenIdPath_RequestOpenedByHandleCompletedTwiceById_IsCaught()
    {
        // Arrange
        var checker = new ExactlyOnceRequestChecker(_clock);
        var client = checker.ForClient(3);
        checker.OnClientRequestSent(client, 1, 101);
        checker.OnClientRequestSent(client, 2, 102);

        // Act: key 2 completes ahead of key 1 (held, not folded), twice, by id.
        checker.OnClientRequestCompleted(3, 2, 102);
        checker.OnClientRequestFailed(3, 2, ErrorCodes.RequestTimeout);

        // Assert
        Assert.Equal($"client 3: request key 2 (nonce 102) completed a second time (error {ErrorCodes.RequestTimeout}); it had completed with reply nonce 102", Assert.Single(checker.Violations).Message);
        Assert.Equal(1, checker.ClientOutstandingCount);
    }

    [Fact]
    public void ExactlyOnceHandleAndIdPath_KeyOpenedOnOnePathReusedOnTheOther_IsCaught()
    {
        var checker = new ExactlyOnceRequestChecker(_clock);
        var client = checker.ForClient(3);

        checker.OnClientRequestSent(client, 4, 401);
        checker.OnClientRequestSent(3, 4, 402);

        Assert.Equal("client 3: request key 4 reused for nonce 402 while nonce 401 was still outstanding", Assert.Single(checker.Violations).Message);
    }

    [Fact]
    public void ExactlyOnceHandles_OfTwoClients_KeepTheirLedgersApart()
    {
        // Arrange: the same keys on two clients, through handles and ids interleaved.
        var checker = new ExactlyOnceRequestChecker(_clock);
        var first = checker.ForClient(3);
        var second = checker.ForClient(4);
        checker.OnClientRequestSent(first, 1, 31);
        checker.OnClientRequestSent(second, 1, 41);
        checker.OnClientRequestSent(4, 2, 42);

        // Act: client 3 completes its key 1; client 4's key 1 is still its own.
        checker.OnClientRequestCompleted(first, 1, 31);
        checker.OnClientRequestCompleted(4, 1, 41);
        checker.OnClientRequestCompleted(second, 2, 42);
        checker.OnClientRequestCompleted(second, 1, 41);

        // Assert
        Assert.Equal("client 4: request key 1 (nonce 41) completed a second time (reply nonce 41); it had completed with reply nonce 41", Assert.Single(checker.Violations).Message);
    }

    [Fact]
    public void ExactlyOnceHandle_FortyRequestsOutstandingCompletedInReverse_PassesAndFoldsThemAll()
    {
        // Arrange: 40 open keys fill the 8 slots; keys 9 to 40 collide and live in the overflow map.
        var checker = new ExactlyOnceRequestChecker(_clock);
        var client = checker.ForClient(3);
        for (long key = 1; key <= 40; key++)
        {
            checker.OnClientRequestSent(client, key, 1000 + key);
        }

        Assert.Equal(40, checker.ClientOutstandingCount);

        // Act: completions newest first, so every one but the last waits ahead of the watermark.
        for (long key = 40; key >= 2; key--)
        {
            checker.OnClientRequestCompleted(client, key, 1000 + key);
        }

        var heldBeforeTheOldest = checker.ClientHeldCount;
        checker.OnClientRequestCompleted(client, 1, 1001);
        checker.CheckQuiescent();

        // Assert
        Assert.False(checker.HasViolations, checker.FirstViolation?.Message);
        Assert.Equal(40, heldBeforeTheOldest);
        Assert.Equal(0, checker.ClientHeldCount);
        Assert.Equal(0, checker.ClientOutstandingCount);
        Assert.Equal(40, checker.ClientCompletedCount);
    }

    [Fact]
    public void ExactlyOnceHandle_SecondCompletionsAfterAnOutOfOrderFold_AreReportedWithOrWithoutTheFirst()
    {
        // Arrange: 40 keys completed in reverse, then folded into the watermark.
        var checker = new ExactlyOnceRequestChecker(_clock);
        var client = checker.ForClient(3);
        for (long key = 1; key <= 40; key++)
        {
            checker.OnClientRequestSent(client, key, 1000 + key);
        }

        for (long key = 40; key >= 1; key--)
        {
            checker.OnClientRequestCompleted(client, key, 1000 + key);
        }

        // Act: key 38 is among the last compacted (still remembered), key 20 is not, key 41 was never sent.
        checker.OnClientRequestCompleted(client, 38, 1038);
        checker.OnClientRequestFailed(3, 20, ErrorCodes.RequestTimeout);
        checker.OnClientRequestCompleted(client, 41, 1041);

        // Assert
        Assert.Equal(
            [
                "client 3: request key 38 (nonce 1038) completed a second time (reply nonce 1038); it had completed with reply nonce 1038",
                $"client 3: request key 20 completed a second time (error {ErrorCodes.RequestTimeout}); it had completed before",
                "client 3: request key 41 completed (reply nonce 1041) but was never sent",
            ],
            checker.Violations.Select(v => v.Message));
        Assert.Equal(40, checker.ClientCompletedCount);
    }

    [Fact]
    public void ExactlyOnceHandle_KeyInTheOverflowMapCompletedTwiceBeforeTheFold_IsCaught()
    {
        // Arrange: key 1 stays open, so key 17 (sharing key 1's slot, in the overflow map) completes ahead of it.
        var checker = new ExactlyOnceRequestChecker(_clock);
        var client = checker.ForClient(3);
        for (long key = 1; key <= 20; key++)
        {
            checker.OnClientRequestSent(client, key, 1000 + key);
        }

        checker.OnClientRequestCompleted(client, 17, 1017);

        // Act
        checker.OnClientRequestCompleted(3, 17, 1017);
        checker.OnClientRequestSent(client, 18, 2018);

        // Assert
        Assert.Equal(
            [
                "client 3: request key 17 (nonce 1017) completed a second time (reply nonce 1017); it had completed with reply nonce 1017",
                "client 3: request key 18 reused for nonce 2018 while nonce 1018 was still outstanding",
            ],
            checker.Violations.Select(v => v.Message));
    }

    [Fact]
    public void ExactlyOnceHandle_SlotFreedWhileItsCollidingKeyStaysInTheOverflowMap_FindsBothKeys()
    {
        // Arrange: key 17 goes to the overflow map behind key 1; key 1 completes and frees the slot; key 33 takes it.
        var checker = new ExactlyOnceRequestChecker(_clock);
        var client = checker.ForClient(3);
        checker.OnClientRequestSent(client, 1, 101);
        checker.OnClientRequestSent(client, 17, 117);
        checker.OnClientRequestCompleted(client, 1, 101);
        checker.OnClientRequestSent(client, 33, 133);

        // Act: key 17 is found behind key 33's slot; its second completion and key 33's wrong reply are caught.
        checker.OnClientRequestCompleted(client, 17, 117);
        checker.OnClientRequestCompleted(client, 17, 117);
        checker.OnClientRequestCompleted(3, 33, 117);
        checker.OnClientRequestSent(client, 49, 149);
        checker.CheckQuiescent();

        // Assert
        Assert.Equal(
            [
                "client 3: request key 17 (nonce 117) completed a second time (reply nonce 117); it had completed with reply nonce 117",
                "client 3: request key 33 (nonce 133) completed with the reply to nonce 117 (mis-paired reply)",
                "client 3: request key 49 (nonce 149, sent at 00:00:00) never completed: no reply, error or timeout",
            ],
            checker.Violations.Select(v => v.Message));
        Assert.Equal(3, checker.ClientCompletedCount);
    }

    [Fact]
    public void ExactlyOnceHandle_KeysWrappingBelowTheFirstKeyAndTheWatermark_AreTrackedOneByOne()
    {
        // Arrange: the client starts at key 65_530 and wraps to small keys, below where its range starts.
        var checker = new ExactlyOnceRequestChecker(_clock);
        var client = checker.ForClient(3);
        for (long key = 65_530; key <= 65_535; key++)
        {
            checker.OnClientRequestSent(client, key, key);
            checker.OnClientRequestCompleted(client, key, key);
        }

        for (long key = 1; key <= 20; key++)
        {
            checker.OnClientRequestSent(client, key, 70_000 + key);
        }

        // Act: all complete out of order, then one small key and one key of the first range complete again.
        for (long key = 20; key >= 1; key--)
        {
            checker.OnClientRequestCompleted(client, key, 70_000 + key);
        }

        Assert.False(checker.HasViolations, checker.FirstViolation?.Message);
        checker.OnClientRequestCompleted(client, 18, 70_018);
        checker.OnClientRequestCompleted(3, 65_531, 65_531);

        // Assert
        Assert.Equal(
            [
                "client 3: request key 18 (nonce 70018) completed a second time (reply nonce 70018); it had completed with reply nonce 70018",
                "client 3: request key 65531 (nonce 65531) completed a second time (reply nonce 65531); it had completed with reply nonce 65531",
            ],
            checker.Violations.Select(v => v.Message));
        Assert.Equal(26, checker.ClientCompletedCount);
    }

    /// <summary>
    /// A seeded stream of sends and completions (sequential keys, random keys, reuse, wrong replies, errors, second
    /// completions and completions of keys never sent) over a few clients, fed to three checkers: by id, by handle,
    /// and alternating between the two. All three must report what a plain model of the rules expects, in order.
    /// </summary>
    [Theory]
    [InlineData(1)]
    [InlineData(2)]
    [InlineData(3)]
    public void ExactlyOnceHandleIdAndMixedPaths_SeededRequestStream_ReportExactlyWhatTheModelExpects(int seed)
    {
        // Arrange
        const int ClientCount = 3;
        const int KeyRange = 80;
        var random = new Random(seed);
        var byId = NewChecker();
        var byHandle = NewChecker();
        var mixed = NewChecker();
        var handles = Enumerable.Range(0, ClientCount).Select(c => byHandle.ForClient(c)).ToArray();
        var mixedHandles = Enumerable.Range(0, ClientCount).Select(c => mixed.ForClient(c)).ToArray();
        var model = new Dictionary<(long Client, long Key), (bool Outstanding, long Nonce)>();
        var expected = new List<string>();
        var nextKey = new long[ClientCount];
        long nonce = 0;
        long sent = 0;
        long completed = 0;

        // Act
        for (var step = 0; step < 6_000; step++)
        {
            var clientId = random.Next(ClientCount);
            var useHandle = random.Next(2) == 0;
            var roll = random.Next(100);
            if (roll < 45)
            {
                // Mostly the client's next key (wrapping), sometimes any key.
                long key;
                if (roll < 35)
                {
                    nextKey[clientId] = (nextKey[clientId] % KeyRange) + 1;
                    key = nextKey[clientId];
                }
                else
                {
                    key = random.Next(1, KeyRange + 1);
                }

                nonce++;
                sent++;
                if (model.TryGetValue((clientId, key), out var open) && open.Outstanding)
                {
                    expected.Add($"client {clientId}: request key {key} reused");
                }

                model[(clientId, key)] = (true, nonce);
                byId.OnClientRequestSent(clientId, key, nonce);
                byHandle.OnClientRequestSent(handles[clientId], key, nonce);
                if (useHandle)
                {
                    mixed.OnClientRequestSent(mixedHandles[clientId], key, nonce);
                }
                else
                {
                    mixed.OnClientRequestSent(clientId, key, nonce);
                }

                continue;
            }

            // A completion: usually of an open key with its own reply, sometimes wrong, an error, or any key at all.
            var openKeys = model.Where(p => p.Key.Client == clientId && p.Value.Outstanding).Select(p => p.Key.Key).Order().ToList();
            var completeKey = openKeys.Count > 0 && roll < 90 ? openKeys[random.Next(openKeys.Count)] : random.Next(1, KeyRange + 5);
            var failed = roll >= 80 && roll < 86;
            var state = model.TryGetValue((clientId, completeKey), out var known) ? known : ((bool Outstanding, long Nonce)?)null;
            var replyNonce = state is { } s ? (roll < 76 ? s.Nonce : s.Nonce + 1) : 424_242;
            if (state is null)
            {
                expected.Add($"client {clientId}: request key {completeKey} completed ({Describe(failed, replyNonce)}) but was never sent");
            }
            else if (!state.Value.Outstanding)
            {
                expected.Add($"client {clientId}: request key {completeKey} ");
            }
            else
            {
                completed++;
                if (!failed && replyNonce != state.Value.Nonce)
                {
                    expected.Add($"client {clientId}: request key {completeKey} (nonce {state.Value.Nonce}) completed with the reply to nonce {replyNonce} (mis-paired reply)");
                }

                model[(clientId, completeKey)] = (false, state.Value.Nonce);
            }

            Complete(byId, clientId, null, completeKey, failed, replyNonce);
            Complete(byHandle, clientId, handles[clientId], completeKey, failed, replyNonce);
            Complete(mixed, clientId, useHandle ? mixedHandles[clientId] : null, completeKey, failed, replyNonce);
        }

        foreach (var checker in new[] { byId, byHandle, mixed })
        {
            checker.CheckQuiescent();
        }

        foreach (var open in model.Where(p => p.Value.Outstanding).Select(p => p.Key).Order())
        {
            expected.Add($"client {open.Client}: request key {open.Key} (nonce {model[open].Nonce}, sent at 00:00:00) never completed");
        }

        // Assert: each violation names what the model expects (a second completion by its client and key only,
        // since whether it can also name the first completion depends on how long ago that was).
        var messages = byHandle.Violations.Select(v => v.Message).ToList();
        Assert.Equal(expected.Count, messages.Count);
        for (var i = 0; i < expected.Count; i++)
        {
            Assert.StartsWith(expected[i], messages[i], StringComparison.Ordinal);
            if (expected[i].EndsWith(' '))
            {
                Assert.Contains(" completed a second time (", messages[i], StringComparison.Ordinal);
            }
        }

        Assert.Contains(messages, m => m.Contains("reused", StringComparison.Ordinal));
        Assert.Contains(messages, m => m.Contains("mis-paired", StringComparison.Ordinal));
        Assert.Contains(messages, m => m.Contains("a second time", StringComparison.Ordinal));
        Assert.Contains(messages, m => m.Contains("never sent", StringComparison.Ordinal));
        Assert.Equal(byId.Violations.Select(v => v.Message), messages);
        Assert.Equal(mixed.Violations.Select(v => v.Message), messages);
        foreach (var checker in new[] { byId, byHandle, mixed })
        {
            Assert.Equal(sent, checker.ClientSentCount);
            Assert.Equal(completed, checker.ClientCompletedCount);
        }

        static void Complete(ExactlyOnceRequestChecker checker, long clientId, ClientRequests? handle, long key, bool failed, long replyNonce)
        {
            switch (handle, failed)
            {
                case (null, true):
                    checker.OnClientRequestFailed(clientId, key, ErrorCodes.RequestTimeout);
                    break;
                case (null, false):
                    checker.OnClientRequestCompleted(clientId, key, replyNonce);
                    break;
                case (_, true):
                    checker.OnClientRequestFailed(handle, key, ErrorCodes.RequestTimeout);
                    break;
                default:
                    checker.OnClientRequestCompleted(handle, key, replyNonce);
                    break;
            }
        }
    }

    private ExactlyOnceRequestChecker NewChecker() => new(new CheckerContext(_clock, violationsKeptMax: 1_000_000));

    private static string Describe(bool failed, long replyNonce) => failed ? $"error {ErrorCodes.RequestTimeout}" : $"reply nonce {replyNonce}";
}
