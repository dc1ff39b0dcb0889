using System.CommandLine;
using Spectre.Console;

namespace PlayHouse.Sim.Cli;

/// <summary>
/// The runner's entry: parses the arguments, runs one command and returns its exit code. It takes the output
/// and error writers, so tests drive it in-process exactly as the console does.
/// </summary>
public static class SimCli
{
    /// <summary>The command that replays a run; the report's replay line is this followed by the run's arguments.</summary>
    public const string ReplayPrefix = "dotnet run --project simulation/PlayHouse.Sim.Cli -c Release -- run";

    /// <summary>Bad input (unknown scenario, option or value): EX_USAGE of sysexits.h.</summary>
    public const int UsageErrorExitCode = 64;

    /// <summary>The runner itself failed outside any simulation (a file could not be written): EX_SOFTWARE of sysexits.h.</summary>
    public const int InternalErrorExitCode = 70;

    /// <summary>Runs the command line with plain output (what a pipe, a file or a test sees).</summary>
    public static int Run(string[] args, TextWriter output, TextWriter error) => Run(args, output, error, interactive: false);

    /// <summary>Runs the command line; <paramref name="interactive"/> turns on Spectre's progress bar and tables.</summary>
    public static int Run(string[] args, TextWriter output, TextWriter error, bool interactive) => Run(args, output, error, interactive, CancellationToken.None);

    /// <summary>Runs the command line; cancelling <paramref name="stop"/> ends a <c>serve</c> (or a TCP run) as a signal would.</summary>
    internal static int Run(string[] args, TextWriter output, TextWriter error, bool interactive, CancellationToken stop)
    {
        ArgumentNullException.ThrowIfNull(args);
        ArgumentNullException.ThrowIfNull(output);
        ArgumentNullException.ThrowIfNull(error);
        var clock = StopwatchWallClock.StartNew();
        IRunView view = interactive
            ? new SpectreView(AnsiConsole.Create(new AnsiConsoleSettings { Out = new AnsiConsoleOutput(output) }), output, clock)
            : new PlainView(output, clock);
        var root = new CliCommands(view, clock, stop).Build();
        var parse = root.Parse(args);
        if (parse.Errors.Count > 0)
        {
            error.WriteLine("error: " + DescribeParseErrors(parse));
            return UsageErrorExitCode;
        }

        try
        {
            return parse.Invoke(new InvocationConfiguration
            {
                Output = output,
                Error = error,
                EnableDefaultExceptionHandler = false,

                // serve handles Ctrl+C and SIGTERM itself (a graceful drain), so the parser must not end the process first.
                ProcessTerminationTimeout = null,
            });
        }
        catch (UsageException ex)
        {
            error.WriteLine("error: " + CliInputs.OneLine(ex.Message));
            return UsageErrorExitCode;
        }
        catch (Exception ex) when (ex is not OutOfMemoryException)
        {
            // Runs report their own crashes; this is the runner failing around them (a full disk, a bug here).
            error.WriteLine($"error: {ex.GetType().Name}: {CliInputs.OneLine(ex.Message)}");
            return InternalErrorExitCode;
        }
    }

    /// <summary>The parser's complaint in one line, followed by what the command accepts.</summary>
    private static string DescribeParseErrors(ParseResult parse)
    {
        var message = string.Join(' ', parse.Errors.Select(e => CliInputs.OneLine(e.Message)));
        var command = parse.CommandResult.Command;
        if (command.Subcommands.Count > 0)
        {
            return $"{message} Commands: {string.Join(", ", command.Subcommands.Select(c => c.Name))}.";
        }

        return $"{message} Options of '{command.Name}': {string.Join(", ", command.Options.Select(o => o.Name))}.";
    }
}
