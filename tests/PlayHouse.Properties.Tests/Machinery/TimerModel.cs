using System.Collections.Immutable;
using System.Globalization;
using FsCheck;
using FsCheck.Fluent;
using PlayHouse.Simulation;

namespace PlayHouse.Properties.Tests.Machinery;

/// <summary>What one step of a timer program does to its timer slot.</summary>
public enum TimerOpKind
{
    /// <summary>Creates the slot's timer (a slot that already has one is changed instead).</summary>
    Create,

    /// <summary>Re-arms, disarms or changes the period of the slot's timer (nothing when the slot is empty).</summary>
    Change,

    /// <summary>Cancels the slot's timer for good (nothing when the slot is empty).</summary>
    Dispose,
}

/// <summary>
/// One step of a timer program: at <see cref="AtMs"/> (or, when <see cref="InCallbackOf"/> names a slot, inside that
/// slot's next callback) do <see cref="Kind"/> to slot <see cref="Timer"/> with a due time and a period in whole
/// milliseconds, -1 meaning <see cref="Timeout.InfiniteTimeSpan"/>.
/// </summary>
public sealed record TimerOp(int AtMs, TimerOpKind Kind, int Timer, int DueMs, int PeriodMs, int InCallbackOf)
{
    public override string ToString()
    {
        var when = InCallbackOf >= 0 ? $"in timer {InCallbackOf}'s next callback" : $"at {AtMs}ms";
        return Kind == TimerOpKind.Dispose
            ? $"{when}: dispose timer {Timer}"
            : string.Create(CultureInfo.InvariantCulture, $"{when}: {Kind.ToString().ToLowerInvariant()} timer {Timer} due {Ms(DueMs)} period {Ms(PeriodMs)}");
    }

    private static string Ms(int ms) => ms < 0 ? "infinite" : $"{ms}ms";
}

/// <summary>A whole program: the world's seed, whether same-instant events run in a PRNG-picked order, and the steps.</summary>
public sealed record TimerProgram(int Seed, bool ExploreSchedules, ImmutableArray<TimerOp> Ops)
{
    public override string ToString() =>
        $"seed {Seed}, explore {ExploreSchedules}, {Ops.Length} step(s):\n    " + string.Join("\n    ", Ops);
}

/// <summary>What the programs of one property run reached (a model check over easy cases only proves little).</summary>
public sealed class TimerCoverage
{
    public int Programs { get; set; }

    public long Fires { get; set; }

    /// <summary>A Change of a timer that was armed (its pending due time replaced).</summary>
    public long ReArmsWhileArmed { get; set; }

    /// <summary>A Change that gave an armed timer a different period.</summary>
    public long PeriodChanges { get; set; }

    /// <summary>A Dispose or disarming Change of an armed timer.</summary>
    public long CancelsWhileArmed { get; set; }

    /// <summary>A step taken at the very instant an armed timer was due (before it fired).</summary>
    public long StepsAtADueInstant { get; set; }

    /// <summary>A fire at an instant at which another timer fired too.</summary>
    public long SharedFireInstants { get; set; }

    /// <summary>A step run inside a timer's callback.</summary>
    public long StepsInCallbacks { get; set; }

    public override string ToString() => string.Create(
        CultureInfo.InvariantCulture,
        $"{Programs} programs: {Fires} fires, {ReArmsWhileArmed} re-arms while armed, {PeriodChanges} period changes, {CancelsWhileArmed} cancels while armed, {StepsAtADueInstant} steps at a due instant, {SharedFireInstants} fires sharing an instant, {StepsInCallbacks} steps in callbacks");
}

/// <summary>
/// Runs a timer program against a time provider built on a <see cref="SimWorld"/> and judges every firing against a
/// model, online: each slot's model holds whether it is armed, its current due instant and its period; a firing must
/// find its slot armed and due exactly now, and moves the model on (disarmed, or due one period later), so a second
/// firing for the same due time, a firing at an old due time and a firing of a cancelled timer all contradict it. After
/// the horizon, no armed slot may be due at or before it (a due time that never fired).
/// </summary>
public static class TimerModel
{
    public const int SlotCount = 3;
    public const int StepAtMsMax = 12;
    public const int DueMsMax = 6;
    public const int PeriodMsMax = 5;

    /// <summary>Far enough past the last step that every due time a step sets comes up before it.</summary>
    public const int HorizonMs = 40;

    private const long TicksPerMs = TimeSpan.TicksPerMillisecond;

