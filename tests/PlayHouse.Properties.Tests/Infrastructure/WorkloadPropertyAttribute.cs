using System.Globalization;
using FsCheck.Xunit;
using PlayHouse.Fixtures.Properties;

namespace PlayHouse.Properties.Tests.Infrastructure;

/// <summary>
/// FsCheck.Xunit's <c>[Property]</c> with the suite's depth and replay rules, so a property is a plain method over a
/// generated <see cref="WorkloadSpec"/>: <see cref="PropertyAttribute.MaxTest"/> is <see cref="PropertyDepth.Cases"/>
/// of <c>normalCases</c> (100x with PLAYHOUSE_SIM_DEEP=1), and <see cref="PropertyAttribute.Replay"/> is
/// the seed from PLAYHOUSE_SIM_REPLAY when set, else the property's fixed seed (<see cref="SimProperty.FixedReplay"/>)
/// at normal depth, so CI generates the same cases every run, and a random one in deep runs. The arbitrary types
/// are named at the method (<c>Arbitrary = [typeof(FifoWorkloads)]</c>).
/// </summary>
[AttributeUsage(AttributeTargets.Method, AllowMultiple = false)]
public sealed class WorkloadPropertyAttribute : PropertyAttribute
{
    public WorkloadPropertyAttribute(string name, int normalCases)
    {
        Name = name;
        NormalCases = normalCases;
        MaxTest = PropertyDepth.Cases(normalCases);
        QuietOnSuccess = true;
        var replay = PropertyDepth.ReplayFromEnvironment() ?? (PropertyDepth.IsDeep ? null : SimProperty.FixedReplay(name));
        if (replay is { } r)
        {
            Replay = string.Create(CultureInfo.InvariantCulture, $"{r.Seed},{r.Gamma}");
        }
    }

    /// <summary>The property's name; it picks the fixed FsCheck seed.</summary>
    public string Name { get; }

    /// <summary>Cases at normal depth.</summary>
    public int NormalCases { get; }
}
