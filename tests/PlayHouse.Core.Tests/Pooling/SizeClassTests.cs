using PlayHouse.Core.Pooling;

namespace PlayHouse.Core.Tests.Pooling;

public sealed class SizeClassTests
{
    private const int OneMiB = 1024 * 1024;

    [Fact]
    public void Default_Has53ClassesFrom128To1MiB()
    {
        var classes = SizeClasses.Default;

        Assert.Equal(53, classes.Count);
        Assert.Equal(128, classes[0]);
        Assert.Equal(OneMiB, classes[^1]);
    }

    [Fact]
    public void Default_IsFourLogLinearStepsPerPowerOfTwo()
    {
        var classes = SizeClasses.Default;

        Assert.Equal([128, 160, 192, 224, 256, 320, 384, 448, 512], classes.Take(9));
        Assert.Equal([786432, 917504, OneMiB], classes.Skip(50));
        for (var i = 1; i < classes.Count; i++)
        {
            Assert.True(classes[i] > classes[i - 1], $"class {i} ({classes[i]}) must exceed class {i - 1} ({classes[i - 1]})");
        }
    }

    [Theory]
    [InlineData(0, 0, 128)]
    [InlineData(1, 0, 128)]
    [InlineData(128, 0, 128)]
    [InlineData(129, 1, 160)]
    [InlineData(160, 1, 160)]
    [InlineData(161, 2, 192)]
    [InlineData(256, 4, 256)]
    [InlineData(257, 5, 320)]
    [InlineData(1024, 12, 1024)]
    [InlineData(1025, 13, 1280)]
    [InlineData(917505, 52, OneMiB)]
    [InlineData(OneMiB, 52, OneMiB)]
    public void FindSizeClass_AtAndAcrossBoundaries_PicksSmallestClassThatFits(int lengthBytes, int expectedClass, int expectedCapacityBytes)
    {
        var pool = new MessagePool();

        var sizeClass = pool.FindSizeClass(lengthBytes);

        Assert.Equal(expectedClass, sizeClass);
        Assert.Equal(expectedCapacityBytes, pool.SizeClassBytes[sizeClass]);
    }

    [Fact]
    public void FindSizeClass_OneByteAbove1MiB_IsOversize()
    {
        var pool = new MessagePool();

        Assert.Equal(-1, pool.FindSizeClass(OneMiB + 1));
        Assert.Equal(52, pool.FindSizeClass(OneMiB));
    }

    [Fact]
    public void FindSizeClass_EveryLength_MatchesALinearScan()
    {
        // Custom classes that are not log-linear exercise the octave table's forward scan.
        int[] classes = [100, 101, 300, 1000, 1024, 1025, 5000];
        var pool = new MessagePool(new MessagePoolOptions { SizeClassBytes = classes });

        for (var length = 0; length <= 5001; length++)
        {
            var expected = Array.FindIndex(classes, c => c >= length);
            Assert.Equal(expected, pool.FindSizeClass(length));
        }
    }

    [Theory]
    [InlineData(128, 4, 53)]
    [InlineData(64, 2, 20)]
    [InlineData(16, 1, 10)]
    [InlineData(256, 8, 40)]
    public void FindSizeClass_LogLinearFamilies_MatchesABinarySearchForEveryLength(int minBytes, int classesPerOctave, int count)
    {
        // Log-linear lists take the computed path; compare it with a search over the list for every pooled length.
        var classes = SizeClasses.Build(minBytes, classesPerOctave, count);
        var pool = new MessagePool(new MessagePoolOptions { SizeClassBytes = classes, MaxRentBytes = int.MaxValue });

        for (var length = 0; length <= classes[^1]; length++)
        {
            var index = Array.BinarySearch(classes, length);
            var expected = index >= 0 ? index : ~index;
            if (pool.FindSizeClass(length) != expected)
            {
                Assert.Fail($"length {length}: expected class {expected} ({classes[expected]} B), got {pool.FindSizeClass(length)}");
            }
        }

        Assert.Equal(-1, pool.FindSizeClass(classes[^1] + 1));
    }

    [Fact]
    public void Rent_OfLength129_HasCapacityOfNextClass()
    {
        var pool = new MessagePool();

        using var payload = pool.Rent(129, "test");

        Assert.Equal(129, payload.Length);
        Assert.Equal(160, payload.Capacity);
    }
}
