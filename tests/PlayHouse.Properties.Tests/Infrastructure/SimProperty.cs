using System.Globalization;
using System.Text;
using FsCheck;
using FsCheck.Fluent;
using Microsoft.FSharp.Collections;
using Microsoft.FSharp.Core;
using PlayHouse.Fixtures.Scenarios;
using PlayHouse.Fixtures.Testing;
using PlayHouse.Simulation.Runs;
using Xunit.Sdk;

namespace PlayHouse.Properties.Tests.Infrastructure;

/// <summary>
/// An invariant judged on the report of one run: the violation (null when it holds) and whether the run exercised
/// it at all (a property whose cases never exercise their invariant proves nothing, so the harness checks that
/// most cases did).
/// </summary>
public sealed record SimInvariant(string Name, Func<SimReport, string?> Violation, Func<SimReport, bool> Exercised);

/// <summary>What one property run found.</summary>
public sealed record PropertyRun
{
    public required string Property { get; init; }

    public required bool Passed { get; init; }

    public required int Tests { get; init; }

    public int Shrinks { get; init; }

    /// <summary>Runs that exercised the invariant, out of <see cref="Evaluations"/>.</summary>
    public int Exercised { get; init; }

    public int Evaluations { get; init; }

    public required ulong ReplaySeed { get; init; }

    public required ulong ReplayGamma { get; init; }

    public WorkloadSpec? Original { get; init; }

    public WorkloadSpec? Shrunk { get; init; }

    public SimReport? ShrunkReport { get; init; }

    public string? ShrunkViolation { get; init; }

    /// <summary>The failure as printed: seed, FsCheck replay, shrunk options and fault plan, runner command.</summary>
    public string Message { get; init; } = string.Empty;

    public override string ToString() => Message.Length > 0 ? Message : $"{Property}: passed {Tests} tests";
}

/// <summary>
/// Runs a property over generated workloads with FsCheck's core API inside a plain xUnit test (FsCheck.Xunit is
/// not on the package mirror): each case builds a fresh simulation from its own seed, runs it and judges one
/// invariant; a failure is shrunk by <see cref="WorkloadGen.Shrink"/> and reported with everything needed to
/// replay it. The FsCheck seed is fixed per property at normal depth (CI stays deterministic), random in deep runs,
/// and taken from <see cref="PropertyDepth.ReplayVariable"/> when set.
/// </summary>
public static class SimProperty
{
    /// <summary>Runs the property and throws a readable failure when it does not hold.</summary>
    public static PropertyRun Check(string property, WorkloadProfile profile, SimInvariant invariant, int cases, Func<WorkloadSpec, WorkloadHooks?>? hooks = null)
    {
        var run = Run(property, profile, invariant, cases, hooks);
        if (!run.Passed)
        {
            throw new XunitException(run.Message);
        }

        // Most cases must reach the invariant (a request completed, a message delivered...), or passing means little.
        if (run.Exercised * 2 < run.Evaluations)
        {
            throw new XunitException(string.Create(CultureInfo.InvariantCulture, $"Property '{property}' passed, but only {run.Exercised} of {run.Evaluations} runs exercised '{invariant.Name}': the generator is not reaching the invariant."));
        }

        return run;
    }

    /// <summary>Runs the property and returns what it found, passed or failed (the bite tests need the failure).</summary>
    /// <param name="property">The property's name; it also picks the fixed FsCheck seed.</param>
    /// <param name="profile">What the generator draws from.</param>
    /// <param name="invariant">What each run must satisfy.</param>
    /// <param name="cases">Most cases to try (FsCheck stops at the first failure and shrinks it).</param>
    /// <param name="hooks">Replaced workload parts per case (the flawed ones), or null for the standard parts.</param>
    /// <param name="fixedSeed">Keeps the property's fixed FsCheck seed even in deep runs (the bite tests need it).</param>
    public static PropertyRun Run(string property, WorkloadProfile profile, SimInvariant invariant, int cases, Func<WorkloadSpec, WorkloadHooks?>? hooks = null, bool fixedSeed = false)
    {
        ArgumentNullException.ThrowIfNull(profile);
        ArgumentNullException.ThrowIfNull(invariant);
        var replay = PropertyDepth.ReplayFromEnvironment()
            ?? (PropertyDepth.IsDeep && !fixedSeed ? ((ulong Seed, ulong Gamma)?)null : DefaultReplay(property));
        var evaluations = 0;
        var exercised = 0;
        var runner = new CapturingRunner();
        var config = Config.Quick
            .WithMaxTest(cases)
            .WithName(property)
            .WithRunner(runner)
            .WithQuietOnSuccess(true);
        if (replay is { } r)
        {
            config = config.WithReplay(FSharpOption<Replay>.Some(new Replay(new Rnd(r.Seed, r.Gamma), FSharpOption<int>.None)));
        }

        var prop = Prop.ForAll(WorkloadGen.Arbitrary(profile), spec =>
        {
            var (report, violation) = Evaluate(spec, invariant, hooks);
            evaluations++;
            if (invariant.Exercised(report))
            {
                exercised++;
            }

            if (violation is not null)
            {
                throw new PropertyViolationException(violation);
            }
        });
        FsCheck.Check.One(config, prop);

        var result = runner.Result ?? throw new InvalidOperationException($"FsCheck did not report a result for '{property}'.");
        if (result is not TestResult.Failed failed)
        {
            var tests = result is TestResult.Passed passed ? passed.Item1.NumberOfTests : 0;
            if (result.IsExhausted)
            {
                throw new XunitException($"Property '{property}': FsCheck gave up (too many discarded cases).");
            }

            return new PropertyRun
            {
                Property = property,
                Passed = true,
                Tests = tests,
                Exercised = exercised,
                Evaluations = evaluations,
                ReplaySeed = replay?.Seed ?? 0,
                ReplayGamma = replay?.Gamma ?? 0,
            };
        }

        var original = (WorkloadSpec)failed.Item2.Head;
        var shrunk = (WorkloadSpec)failed.Item3.Head;
        var (shrunkReport, shrunkViolation) = Evaluate(shrunk, invariant, hooks);
        var originalViolation = Evaluate(original, invariant, hooks).Violation;
        var rnd = failed.Item5;
        var runResult = new PropertyRun
        {
            Property = property,
            Passed = false,
            Tests = failed.Item1.NumberOfTests,
            Shrinks = failed.Item1.NumberOfShrinks,
            Exercised = exercised,
            Evaluations = evaluations,
            ReplaySeed = rnd.Seed,
            ReplayGamma = rnd.Gamma,
            Original = original,
            Shrunk = shrunk,
            ShrunkReport = shrunkReport,
            ShrunkViolation = shrunkViolation ?? failed.Item4.ToString(),
        };
        return runResult with { Message = Describe(runResult, originalViolation, hooks?.Invoke(shrunk), failed.Item7) };
    }

