using System.Text;

namespace PlayHouse.Sim.Cli.Tests;

/// <summary>One in-process invocation of the runner: its exit code and everything it printed.</summary>
internal sealed record CliResult(int ExitCode, string Output, string Error)
{
    public IReadOnlyList<string> Lines => Output.Split('\n', StringSplitOptions.RemoveEmptyEntries);

    /// <summary>The value of the first <c>key=value</c> line with this key, or null.</summary>
    public string? Value(string key) =>
        Lines.FirstOrDefault(l => l.StartsWith(key + "=", StringComparison.Ordinal)) is { } line ? line[(key.Length + 1)..] : null;

    public override string ToString() => $"exit {ExitCode}\n--- out\n{Output}\n--- err\n{Error}";
}

internal static class CliHarness
{
    public static CliResult Run(params string[] args) => Run(interactive: false, args);

    public static CliResult Run(bool interactive, params string[] args)
    {
        var output = new StringWriter { NewLine = "\n" };
        var error = new StringWriter { NewLine = "\n" };
        var code = SimCli.Run(args, output, error, interactive);
        return new CliResult(code, output.ToString(), error.ToString());
    }

    /// <summary>
    /// The arguments of a replay line (<c>replay=dotnet run ... -- run --scenario ...</c>) after the program name,
    /// split the way a POSIX shell splits them (double quotes group, and are removed).
    /// </summary>
    public static string[] ReplayArguments(string replayCommand)
    {
        const string ProgramPrefix = "dotnet run --project fixtures/PlayHouse.Sim.Cli -c Release -- ";
        Assert.StartsWith(ProgramPrefix, replayCommand, StringComparison.Ordinal);
        return ShellSplit(replayCommand[ProgramPrefix.Length..]);
    }

    public static string[] ShellSplit(string commandLine)
    {
        var words = new List<string>();
        var word = new StringBuilder();
        var inWord = false;
        var quoted = false;
        foreach (var ch in commandLine)
        {
            if (ch == '"')
            {
                quoted = !quoted;
                inWord = true;
            }
            else if (ch == ' ' && !quoted)
            {
                if (inWord)
                {
                    words.Add(word.ToString());
                    word.Clear();
                    inWord = false;
                }
            }
            else
            {
                word.Append(ch);
                inWord = true;
            }
        }

        Assert.False(quoted, $"unbalanced quotes in: {commandLine}");
        if (inWord)
        {
            words.Add(word.ToString());
        }

        return [.. words];
    }

    /// <summary>
    /// Recomputes the trace hash from a trace file's canonical lines, independently of SimTrace: Murmur3-style word
    /// steps over time, kind, a, b, c and text, each text folded from its UTF-16LE bytes eight at a time.
    /// </summary>
    public static string HashOfTraceLines(IEnumerable<string> lines)
    {
        const ulong K1 = 0x87C37B91114253D5UL;
        const ulong K2 = 0x4CF5AD432745937FUL;
        const ulong Seed = 0x9E3779B97F4A7C15UL;
        static ulong Step(ulong state, ulong value)
        {
            var x = state ^ unchecked(value * K1);
            return unchecked(((x << 31) | (x >> 33)) * K2);
        }

        static ulong Fold(string text)
        {
            var bytes = System.Text.Encoding.Unicode.GetBytes(text);
            var state = Step(Seed, (ulong)text.Length);
            var whole = bytes.Length / 8 * 8;
            for (var i = 0; i < whole; i += 8)
            {
                state = Step(state, System.Buffers.Binary.BinaryPrimitives.ReadUInt64LittleEndian(bytes.AsSpan(i)));
            }

            ulong tail = 0;
            for (var i = whole; i < bytes.Length; i += 2)
            {
                tail = (tail << 16) | System.Buffers.Binary.BinaryPrimitives.ReadUInt16LittleEndian(bytes.AsSpan(i));
            }

            return Step(state, tail);
        }

        var hash = Seed;
        void Mix(long value) => hash = Step(hash, (ulong)value);
        void MixString(string value) => hash = Step(hash, Fold(value));

        foreach (var line in lines)
        {
            // time kind a b c [text]: the text is everything after the fifth space, and may itself hold spaces.
            var fields = line.Split(' ', 6);
            Assert.True(fields.Length >= 5, $"not a trace line: '{line}'");
            Mix(long.Parse(fields[0], System.Globalization.CultureInfo.InvariantCulture));
            MixString(fields[1]);
            Mix(long.Parse(fields[2], System.Globalization.CultureInfo.InvariantCulture));
            Mix(long.Parse(fields[3], System.Globalization.CultureInfo.InvariantCulture));
            Mix(long.Parse(fields[4], System.Globalization.CultureInfo.InvariantCulture));
            if (fields.Length == 6)
            {
                MixString(fields[5]);
            }
        }

        // Murmur3's finaliser.
        hash ^= hash >> 33;
        hash = unchecked(hash * 0xFF51AFD7ED558CCDUL);
        hash ^= hash >> 33;
        hash = unchecked(hash * 0xC4CEB9FE1A85EC53UL);
        hash ^= hash >> 33;
        return hash.ToString("x16", System.Globalization.CultureInfo.InvariantCulture);
    }
}
