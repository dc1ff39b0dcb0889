using System.Text;

namespace PlayHouse.Sim.Cli;

/// <summary>Forwards text to another writer and counts the lines, so the runner can say how long a trace file is.</summary>
/// <remarks>Not thread-safe; the trace is written on the simulation thread only.</remarks>
internal sealed class LineCountingWriter(TextWriter inner) : TextWriter
{
    public long Lines { get; private set; }

    public override Encoding Encoding => inner.Encoding;

    public override void Write(char value)
    {
        if (value == '\n')
        {
            Lines++;
        }

        inner.Write(value);
    }

    public override void Write(string? value)
    {
        if (value is null)
        {
            return;
        }

        Lines += value.AsSpan().Count('\n');
        inner.Write(value);
    }

    public override void Write(ReadOnlySpan<char> buffer)
    {
        Lines += buffer.Count('\n');
        inner.Write(buffer);
    }

    public override void Write(char[] buffer, int index, int count) => Write(buffer.AsSpan(index, count));

    public override void Flush() => inner.Flush();

    protected override void Dispose(bool disposing)
    {
        if (disposing)
        {
            inner.Dispose();
        }

        base.Dispose(disposing);
    }
}
