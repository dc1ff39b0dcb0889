namespace PlayHouse.Campaign.Tests;

/// <summary>
/// Tests whose fault steps act on traffic inside windows of real time. They run after the rest of the assembly, one
/// at a time: beside the long leak campaign, the two cores could leave a client idle for a whole window, and a window
/// that no traffic crosses realises nothing.
/// </summary>
[CollectionDefinition(Name, DisableParallelization = true)]
public sealed class TimedFaultWindows
{
    public const string Name = "timed fault windows";
}
