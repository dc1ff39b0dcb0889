namespace PlayHouse.Benchmarks;

internal static class Program
{
    /// <summary>
    /// BenchmarkDotNet's switcher (<c>--filter '*Codec*'</c> and so on), or <c>core</c>: the core's CPU time per round
    /// trip with no network (<see cref="CoreCpuTime"/>).
    /// </summary>
    public static int Main(string[] args)
    {
        if (args.Length > 0 && args[0] == "core")
        {
            return CoreCpuTime.Run(args[1..]);
        }

        BenchmarkDotNet.Running.BenchmarkSwitcher.FromAssembly(typeof(Program).Assembly).Run(args);
        return 0;
    }
}
