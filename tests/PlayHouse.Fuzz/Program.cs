using PlayHouse.Fixtures.Fuzzing;
using SharpFuzz;

namespace PlayHouse.Fuzz;

/// <summary>
/// The afl++ entry: <c>PlayHouse.Fuzz TARGET</c> runs SharpFuzz's fork-server loop over the target
/// (<see cref="FuzzTargets.Names"/>); <c>PlayHouse.Fuzz TARGET --run FILE...</c> runs files through it once each,
/// without afl++, and exits 1 on the first that fails (for triage of a crash file);
/// <c>PlayHouse.Fuzz TARGET --write-seeds DIR</c> writes the target's starting inputs.
/// </summary>
internal static class Program
{
    public static int Main(string[] args)
    {
        var target = args.Length > 0 ? FuzzTargets.Find(args[0]) : null;
        if (target is null)
        {
            Console.Error.WriteLine($"error: the first argument is the target: {string.Join(", ", FuzzTargets.Names)}.");
            return 64;
        }

        if (args.Length > 2 && args[1] == "--write-seeds")
        {
            // The starting inputs of a coverage-guided run (fuzz.sh calls this).
            Directory.CreateDirectory(args[2]);
            var seeds = FuzzSeeds.For(args[0]);
            for (var i = 0; i < seeds.Count; i++)
            {
                File.WriteAllBytes(Path.Combine(args[2], $"seed-{i:D2}"), seeds[i]);
            }

            return 0;
        }

        if (args.Length > 1 && args[1] == "--run")
        {
            foreach (var file in args.Skip(2))
            {
                try
                {
                    target(File.ReadAllBytes(file));
                    Console.WriteLine($"pass {file}");
                }
                catch (Exception ex)
                {
                    Console.WriteLine($"FAIL {file}: {ex}");
                    return 1;
                }
            }

            return 0;
        }

        Fuzzer.OutOfProcess.Run(stream =>
        {
            using var copy = new MemoryStream();
            stream.CopyTo(copy);
            target(copy.GetBuffer().AsSpan(0, (int)copy.Length));
        });
        return 0;
    }
}
