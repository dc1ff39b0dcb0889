namespace PlayHouse.Transport.Tcp.Tests;

/// <summary>The set of sessions a stopping listener waits for: every waiter is released when the last one finishes.</summary>
public sealed class UnfinishedSetTests
{
    [Fact]
    public void TwoWaiters_AreBothReleased_WhenTheLastItemFinishes()
    {
        var set = new UnfinishedSet<int>();
        set.Add(1);
        set.Add(2);

        var first = set.WhenAllFinished();
        var second = set.WhenAllFinished();
        set.Finished(1);
        var pendingAfterOne = (first.IsCompleted, second.IsCompleted);
        set.Finished(2);

        Assert.Equal((false, false), pendingAfterOne);
        Assert.True(first.IsCompletedSuccessfully);
        Assert.True(second.IsCompletedSuccessfully);
        Assert.Equal(0, set.Count);
    }

    [Fact]
    public void AnEmptySet_IsFinishedAtOnce()
    {
        var set = new UnfinishedSet<int>();

        var waiter = set.WhenAllFinished();

        Assert.True(waiter.IsCompletedSuccessfully);
        Assert.Equal(0, set.Count);
    }
}
