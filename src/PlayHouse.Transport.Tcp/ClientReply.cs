using PlayHouse.Core.Codec;
using PlayHouse.Core.Runtime;

namespace PlayHouse.Transport.Tcp;

/// <summary>
/// How a request ended, as a reply handler sees it. <see cref="Payload"/> is valid only during the handler call
/// (the buffer goes back to the pool after it).
/// </summary>
public readonly struct ClientReply(ushort msgSeq, string msgId, ushort errorCode, ReadOnlyMemory<byte> payload, bool timedOut, bool disconnected, object? state)
{
    public ushort MsgSeq { get; } = msgSeq;

    public string MsgId { get; } = msgId;

    public ushort ErrorCode { get; } = errorCode;

    public ReadOnlyMemory<byte> Payload { get; } = payload;

    /// <summary>No reply arrived within the request timeout.</summary>
    public bool TimedOut { get; } = timedOut;

    /// <summary>The connection closed before a reply arrived.</summary>
    public bool Disconnected { get; } = disconnected;

    /// <summary>The state passed to <see cref="TcpPlayClient.Request"/>.</summary>
    public object? State { get; } = state;

    public bool IsSuccess => !TimedOut && !Disconnected && ErrorCode == ErrorCodes.Success;
}

/// <summary>A request's outcome with its payload copied out, for <see cref="TcpPlayClient.RequestAsync"/>.</summary>
public sealed record TcpReply(ushort MsgSeq, string MsgId, ushort ErrorCode, byte[] Payload, bool TimedOut, bool Disconnected)
{
    public bool IsSuccess => !TimedOut && !Disconnected && ErrorCode == ErrorCodes.Success;
}

/// <summary>Receives each reply (or timeout, or disconnect) of a request exactly once.</summary>
public delegate void ClientReplyHandler(TcpPlayClient client, in ClientReply reply);

/// <summary>Receives each push (a frame with sequence 0). The frame's payload is valid only during the call.</summary>
public delegate void ClientPushHandler(TcpPlayClient client, in ServerFrame push);
