using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;

namespace PlayHouse.Core.Tests.Runtime;

/// <summary>
/// Every numeric <see cref="ServerOptions"/> limit, tested one below it, at it and one above it: the count that a cap
/// admits, the tick at which a time limit acts, and the bound its validation accepts. Each behaviour runs on the
/// harness's manual executor and manual clock, so the limit is met exactly, never approximately.
/// </summary>
public sealed class ServerOptionLimitTests
{
    private const int Cap = 3;
    private static readonly TimeSpan OneTick = TimeSpan.FromTicks(1);

    // ---- Validation: the last accepted value and the first refused one ----

    public static TheoryData<string, long, long> ValidationBounds() => new()
    {
        // Option, the value at its bound (accepted), the value one past it (refused).
        { nameof(ServerOptions.MailboxCapacityMax), 1, 0 },
        { nameof(ServerOptions.TurnMessageBudget), 1, 0 },
        { nameof(ServerOptions.PendingRequestsMax), 1, 0 },
        { nameof(ServerOptions.UnansweredRequestsMax), 1, 0 },
        { nameof(ServerOptions.TimerPendingTicksMax), 1, 0 },
        { nameof(ServerOptions.OffStageInFlightMax), 1, 0 },
        { nameof(ServerOptions.StagesMax), 1, 0 },
        { nameof(ServerOptions.ActorsPerStageMax), 1, 0 },
        { nameof(ServerOptions.RecentCompletionsMax), 0, -1 },
        { nameof(ServerOptions.DisconnectedActorsMax), 0, -1 },
        { nameof(ServerOptions.EmptyStagesMax), 0, -1 },
        { nameof(ServerOptions.RequestTimeout), 1, 0 },
        { nameof(ServerOptions.ClientMessageQueueTimeMax), 1, 0 },
        { nameof(ServerOptions.DisconnectedActorExpiry), 1, 0 },
        { nameof(ServerOptions.IdleStageCloseAfter), 1, 0 },
    };

