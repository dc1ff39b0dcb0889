using System.Buffers.Binary;
using PlayHouse.Core.Runtime;

namespace PlayHouse.Transport.Tcp;

/// <summary>
/// Message ids of the <see cref="EchoStage"/>: the stage a <c>serve</c> run hosts for external PlayHouse clients,
/// and the one the loopback tests and the TCP benchmark use.
/// </summary>
public static class EchoMsgIds
{
    public const string StageType = "echo";

    /// <summary>Request: the first message. Payload: an 8-byte little-endian account id (not 0), or anything shorter for a fresh anonymous account.</summary>
    public const string Authenticate = "AuthenticateRequest";

    /// <summary>Reply to <see cref="Authenticate"/>: payload is the 8-byte little-endian account id.</summary>
    public const string AuthenticateReply = "AuthenticateReply";

    /// <summary>Request: any payload; answered by <see cref="EchoReply"/> with the same bytes.</summary>
    public const string Echo = "EchoRequest";

    public const string EchoReply = "EchoReply";

    /// <summary>One-way send: any payload; answered by a <see cref="Push"/> (sequence 0) with the same bytes.</summary>
    public const string SendPush = "SendPush";

    public const string Push = "Push";

    /// <summary>One-way send: any payload; pushed as <see cref="Broadcast"/> to every actor in the stage, the sender too.</summary>
    public const string Broadcast = "Broadcast";
}

/// <summary>
/// A stage that echoes: requests come back with the same payload, sends come back as pushes, broadcasts go to
/// every actor. Any payload is accepted, so a client written only from the wire layout can drive it.
/// </summary>
public sealed class EchoStage(IStageLink link) : IStage
{
    public ValueTask<CreateResult> OnCreate(Packet packet) => ValueTask.FromResult(CreateResult.Success());

    public ValueTask OnPostCreate() => ValueTask.CompletedTask;

    public ValueTask<bool> OnJoinStage(IActor actor) => ValueTask.FromResult(true);

    public ValueTask OnPostJoinStage(IActor actor) => ValueTask.CompletedTask;

    public ValueTask OnConnectionChanged(IActor actor, bool connected) => ValueTask.CompletedTask;

    public ValueTask OnDispatch(IActor actor, Packet packet)
    {
        switch (packet.MsgId)
        {
            case EchoMsgIds.Echo when packet.IsRequest:
                link.Reply(packet, EchoMsgIds.EchoReply, packet.Payload);
                break;
            case EchoMsgIds.SendPush:
                actor.Link.SendToClient(EchoMsgIds.Push, packet.Payload.Move("push"));
                break;
            case EchoMsgIds.Broadcast:
                foreach (var member in link.Actors)
                {
                    member.Link.SendToClient(EchoMsgIds.Broadcast, link.Pool.Copy(packet.Payload.Span, "broadcast"));
                }

                break;
            default:
                if (packet.IsRequest)
                {
                    link.Reply(packet, ErrorCodes.HandlerNotFound);
                }

                break;
        }

        return ValueTask.CompletedTask;
    }

    public ValueTask OnDispatch(Packet packet)
    {
        if (packet.IsRequest)
        {
            link.Reply(packet, EchoMsgIds.EchoReply, packet.Payload);
        }

        return ValueTask.CompletedTask;
    }

    public ValueTask OnDestroy() => ValueTask.CompletedTask;

    /// <summary>Registers the echo stage type on a play server.</summary>
    public static PlayServer Register(PlayServer server)
    {
        ArgumentNullException.ThrowIfNull(server);
        return server.RegisterStage(EchoMsgIds.StageType, link => new EchoStage(link), link => new EchoActor(link));
    }
}

/// <summary>The echo stage's actor: the account id is the authenticate payload's first 8 bytes, or a fresh anonymous one.</summary>
public sealed class EchoActor(IActorLink link) : IActor
{
    /// <summary>Anonymous accounts start here, far above ids a test picks, so each anonymous login is its own account.</summary>
    public const long AnonymousAccountBase = 1L << 40;

    private static long _nextAnonymousAccount = AnonymousAccountBase;

    public IActorLink Link { get; } = link;

    public ValueTask OnCreate() => ValueTask.CompletedTask;

    public ValueTask<AuthenticateResult> OnAuthenticate(Packet packet)
    {
        var account = packet.Payload.Length >= sizeof(long)
            ? BinaryPrimitives.ReadInt64LittleEndian(packet.Payload.Span)
            : Interlocked.Increment(ref _nextAnonymousAccount);
        if (account == 0)
        {
            return ValueTask.FromResult(AuthenticateResult.Refuse());
        }

        var reply = Link.Stage.Pool.Rent(sizeof(long), "authenticate-reply");
        BinaryPrimitives.WriteInt64LittleEndian(reply.WritableSpan, account);
        return ValueTask.FromResult(AuthenticateResult.Success(account, EchoMsgIds.AuthenticateReply, reply));
    }

    public ValueTask OnPostAuthenticate() => ValueTask.CompletedTask;

    public ValueTask OnDestroy() => ValueTask.CompletedTask;
}
