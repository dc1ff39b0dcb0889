using PlayHouse.Core.Codec;
using PlayHouse.Core.Mesh;
using PlayHouse.Core.Mesh.Proto;
using PlayHouse.Core.Pooling;

namespace PlayHouse.Simulation.Pages;

/// <summary>What a connection end sends, as far as a timeline decodes it.</summary>
internal enum FrameProtocol
{
    /// <summary>Not decoded (WebSocket framing, or an end whose protocol is unknown).</summary>
    None,

    /// <summary>A client's frames to its play server.</summary>
    ClientToServer,

    /// <summary>A play server's frames to a client.</summary>
    ServerToClient,

    /// <summary>Server-to-server frames (length, route header, payload).</summary>
    Mesh,
}

/// <summary>
/// Decodes the frames of one connection end's byte stream with the core's own stream decoders, so a message of a
/// timeline shows the msg id, sequence, stage and error code it carried. Payloads are rented from the tap's private
/// pool and returned at once; a malformed stream (a hostile client) stops decoding that end and nothing more.
/// </summary>
/// <remarks>Not thread-safe; used on the simulation thread by <see cref="SimTimelineRecorder"/>.</remarks>
internal sealed class FrameTap : IDisposable
{
    private readonly FrameProtocol _protocol;
    private readonly ClientFrameDecoder? _client;
    private readonly ServerFrameDecoder? _server;
    private readonly MeshFrameDecoder? _mesh;
    private readonly RouteHeader _header = new();
    private bool _broken;

    public FrameTap(FrameProtocol protocol, MessagePool pool, Utf8StringCache msgIds)
    {
        _protocol = protocol;
        switch (protocol)
        {
            case FrameProtocol.ClientToServer:
                _client = new ClientFrameDecoder(pool, msgIds);
                break;
            case FrameProtocol.ServerToClient:
                _server = new ServerFrameDecoder(pool, msgIds);
                break;
            case FrameProtocol.Mesh:
                _mesh = new MeshFrameDecoder(pool);
                break;
            default:
                _broken = true;
                break;
        }
    }

    /// <summary>The frames that end within these bytes: the first one's fields and how many there were; null when none ends here.</summary>
    public MessageFrame? Read(ReadOnlySpan<byte> bytes)
    {
        if (_broken)
        {
            return null;
        }

        MessageFrame? first = null;
        var count = 0;
        try
        {
            while (TryNext(ref bytes, out var frame))
            {
                first ??= frame;
                count++;
            }
        }
        catch (FrameDecodeException)
        {
            // Frame boundaries are lost for good: this end's later sends show as bytes only.
            _broken = true;
        }

        return first is null ? null : first with { Frames = count };
    }

    public void Dispose()
    {
        _client?.Dispose();
        _server?.Dispose();
        _mesh?.Dispose();
    }

    private bool TryNext(ref ReadOnlySpan<byte> bytes, out MessageFrame frame)
    {
        frame = null!;
        switch (_protocol)
        {
            case FrameProtocol.ClientToServer:
                if (!_client!.TryDecode(ref bytes, out var request))
                {
                    return false;
                }

                using (request)
                {
                    frame = new MessageFrame(request.MsgId, request.MsgSeq, request.StageId, 0, 1);
                }

                return true;
            case FrameProtocol.ServerToClient:
                if (!_server!.TryDecode(ref bytes, out var reply))
                {
                    return false;
                }

                using (reply)
                {
                    frame = new MessageFrame(reply.MsgId, reply.MsgSeq, reply.StageId, reply.ErrorCode, 1);
                }

                return true;
            default:
                if (!_mesh!.TryDecode(ref bytes, _header, out var payload))
                {
                    return false;
                }

                payload.Dispose();
                frame = new MessageFrame(_header.MsgId, (long)_header.MsgSeq, _header.StageId, (int)_header.ErrorCode, 1)
                {
                    Extra =
                    [
                        new("from", _header.From),
                        new("accountId", _header.AccountId.ToString(System.Globalization.CultureInfo.InvariantCulture)),
                        new("sid", _header.Sid.ToString(System.Globalization.CultureInfo.InvariantCulture)),
                        new("isReply", _header.IsReply ? "true" : "false"),
                        new("isSystem", _header.IsSystem ? "true" : "false"),
                        new("serviceId", _header.ServiceId.ToString(System.Globalization.CultureInfo.InvariantCulture)),
                    ],
                };
                return true;
        }
    }
}
