using System.CommandLine;
using System.Globalization;
using PlayHouse.Core.Seams;
using PlayHouse.Fixtures.Flawed.Pools;
using PlayHouse.Fixtures.Fuzzing;
using PlayHouse.Fixtures.Fuzzing.Pool;
using PlayHouse.Simulation.Runs;

namespace PlayHouse.Sim.Cli;

/// <summary>
/// <c>fuzz pool|codec|mesh</c>: random inputs from a seed through the same targets afl++ runs (the pool language
/// through the step-checking interpreter, the decoders through their targets), for a number of iterations or a wall
/// duration, with a progress line and, on the first failure, the shrunk input as readable steps, the seed and the
/// replay lines. <c>--replay FILE</c> runs one saved input (a corpus file or a failure).
/// </summary>
/// <remarks>Not thread-safe; one instance serves one command line. Exit codes as for <c>run</c>.</remarks>
internal sealed class FuzzCommands(IRunView view, IWallClock clock)
{
    public const string CommandPrefix = "dotnet run --project simulation/PlayHouse.Sim.Cli -c Release -- fuzz";

    private const long DefaultIterations = 10_000;
    private const int SignaturesMax = 1 << 20;
    private static readonly TimeSpan ProgressInterval = TimeSpan.FromSeconds(2);

    public Command Build()
    {
        var target = new Argument<string>("target") { Description = $"What to fuzz: {string.Join(", ", FuzzTargets.Names)}." };
        var seed = CliCommands.SeedOption("--seed", "The seed of the inputs; when omitted a fresh one is drawn from OS entropy (printed).");
        var iterations = new Option<long?>("--iterations") { Description = $"Inputs to run (default {DefaultIterations} unless --duration is given)." };
        var duration = new Option<string?>("--duration") { Description = "Run for this long instead: 60s, 5m, 500ms." };
        var threads = new Option<int?>("--threads") { Description = $"pool: spread each program over K OS threads ({PoolThreadedRun.ThreadsMin}-{PoolThreadedRun.ThreadsMax}) and check at quiescence, instead of lock-step executors checked after every step." };
        var checkedMode = new Option<bool>("--checked") { Description = "pool: every pool in checked mode (otherwise each input chooses)." };
        var pool = new Option<string?>("--pool") { Description = $"pool: which pool: {string.Join(", ", FlawedPools.Names)} (default {FlawedPools.Real})." };
        var replay = new Option<string?>("--replay") { Description = "Run one saved input (a corpus file or a failure) and print it." };
        var saveDirectory = new Option<string>("--save-dir")
        {
            Description = "Where a failing input is written for --replay.",
            DefaultValueFactory = _ => Path.Combine("artifacts", "fuzz", "failures"),
        };
        var command = new Command("fuzz", "Fuzzes the message pool (model-based, the pool language), the client codec or the mesh decoder from a seed; prints the shrunk failure and its replay line.")
        {
            target, seed, iterations, duration, threads, checkedMode, pool, replay, saveDirectory,
        };
        command.SetAction(parse =>
        {
            var settings = Validate(
                parse.GetValue(target),
                parse.GetValue(seed),
                parse.GetValue(iterations),
                parse.GetValue(duration),
                parse.GetValue(threads),
                parse.GetValue(checkedMode),
                parse.GetValue(pool),
                parse.GetValue(replay),
                parse.GetValue(saveDirectory)!);
            return settings.ReplayFile is { } file ? Replay(settings, file) : Fuzz(settings);
        });
        return command;
    }