    /// <summary>The first contradiction between the provider's timers and the model, or null when there is none.</summary>
    public static string? Run(TimerProgram program, Func<SimWorld, TimeProvider> createProvider, TimerCoverage? coverage = null)
    {
        ArgumentNullException.ThrowIfNull(program);
        ArgumentNullException.ThrowIfNull(createProvider);
        var world = new SimWorld((ulong)program.Seed, new SimWorldOptions { ExploreSchedules = program.ExploreSchedules });
        var run = new ProgramRun(world, createProvider(world), coverage);
        if (coverage is not null)
        {
            coverage.Programs++;
        }

        foreach (var op in program.Ops)
        {
            if (op.InCallbackOf >= 0)
            {
                run.Slots[op.InCallbackOf].InCallback.Enqueue(op);
            }
            else
            {
                world.ScheduleAt(op.AtMs * TicksPerMs, new StepEvent(run, op));
            }
        }

        world.RunUntil(HorizonMs * TicksPerMs);
        for (var i = 0; i < SlotCount; i++)
        {
            var slot = run.Slots[i];
            if (slot.Armed && slot.DueTicks <= world.NowTicks)
            {
                run.Violate($"timer {i} was due at {Ms(slot.DueTicks)} and never fired (horizon {HorizonMs}ms)");
            }
        }

        foreach (var slot in run.Slots)
        {
            slot.Timer?.Dispose();
        }

        return run.FirstViolation;
    }

    public static Gen<TimerProgram> Programs()
    {
        var op =
            from at in Gen.Choose(0, StepAtMsMax)
            from kind in Gen.Frequency((3, Gen.Constant(TimerOpKind.Create)), (5, Gen.Constant(TimerOpKind.Change)), (1, Gen.Constant(TimerOpKind.Dispose)))
            from timer in Gen.Choose(0, SlotCount - 1)
            from due in Gen.Frequency((8, Gen.Choose(0, DueMsMax)), (1, Gen.Constant(-1)))
            from period in Gen.Frequency((3, Gen.Constant(-1)), (1, Gen.Constant(0)), (3, Gen.Choose(1, PeriodMsMax)))
            from inCallback in Gen.Frequency((4, Gen.Constant(-1)), (1, Gen.Choose(0, SlotCount - 1)))
            select new TimerOp(at, kind, timer, due, period, inCallback);
        return
            from seed in Gen.Choose(1, int.MaxValue)
            from explore in Gen.Elements(false, true)
            from count in Gen.Choose(1, 14)
            from ops in Gen.ListOf(op, count)
            select new TimerProgram(seed, explore, [.. ops]);
    }

    public static Arbitrary<TimerProgram> Arbitrary() => Arb.From(Programs(), Shrink);

    /// <summary>Fewer steps first, then simpler ones: at the top level, earlier, due sooner, one-shot, no schedule exploration.</summary>
    public static IEnumerable<TimerProgram> Shrink(TimerProgram program)
    {
        ArgumentNullException.ThrowIfNull(program);
        for (var i = 0; i < program.Ops.Length; i++)
        {
            yield return program with { Ops = program.Ops.RemoveAt(i) };
        }

        if (program.ExploreSchedules)
        {
            yield return program with { ExploreSchedules = false };
        }

        for (var i = 0; i < program.Ops.Length; i++)
        {
            var op = program.Ops[i];
            if (op.InCallbackOf >= 0)
            {
                yield return program with { Ops = program.Ops.SetItem(i, op with { InCallbackOf = -1 }) };
            }

            if (op.AtMs > 0)
            {
                yield return program with { Ops = program.Ops.SetItem(i, op with { AtMs = op.AtMs / 2 }) };
                yield return program with { Ops = program.Ops.SetItem(i, op with { AtMs = op.AtMs - 1 }) };
            }

            if (op.DueMs > 0)
            {
                yield return program with { Ops = program.Ops.SetItem(i, op with { DueMs = op.DueMs - 1 }) };
            }

            if (op.PeriodMs >= 0)
            {
                yield return program with { Ops = program.Ops.SetItem(i, op with { PeriodMs = -1 }) };
            }

            if (op.Timer > 0)
            {
                yield return program with { Ops = program.Ops.SetItem(i, op with { Timer = 0 }) };
            }
        }
    }

    private static string Ms(long ticks) => string.Create(CultureInfo.InvariantCulture, $"{ticks / (double)TicksPerMs}ms");

