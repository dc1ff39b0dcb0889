using FsCheck;
using Microsoft.FSharp.Collections;
using Microsoft.FSharp.Core;
using PlayHouse.Fixtures.Properties;
using Xunit.Sdk;

namespace PlayHouse.Properties.Tests.Infrastructure;

/// <summary>
/// Runs an FsCheck property that is not over simulations (the model-based tests) inside a plain xUnit test and
/// keeps FsCheck's own failure text, which lists the shrunk sequence of operations and the replay seed.
/// </summary>
public sealed class ModelRunner : IRunner
{
    public TestResult? Result { get; private set; }

    public string Name { get; private set; } = string.Empty;

    public bool Failed => Result is TestResult.Failed;

    /// <summary>FsCheck's report of the result: the shrunk counterexample and "(seed,gamma)" to replay it.</summary>
    public string FailureText => Result is null ? string.Empty : Runner.onFinishedToString(Name, Result);

    /// <summary>A configuration with this runner: fixed seed per name at normal depth, random in deep runs.</summary>
    public static Config Config(ModelRunner runner, int maxTest, string name)
    {
        ArgumentNullException.ThrowIfNull(runner);
        var config = FsCheck.Config.Quick.WithMaxTest(maxTest).WithName(name).WithRunner(runner).WithQuietOnSuccess(true);
        var replay = PropertyDepth.ReplayFromEnvironment() ?? (PropertyDepth.IsDeep ? null : FixedSeed(name));
        return replay is { } r
            ? config.WithReplay(FSharpOption<Replay>.Some(new Replay(new Rnd(r.Seed, r.Gamma), FSharpOption<int>.None)))
            : config;
    }

    public void ThrowIfFailed()
    {
        if (Result is null)
        {
            throw new XunitException($"FsCheck did not report a result for '{Name}'.");
        }

        if (!Result.IsPassed)
        {
            throw new XunitException($"{FailureText}\nReplay with {PropertyDepth.ReplayVariable}=\"seed,gamma\" as printed above.");
        }
    }

    public void OnStartFixture(Type testFixture)
    {
    }

    public void OnArguments(int testNumber, FSharpList<object> arguments, FSharpFunc<int, FSharpFunc<FSharpList<object>, string>> every)
    {
    }

    public void OnShrink(FSharpList<object> arguments, FSharpFunc<FSharpList<object>, string> everyShrink)
    {
    }

    public void OnFinished(string name, TestResult testResult)
    {
        Name = name;
        Result = testResult;
    }

    private static (ulong Seed, ulong Gamma) FixedSeed(string name)
    {
        var hash = 14695981039346656037UL;
        foreach (var ch in name)
        {
            hash = (hash ^ ch) * 1099511628211UL;
        }

        return (hash, (hash * 0x9E3779B97F4A7C15UL) | 1);
    }
}
