using System.Globalization;
using System.Numerics;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Text;

namespace PlayHouse.Simulation;

/// <summary>
/// The run's trace: each event contributes its fields to a running 64-bit hash (no text, no allocation), and, when
/// a writer is attached, one canonical text line. Same seed, same hash: that is a test.
/// </summary>
/// <remarks>
/// The hash takes whole 64-bit words: each number is one step and each text field is first folded into one word
/// four characters at a time, off the running chain. A step is a multiply, an xor and a rotate (Murmur3's
/// constants); <see cref="Hash"/> applies Murmur3's finaliser so every bit of the state reaches the printed value.
/// A byte-at-a-time FNV-1a cost some 300 dependent multiplies per simulated round trip, a fifth of its time.
/// Not thread-safe; written on the simulation thread only.
/// </remarks>
public sealed class SimTrace
{
    private const ulong StateSeed = 0x9E3779B97F4A7C15UL;
    private const ulong K1 = 0x87C37B91114253D5UL;
    private const ulong K2 = 0x4CF5AD432745937FUL;
    private const int FoldCacheSize = 256;

    // Folds of the text fields seen lately, by string instance: the callers pass the same few cached strings (kinds,
    // stage and message ids) record after record, so most folds are a lookup. Direct-mapped by the instance's identity
    // hash; a string is immutable, so a hit returns exactly what folding it again would.
    private readonly string?[] _foldKeys = new string?[FoldCacheSize];
    private readonly ulong[] _foldValues = new ulong[FoldCacheSize];
    private ulong _state = StateSeed;
    private TextWriter? _writer;
    private ITraceListener? _listener;

    // True while a writer or a listener is attached: the one branch every record takes to decide whether to emit.
    private bool _emitting;

    /// <summary>The running hash of every record so far.</summary>
    public ulong Hash => Finish(_state);

    public string HashHex => Hash.ToString("x16", CultureInfo.InvariantCulture);

    /// <summary>Records written so far.</summary>
    public long Count { get; private set; }

    /// <summary>Attaches a writer that receives one canonical line per record; null detaches.</summary>
    public void Attach(TextWriter? writer)
    {
        _writer = writer;
        _emitting = _writer is not null || _listener is not null;
    }

    /// <summary>
    /// Attaches a listener that receives every record as its fields, beside any writer (a page being built while the
    /// text trace is written); null detaches. What is hashed does not depend on it.
    /// </summary>
    public void Listen(ITraceListener? listener)
    {
        _listener = listener;
        _emitting = _writer is not null || _listener is not null;
    }

    public bool IsWriting => _writer is not null;

    /// <summary>Records one event: virtual time, a kind, up to three numbers and a text field.</summary>
    public void Record(long timeTicks, string kind, long a = 0, long b = 0, long c = 0, string? text = null) =>
        Record(timeTicks, kind, CachedFold(kind), a, b, c, text);

    /// <summary>Records one event of a kind folded once up front; the hash and the line are those of <see cref="Record(long, string, long, long, long, string?)"/>.</summary>
    internal void Record(long timeTicks, TraceKind kind, long a, long b, long c, string? text) =>
        Record(timeTicks, kind.Name, kind.Folded, a, b, c, text);

    /// <summary>Folds a text field into one word: its length, then its UTF-16 code units four to a word.</summary>
    internal static ulong Fold(string value)
    {
        var chars = value.AsSpan();
        var state = Step(StateSeed, (ulong)chars.Length);
        var words = MemoryMarshal.Cast<char, ulong>(chars);
        foreach (var word in words)
        {
            state = Step(state, word);
        }

        ulong tail = 0;
        for (var i = words.Length * 4; i < chars.Length; i++)
        {
            tail = (tail << 16) | chars[i];
        }

        return Step(state, tail);
    }

    /// <summary><see cref="Fold"/> through the cache of recent strings.</summary>
    private ulong CachedFold(string value)
    {
        var slot = RuntimeHelpers.GetHashCode(value) & (FoldCacheSize - 1);
        if (ReferenceEquals(_foldKeys[slot], value))
        {
            return _foldValues[slot];
        }

        var folded = Fold(value);
        _foldKeys[slot] = value;
        _foldValues[slot] = folded;
        return folded;
    }

    private void Record(long timeTicks, string kind, ulong foldedKind, long a, long b, long c, string? text)
    {
        Count++;
        var state = Step(_state, (ulong)timeTicks);
        state = Step(state, foldedKind);
        state = Step(state, (ulong)a);
        state = Step(state, (ulong)b);
        state = Step(state, (ulong)c);
        if (text is not null)
        {
            state = Step(state, CachedFold(text));
        }

        _state = state;
        if (_emitting)
        {
            Emit(timeTicks, kind, a, b, c, text);
        }
    }

    // Kept out of Record so the hashing that every record does stays small enough to inline at its callers.
    private void Emit(long timeTicks, string kind, long a, long b, long c, string? text)
    {
        _listener?.OnRecord(new TraceRecord(timeTicks, kind, a, b, c, text));
        if (_writer is not null)
        {
            WriteLine(_writer, timeTicks, kind, a, b, c, text);
        }
    }

    private static void WriteLine(TextWriter writer, long timeTicks, string kind, long a, long b, long c, string? text)
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

        writer.Write(line.Append('\n').ToString());
    }

    private static ulong Step(ulong state, ulong value) => BitOperations.RotateLeft(state ^ (value * K1), 31) * K2;

    private static ulong Finish(ulong state)
    {
        state ^= state >> 33;
        state *= 0xFF51AFD7ED558CCDUL;
        state ^= state >> 33;
        state *= 0xC4CEB9FE1A85EC53UL;
        return state ^ (state >> 33);
    }
}

/// <summary>
/// A trace kind recorded often (a network hop's send and delivery), its name folded into the hash's word once rather
/// than on every record; what is hashed and written is exactly what the plain name would give.
/// </summary>
internal sealed class TraceKind(string name)
{
    public string Name { get; } = name;

    public ulong Folded { get; } = SimTrace.Fold(name);
}
