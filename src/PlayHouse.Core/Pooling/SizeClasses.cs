namespace PlayHouse.Core.Pooling;

/// <summary>The default size classes: four per power of two (log-linear), 53 classes from 128 B to 1 MiB.</summary>
public static class SizeClasses
{
    /// <summary>128, 160, 192, 224, 256, 320, ... 786432, 917504, 1048576.</summary>
    public static IReadOnlyList<int> Default { get; } = Build(minBytes: 128, classesPerOctave: 4, count: 53);

    /// <summary>Builds <paramref name="count"/> log-linear classes starting at a power of two.</summary>
    public static int[] Build(int minBytes, int classesPerOctave, int count)
    {
        if (!int.IsPow2(minBytes) || !int.IsPow2(classesPerOctave) || classesPerOctave > minBytes)
        {
            throw new ArgumentException($"minBytes ({minBytes}) and classesPerOctave ({classesPerOctave}) must be powers of two with classesPerOctave <= minBytes.");
        }

        var sizes = new int[count];
        var octaveBase = minBytes;
        for (var i = 0; i < count; i++)
        {
            var step = i % classesPerOctave;
            if (i > 0 && step == 0)
            {
                octaveBase *= 2;
            }

            sizes[i] = octaveBase + (step * (octaveBase / classesPerOctave));
        }

        return sizes;
    }
}