    private static TimeSpan Span(int ms) => ms < 0 ? Timeout.InfiniteTimeSpan : TimeSpan.FromMilliseconds(ms);

    /// <summary>One slot: the timer under test and the model's view of it.</summary>
    private sealed class Slot
    {
        public ITimer? Timer { get; set; }

        public bool Disposed { get; set; }

        public bool Armed { get; set; }

        public long DueTicks { get; set; }

        /// <summary>0 for a one-shot timer.</summary>
        public long PeriodTicks { get; set; }

        public long LastFireTicks { get; set; } = -1;

        public Queue<TimerOp> InCallback { get; } = new();
    }

    private sealed class ProgramRun(SimWorld world, TimeProvider provider, TimerCoverage? coverage)
    {
        private long _lastFireTicks = -1;

        public Slot[] Slots { get; } = [new(), new(), new()];

        public string? FirstViolation { get; private set; }

        public void Violate(string what) => FirstViolation ??= $"{what} [virtual time {Ms(world.NowTicks)}]";

        public void Apply(TimerOp op)
        {
            var slot = Slots[op.Timer];
            var now = world.NowTicks;
            if (coverage is not null && Slots.Any(s => s.Armed && s.DueTicks == now))
            {
                coverage.StepsAtADueInstant++;
            }

            if (op.Kind == TimerOpKind.Dispose)
            {
                if (slot.Timer is null)
                {
                    return;
                }

                if (slot.Armed && coverage is not null)
                {
                    coverage.CancelsWhileArmed++;
                }

                slot.Timer.Dispose();
                (slot.Disposed, slot.Armed) = (true, false);
                return;
            }

            var periodTicks = op.PeriodMs <= 0 ? 0 : op.PeriodMs * TicksPerMs;
            if (slot.Timer is null)
            {
                if (op.Kind == TimerOpKind.Change)
                {
                    return;
                }

                var index = op.Timer;
                slot.Timer = provider.CreateTimer(_ => Fired(index), null, Span(op.DueMs), Span(op.PeriodMs));
            }
            else
            {
                if (coverage is not null && slot.Armed)
                {
                    coverage.ReArmsWhileArmed++;
                    if (op.DueMs < 0)
                    {
                        coverage.CancelsWhileArmed++;
                    }

                    if (periodTicks != slot.PeriodTicks)
                    {
                        coverage.PeriodChanges++;
                    }
                }

                var changed = slot.Timer.Change(Span(op.DueMs), Span(op.PeriodMs));
                if (changed == slot.Disposed)
                {
                    Violate($"Change of timer {op.Timer} returned {changed} on a timer that is {(slot.Disposed ? "disposed" : "live")}");
                }

                if (slot.Disposed)
                {
                    return;
                }
            }

            slot.Armed = op.DueMs >= 0;
            slot.DueTicks = op.DueMs >= 0 ? now + (op.DueMs * TicksPerMs) : 0;
            slot.PeriodTicks = periodTicks;
        }

        private void Fired(int index)
        {
            var slot = Slots[index];
            var now = world.NowTicks;
            if (!slot.Armed)
            {
                Violate(slot.Disposed ? $"timer {index} fired after it was disposed"
                    : slot.LastFireTicks == now ? $"timer {index} fired a second time for its due time {Ms(now)}"
                    : $"timer {index} fired while disarmed");
            }
            else if (slot.DueTicks != now)
            {
                Violate($"timer {index} fired at {Ms(now)} but was due at {Ms(slot.DueTicks)}");
            }

            if (coverage is not null)
            {
                coverage.Fires++;
                if (_lastFireTicks == now)
                {
                    coverage.SharedFireInstants++;
                }
            }

            _lastFireTicks = now;
            slot.LastFireTicks = now;

            // The timer's next due time, as its owner may rely on: one period after this one, or none.
            if (slot.Armed && slot.DueTicks == now)
            {
                if (slot.PeriodTicks > 0)
                {
                    slot.DueTicks = now + slot.PeriodTicks;
                }
                else
                {
                    slot.Armed = false;
                }
            }

            // Steps the program placed in this callback run now, once each, as a timer owner re-arming or cancelling
            // from its own callback would.
            while (slot.InCallback.TryDequeue(out var op))
            {
                if (coverage is not null)
                {
                    coverage.StepsInCallbacks++;
                }

                Apply(op);
            }
        }
    }

    private sealed class StepEvent(ProgramRun run, TimerOp op) : IThreadPoolWorkItem
    {
        public void Execute() => run.Apply(op);
    }
}
