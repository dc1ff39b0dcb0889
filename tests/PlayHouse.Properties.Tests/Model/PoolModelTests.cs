using System.Globalization;
using FsCheck;
using FsCheck.Experimental;
using FsCheck.Fluent;
using PlayHouse.Fixtures.Flawed.Pools;
using PlayHouse.Fixtures.Fuzzing;
using PlayHouse.Fixtures.Fuzzing.Pool;
using PlayHouse.Fixtures.Properties;
using PlayHouse.Properties.Tests.Infrastructure;
using Shouldly;
using Xunit.Abstractions;

namespace PlayHouse.Properties.Tests.Model;

/// <summary>
/// Model-based tests of the message pool with FsCheck's state-machine API: random sequences of the pool language
/// (<see cref="PoolOp"/>) run against a pool built from a random configuration, checked after every step by
/// <see cref="PoolInterpreter"/> against <see cref="PoolModel"/>. FsCheck shrinks a failing sequence by dropping
/// operations and simplifying the configuration. The real pool must pass; each flawed pool
/// (fixtures/PlayHouse.Fixtures/Flawed/Pools) must be found within a stated number of sequences and shrunk to a few
/// operations.
/// </summary>
public sealed class PoolModelTests(ITestOutputHelper output)
{
    /// <summary>
    /// Sequences each flawed pool needs at most (from the fixed FsCheck seed of its test) and the longest shrunk
    /// counterexample accepted. The measured values are printed by the test and listed in docs/fuzzing.md.
    /// </summary>
    public static TheoryData<string, int, int> Flaws { get; } = new()
    {
        { "return-keeps-owner", 10, 3 },
        { "size-class-off-by-one", 10, 2 },
        { "thread-cache-unbounded", 10, 3 },
        { "double-return-undetected", 10, 6 },
        { "move-keeps-old-handle", 10, 3 },
    };

    [Fact]
    [Trait("Category", "Deep")]
    public void Pool_UnderRandomOperationSequences_MatchesTheModelAfterEveryStep()
    {
        var machine = new PoolMachine(FlawedPools.Find(FlawedPools.Real)!);
        var runner = new ModelRunner();
        Check.One(ModelRunner.Config(runner, PropertyDepth.Cases(300), "pool-model"), StateMachine.ToProperty(machine));

        runner.ThrowIfFailed();
        machine.Sequences.ShouldBeGreaterThan(0);
        machine.Steps.ShouldBeGreaterThan(machine.Sequences);
        output.WriteLine(string.Create(CultureInfo.InvariantCulture, $"{machine.Sequences} sequences, {machine.Steps} steps, all agreed with the model"));
    }

    [Theory]
    [MemberData(nameof(Flaws))]
    public void FlawedPool_UnderRandomOperationSequences_IsFoundAndShrunkToAFewSteps(string flaw, int sequencesMax, int stepsMax)
    {
        var machine = new PoolMachine(FlawedPools.Find(flaw)!);
        var runner = new ModelRunner();
        Check.One(ModelRunner.Config(runner, 1000, "pool-model-" + flaw), StateMachine.ToProperty(machine));

        output.WriteLine(runner.FailureText);
        runner.Failed.ShouldBeTrue($"the fuzzer did not find the flaw {flaw} in 1000 sequences");
        var failed = (TestResult.Failed)runner.Result!;
        var shortest = machine.ShortestFailure!;
        output.WriteLine(string.Create(CultureInfo.InvariantCulture, $"{flaw}: found at sequence {failed.Item1.NumberOfTests}, {failed.Item1.NumberOfShrinks} shrinks, shortest failing run {shortest.Ops.Count} step(s):"));
        output.WriteLine(shortest.ToString());
        output.WriteLine("replay file (hex): " + Convert.ToHexString(shortest.Encode()));

        failed.Item1.NumberOfTests.ShouldBeLessThanOrEqualTo(sequencesMax);
        shortest.Ops.Count.ShouldBeLessThanOrEqualTo(stepsMax);

        // The shrunk program is a replayable input of the byte language: it fails the same way when decoded.
        new ProgramComparer().Equals(PoolProgram.Decode(shortest.Encode()), shortest).ShouldBeTrue("the shrunk program does not survive encoding");
        Should.Throw<FuzzViolationException>(() => PoolInterpreter.Run(PoolProgram.Decode(shortest.Encode()), FlawedPools.Find(flaw)!));
        Should.NotThrow(() => PoolInterpreter.Run(PoolProgram.Decode(shortest.Encode()), FlawedPools.Find(FlawedPools.Real)!));
    }

