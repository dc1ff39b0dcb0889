using PlayHouse.Core.Pooling;

namespace PlayHouse.Core.Tests.Pooling;

/// <summary>The options a pool refuses at construction, each with an error naming what is wrong, and the edges it accepts.</summary>
public sealed class PoolOptionsTests
{
    [Fact]
    public void Constructor_WithNoSizeClasses_ThrowsAskingForOne()
    {
        var error = Assert.Throws<ArgumentException>(() => new MessagePool(new MessagePoolOptions { SizeClassBytes = [] }));

        Assert.Contains("At least one size class", error.Message, StringComparison.Ordinal);
        Assert.Equal("options", error.ParamName);
    }

    [Theory]
    [InlineData(0)]
    [InlineData(-128)]
    public void Constructor_WithFirstClassNotPositive_ThrowsNamingIt(int firstClassBytes)
    {
        var error = Assert.Throws<ArgumentException>(() => new MessagePool(new MessagePoolOptions { SizeClassBytes = [firstClassBytes, 256] }));

        Assert.Contains($"class 0 is {firstClassBytes} B", error.Message, StringComparison.Ordinal);
        Assert.Equal("options", error.ParamName);
    }

    [Fact]
    public void Constructor_WithFirstClassOfOneByte_IsAccepted()
    {
        var pool = new MessagePool(new MessagePoolOptions { SizeClassBytes = [1, 2, 3] });

        using var payload = pool.Rent(1, "smallest");

        Assert.Equal(0, pool.FindSizeClass(1));
        Assert.Equal(1, payload.Capacity);
    }

