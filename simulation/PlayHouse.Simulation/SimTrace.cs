using System.Globalization;
using System.Text;

namespace PlayHouse.Simulation;

/// <summary>
/// The run's trace: each event contributes its fields to a running 64-bit FNV-1a hash (no text, no allocation),
/// and, when a writer is attached, one canonical text line. Same seed, same hash: that is a test.
/// </summary>
/// <remarks>Not thread-safe; written on the simulation thread only.</remarks>
public sealed class SimTrace
{
    private const ulong FnvOffset = 14695981039346656037UL;
    private const ulong FnvPrime = 1099511628211UL;
    private ulong _hash = FnvOffset;
    private TextWriter? _writer;

    /// <summary>The running hash of every record so far.</summary>
    public ulong Hash => _hash;

    public string HashHex => _hash.ToString("x16", CultureInfo.InvariantCulture);

    /// <summary>Records written so far.</summary>
    public long Count { get; private set; }

    /// <summary>Attaches a writer that receives one canonical line per record; null detaches.</summary>
    public void Attach(TextWriter? writer) => _writer = writer;

    public bool IsWriting => _writer is not null;

    /// <summary>Records one event: virtual time, a kind, up to three numbers and a text field.</summary>
    public void Record(long timeTicks, string kind, long a = 0, long b = 0, long c = 0, string? text = null)
    {
        Count++;
        Mix(timeTicks);
        MixString(kind);
        Mix(a);
        Mix(b);
        Mix(c);
        if (text is not null)
        {
            MixString(text);
        }

        if (_writer is not null)
        {
            var line = new StringBuilder(64)
                .Append(timeTicks.ToString(CultureInfo.InvariantCulture)).Append(' ')
                .Append(kind).Append(' ')
                .Append(a.ToString(CultureInfo.InvariantCulture)).Append(' ')
                .Append(b.ToString(CultureInfo.InvariantCulture)).Append(' ')
                .Append(c.ToString(CultureInfo.InvariantCulture));
            if (text is not null)
            {
                line.Append(' ').Append(text);
            }

            _writer.Write(line.Append('\n').ToString());
        }
    }

    private void Mix(long value)
    {
        var v = (ulong)value;
        for (var i = 0; i < 8; i++)
        {
            _hash = (_hash ^ (v & 0xFF)) * FnvPrime;
            v >>= 8;
        }
    }

    private void MixString(string value)
    {
        foreach (var ch in value)
        {
            _hash = (_hash ^ ch) * FnvPrime;
        }

        _hash = (_hash ^ 0xFF) * FnvPrime;
    }
}
