using PlayHouse.Core.Runtime;

namespace PlayHouse.Core.Tests.Runtime;

public sealed class NodePartsTests
{
    [Fact]
    public void NewParts_AreTheStandardOnes_AndReplacingOneMakesThemDiffer()
    {
        Assert.True(new NodeParts().IsStandard);
        Assert.True(NodeParts.Standard.IsStandard);
        Assert.False((NodeParts.Standard with { StageTimers = _ => new StageTimerTable() }).IsStandard);
        Assert.False((NodeParts.Standard with { Sessions = _ => new SessionTable() }).IsStandard);
    }
}
