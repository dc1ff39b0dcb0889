using PlayHouse.Core.Pooling;

namespace PlayHouse.Core.Tests.Pooling;

/// <summary>Ownership faults reach the pool's fault hook before they are thrown, so a test bed records each one.</summary>
public sealed class PoolFaultTests
{
    [Fact]
    public void DoubleReturn_ReachesTheHookWithTheExceptionThatIsThrown()
    {
        var heard = new List<PoolOwnershipException>();
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = true, OnOwnershipFault = heard.Add });
        var payload = pool.Rent(64, "error-reply");
        var copy = payload;
        payload.Dispose();

        var thrown = Assert.Throws<PoolOwnershipException>(copy.Dispose);

        Assert.Same(thrown, Assert.Single(heard));
        Assert.Contains("twice", thrown.Message, StringComparison.Ordinal);
        Assert.Contains("'error-reply'", thrown.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void StaleReadAndForeignReturn_ReachTheHook_AndCorrectUseDoesNot()
    {
        var heard = new List<PoolOwnershipException>();
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = true, OnOwnershipFault = heard.Add });
        var other = new MessagePool(new MessagePoolOptions { CheckedMode = true, OnOwnershipFault = heard.Add });
        using (var fine = pool.Rent(10, "fine"))
        {
            fine.WritableSpan.Fill(1);
        }

        Assert.Empty(heard);
        var lent = pool.Rent(10, "session-receive");
        var kept = lent;
        lent.Dispose();
        Assert.Throws<PoolOwnershipException>(() => kept.Span.ToArray());
        var foreign = other.Rent(10, "foreign");
        Assert.Throws<PoolOwnershipException>(() => pool.Return(foreign));

        Assert.Equal(2, heard.Count);
        Assert.Contains("Cannot read buffer", heard[0].Message, StringComparison.Ordinal);
        Assert.Contains("belongs to another pool", heard[1].Message, StringComparison.Ordinal);
        foreign.Dispose();
    }
}