    /// <summary>Runs one case: a fresh scenario (with the hooks, if any), a fresh world from the case's seed.</summary>
    public static (SimReport Report, string? Violation) Evaluate(WorkloadSpec spec, SimInvariant invariant, Func<WorkloadSpec, WorkloadHooks?>? hooks = null)
    {
        ArgumentNullException.ThrowIfNull(spec);
        ArgumentNullException.ThrowIfNull(invariant);
        var scenario = ScenarioCatalog.Create(spec.Scenario);
        if (hooks?.Invoke(spec) is { } h && scenario is WorkloadScenario workload)
        {
            workload.Hooks = h;
        }

        var report = SimRunner.Run(scenario, spec.Seed, spec.ToOptions());
        return (report, invariant.Violation(report));
    }

    private static string Describe(PropertyRun run, string? originalViolation, WorkloadHooks? hooks, int lastSize)
    {
        var shrunk = run.Shrunk!;
        var report = run.ShrunkReport!;
        var text = new StringBuilder();
        text.Append(CultureInfo.InvariantCulture, $"Property '{run.Property}' failed after {run.Tests} test(s) and {run.Shrinks} shrink(s).\n");
        text.Append(CultureInfo.InvariantCulture, $"FsCheck replay: {PropertyDepth.ReplayVariable}=\"{run.ReplaySeed},{run.ReplayGamma}\" (Config.Replay = Rnd({run.ReplaySeed},{run.ReplayGamma})), last step size {lastSize}\n");
        text.Append(CultureInfo.InvariantCulture, $"Shrunk counterexample: seed {shrunk.Seed}, {shrunk.Clients} client(s), {shrunk.Requests} request(s) and {shrunk.WarmUp} warm-up request(s) each, {shrunk.FaultStepCount} fault step(s)\n");
        text.Append("  ").Append(report.Banner).Append('\n');
        text.Append("  faults: ").Append(shrunk.Faults).Append('\n');
        text.Append("  violation: ").Append(run.ShrunkViolation).Append('\n');
        text.Append("  replay the run: ").Append(SimulationAssert.ReplayCommand(report)).Append('\n');
        if (hooks is not null)
        {
            text.Append("  note: the run used replaced workload parts (").Append(hooks.Name).Append("); the runner replays the standard parts only, so replay it from this test\n");
        }

        var original = run.Original!;
        text.Append("Original counterexample:\n  ").Append(original.ToOptions().ToBanner(original.Seed)).Append('\n');
        text.Append("  violation: ").Append(originalViolation).Append('\n');
        text.Append("Report of the shrunk run:\n").Append(report.ToText(SimulationAssert.ReplayCommandPrefix));
        return text.ToString();
    }

    /// <summary>A fixed FsCheck seed per property name (FNV-1a), so normal-depth runs are the same every time.</summary>
    private static (ulong Seed, ulong Gamma) DefaultReplay(string property)
    {
        var hash = 14695981039346656037UL;
        foreach (var ch in property)
        {
            hash = (hash ^ ch) * 1099511628211UL;
        }

        // FsCheck's splittable generator needs an odd gamma.
        return (hash, (hash * 0x9E3779B97F4A7C15UL) | 1);
    }

    /// <summary>Keeps FsCheck's result instead of printing it, so the harness can report it its own way.</summary>
    private sealed class CapturingRunner : IRunner
    {
        public TestResult? Result { get; private set; }

        public void OnStartFixture(Type testFixture)
        {
        }

        public void OnArguments(int testNumber, FSharpList<object> arguments, FSharpFunc<int, FSharpFunc<FSharpList<object>, string>> every)
        {
        }

        public void OnShrink(FSharpList<object> arguments, FSharpFunc<FSharpList<object>, string> everyShrink)
        {
        }

        public void OnFinished(string name, TestResult testResult) => Result = testResult;
    }
}

/// <summary>A case broke the invariant; FsCheck records it as the failure and shrinks from there.</summary>
public sealed class PropertyViolationException : Exception
{
    public PropertyViolationException()
    {
    }

    public PropertyViolationException(string message)
        : base(message)
    {
    }

    public PropertyViolationException(string message, Exception innerException)
        : base(message, innerException)
    {
    }
}
