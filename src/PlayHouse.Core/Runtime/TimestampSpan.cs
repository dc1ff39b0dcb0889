namespace PlayHouse.Core.Runtime;

/// <summary>Converts a <see cref="TimeSpan"/> into a delta of a <see cref="TimeProvider"/>'s timestamps.</summary>
/// <remarks>
/// Every request opens a deadline, so this runs once per message: the common frequencies (100 ns ticks, and
/// nanoseconds on Linux) take an exact integer multiply, and only an odd frequency pays for 128-bit arithmetic.
/// Thread-safe (pure).
/// </remarks>
internal static class TimestampSpan
{
    /// <summary>The delta, truncated toward zero; throws <see cref="OverflowException"/> when it does not fit a long.</summary>
    public static long ToDelta(TimeSpan span, long timestampFrequency)
    {
        if (timestampFrequency == TimeSpan.TicksPerSecond)
        {
            return span.Ticks;
        }

        if (timestampFrequency % TimeSpan.TicksPerSecond == 0)
        {
            return checked(span.Ticks * (timestampFrequency / TimeSpan.TicksPerSecond));
        }

        return checked((long)((Int128)span.Ticks * timestampFrequency / TimeSpan.TicksPerSecond));
    }
}
