using PlayHouse.Core.Runtime;
using PlayHouse.Fixtures.Flawed.Registries;
using PlayHouse.Fixtures.Workload;
using PlayHouse.Simulation.Checkers;
using Shouldly;

namespace PlayHouse.Properties.Tests.Registries;

/// <summary>
/// Simulated churn against a play server with small registry caps: clients come and go with fresh accounts over more
/// stage ids than the server may hold, some reconnect. Over many seeds every cap holds and refuses with its code, every
/// disconnected actor expires, every empty stage closes, and the server ends holding nothing; with a table of disconnected
/// actors that never expires them, the registry-bounds checker fails the run.
/// </summary>
public sealed class RegistryChurnTests
{
    [Fact]
    public void Churn_OverFortySeeds_StaysWithinEveryCapAndEndsHoldingNothing()
    {
        var options = new RegistryChurnOptions();
        long tooManyStages = 0, stageFull = 0, expired = 0, evicted = 0, idleClosed = 0, reconnects = 0;
        for (ulong seed = 1; seed <= 40; seed++)
        {
            var run = RegistryChurn.Run(seed, options);

            run.Passed.ShouldBeTrue($"seed {seed}: {run.FirstViolation}");
            run.Unexpected.ShouldBe(0, $"seed {seed}");
            run.CyclesCompleted.ShouldBe(options.Clients * options.CyclesPerClient, $"seed {seed}");
            run.RefusedTooManyStages.ShouldBe(run.Counters.StagesRefusedAtCap, $"seed {seed}");
            run.RefusedStageFull.ShouldBe(run.Counters.JoinsRefusedAtCap, $"seed {seed}");
            run.StagesHighWater.ShouldBeLessThanOrEqualTo(options.Server.StagesMax, $"seed {seed}");
            run.LiveStagesAtEnd.ShouldBe(0, $"seed {seed}");
            run.LiveActorsAtEnd.ShouldBe(0, $"seed {seed}");
            run.BuffersOutstanding.ShouldBe(0, $"seed {seed}");
            tooManyStages += run.RefusedTooManyStages;
            stageFull += run.RefusedStageFull;
            expired += run.Counters.DisconnectedActorsExpired;
            evicted += run.Counters.DisconnectedActorsEvictedAtCap;
            idleClosed += run.Counters.IdleStagesClosed;
            reconnects += run.Reconnects;
        }

        // The seeds reach every limit and policy, so the checks above judged each of them.
        tooManyStages.ShouldBeGreaterThan(0);
        stageFull.ShouldBeGreaterThan(0);
        expired.ShouldBeGreaterThan(0);
        evicted.ShouldBeGreaterThan(0);
        idleClosed.ShouldBeGreaterThan(0);
        reconnects.ShouldBeGreaterThan(0);
    }

    [Fact]
    public void Churn_WithDisconnectedActorsThatNeverExpire_IsCaughtByTheRegistryBoundsChecker()
    {
        var flawed = FlawedRegistryParts.WithNeverExpiringDisconnectedActors(NodeParts.Standard);
        for (ulong seed = 1; seed <= 5; seed++)
        {
            var correct = RegistryChurn.Run(seed);
            var run = RegistryChurn.Run(seed, parts: flawed);

            correct.Passed.ShouldBeTrue($"seed {seed}: {correct.FirstViolation}");
            run.Passed.ShouldBeFalse($"seed {seed}: the never-expiring table passed");
            run.FirstViolation.ShouldNotBeNull().CheckerName.ShouldBe(RegistryBoundsChecker.CheckerName);
            run.FirstViolation.Message.ShouldContain("still held");
            run.Counters.DisconnectedActorsExpired.ShouldBe(0);
        }
    }

    [Fact]
    public void Churn_WithALedgerThatIgnoresDisconnectedActorsMax_IsCaughtByTheRegistryBoundsChecker()
    {
        // A longer expiry than the default's 2 s, so the disconnected actors the cap should have evicted stay long enough
        // to be seen past the grace.
        var options = new RegistryChurnOptions();
        options = options with { Server = options.Server with { DisconnectedActorExpiry = TimeSpan.FromSeconds(20) } };
        var flawed = FlawedRegistryParts.WithUncappedDisconnectedActors(NodeParts.Standard);
        for (ulong seed = 1; seed <= 5; seed++)
        {
            var correct = RegistryChurn.Run(seed, options);
            var run = RegistryChurn.Run(seed, options, flawed);

            correct.Passed.ShouldBeTrue($"seed {seed}: {correct.FirstViolation}");
            correct.Counters.DisconnectedActorsEvictedAtCap.ShouldBeGreaterThan(0, $"seed {seed}");
            run.Passed.ShouldBeFalse($"seed {seed}: the uncapped ledger passed");
            run.FirstViolation.ShouldNotBeNull().CheckerName.ShouldBe(RegistryBoundsChecker.CheckerName);
            run.FirstViolation.Message.ShouldContain("over DisconnectedActorsMax=3");
            run.Counters.DisconnectedActorsEvictedAtCap.ShouldBe(0);
        }
    }

    [Fact]
    public void Churn_SameSeedTwice_GivesTheSameTrace_AndAnotherSeedDoesNot()
    {
        var first = RegistryChurn.Run(9);
        var second = RegistryChurn.Run(9);
        var other = RegistryChurn.Run(10);

        second.TraceHash.ShouldBe(first.TraceHash);
        second.VirtualTime.ShouldBe(first.VirtualTime);
        other.TraceHash.ShouldNotBe(first.TraceHash);
    }
}