    [Fact]
    [Trait("Category", "Deep")]
    public void Pool_SequencesSplitOverTwoToEightThreads_AgreeWithTheModelAtQuiescence()
    {
        // The same programs, each run with its operations spread over 2-8 OS threads (a buffer's rent, moves and
        // returns on different threads); outcomes per operation, the ledger and the counters at quiescence.
        var property = Prop.ForAll(
            Arb.From(from program in PoolGen.Programs() from threads in Gen.Choose(PoolThreadedRun.ThreadsMin, PoolThreadedRun.ThreadsMax) select (program, threads)),
            run =>
            {
                PoolThreadedRun.Run(run.program, FlawedPools.Find(FlawedPools.Real)!, run.threads);
                return true;
            });
        var runner = new ModelRunner();
        Check.One(ModelRunner.Config(runner, PropertyDepth.Cases(100), "pool-threads"), property);
        runner.ThrowIfFailed();
    }

    [Theory]
    [InlineData("double-return-undetected")]
    [InlineData("move-keeps-old-handle")]
    [InlineData("thread-cache-unbounded")]
    public void FlawedPool_SequencesSplitOverThreads_IsFound(string flaw)
    {
        // The threaded run checks less per step (no per-step counters or misuse snapshots), so it must still bite.
        var property = Prop.ForAll(
            Arb.From(from program in PoolGen.Programs() from threads in Gen.Choose(PoolThreadedRun.ThreadsMin, PoolThreadedRun.ThreadsMax) select (program, threads)),
            run =>
            {
                PoolThreadedRun.Run(run.program, FlawedPools.Find(flaw)!, run.threads);
                return true;
            });
        var runner = new ModelRunner();
        Check.One(ModelRunner.Config(runner, 500, "pool-threads-" + flaw), property);
        output.WriteLine(runner.FailureText);
        runner.Failed.ShouldBeTrue($"{flaw} was not found on real threads in 500 programs");
    }

    [Fact]
    public void PoolProgram_EncodedAndDecoded_IsTheSameProgram()
    {
        var property = Prop.ForAll(
            Arb.From(PoolGen.Programs()),
            program => new ProgramComparer().Equals(PoolProgram.Decode(program.Encode()), program));
        var runner = new ModelRunner();
        Check.One(ModelRunner.Config(runner, 300, "pool-program-round-trip"), property);
        runner.ThrowIfFailed();
    }

    [Fact]
    public void PoolProgram_FromAnyBytes_DecodesToAValidProgram()
    {
        var property = Prop.ForAll(
            Arb.From(Gen.ArrayOf(Gen.Choose(0, 255).Select(b => (byte)b))),
            bytes =>
            {
                var program = PoolProgram.Decode(bytes);
                var model = new PoolModel(program.Config);
                foreach (var op in program.Ops)
                {
                    if (!model.CanApply(op))
                    {
                        return false;
                    }

                    model.Apply(op);
                }

                return program.Ops.Count <= PoolProgram.OpsMax;
            });
        var runner = new ModelRunner();
        Check.One(ModelRunner.Config(runner, 300, "pool-program-from-bytes"), property);
        runner.ThrowIfFailed();
    }

    /// <summary>Programs compare by configuration and operations (the record's list compares by reference).</summary>
    private sealed class ProgramComparer : IEqualityComparer<PoolProgram>
    {
        public bool Equals(PoolProgram? x, PoolProgram? y) => x is not null && y is not null && x.Config == y.Config && x.Ops.SequenceEqual(y.Ops);

        public int GetHashCode(PoolProgram obj) => obj.Ops.Count;
    }
}

/// <summary>The generators of the pool language: configurations and next operations given the model.</summary>
public static class PoolGen
{
    public static Gen<PoolFuzzConfig> Configs() =>
        from first in Gen.Choose(0, 255)
        from second in Gen.Choose(0, 255)
        select PoolFuzzConfig.Decode((byte)first, (byte)second);

    /// <summary>The next operation: anything valid for the model, weighted towards rents, returns and misuse.</summary>
    public static Gen<PoolOp> Next(PoolModel model)
    {
        ArgumentNullException.ThrowIfNull(model);
        var config = model.Config;
        var sizes = config.RentSizes.Count;
        var executor = Gen.Choose(0, config.Executors - 1);
        var rent = from size in Gen.Choose(0, sizes - 1) from e in executor select PoolOp.Rent(size, e);
        var slots = model.Slots.Count;
        if (slots == 0)
        {
            return rent;
        }

        var slot = Gen.Choose(0, slots - 1);
        var choices = new List<(int, Gen<PoolOp>)>
        {
            (5, rent),
            (2, from s in slot from seed in Gen.Choose(0, 255) select new PoolOp(PoolOpKind.Write, s, seed)),
            (2, slot.Select(s => new PoolOp(PoolOpKind.Read, s))),
            (1, from s in slot from arg in Gen.Choose(0, 3) select new PoolOp(PoolOpKind.SetLength, s, arg)),
            (2, slot.Select(s => new PoolOp(PoolOpKind.Move, s))),
            (2, slot.Select(s => new PoolOp(PoolOpKind.Copy, s))),
            (2, from s in slot from e in executor select new PoolOp(PoolOpKind.Hand, s, 0, e)),
            (4, slot.Select(s => new PoolOp(PoolOpKind.Dispose, s))),
            (2, slot.Select(s => new PoolOp(PoolOpKind.DisposeIfOwner, s))),
            (1, slot.Select(s => new PoolOp(PoolOpKind.ReturnHome, s))),
            (1, slot.Select(s => new PoolOp(PoolOpKind.ReturnForeign, s))),
            (1, slot.Select(s => new PoolOp(PoolOpKind.PeekRaw, s))),
        };
        return Gen.Frequency(choices).Where(model.CanApply);
    }

