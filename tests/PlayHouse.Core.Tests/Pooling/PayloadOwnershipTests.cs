using PlayHouse.Core.Pooling;

namespace PlayHouse.Core.Tests.Pooling;

public sealed class PayloadOwnershipTests
{
    [Fact]
    public void Dispose_Twice_ThrowsNamingTheBuffer()
    {
        var pool = new MessagePool(new MessagePoolOptions { CheckedMode = true });
        var payload = pool.Rent(100, "test");
        payload.Dispose();

        var error = Assert.Throws<PoolOwnershipException>(() => payload.Dispose());
        Assert.Contains($"#{payload.BufferId}", error.Message, StringComparison.Ordinal);
        Assert.Contains("'test'", error.Message, StringComparison.Ordinal);
    }
}
