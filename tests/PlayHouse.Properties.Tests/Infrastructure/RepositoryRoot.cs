namespace PlayHouse.Properties.Tests.Infrastructure;

/// <summary>Finds files of the repository from the test's output folder (the folder that holds the solution).</summary>
public static class RepositoryRoot
{
    public static string Path { get; } = Find();

    public static string File(string relativePath) => System.IO.Path.Combine(Path, relativePath);

    private static string Find()
    {
        for (var directory = new DirectoryInfo(AppContext.BaseDirectory); directory is not null; directory = directory.Parent)
        {
            if (System.IO.File.Exists(System.IO.Path.Combine(directory.FullName, "PlayHouse.Sim.sln")))
            {
                return directory.FullName;
            }
        }

        throw new InvalidOperationException($"No PlayHouse.Sim.sln above {AppContext.BaseDirectory}.");
    }
}
