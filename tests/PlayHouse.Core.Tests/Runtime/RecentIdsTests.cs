using PlayHouse.Core.Runtime;

namespace PlayHouse.Core.Tests.Runtime;

/// <summary>
/// The bounded set of recent ids behind the ledger's late replies: it remembers the last <c>capacity</c> ids added,
/// forgets the oldest past that, and with no room remembers nothing.
/// </summary>
public sealed class RecentIdsTests
{
    [Fact]
    public void Add_PastTheCapacity_ForgetsTheOldestId_AndKeepsTheRest()
    {
        var ids = new RecentIds(capacity: 2);

        ids.Add(1);
        ids.Add(2);
        ids.Add(3);

        Assert.False(ids.Remove(1));
        Assert.Equal((true, true), (ids.Remove(2), ids.Remove(3)));
    }

    [Fact]
    public void Add_AtTheCapacity_KeepsEveryId()
    {
        var ids = new RecentIds(capacity: 2);

        ids.Add(1);
        ids.Add(2);

        Assert.Equal((true, true), (ids.Remove(1), ids.Remove(2)));
        Assert.False(ids.Remove(1));
    }

    [Fact]
    public void RecentIds_WithNoRoom_RememberNothing()
    {
        var ids = new RecentIds(capacity: 0);

        ids.Add(1);
        ids.Add(2);

        Assert.Equal((false, false), (ids.Remove(1), ids.Remove(2)));
    }
}
