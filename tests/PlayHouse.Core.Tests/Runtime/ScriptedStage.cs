using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;

namespace PlayHouse.Core.Tests.Runtime;

/// <summary>
/// A stage whose behaviour each test scripts: by default it echoes requests and records dispatch order.
/// </summary>
internal class ScriptedStage(IStageLink link) : IStage
{
    public IStageLink Link { get; } = link;

    public List<string> Dispatched { get; } = [];

    /// <summary>The join and connection callbacks that ran, in order, each with the actor's account.</summary>
    public List<string> Callbacks { get; } = [];

    public Func<ScriptedStage, IActor, Packet, ValueTask>? OnClient { get; set; }

    public Func<ScriptedStage, Packet, ValueTask>? OnServer { get; set; }

    public Func<Packet, ValueTask<CreateResult>>? OnCreateScript { get; set; }

    /// <summary>Decides whether an actor may join; every actor joins when unset.</summary>
    public Func<IActor, bool>? AdmitJoin { get; set; }

    public virtual ValueTask<CreateResult> OnCreate(Packet packet)
    {
        return OnCreateScript?.Invoke(packet) ?? ValueTask.FromResult(CreateResult.Success());
    }

    /// <summary>How many times the stage's own <see cref="OnPostCreate"/> and <see cref="OnDestroy"/> ran.</summary>
    public (int PostCreates, int Destroys) StageCallbacks { get; private set; }

    public ValueTask OnPostCreate()
    {
        StageCallbacks = StageCallbacks with { PostCreates = StageCallbacks.PostCreates + 1 };
        return ValueTask.CompletedTask;
    }

    public ValueTask<bool> OnJoinStage(IActor actor)
    {
        Callbacks.Add($"OnJoinStage {actor.Link.AccountId}");
        return ValueTask.FromResult(AdmitJoin?.Invoke(actor) ?? true);
    }

    public ValueTask OnPostJoinStage(IActor actor)
    {
        Callbacks.Add($"OnPostJoinStage {actor.Link.AccountId}");
        return ValueTask.CompletedTask;
    }

    public ValueTask OnConnectionChanged(IActor actor, bool connected)
    {
        Callbacks.Add($"OnConnectionChanged {actor.Link.AccountId} {connected}");
        return ValueTask.CompletedTask;
    }

    public ValueTask OnDispatch(IActor actor, Packet packet)
    {
        Dispatched.Add(packet.MsgId);
        if (OnClient is not null)
        {
            return OnClient(this, actor, packet);
        }

        if (packet.IsRequest)
        {
            Link.Reply(packet, packet.MsgId, packet.Payload);
        }

        return ValueTask.CompletedTask;
    }

    public ValueTask OnDispatch(Packet packet)
    {
        Dispatched.Add(packet.MsgId);
        if (OnServer is not null)
        {
            return OnServer(this, packet);
        }

        if (packet.IsRequest)
        {
            Link.Reply(packet, packet.MsgId, packet.Payload);
        }

        return ValueTask.CompletedTask;
    }

    public ValueTask OnDestroy()
    {
        StageCallbacks = StageCallbacks with { Destroys = StageCallbacks.Destroys + 1 };
        return ValueTask.CompletedTask;
    }
}

/// <summary>An actor whose account id is the 8-byte payload of the authenticate packet; account 0 is refused.</summary>
internal sealed class ScriptedActor(IActorLink link) : IActor
{
    public IActorLink Link { get; } = link;

    public ValueTask OnCreate() => ValueTask.CompletedTask;

    public ValueTask<AuthenticateResult> OnAuthenticate(Packet packet)
    {
        var account = packet.Payload.Length == 8 ? BitConverter.ToInt64(packet.Payload.Span) : 0;
        return ValueTask.FromResult(account == 0 ? AuthenticateResult.Refuse() : AuthenticateResult.Success(account, "AuthenticateReply", Payload.Empty));
    }

    public ValueTask OnPostAuthenticate() => ValueTask.CompletedTask;

    public ValueTask OnDestroy() => ValueTask.CompletedTask;
}