    [Fact]
    public void Constructor_WithClassesNotAscending_ThrowsNamingThePair()
    {
        var equal = Assert.Throws<ArgumentException>(() => new MessagePool(new MessagePoolOptions { SizeClassBytes = [128, 256, 256] }));
        var descending = Assert.Throws<ArgumentException>(() => new MessagePool(new MessagePoolOptions { SizeClassBytes = [256, 128] }));

        Assert.Contains("class 2 (256 B) <= class 1 (256 B)", equal.Message, StringComparison.Ordinal);
        Assert.Contains("class 1 (128 B) <= class 0 (256 B)", descending.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void Constructor_WithNegativeCountsOrLimit_ThrowsNamingTheOption()
    {
        var local = Assert.Throws<ArgumentOutOfRangeException>(() => new MessagePool(new MessagePoolOptions { LocalCacheCapacityPerClass = -1 }));
        var global = Assert.Throws<ArgumentOutOfRangeException>(() => new MessagePool(new MessagePoolOptions { GlobalCapacityPerClass = -1 }));
        var preWarm = Assert.Throws<ArgumentOutOfRangeException>(() => new MessagePool(new MessagePoolOptions { PreWarmCountPerClass = -1 }));
        var maxRent = Assert.Throws<ArgumentOutOfRangeException>(() => new MessagePool(new MessagePoolOptions { MaxRentBytes = -1 }));

        Assert.Equal(nameof(MessagePoolOptions.LocalCacheCapacityPerClass), local.ParamName);
        Assert.Equal(nameof(MessagePoolOptions.GlobalCapacityPerClass), global.ParamName);
        Assert.Equal(nameof(MessagePoolOptions.PreWarmCountPerClass), preWarm.ParamName);
        Assert.Equal(nameof(MessagePoolOptions.MaxRentBytes), maxRent.ParamName);
    }

    [Fact]
    public void Constructor_WithLocalStacksTooLargeToAllocate_ThrowsOverflow()
    {
        // Two classes of int.MaxValue slots each do not fit in an int; the pool refuses before any thread allocates them.
        Assert.Throws<OverflowException>(() => new MessagePool(new MessagePoolOptions { SizeClassBytes = [128, 256], LocalCacheCapacityPerClass = int.MaxValue }));

        var single = new MessagePool(new MessagePoolOptions { SizeClassBytes = [128], LocalCacheCapacityPerClass = 1 });
        Assert.Equal(1 + 256, single.RetainedMaxPerClassPerThread);
    }

    [Fact]
    public void DisplayName_InErrors_IsTheQuotedNameOrUnnamed()
    {
        var named = new MessagePool(new MessagePoolOptions { Name = "node-7" });
        var unnamed = new MessagePool();

        var namedError = Assert.Throws<ArgumentOutOfRangeException>(() => named.Rent(named.Options.MaxRentBytes + 1, "too big"));
        var unnamedError = Assert.Throws<ArgumentOutOfRangeException>(() => unnamed.Rent(unnamed.Options.MaxRentBytes + 1, "too big"));

        Assert.Contains("pool 'node-7'", namedError.Message, StringComparison.Ordinal);
        Assert.Contains("pool (unnamed)", unnamedError.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void PreWarmMaxBytes_ByDefault_PreWarmsClassesUpTo64KiB()
    {
        var pool = new MessagePool(new MessagePoolOptions { PreWarmCountPerClass = 1 });
        var rows = pool.GetClassStatistics();

        Assert.Equal(1, rows[pool.FindSizeClass(64 * 1024)].PreWarmed);
        Assert.Equal(0, rows[pool.FindSizeClass((64 * 1024) + 1)].PreWarmed);
    }

    [Fact]
    public void PreWarm_NumbersBuffersFromOne_AndMissesContinueTheNumbering()
    {
        var pool = new MessagePool(new MessagePoolOptions { SizeClassBytes = [128, 256], PreWarmCountPerClass = 2, PreWarmMaxBytes = 256 });

        // Rents pop the most recently pre-warmed buffer of each class first.
        var ids = new[] { pool.Rent(128, "a"), pool.Rent(128, "b"), pool.Rent(256, "c"), pool.Rent(256, "d"), pool.Rent(256, "miss") }
            .Select(p => p.BufferId).ToArray();

        Assert.Equal([2, 1, 4, 3, 5], ids);
    }

    [Theory]
    [InlineData(100, 4)]
    [InlineData(128, 3)]
    [InlineData(4, 8)]
    public void SizeClassesBuild_WithBaseOrStepsNotPowersOfTwoOrTooManySteps_Throws(int minBytes, int classesPerOctave)
    {
        var error = Assert.Throws<ArgumentException>(() => SizeClasses.Build(minBytes, classesPerOctave, count: 4));

        Assert.Contains($"minBytes ({minBytes}) and classesPerOctave ({classesPerOctave})", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void SizeClassesBuild_WithAsManyStepsAsBaseBytes_CountsByOnes()
    {
        Assert.Equal([4, 5, 6, 7, 8, 10], SizeClasses.Build(minBytes: 4, classesPerOctave: 4, count: 6));
    }

    [Fact]
    public void FindSizeClass_OfPowerOfTwoBaseThatIsNotLogLinear_PicksSmallestClassThatFits()
    {
        // A whole power of two first, then no log-linear family: the pool must fall back to its octave table.
        int[] classes = [128, 200, 300, 1000, 5000];
        var pool = new MessagePool(new MessagePoolOptions { SizeClassBytes = classes });

        for (var length = 0; length <= classes[^1]; length++)
        {
            var expected = Array.FindIndex(classes, c => c >= length);
            Assert.Equal(expected, pool.FindSizeClass(length));
        }

        Assert.Equal(-1, pool.FindSizeClass(classes[^1] + 1));
    }

    [Fact]
    public void FindSizeClass_OfNegativeLength_Throws()
    {
        var pool = new MessagePool();

        var error = Assert.Throws<ArgumentOutOfRangeException>(() => pool.FindSizeClass(-1));

        Assert.Equal("lengthBytes", error.ParamName);
        Assert.Equal(0, pool.FindSizeClass(0));
    }

    [Fact]
    public void Rent_OfNegativeLengthWithAWarmCache_ThrowsAndHandsOutNothing()
    {
        // The warm local stack of class 0 is where a negative length would land if the fast path took it.
        var pool = new MessagePool();
        pool.Rent(128, "warm").Dispose();

        Assert.Throws<ArgumentOutOfRangeException>(() => pool.Rent(-1, "negative"));

        Assert.Equal(1, pool.LocalCountForCurrentThread(0));
        Assert.Equal(1, pool.GetStatistics().Rents);
    }
}
