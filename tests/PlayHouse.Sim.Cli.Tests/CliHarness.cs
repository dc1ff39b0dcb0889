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
        const string ProgramPrefix = "dotnet run --project simulation/PlayHouse.Sim.Cli -c Release -- ";
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

    /// <summary>Recomputes the trace hash from a trace file's canonical lines (FNV-1a over the fields, as SimTrace mixes them).</summary>
    public static string HashOfTraceLines(IEnumerable<string> lines)
    {
        const ulong FnvPrime = 1099511628211UL;
        var hash = 14695981039346656037UL;
        void Mix(long value)
        {
            var v = (ulong)value;
            for (var i = 0; i < 8; i++)
            {
                hash = (hash ^ (v & 0xFF)) * FnvPrime;
                v >>= 8;
            }
        }

        void MixString(string value)
        {
            foreach (var ch in value)
            {
                hash = (hash ^ ch) * FnvPrime;
            }

            hash = (hash ^ 0xFF) * FnvPrime;
        }

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

        return hash.ToString("x16", System.Globalization.CultureInfo.InvariantCulture);
    }
}