    private static FuzzSettings Validate(string? target, ulong? seed, long? iterations, string? duration, int? threads, bool checkedMode, string? pool, string? replay, string saveDirectory)
    {
        if (string.IsNullOrWhiteSpace(target) || FuzzTargets.Find(target) is null)
        {
            throw new UsageException($"Unknown fuzz target '{target}'. Targets: {string.Join(", ", FuzzTargets.Names)}.");
        }

        var isPool = target == "pool";
        if (!isPool && (threads is not null || checkedMode || pool is not null))
        {
            throw new UsageException($"--threads, --checked and --pool apply to the pool target only, not '{target}'. Targets: {string.Join(", ", FuzzTargets.Names)}.");
        }

        if (threads is { } k && (k < PoolThreadedRun.ThreadsMin || k > PoolThreadedRun.ThreadsMax))
        {
            throw new UsageException(string.Create(CultureInfo.InvariantCulture, $"--threads must lie in {PoolThreadedRun.ThreadsMin}..{PoolThreadedRun.ThreadsMax}, got {k}."));
        }

        var poolName = pool ?? FlawedPools.Real;
        if (FlawedPools.Find(poolName) is null)
        {
            throw new UsageException($"Unknown pool '{poolName}'. Pools: {string.Join(", ", FlawedPools.Names)}.");
        }

        if (replay is not null)
        {
            if (seed is not null || iterations is not null || duration is not null)
            {
                throw new UsageException("--replay runs one saved input; it takes no --seed, --iterations or --duration.");
            }

            byte[] bytes;
            try
            {
                bytes = File.ReadAllBytes(replay);
            }
            catch (Exception ex) when (ex is IOException or UnauthorizedAccessException or ArgumentException or NotSupportedException)
            {
                throw new UsageException($"--replay cannot read '{replay}': {CliInputs.OneLine(ex.Message)}", ex);
            }

            return new FuzzSettings(target, 0, null, null, threads, checkedMode, poolName, (replay, bytes), saveDirectory);
        }

        if (iterations is not null && duration is not null)
        {
            throw new UsageException("Give either --iterations or --duration, not both.");
        }

        if (iterations is { } n && n < 1)
        {
            throw new UsageException(string.Create(CultureInfo.InvariantCulture, $"--iterations must be at least 1, got {n}."));
        }

        TimeSpan? limit = duration is null ? null : ParseDuration(duration);
        return new FuzzSettings(target, seed ?? FreshSeed.Next(), limit is null ? iterations ?? DefaultIterations : null, limit, threads, checkedMode, poolName, null, saveDirectory);
    }

    private static TimeSpan ParseDuration(string text)
    {
        var trimmed = text.Trim();
        var (number, scale) = trimmed switch
        {
            _ when trimmed.EndsWith("ms", StringComparison.Ordinal) => (trimmed[..^2], 0.001),
            _ when trimmed.EndsWith('s') => (trimmed[..^1], 1.0),
            _ when trimmed.EndsWith('m') => (trimmed[..^1], 60.0),
            _ when trimmed.EndsWith('h') => (trimmed[..^1], 3600.0),
            _ => (trimmed, 1.0),
        };
        if (!double.TryParse(number, NumberStyles.Float, CultureInfo.InvariantCulture, out var value) || value <= 0 || double.IsInfinity(value))
        {
            throw new UsageException($"--duration takes a positive time such as 60s, 5m or 500ms, got '{text}'.");
        }

        return TimeSpan.FromSeconds(value * scale);
    }

    private int Fuzz(FuzzSettings settings)
    {
        view.Line(settings.Banner());
        var random = new Xoshiro256StarStar(settings.Seed);
        var seeds = settings.Target == "pool" ? [] : FuzzSeeds.For(settings.Target);
        // Distinct states: the model's fingerprint after every step (lock-step) or after each program (threads).
        var signatures = new HashSet<ulong>();
        var started = clock.Elapsed;
        var lastProgress = started;
        long ops = 0;
        long iteration = 0;
        for (; (settings.Iterations is null || iteration < settings.Iterations) && (settings.Duration is null || clock.Elapsed - started < settings.Duration); iteration++)
        {
            var input = Generate(random, settings, seeds);
            var failure = RunOne(settings, input, signatures, ref ops);
            if (failure is not null)
            {
                return ReportFailure(settings, input, failure, iteration);
            }

            var now = clock.Elapsed;
            if (now - lastProgress >= ProgressInterval)
            {
                lastProgress = now;
                view.Line(Invariant($"progress fuzz {settings.Target} iterations={iteration + 1} ops={ops} ops-per-second={ops / (now - started).TotalSeconds:0} distinct-states={signatures.Count} wall-seconds={(now - started).TotalSeconds:0.0}"));
            }
        }

        var wall = (clock.Elapsed - started).TotalSeconds;
        view.Line("outcome=pass");
        view.Line(Invariant($"fuzz.iterations={iteration}"));
        view.Line(Invariant($"fuzz.ops={ops}"));
        view.Line(Invariant($"fuzz.opsPerSecond={(wall > 0 ? ops / wall : 0):0}"));
        view.Line(Invariant($"fuzz.distinctStates={signatures.Count}"));
        view.Line(Invariant($"fuzz.wallSeconds={wall:0.###}"));
        return RunExitCodes.Pass;
    }

