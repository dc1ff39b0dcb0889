using System.IO.Compression;
using System.Net;
using System.Reflection;
using System.Text;

namespace PlayHouse.Simulation.Pages;

/// <summary>
/// Writes one self-contained HTML page: the style sheet and the script inline, the data as JSON inside the page
/// (gzip and base64 once it is large; the browser's own <c>DecompressionStream</c> opens it). Nothing is fetched when
/// the page is viewed.
/// </summary>
/// <remarks>Stateless; safe from any thread.</remarks>
internal static class PageDocument
{
    /// <summary>JSON up to this size stays plain in the page (readable, and a test can read it); larger data is compressed.</summary>
    public const int PlainDataBytesMax = 256 * 1024;

    private static readonly UTF8Encoding Utf8 = new(encoderShouldEmitUTF8Identifier: false);

    /// <summary>Writes the page to <paramref name="output"/>; <paramref name="json"/> is UTF-8 JSON made with the default (HTML-safe) escaping.</summary>
    public static void Write(Stream output, string title, string pageKind, ReadOnlySpan<byte> json, params string[] scripts)
    {
        ArgumentNullException.ThrowIfNull(output);
        using var writer = new StreamWriter(output, Utf8, bufferSize: 1 << 16, leaveOpen: true) { NewLine = "\n" };
        writer.Write("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
        writer.Write("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
        writer.Write("<title>");
        writer.Write(WebUtility.HtmlEncode(title));
        writer.Write("</title>\n<style>\n");
        writer.Write(Asset("pages.css"));
        writer.Write("</style>\n</head>\n<body data-page=\"");
        writer.Write(pageKind);
        writer.Write("\">\n<noscript>This page draws itself with JavaScript; turn it on to see the run.</noscript>\n");
        if (json.Length <= PlainDataBytesMax)
        {
            // The JSON writer escapes '<', '>' and '&' inside strings, so no "</script>" can end this element early.
            writer.Write("<script type=\"application/json\" id=\"page-data\" data-encoding=\"json\">");
            writer.Flush();
            output.Write(json);
        }
        else
        {
            writer.Write("<script type=\"application/json\" id=\"page-data\" data-encoding=\"gzip-base64\">");
            writer.Write(Convert.ToBase64String(Gzip(json)));
        }

        writer.Write("</script>\n");
        foreach (var script in scripts.Prepend("page-data.js"))
        {
            writer.Write("<script>\n");
            writer.Write(Asset(script));
            writer.Write("</script>\n");
        }

        writer.Write("</body>\n</html>\n");
    }

    /// <summary>Writes the page to a file, making its folder.</summary>
    public static void WriteFile(string path, Action<Stream> write)
    {
        ArgumentException.ThrowIfNullOrEmpty(path);
        var directory = Path.GetDirectoryName(Path.GetFullPath(path));
        if (!string.IsNullOrEmpty(directory))
        {
            Directory.CreateDirectory(directory);
        }

        using var file = new FileStream(path, FileMode.Create, FileAccess.Write, FileShare.Read, bufferSize: 1 << 16);
        write(file);
    }

    /// <summary>The text of an asset embedded in this assembly (Pages/Assets).</summary>
    public static string Asset(string name)
    {
        var resource = "PlayHouse.Simulation.Pages.Assets." + name;
        using var stream = Assembly.GetExecutingAssembly().GetManifestResourceStream(resource)
            ?? throw new InvalidOperationException($"The page asset '{resource}' is not embedded in the assembly.");
        using var reader = new StreamReader(stream, Utf8);
        return reader.ReadToEnd();
    }

    private static byte[] Gzip(ReadOnlySpan<byte> json)
    {
        using var buffer = new MemoryStream(json.Length / 4);
        using (var gzip = new GZipStream(buffer, CompressionLevel.Optimal, leaveOpen: true))
        {
            gzip.Write(json);
        }

        return buffer.ToArray();
    }
}
