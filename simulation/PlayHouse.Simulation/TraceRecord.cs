using System.Globalization;

namespace PlayHouse.Simulation;

/// <summary>
/// One trace record as its fields: virtual time in ticks, a kind, three numbers and an optional text. Its canonical
/// line is <c>time kind a b c[ text]</c>, which <see cref="TryParse"/> reads back, so a saved trace file feeds the same
/// consumers as a live run.
/// </summary>
public readonly record struct TraceRecord(long TimeTicks, string Kind, long A, long B, long C, string? Text)
{
    /// <summary>Reads one canonical line (without its newline); false for a line that is not one.</summary>
    public static bool TryParse(string line, out TraceRecord record)
    {
        ArgumentNullException.ThrowIfNull(line);
        record = default;
        var span = line.AsSpan().TrimEnd('\n');
        Span<Range> parts = stackalloc Range[6];
        var count = span.Split(parts, ' ', StringSplitOptions.None);
        if (count < 5)
        {
            return false;
        }

        // Six parts at most: the last one keeps the rest of the line, so a text with spaces stays whole.
        if (span[parts[1]].IsEmpty
            || !long.TryParse(span[parts[0]], NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out var time)
            || !long.TryParse(span[parts[2]], NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out var a)
            || !long.TryParse(span[parts[3]], NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out var b)
            || !long.TryParse(span[parts[4]], NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out var c))
        {
            return false;
        }

        record = new TraceRecord(time, span[parts[1]].ToString(), a, b, c, count == 6 ? span[parts[5]].ToString() : null);
        return true;
    }
}

/// <summary>Receives every record of a <see cref="SimTrace"/> as it is made (see <see cref="SimTrace.Listen"/>).</summary>
/// <remarks>Called on the simulation thread, inside the event that made the record.</remarks>
public interface ITraceListener
{
    void OnRecord(in TraceRecord record);
}
