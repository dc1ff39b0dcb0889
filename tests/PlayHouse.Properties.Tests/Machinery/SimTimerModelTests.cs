using FsCheck;
using FsCheck.Fluent;
using PlayHouse.Fixtures.Properties;
using PlayHouse.Properties.Tests.Infrastructure;
using PlayHouse.Simulation;
using Shouldly;
using Xunit.Abstractions;

namespace PlayHouse.Properties.Tests.Machinery;

/// <summary>
/// The simulated clock's timers against a model (<see cref="TimerModel"/>): random programs arm, re-arm while armed,
/// change the period and cancel up to three timers, at the top level and from inside timer callbacks, with steps and
/// due times packed into a few milliseconds so that many fall on the same instant, in FIFO or PRNG-picked order. Each
/// timer must fire exactly at its current due time, exactly once per due time. Two deliberately flawed providers show
/// that the model bites.
/// </summary>
public sealed class SimTimerModelTests(ITestOutputHelper output)
{
    [Fact]
    [Trait("Category", "Deep")]
    public void SimTimers_UnderArmReArmPeriodChangeAndCancelAtEqualInstants_FireAtTheirDueTimeOncePerDueTime()
    {
        var coverage = new TimerCoverage();
        var runner = Check(world => world.Time, PropertyDepth.Cases(600), "sim-timer-model", coverage);

        output.WriteLine(coverage.ToString());
        runner.ThrowIfFailed();

        // The model is only as good as what the programs reach: each hard case must come up, and often.
        var programs = coverage.Programs;
        coverage.Fires.ShouldBeGreaterThan(programs * 3L, coverage.ToString());
        coverage.ReArmsWhileArmed.ShouldBeGreaterThan(programs / 2L, coverage.ToString());
        coverage.PeriodChanges.ShouldBeGreaterThan(programs / 4L, coverage.ToString());
        coverage.CancelsWhileArmed.ShouldBeGreaterThan(programs / 10L, coverage.ToString());
        coverage.StepsAtADueInstant.ShouldBeGreaterThan(programs / 4L, coverage.ToString());
        coverage.SharedFireInstants.ShouldBeGreaterThan(programs / 4L, coverage.ToString());
        coverage.StepsInCallbacks.ShouldBeGreaterThan(programs / 4L, coverage.ToString());
    }

    [Fact]
    public void TimerModel_WithATimerThatFiresAfterItWasCancelled_Fails()
    {
        var runner = Check(world => new DueInstantOnlyTimeProvider(world), 600, "sim-timer-model-fires-cancelled");

        var shrunk = Shrunk(runner);
        var violation = TimerModel.Run(shrunk, world => new DueInstantOnlyTimeProvider(world));
        output.WriteLine($"{shrunk}\n{violation}");
        runner.Failed.ShouldBeTrue("a timer that fires after Dispose (or fires twice for one due time) passed the model");
        violation.ShouldNotBeNull();
        violation.ShouldMatch("fired after it was disposed|fired while disarmed|fired a second time");

        // The shrunk program is small enough to read, and the correct timer passes it.
        shrunk.Ops.Length.ShouldBeLessThanOrEqualTo(3);
        TimerModel.Run(shrunk, world => world.Time).ShouldBeNull();
    }

    [Fact]
    public void TimerModel_WithATimerThatKeepsItsOldDueTimeOnReArm_Fails()
    {
        var runner = Check(world => new KeepsOldDueTimeProvider(world), 600, "sim-timer-model-keeps-old-due");

        var shrunk = Shrunk(runner);
        var violation = TimerModel.Run(shrunk, world => new KeepsOldDueTimeProvider(world));
        output.WriteLine($"{shrunk}\n{violation}");
        runner.Failed.ShouldBeTrue("a timer that keeps its old due time on re-arm passed the model");
        violation.ShouldNotBeNull();
        violation.ShouldMatch("fired at .* but was due at|never fired");
        shrunk.Ops.Length.ShouldBeLessThanOrEqualTo(3);
        TimerModel.Run(shrunk, world => world.Time).ShouldBeNull();
    }

    [Fact]
    public void TimerModel_ReArmAtTheInstantTheOldDueTimeComesUp_FiresOnceForTheNewDueTime()
    {
        // A hand-written case of the hardest kind: the timer is due at 5 ms, and a step at 5 ms (queued before the
        // timer's event, so it runs first) re-arms it to 5 ms again; the stale event and the new one share the instant.
        var program = new TimerProgram(1, false, [new TimerOp(5, TimerOpKind.Change, 0, 0, -1, -1), new TimerOp(0, TimerOpKind.Create, 0, 5, -1, -1)]);
        var coverage = new TimerCoverage();

        TimerModel.Run(program, world => world.Time, coverage).ShouldBeNull();
        coverage.Fires.ShouldBe(1);
        coverage.StepsAtADueInstant.ShouldBe(1);
        TimerModel.Run(program, world => new DueInstantOnlyTimeProvider(world)).ShouldBe("timer 0 fired a second time for its due time 5ms [virtual time 5ms]");
    }

    private static ModelRunner Check(Func<SimWorld, TimeProvider> provider, int cases, string name, TimerCoverage? coverage = null)
    {
        var runner = new ModelRunner();
        var property = Prop.ForAll(TimerModel.Arbitrary(), program =>
        {
            if (TimerModel.Run(program, provider, coverage) is { } violation)
            {
                throw new PropertyViolationException(violation);
            }
        });
        FsCheck.Check.One(ModelRunner.Config(runner, cases, name), property);
        return runner;
    }

    private static TimerProgram Shrunk(ModelRunner runner) =>
        runner.Result is TestResult.Failed failed ? (TimerProgram)failed.Item3.Head : throw new ShouldAssertException("the property did not fail");
}
