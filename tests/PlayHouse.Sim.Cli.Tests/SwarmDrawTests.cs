using System.Security.Cryptography;
using System.Text;
using PlayHouse.Sim.Tcp;
using PlayHouse.Simulation.Runs;

namespace PlayHouse.Sim.Cli.Tests;

/// <summary>
/// A swarm seed is replayed by its number alone, so the options it draws are part of the bed's contract: these pins
/// fail when a change reorders, adds or drops a draw of the simulated or the real-socket swarm.
/// </summary>
public sealed class SwarmDrawTests
{
    [Fact]
    public void SimulatedSwarm_Seeds1To200_DrawTheOptionsTheyAlwaysDrew()
    {
        var digest = DigestOf(seed => CliCommands.SwarmOptions(seed, new SimOptions()));

        Assert.Equal("570FB09FAE536491", digest);
    }

    [Fact]
    public void RealSocketSwarm_Seeds1To200_DrawTheOptionsTheyAlwaysDrew()
    {
        var digest = DigestOf(seed => TcpSwarm.Draw(seed, new SimOptions()));

        Assert.Equal("F0D44EC6563E2434", digest);
    }

    private static string DigestOf(Func<ulong, SimOptions> draw)
    {
        var text = new StringBuilder();
        for (ulong seed = 1; seed <= 200; seed++)
        {
            var options = draw(seed);
            // A record prints its list of fault steps by type name only, so the steps are written out one by one.
            text.Append(options with { Faults = FaultPlan.None }).Append('|');
            text.AppendJoin(';', options.Faults.Steps).Append('\n');
        }

        return Convert.ToHexString(SHA256.HashData(Encoding.UTF8.GetBytes(text.ToString())))[..16];
    }
}