    [Theory]
    [MemberData(nameof(ValidationBounds))]
    public void Validate_AcceptsEachLimitAtItsBound_AndRefusesOnePastIt_ByName(string name, long atBound, long pastBound)
    {
        With(name, atBound).Validate();
        var error = Assert.Throws<ArgumentException>(With(name, pastBound).Validate);

        Assert.Equal(name, error.ParamName);
        Assert.StartsWith($"ServerOptions.{name} is out of range.", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void Validate_AcceptsTheUnsetTimeLimits_ThatTurnTheirPolicyOff()
    {
        new ServerOptions { ClientMessageQueueTimeMax = null, DisconnectedActorExpiry = null, IdleStageCloseAfter = null }.Validate();
        var emptyAuthenticate = Assert.Throws<ArgumentException>(new ServerOptions { AuthenticateMsgId = string.Empty }.Validate);
        Assert.Equal(nameof(ServerOptions.AuthenticateMsgId), emptyAuthenticate.ParamName);
    }

    // ---- Caps: Cap - 1, Cap and Cap + 1 arrivals; only the ones past the cap are refused ----

    [Theory]
    [InlineData(Cap - 1)]
    [InlineData(Cap)]
    [InlineData(Cap + 1)]
    public void ClientMessagesQueuedBehindABusyHandler_AreRefusedWithMailboxFull_OnlyPastMailboxCapacityMax(int queued)
    {
        using var h = new RuntimeHarness(Options() with { MailboxCapacityMax = Cap });
        var gate = new TaskCompletionSource();
        h.ConfigureStage = s => s.OnClient = async (stage, _, packet) =>
        {
            await gate.Task;
            stage.Link.Reply(packet, ErrorCodes.Success);
        };
        var client = h.Join(1, accountId: 5);
        client.Request("Block", 1, []);
        h.Pump();
        var seqs = Enumerable.Range(0, queued).Select(_ => client.Request("Queued", 1, [])).ToList();
        h.Pump();
        var refusedWhileBusy = seqs.Count(s => client.Received.Any(f => f.MsgSeq == s && f.ErrorCode == ErrorCodes.MailboxFull));
        gate.SetResult();
        h.Pump();

        Assert.Equal(Math.Max(0, queued - Cap), refusedWhileBusy);
        Assert.Equal(Math.Max(0, queued - Cap), h.Play.Counters.MailboxRefused);
        Assert.Equal(Math.Min(queued, Cap), seqs.Count(s => client.ReplyTo(s).ErrorCode == ErrorCodes.Success));
        Assert.Equal(Math.Min(queued, Cap), h.Play.GetStageStatistics().Single().MailboxHighWater);
        h.Pool.ThrowIfLeaks();
    }

    [Theory]
    [InlineData(Cap - 1)]
    [InlineData(Cap)]
    [InlineData(Cap + 1)]
    public void OneTurn_RunsAtMostTurnMessageBudgetMessages_AndSchedulesTheStageAgainOnlyForTheRest(int queued)
    {
        using var h = new RuntimeHarness(Options() with { TurnMessageBudget = Cap });
        var client = h.Join(1, accountId: 5);
        var dispatchedBefore = h.Stages[1].Dispatched.Count;
        for (var i = 0; i < queued; i++)
        {
            client.Send("Work", 1, [(byte)i]);
        }

        Assert.Equal(1, h.Executor.PendingCount);
        Assert.True(h.Executor.RunOne());
        var inFirstTurn = h.Stages[1].Dispatched.Count - dispatchedBefore;
        var scheduledAgain = h.Executor.PendingCount;
        h.Pump();

        Assert.Equal(Math.Min(queued, Cap), inFirstTurn);
        Assert.Equal(queued > Cap ? 1 : 0, scheduledAgain);
        Assert.Equal(queued, h.Stages[1].Dispatched.Count - dispatchedBefore);
    }

    [Theory]
    [InlineData(Cap - 1)]
    [InlineData(Cap)]
    [InlineData(Cap + 1)]
    public void OutgoingRequests_FailFastWithTooManyPendingRequests_OnlyPastPendingRequestsMax(int issued)
    {
        using var h = new RuntimeHarness(Options() with { PendingRequestsMax = Cap });
        h.Api.Handle("Hold", (_, _) => ValueTask.CompletedTask);
        var tasks = Enumerable.Range(0, issued).Select(_ => h.Api.RequestToApi(RuntimeHarness.ApiNode, "Hold", Payload.Empty)).ToList();
        h.Pump();

        Assert.Equal(Math.Min(issued, Cap), tasks.Count(t => !t.IsCompleted));
        Assert.All(tasks.Where(t => t.IsCompleted), t => Assert.Equal(ErrorCodes.TooManyPendingRequests, RuntimeHarness.Completed(t).ErrorCode));
        Assert.Equal(Math.Max(0, issued - Cap), h.Api.Counters.PendingRequestsRefused);
        Assert.Equal(Math.Min(issued, Cap), h.Api.PendingRequestCount);
    }

    [Theory]
    [InlineData(Cap - 1)]
    [InlineData(Cap)]
    [InlineData(Cap + 1)]
    public void ClientRequestsNobodyAnswers_AreRefusedWithTooManyUnansweredRequests_OnlyPastUnansweredRequestsMax(int sent)
    {
        using var h = new RuntimeHarness(Options() with { UnansweredRequestsMax = Cap });
        h.ConfigureStage = s => s.OnClient = (_, _, _) => ValueTask.CompletedTask;
        var client = h.Join(1, accountId: 5);
        var seqs = Enumerable.Range(0, sent).Select(_ => client.Request("Hold", 1, [])).ToList();
        h.Pump();

        Assert.Equal(Math.Max(0, sent - Cap), seqs.Count(s => client.Received.Any(f => f.MsgSeq == s && f.ErrorCode == ErrorCodes.TooManyUnansweredRequests)));
        Assert.Equal(Math.Max(0, sent - Cap), h.Play.Counters.UnansweredRequestsRefused);
        Assert.Equal(Math.Min(sent, Cap), h.Play.UnansweredRequestCount);
    }

    [Theory]
    [InlineData(-1)]
    [InlineData(0)]
    [InlineData(1)]
    public void LedgerShards_EachFilledToItsShareOfTheCap_LeaveTheRestToTheNodeWideCount(int capOffset)
    {
        // The share is the cap divided by the shards, rounded down; a cap one below a multiple of the shard count leaves
        // every share one smaller, one above it leaves one entry for whichever shard asks first.
        var shards = new InboundLedger(new ServerOptions { UnansweredRequestsMax = 1 }, new ServerCounters()).ShardCount;
        var cap = (2 * shards) + capOffset;
        var ledger = new InboundLedger(new ServerOptions { UnansweredRequestsMax = cap }, new ServerCounters());
        var share = cap / shards;
        var admitted = 0;
        for (var shard = 0; shard < shards; shard++)
        {
            for (var i = 0; i < share; i++)
            {
                admitted += ledger.TryOpen(0, 1_000, shard, out _) ? 1 : 0;
            }
        }

        var beyondTheShares = 0;
        for (var shard = 0; shard < shards; shard++)
        {
            beyondTheShares += ledger.TryOpen(0, 1_000, shard, out _) ? 1 : 0;
        }

        Assert.Equal(share * shards, admitted);
        Assert.Equal(cap - (share * shards), beyondTheShares);
        Assert.Equal(cap, ledger.Count(now: 0));
    }

    [Theory]
    [InlineData(Cap - 1)]
    [InlineData(Cap)]
    [InlineData(Cap + 1)]
    public void TimerTicksFallingDueWhileTheStageIsBusy_AreCoalescedOnlyPastTimerPendingTicksMax(int ticksDue)
    {
        using var h = new RuntimeHarness(Options() with { TimerPendingTicksMax = Cap });
        h.CreateStage(1);
        var gate = new TaskCompletionSource();
        var fired = 0;
        h.Stages[1].OnServer = async (_, _) => await gate.Task;
        h.Stages[1].Link.AddRepeatTimer(TimeSpan.FromMilliseconds(10), TimeSpan.FromMilliseconds(10), () => fired++);
        h.Api.SendToStage(RuntimeHarness.PlayNode, 1, "Block", default);
        h.Pump();
        h.Advance(TimeSpan.FromMilliseconds(10 * ticksDue));
        var coalesced = h.Play.Counters.TimerTicksCoalesced;
        gate.SetResult();
        h.Pump();

        Assert.Equal(Math.Max(0, ticksDue - Cap), coalesced);
        Assert.Equal(Math.Min(ticksDue, Cap), fired);
    }

    [Theory]
    [InlineData(Cap - 1)]
    [InlineData(Cap)]
    [InlineData(Cap + 1)]
    public void OffStageWorkStartedInOneHandler_IsRefusedOnlyPastOffStageInFlightMax(int started)
    {
        using var h = new RuntimeHarness(Options() with { OffStageInFlightMax = Cap });
        h.CreateStage(1);
        var ran = 0;
        var refused = 0;
        var continued = 0;
        h.Stages[1].OnServer = (stage, _) =>
        {
            for (var i = 0; i < started; i++)
            {
                try
                {
                    stage.Link.RunOffStage(() => ++ran, _ => continued++);
                }
                catch (OffStageQueueFullException)
                {
                    refused++;
                }
            }

            return ValueTask.CompletedTask;
        };
        h.Api.SendToStage(RuntimeHarness.PlayNode, 1, "Go", default);
        h.Pump();

        Assert.Equal(Math.Max(0, started - Cap), refused);
        Assert.Equal(Math.Max(0, started - Cap), h.Play.Counters.OffStageRefused);
        Assert.Equal((Math.Min(started, Cap), Math.Min(started, Cap)), (ran, continued));
    }

    [Theory]
    [InlineData(Cap - 1)]
    [InlineData(Cap)]
    [InlineData(Cap + 1)]
    public void StageCreates_AreRefusedWithTooManyStages_OnlyPastStagesMax(int creates)
    {
        using var h = new RuntimeHarness(Options() with { StagesMax = Cap });
        var codes = Enumerable.Range(1, creates).Select(id => h.CreateStage(id).ErrorCode).ToList();

        Assert.Equal(Math.Min(creates, Cap), codes.Count(c => c == ErrorCodes.Success));
        Assert.Equal(Math.Max(0, creates - Cap), codes.Count(c => c == ErrorCodes.TooManyStages));
        Assert.Equal(Math.Max(0, creates - Cap), h.Play.Counters.StagesRefusedAtCap);
        Assert.Equal(Math.Min(creates, Cap), h.Play.StageCount);
    }

    [Theory]
    [InlineData(Cap - 1)]
    [InlineData(Cap)]
    [InlineData(Cap + 1)]
    public void JoinsByNewAccounts_AreRefusedWithStageFull_OnlyPastActorsPerStageMax(int accounts)
    {
        using var h = new RuntimeHarness(Options() with { ActorsPerStageMax = Cap });
        var codes = new List<ushort>();
        for (var account = 1; account <= accounts; account++)
        {
            var client = new FakeClient(h);
            var seq = client.Authenticate(1, account);
            h.Pump();
            codes.Add(client.ReplyTo(seq).ErrorCode);
        }

        Assert.Equal(Math.Min(accounts, Cap), codes.Count(c => c == ErrorCodes.Success));
        Assert.Equal(Math.Max(0, accounts - Cap), codes.Count(c => c == ErrorCodes.StageFull));
        Assert.Equal(Math.Max(0, accounts - Cap), h.Play.Counters.JoinsRefusedAtCap);
        Assert.Equal(Math.Min(accounts, Cap), h.Stages[1].Link.Actors.Count);
    }

    [Theory]
    [InlineData(Cap - 1)]
    [InlineData(Cap)]
    [InlineData(Cap + 1)]
    public void DisconnectedActorsWaitingForTheirAccounts_AreEvictedOnlyPastDisconnectedActorsMax(int disconnected)
    {
        using var h = new RuntimeHarness(Options() with { DisconnectedActorsMax = Cap });
        for (var account = 1; account <= disconnected; account++)
        {
            h.Join(1, account).Disconnect();
            h.Pump();
        }

        Assert.Equal(Math.Max(0, disconnected - Cap), h.Play.Counters.DisconnectedActorsEvictedAtCap);
        Assert.Equal(Math.Min(disconnected, Cap), h.Play.DisconnectedActorCount);
        Assert.Equal(Math.Min(disconnected, Cap), h.Play.DisconnectedActorsHighWater);
        Assert.Equal(Math.Min(disconnected, Cap), h.Stages[1].Link.Actors.Count);
    }

    [Theory]
    [InlineData(Cap - 1)]
    [InlineData(Cap)]
    [InlineData(Cap + 1)]
    public void StagesLeftEmpty_AreClosedBeforeTheirIdleTimeOnlyPastEmptyStagesMax(int emptied)
    {
        using var h = new RuntimeHarness(Options() with { DisconnectedActorsMax = 0, EmptyStagesMax = Cap });
        for (var stage = 1; stage <= emptied; stage++)
        {
            h.Join(stage, accountId: stage).Disconnect();
            h.Pump();
        }

        Assert.Equal(Math.Max(0, emptied - Cap), h.Play.Counters.EmptyStagesClosedAtCap);
        Assert.Equal(Math.Min(emptied, Cap), h.Play.EmptyStageCount);
        Assert.Equal(Math.Min(emptied, Cap), h.Play.StageCount);
        Assert.Equal(emptied > Cap, !h.Play.HasStage(1));
        Assert.Equal(0, h.Play.Counters.IdleStagesClosed);
    }

    // ---- Time limits: one tick before, at and one tick after ----

    [Theory]
    [InlineData(-1)]
    [InlineData(0)]
    [InlineData(1)]
    public void RequestWithoutItsOwnTimeout_TimesOutAtTheServersRequestTimeout_NotOneTickBefore(int tickOffset)
    {
        var timeout = TimeSpan.FromSeconds(3);
        using var h = new RuntimeHarness(Options() with { RequestTimeout = timeout });
        h.CreateStage(1);
        h.CreateStage(2);
        h.Stages[2].OnServer = (_, _) => ValueTask.CompletedTask;
        var task = h.Stages[1].Link.RequestToStage(RuntimeHarness.PlayNode, 2, "Silent", Payload.Empty);
        h.Advance(timeout + TimeSpan.FromTicks(tickOffset));

        Assert.Equal(tickOffset >= 0, task.IsCompleted);
        Assert.Equal(tickOffset >= 0 ? 1 : 0, h.Play.Counters.RequestTimeouts);
        if (tickOffset >= 0)
        {
            Assert.Equal(ErrorCodes.RequestTimeout, RuntimeHarness.Completed(task).ErrorCode);
        }
    }

    [Theory]
    [InlineData(-1)]
    [InlineData(0)]
    [InlineData(1)]
    public void ClientRequestNobodyAnswers_LeavesTheLedgerAtTheServersRequestTimeout_NotOneTickBefore(int tickOffset)
    {
        var timeout = TimeSpan.FromSeconds(3);
        using var h = new RuntimeHarness(Options() with { RequestTimeout = timeout });
        h.ConfigureStage = s => s.OnClient = (_, _, _) => ValueTask.CompletedTask;
        var client = h.Join(1, accountId: 5);
        client.Request("Hold", 1, []);
        h.Pump();
        h.Advance(timeout + TimeSpan.FromTicks(tickOffset));

        Assert.Equal(tickOffset >= 0 ? 0 : 1, h.Play.UnansweredRequestCount);
        Assert.Equal(tickOffset >= 0 ? 1 : 0, h.Play.Counters.UnansweredRequestsExpired);
    }

    [Theory]
    [InlineData(-1)]
    [InlineData(0)]
    [InlineData(1)]
    public void ClientMessagesWaitingInTheMailbox_AreShedOnceTheyHaveWaitedClientMessageQueueTimeMax(int tickOffset)
    {
        var queueTimeMax = TimeSpan.FromSeconds(2);
        using var h = new RuntimeHarness(Options() with { ClientMessageQueueTimeMax = queueTimeMax });
        var gate = new TaskCompletionSource();
        h.ConfigureStage = s => s.OnClient = async (stage, _, packet) =>
        {
            if (packet.MsgId == "Block")
            {
                await gate.Task;
            }

            if (packet.IsRequest)
            {
                stage.Link.Reply(packet, ErrorCodes.Success);
            }
        };
        var client = h.Join(1, accountId: 7);
        client.Request("Block", 1, []);
        h.Pump();
        var request = client.Request("Work", 1, []);
        client.Send("Note", 1, []);
        h.Advance(queueTimeMax + TimeSpan.FromTicks(tickOffset));
        gate.SetResult();
        h.Pump();

        var shed = tickOffset >= 0;
        Assert.Equal(shed ? ErrorCodes.RequestExpired : ErrorCodes.Success, client.ReplyTo(request).ErrorCode);
        Assert.Equal(shed ? (1L, 1L) : (0L, 0L), (h.Play.Counters.RequestsExpiredInMailbox, h.Play.Counters.SendsExpiredInMailbox));
        Assert.Equal(shed ? ["Block"] : ["Block", "Work", "Note"], h.Stages[1].Dispatched);
        h.Pool.ThrowIfLeaks();
    }

    [Theory]
    [InlineData(-1)]
    [InlineData(0)]
    [InlineData(1)]
    public void DisconnectedActor_IsDestroyedOnceItHasWaitedDisconnectedActorExpiry(int tickOffset)
    {
        var expiry = TimeSpan.FromSeconds(30);
        using var h = new RuntimeHarness(Options() with { DisconnectedActorExpiry = expiry, IdleStageCloseAfter = null });
        h.Join(1, accountId: 7).Disconnect();
        h.Pump();
        h.Advance(expiry + TimeSpan.FromTicks(tickOffset));

        Assert.Equal(tickOffset >= 0 ? 0 : 1, h.Stages[1].Link.Actors.Count);
        Assert.Equal(tickOffset >= 0 ? 1 : 0, h.Play.Counters.DisconnectedActorsExpired);
        Assert.Equal(tickOffset >= 0 ? 0 : 1, h.Play.DisconnectedActorCount);
    }

    [Theory]
    [InlineData(-1)]
    [InlineData(0)]
    [InlineData(1)]
    public void StageCreatedEmpty_ClosesOnceItHasBeenIdleForIdleStageCloseAfter(int tickOffset)
    {
        var idle = TimeSpan.FromSeconds(10);
        using var h = new RuntimeHarness(Options() with { IdleStageCloseAfter = idle });
        Assert.Equal(ErrorCodes.Success, h.CreateStage(1).ErrorCode);
        h.Advance(idle + TimeSpan.FromTicks(tickOffset));

        Assert.Equal(tickOffset < 0, h.Play.HasStage(1));
        Assert.Equal(tickOffset >= 0 ? 1 : 0, h.Play.Counters.IdleStagesClosed);
    }

    private static ServerOptions Options() => new() { DefaultStageType = RuntimeHarness.StageType };

    /// <summary>Default options with one limit set to <paramref name="value"/> (ticks for the time limits).</summary>
    private static ServerOptions With(string name, long value) => name switch
    {
        nameof(ServerOptions.MailboxCapacityMax) => new ServerOptions { MailboxCapacityMax = (int)value },
        nameof(ServerOptions.TurnMessageBudget) => new ServerOptions { TurnMessageBudget = (int)value },
        nameof(ServerOptions.PendingRequestsMax) => new ServerOptions { PendingRequestsMax = (int)value },
        nameof(ServerOptions.UnansweredRequestsMax) => new ServerOptions { UnansweredRequestsMax = (int)value },
        nameof(ServerOptions.TimerPendingTicksMax) => new ServerOptions { TimerPendingTicksMax = (int)value },
        nameof(ServerOptions.OffStageInFlightMax) => new ServerOptions { OffStageInFlightMax = (int)value },
        nameof(ServerOptions.StagesMax) => new ServerOptions { StagesMax = (int)value },
        nameof(ServerOptions.ActorsPerStageMax) => new ServerOptions { ActorsPerStageMax = (int)value },
        nameof(ServerOptions.RecentCompletionsMax) => new ServerOptions { RecentCompletionsMax = (int)value },
        nameof(ServerOptions.DisconnectedActorsMax) => new ServerOptions { DisconnectedActorsMax = (int)value },
        nameof(ServerOptions.EmptyStagesMax) => new ServerOptions { EmptyStagesMax = (int)value },
        nameof(ServerOptions.RequestTimeout) => new ServerOptions { RequestTimeout = TimeSpan.FromTicks(value) },
        nameof(ServerOptions.ClientMessageQueueTimeMax) => new ServerOptions { ClientMessageQueueTimeMax = TimeSpan.FromTicks(value) },
        nameof(ServerOptions.DisconnectedActorExpiry) => new ServerOptions { DisconnectedActorExpiry = TimeSpan.FromTicks(value) },
        nameof(ServerOptions.IdleStageCloseAfter) => new ServerOptions { IdleStageCloseAfter = TimeSpan.FromTicks(value) },
        _ => throw new ArgumentOutOfRangeException(nameof(name), name, "not a numeric ServerOptions limit"),
    };
}
