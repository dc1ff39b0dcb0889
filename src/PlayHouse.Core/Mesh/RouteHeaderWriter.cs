using Google.Protobuf;
using PlayHouse.Core.Mesh.Proto;

namespace PlayHouse.Core.Mesh;

/// <summary>
/// Serialises a <see cref="RouteHeader"/> into the bytes of a mesh frame: the header part of
/// <see cref="MeshFrameCodec.Encode(Span{byte}, RouteHeader, ReadOnlySpan{byte}, IRouteHeaderWriter, MeshFrameOptions?)"/>,
/// replaceable through <see cref="Runtime.NodeParts.MeshHeaderWriter"/>.
/// </summary>
public interface IRouteHeaderWriter
{
    /// <summary>Writes <paramref name="header"/> into <paramref name="destination"/>, which is exactly <c>header.CalculateSize()</c> bytes long.</summary>
    void Write(RouteHeader header, Span<byte> destination);
}

/// <summary>The standard header writers.</summary>
public static class RouteHeaderWriter
{
    /// <summary>Writes the header in place into the frame at its exact size: no buffer, no stream, nothing allocated.</summary>
    public static IRouteHeaderWriter ExactSize { get; } = new ExactSizeWriter();

    private sealed class ExactSizeWriter : IRouteHeaderWriter
    {
        // WriteTo(Span) demands a span of exactly the message's size, which the codec computed once for the frame.
        public void Write(RouteHeader header, Span<byte> destination) => header.WriteTo(destination);
    }
}
