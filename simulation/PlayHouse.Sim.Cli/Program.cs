namespace PlayHouse.Sim.Cli;

internal static class Program
{
    // Spectre widgets only when a person is watching; a pipe or file gets plain lines that scripts can read.
    public static int Main(string[] args) => SimCli.Run(args, Console.Out, Console.Error, interactive: !Console.IsOutputRedirected);
}