    private int Replay(FuzzSettings settings, (string Path, byte[] Bytes) file)
    {
        view.Line(settings.Banner());
        view.Line(Invariant($"replay-file={file.Path} bytes={file.Bytes.Length}"));
        if (settings.Target == "pool")
        {
            var program = PoolProgram.Decode(file.Bytes);
            view.Line("pool: " + program.Config);
            foreach (var step in program.Describe())
            {
                view.Line("step " + step);
            }
        }

        long ops = 0;
        var failure = RunOne(settings, file.Bytes, [], ref ops);
        if (failure is null)
        {
            view.Line("outcome=pass");
            return RunExitCodes.Pass;
        }

        view.Line("outcome=" + Outcome(failure));
        view.Line("failure=" + CliInputs.OneLine(failure.Message));
        return ExitCode(failure);
    }

    private static byte[] Generate(Xoshiro256StarStar random, FuzzSettings settings, IReadOnlyList<byte[]> seeds)
    {
        byte[] input;
        if (seeds.Count > 0 && random.NextInt(2) == 0)
        {
            // Half the inputs are mutated well-formed streams, so decoding gets past the length checks.
            var list = new List<byte>(seeds[random.NextInt(seeds.Count)]);
            var mutations = 1 + random.NextInt(8);
            for (var m = 0; m < mutations && list.Count > 0; m++)
            {
                var at = random.NextInt(list.Count);
                switch (random.NextInt(4))
                {
                    case 0:
                        list[at] ^= (byte)(1 << random.NextInt(8));
                        break;
                    case 1:
                        list[at] = (byte)random.NextInt(256);
                        break;
                    case 2:
                        list.Insert(at, (byte)random.NextInt(256));
                        break;
                    default:
                        list.RemoveAt(at);
                        break;
                }
            }

            input = [.. list];
        }
        else
        {
            input = new byte[2 + random.NextInt(settings.Target == "pool" ? 160 : 256)];
            for (var i = 0; i < input.Length; i++)
            {
                input[i] = (byte)random.NextInt(256);
            }
        }

        if (settings.Target == "pool" && settings.Checked)
        {
            input[0] |= 1;
        }

        return input;
    }

    /// <summary>Runs one input; null when it passed, else what failed.</summary>
    private static Exception? RunOne(FuzzSettings settings, byte[] input, HashSet<ulong> signatures, ref long ops)
    {
        try
        {
            if (settings.Target != "pool")
            {
                var signature = FuzzTargets.Find(settings.Target)!(input);
                ops++;
                AddSignature(signatures, signature);
                return null;
            }

            var program = PoolProgram.Decode(input);
            var factory = FlawedPools.Find(settings.Pool)!;
            if (settings.Threads is { } threads)
            {
                AddSignature(signatures, PoolThreadedRun.Run(program, factory, threads).StateSignature());
                ops += program.Ops.Count;
                return null;
            }

            using var interpreter = new PoolInterpreter(program.Config, factory);
            foreach (var op in program.Ops)
            {
                interpreter.Step(op);
                ops++;
                AddSignature(signatures, interpreter.Model.StateSignature());
            }

            return null;
        }
        catch (Exception ex) when (ex is not OutOfMemoryException)
        {
            return ex;
        }
    }

    private static void AddSignature(HashSet<ulong> signatures, ulong signature)
    {
        if (signatures.Count < SignaturesMax)
        {
            signatures.Add(signature);
        }
    }

