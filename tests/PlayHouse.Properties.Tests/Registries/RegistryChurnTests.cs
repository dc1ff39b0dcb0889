using System.Globalization;
using FsCheck;
using FsCheck.Fluent;
using PlayHouse.Core.Runtime;
using PlayHouse.Fixtures.Flawed.Registries;
using PlayHouse.Fixtures.Properties;
using PlayHouse.Fixtures.Workload;
using PlayHouse.Properties.Tests.Infrastructure;
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
    public void Churn_UnderAnyCapsOfWaitingActorsAndEmptyStages_PassesEveryChecker_NeverHoldsMoreThanTheCap_AndEndsHoldingNothing()
    {
        long evicted = 0, closedEarly = 0;
        var runner = CheckCaps(NodeParts.Standard, PropertyDepth.Cases(60), "registry-churn-waiting-cap", run =>
        {
            evicted += run.Counters.DisconnectedActorsEvictedAtCap;
            closedEarly += run.Counters.EmptyStagesClosedAtCap;
        });

        runner.ThrowIfFailed();

        // The cases reach both caps, so the property judged them.
        evicted.ShouldBeGreaterThan(0);
        closedEarly.ShouldBeGreaterThan(0);
    }

    [Fact]
    public void CapProperty_WithALedgerThatIgnoresTheCap_FailsAndShrinksToASmallChurn()
    {
        var runner = CheckCaps(FlawedRegistryParts.WithUncappedDisconnectedActors(NodeParts.Standard), 60, "registry-churn-waiting-cap-flawed");

        runner.Failed.ShouldBeTrue("the property passed with a ledger that never evicts");
        runner.FailureText.ShouldContain("over");
        var shrunk = runner.Result.ShouldBeOfType<FsCheck.TestResult.Failed>().Item3.Head.ShouldBeOfType<CapCase>();
        shrunk.Clients.ShouldBeLessThanOrEqualTo(6);
    }

    private static ModelRunner CheckCaps(NodeParts parts, int count, string name, Action<RegistryChurnResult>? observe = null)
    {
        var runner = new ModelRunner();
        var property = Prop.ForAll(CapCase.Arbitrary(), c =>
        {
            var run = RegistryChurn.Run((ulong)c.Seed, c.ToOptions(), parts);
            observe?.Invoke(run);
            var why = run.FirstViolation?.ToString()
                ?? (run.Unexpected != 0 ? $"{run.Unexpected} unexpected answers" : null)
                ?? (run.WaitingActorsHighWater > c.Cap ? $"{run.WaitingActorsHighWater} actors waited at once, over the cap" : null)
                ?? (run.LiveActorsAtEnd != 0 || run.LiveStagesAtEnd != 0 ? $"{run.LiveStagesAtEnd} stages and {run.LiveActorsAtEnd} actors held at the end" : null)
                ?? (run.BuffersOutstanding != 0 ? $"{run.BuffersOutstanding} pooled buffers outstanding" : null);
            if (why is not null)
            {
                throw new PropertyViolationException(string.Create(CultureInfo.InvariantCulture, $"{c}: {why}"));
            }
        });
        FsCheck.Check.One(ModelRunner.Config(runner, count, name), property);
        return runner;
    }

    /// <summary>A churn with caps of waiting actors and empty stages from 0 up, few or many clients and reconnects; shrinks towards fewer clients and cycles.</summary>
    private sealed record CapCase(int Seed, int Cap, int EmptyCap, int Clients, int Cycles, int StageIds, int ReconnectPercent)
    {
        public RegistryChurnOptions ToOptions()
        {
            var defaults = new RegistryChurnOptions();
            return defaults with
            {
                Clients = Clients,
                CyclesPerClient = Cycles,
                StageIds = StageIds,
                ReconnectProbability = ReconnectPercent / 100.0,
                Server = defaults.Server with { DisconnectedActorsMax = Cap, EmptyStagesMax = EmptyCap },
            };
        }

        public static Arbitrary<CapCase> Arbitrary() => Arb.From(
            from seed in Gen.Choose(1, int.MaxValue)
            from cap in Gen.Frequency((1, Gen.Constant(0)), (4, Gen.Choose(1, 6)), (1, Gen.Choose(7, 40)))
            from emptyCap in Gen.Frequency((1, Gen.Constant(0)), (2, Gen.Choose(1, 3)), (2, Gen.Constant(10_000)))
            from clients in Gen.Choose(1, 12)
            from cycles in Gen.Choose(1, 8)
            from stageIds in Gen.Choose(1, 8)
            from reconnect in Gen.Elements(0, 35, 90)
            select new CapCase(seed, cap, emptyCap, clients, cycles, stageIds, reconnect),
            Shrink);

        private static IEnumerable<CapCase> Shrink(CapCase c)
        {
            if (c.Clients > 1)
            {
                yield return c with { Clients = c.Clients / 2 };
            }

            if (c.Cycles > 1)
            {
                yield return c with { Cycles = c.Cycles / 2 };
            }

            if (c.ReconnectPercent > 0)
            {
                yield return c with { ReconnectPercent = 0 };
            }
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
