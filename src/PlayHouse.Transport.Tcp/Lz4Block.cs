using System.Buffers.Binary;
using PlayHouse.Core.Codec;

namespace PlayHouse.Transport.Tcp;

/// <summary>
/// The LZ4 block format (no frame header), which PlayHouse uses for server payloads whose <c>OriginalSize</c> is
/// above zero: sequences of <c>[token][literal length+][literals][offset:u16][match length+]</c>, the last sequence
/// literals only. Written from the format description: a greedy compressor with a 4-byte hash table, and a
/// decompressor that checks every length and offset against both buffers, so hostile input fails cleanly.
/// </summary>
public static class Lz4Block
{
    private const int MinMatch = 4;
    private const int LastLiterals = 5;
    private const int MatchFindLimit = 12;
    private const int HashLog = 12;
    private const int MaxOffset = ushort.MaxValue;

    /// <summary>The most bytes <see cref="Compress"/> can write for <paramref name="sourceBytes"/> bytes of input.</summary>
    public static int MaxCompressedLength(int sourceBytes) => sourceBytes + (sourceBytes / 255) + 16;

    /// <summary>Compresses <paramref name="source"/> into <paramref name="destination"/>; returns the bytes written, or 0 when it does not fit.</summary>
    public static int Compress(ReadOnlySpan<byte> source, Span<byte> destination)
    {
        Span<int> table = stackalloc int[1 << HashLog];
        table.Fill(-1);
        var length = source.Length;
        var anchor = 0;
        var output = 0;
        var position = 0;
        var matchLimit = length - MatchFindLimit;
        while (position < matchLimit)
        {
            var sequence = BinaryPrimitives.ReadUInt32LittleEndian(source[position..]);
            var hash = (int)((sequence * 2654435761u) >> (32 - HashLog));
            var candidate = table[hash];
            table[hash] = position;
            if (candidate < 0 || position - candidate > MaxOffset || BinaryPrimitives.ReadUInt32LittleEndian(source[candidate..]) != sequence)
            {
                position++;
                continue;
            }

            // Extend the match, stopping where the last literals begin.
            var matchEnd = position + MinMatch;
            var from = candidate + MinMatch;
            while (matchEnd < length - LastLiterals && source[matchEnd] == source[from])
            {
                matchEnd++;
                from++;
            }

            if (!WriteSequence(source[anchor..position], position - candidate, matchEnd - position - MinMatch, destination, ref output))
            {
                return 0;
            }

            position = matchEnd;
            anchor = position;
        }

        return WriteLastLiterals(source[anchor..], destination, ref output) ? output : 0;
    }

    /// <summary>
    /// Decompresses a block into <paramref name="destination"/> and returns the bytes written.
    /// </summary>
    /// <exception cref="InvalidDataException">The block is malformed: a length or offset points outside either buffer.</exception>
    public static int Decompress(ReadOnlySpan<byte> source, Span<byte> destination)
    {
        var input = 0;
        var output = 0;
        while (true)
        {
            if (input >= source.Length)
            {
                throw new InvalidDataException("The LZ4 block ended before its last sequence.");
            }

            var token = source[input++];
            var literals = ReadLength(token >> 4, source, ref input);
            if (literals > source.Length - input || literals > destination.Length - output)
            {
                throw new InvalidDataException($"An LZ4 literal run of {literals} bytes overruns the block.");
            }

            source.Slice(input, literals).CopyTo(destination[output..]);
            input += literals;
            output += literals;
            if (input == source.Length)
            {
                // The last sequence has literals only.
                return output;
            }

            if (source.Length - input < 2)
            {
                throw new InvalidDataException("An LZ4 match offset is cut off.");
            }

            var offset = BinaryPrimitives.ReadUInt16LittleEndian(source[input..]);
            input += 2;
            if (offset == 0 || offset > output)
            {
                throw new InvalidDataException($"An LZ4 match offset of {offset} points before the start of the output ({output} bytes).");
            }

            var match = ReadLength(token & 0x0F, source, ref input) + MinMatch;
            if (match > destination.Length - output)
            {
                throw new InvalidDataException($"An LZ4 match of {match} bytes overruns the {destination.Length}-byte output.");
            }

            // Byte by byte: a match may overlap the bytes it is producing (offset smaller than length).
            var copyFrom = output - offset;
            for (var i = 0; i < match; i++)
            {
                destination[output + i] = destination[copyFrom + i];
            }

            output += match;
        }
    }

    private static int ReadLength(int nibble, ReadOnlySpan<byte> source, ref int input)
    {
        var length = nibble;
        if (nibble != 15)
        {
            return length;
        }

        while (true)
        {
            if (input >= source.Length)
            {
                throw new InvalidDataException("An LZ4 length is cut off.");
            }

            var next = source[input++];
            length += next;
            if (length > WireProtocol.MaxBodyBytes)
            {
                throw new InvalidDataException($"An LZ4 length of over {length} bytes exceeds any payload.");
            }

            if (next != 255)
            {
                return length;
            }
        }
    }

    private static bool WriteSequence(ReadOnlySpan<byte> literals, int offset, int matchExtra, Span<byte> destination, ref int output)
    {
        var needed = 1 + (literals.Length / 255) + 1 + literals.Length + 2 + (matchExtra / 255) + 1;
        if (destination.Length - output < needed)
        {
            return false;
        }

        var tokenAt = output++;
        var token = (byte)((Math.Min(literals.Length, 15) << 4) | Math.Min(matchExtra, 15));
        WriteLengthTail(literals.Length, destination, ref output);
        literals.CopyTo(destination[output..]);
        output += literals.Length;
        BinaryPrimitives.WriteUInt16LittleEndian(destination[output..], (ushort)offset);
        output += 2;
        WriteLengthTail(matchExtra, destination, ref output);
        destination[tokenAt] = token;
        return true;
    }

    private static bool WriteLastLiterals(ReadOnlySpan<byte> literals, Span<byte> destination, ref int output)
    {
        if (destination.Length - output < 1 + (literals.Length / 255) + 1 + literals.Length)
        {
            return false;
        }

        destination[output++] = (byte)(Math.Min(literals.Length, 15) << 4);
        WriteLengthTail(literals.Length, destination, ref output);
        literals.CopyTo(destination[output..]);
        output += literals.Length;
        return true;
    }

    private static void WriteLengthTail(int length, Span<byte> destination, ref int output)
    {
        if (length < 15)
        {
            return;
        }

        var rest = length - 15;
        while (rest >= 255)
        {
            destination[output++] = 255;
            rest -= 255;
        }

        destination[output++] = (byte)rest;
    }
}

/// <summary>Inflates LZ4-compressed server payloads for a <see cref="ServerFrameDecoder"/> or a <see cref="TcpPlayClient"/>.</summary>
public sealed class Lz4PayloadDecompressor : IPayloadDecompressor
{
    public static Lz4PayloadDecompressor Instance { get; } = new();

    public int Decompress(ReadOnlySpan<byte> source, Span<byte> destination) => Lz4Block.Decompress(source, destination);
}