    private int ReportFailure(FuzzSettings settings, byte[] input, Exception failure, long iteration)
    {
        view.Line("outcome=" + Outcome(failure));
        view.Line(Invariant($"seed={settings.Seed} iteration={iteration + 1}"));
        view.Line("failure=" + CliInputs.OneLine(failure.Message));
        byte[] shrunk;
        if (settings.Target == "pool")
        {
            var program = PoolProgram.Decode(input);
            var shrunkProgram = PoolShrinker.Shrink(program, candidate => Fails(settings, candidate.Encode()));
            shrunk = shrunkProgram.Encode();
            long ignored = 0;
            var shrunkFailure = RunOne(settings, shrunk, [], ref ignored);
            view.Line(Invariant($"shrunk={shrunkProgram.Ops.Count} step(s), from {program.Ops.Count}"));
            view.Line("pool: " + shrunkProgram.Config);
            foreach (var step in shrunkProgram.Describe())
            {
                view.Line("step " + step);
            }

            if (shrunkFailure is not null)
            {
                view.Line("shrunk-failure=" + CliInputs.OneLine(shrunkFailure.Message));
            }
        }
        else
        {
            shrunk = ByteShrinker.Shrink(input, candidate => Fails(settings, candidate));
            view.Line(Invariant($"shrunk={shrunk.Length} byte(s), from {input.Length}"));
            view.Line("input-hex=" + Convert.ToHexString(shrunk));
        }

        var options = settings.ReplayOptions();
        var path = Save(settings, shrunk, iteration);
        view.Line("failure-file=" + path);
        view.Line($"replay={CommandPrefix} {settings.Target} --replay {path}{options}");
        view.Line(Invariant($"replay-seed={CommandPrefix} {settings.Target} --seed {settings.Seed} --iterations {iteration + 1}{options}{(settings.Checked ? " --checked" : string.Empty)}"));
        return ExitCode(failure);
    }

    private static bool Fails(FuzzSettings settings, byte[] input)
    {
        long ignored = 0;
        return RunOne(settings, input, [], ref ignored) is not null;
    }

    private static string Save(FuzzSettings settings, byte[] input, long iteration)
    {
        try
        {
            Directory.CreateDirectory(settings.SaveDirectory);
            var name = Invariant($"{settings.Target}{(settings.Target == "pool" ? "-" + settings.Pool : string.Empty)}-seed{settings.Seed}-iteration{iteration + 1}.bin");
            var path = Path.Combine(settings.SaveDirectory, name);
            File.WriteAllBytes(path, input);
            return path;
        }
        catch (Exception ex) when (ex is IOException or UnauthorizedAccessException or ArgumentException or NotSupportedException)
        {
            throw new UsageException($"--save-dir cannot write to '{settings.SaveDirectory}': {CliInputs.OneLine(ex.Message)}", ex);
        }
    }

    /// <summary>A broken invariant is a violation; an exception nobody expected (in the pool or a decoder) is a crash.</summary>
    private static bool IsCrash(Exception failure) =>
        failure is not FuzzViolationException || failure.InnerException is { } inner && inner is not FuzzViolationException;

    private static string Outcome(Exception failure) => IsCrash(failure) ? "crash" : "invariant-violation";

    private static int ExitCode(Exception failure) => IsCrash(failure) ? RunExitCodes.Crash : RunExitCodes.InvariantViolation;

    private static string Invariant(FormattableString text) => text.ToString(CultureInfo.InvariantCulture);

    private sealed record FuzzSettings(
        string Target,
        ulong Seed,
        long? Iterations,
        TimeSpan? Duration,
        int? Threads,
        bool Checked,
        string Pool,
        (string Path, byte[] Bytes)? ReplayFile,
        string SaveDirectory)
    {
        public string Banner() => Invariant(
            $"fuzz target={Target} seed={(ReplayFile is null ? Seed.ToString(CultureInfo.InvariantCulture) : "replay")} iterations={Iterations?.ToString(CultureInfo.InvariantCulture) ?? "-"} duration-s={Duration?.TotalSeconds.ToString("0.###", CultureInfo.InvariantCulture) ?? "-"}{(Target == "pool" ? $" pool={Pool} threads={Threads?.ToString(CultureInfo.InvariantCulture) ?? "lock-step"} checked={(Checked ? "all" : "per-input")}" : string.Empty)}");

        /// <summary>The options that shape a pool run (pool, threads), for the replay lines.</summary>
        public string ReplayOptions() =>
            Target != "pool" ? string.Empty
            : (Pool == FlawedPools.Real ? string.Empty : " --pool " + Pool) + (Threads is { } k ? Invariant($" --threads {k}") : string.Empty);
    }
}