    /// <summary>Whole programs (for the encoding test): decoded from random bytes, so valid by construction.</summary>
    public static Gen<PoolProgram> Programs() =>
        Gen.ArrayOf(Gen.Choose(0, 255).Select(b => (byte)b)).Select(bytes => PoolProgram.Decode(bytes));
}

/// <summary>The state machine: a fresh pool (real or flawed) per sequence, the pool language as its operations.</summary>
public sealed class PoolMachine(PoolSubjectFactory factory) : Machine<PoolInterpreter, PoolModel>(60)
{
    /// <summary>Sequences set up so far.</summary>
    public int Sequences { get; private set; }

    /// <summary>Steps checked so far.</summary>
    public long Steps { get; private set; }

    /// <summary>The shortest sequence that failed, as a replayable program.</summary>
    public PoolProgram? ShortestFailure { get; private set; }

    public override Arbitrary<Setup<PoolInterpreter, PoolModel>> Setup =>
        Arb.From(
            PoolGen.Configs().Select(c => (Setup<PoolInterpreter, PoolModel>)new PoolSetup(this, c)),
            setup => ((PoolSetup)setup).Config.Simpler().Select(c => (Setup<PoolInterpreter, PoolModel>)new PoolSetup(this, c)));

    public override TearDown<PoolInterpreter> TearDown => new PoolTearDown();

    public override Gen<Operation<PoolInterpreter, PoolModel>> Next(PoolModel model) =>
        PoolGen.Next(model).Select(op => (Operation<PoolInterpreter, PoolModel>)new PoolOperation(this, op));

    internal void Stepped() => Steps++;

    internal void Failed(PoolInterpreter interpreter)
    {
        var program = interpreter.Program;
        if (ShortestFailure is null || program.Ops.Count <= ShortestFailure.Ops.Count)
        {
            ShortestFailure = program;
        }
    }

    private sealed class PoolSetup(PoolMachine machine, PoolFuzzConfig config) : Setup<PoolInterpreter, PoolModel>
    {
        public PoolFuzzConfig Config => config;

        public override PoolInterpreter Actual()
        {
            machine.Sequences++;
            return new PoolInterpreter(config, machine._factory);
        }

        public override PoolModel Model() => new(config);

        public override string ToString() => "pool: " + config;
    }

    private sealed class PoolTearDown : TearDown<PoolInterpreter>
    {
        public override void Actual(PoolInterpreter actual) => actual.Dispose();
    }

    /// <summary>
    /// One operation. Its slot and executor are taken modulo what exists when it runs, as the byte decoder does, so
    /// that when the shrinker drops an earlier operation the later ones still apply (to the slot that took the place)
    /// instead of being rejected, and a long failing run shrinks to the few steps that matter.
    /// </summary>
    private sealed class PoolOperation(PoolMachine machine, PoolOp op) : Operation<PoolInterpreter, PoolModel>
    {
        public override bool Pre(PoolModel model) => (op.Kind == PoolOpKind.Rent || model.Slots.Count > 0) && model.CanApply(Resolve(model));

        public override PoolModel Run(PoolModel model)
        {
            var next = model.Clone();
            next.Apply(Resolve(model));
            return next;
        }

        public override Property Check(PoolInterpreter actual, PoolModel model)
        {
            machine.Stepped();
            try
            {
                actual.Step(Resolve(actual.Model));
            }
            catch (FuzzViolationException)
            {
                machine.Failed(actual);
                throw;
            }

            return Prop.ToProperty(true);
        }

        public override string ToString() => op.ToString();

        private PoolOp Resolve(PoolModel model) => op with
        {
            Slot = op.Kind == PoolOpKind.Rent ? 0 : op.Slot % model.Slots.Count,
            Executor = op.Executor % model.Config.Executors,
        };

    }

    private readonly PoolSubjectFactory _factory = factory;
}
