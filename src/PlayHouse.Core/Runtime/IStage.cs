namespace PlayHouse.Core.Runtime;

/// <summary>
/// A room or match. All callbacks of one stage run one at a time on the stage's executor, including every
/// continuation after an await; a handler that awaits keeps the stage busy until it completes.
/// </summary>
/// <remarks>
/// Lifecycle: OnCreate, OnPostCreate; per actor OnJoinStage, OnPostJoinStage; any number of OnDispatch and
/// OnConnectionChanged; on close each actor's OnDestroy, then the stage's OnDestroy. Each fires once per step.
/// Do not use ConfigureAwait(false) inside a stage: the continuation would leave the stage.
/// </remarks>
public interface IStage
{
    ValueTask<CreateResult> OnCreate(Packet packet);

    ValueTask OnPostCreate();

    ValueTask<bool> OnJoinStage(IActor actor);

    ValueTask OnPostJoinStage(IActor actor);

    ValueTask OnConnectionChanged(IActor actor, bool connected);

    /// <summary>A message from a client, through its actor.</summary>
    ValueTask OnDispatch(IActor actor, Packet packet);

    /// <summary>A message from another stage or an API server.</summary>
    ValueTask OnDispatch(Packet packet);

    ValueTask OnDestroy();
}

/// <summary>One connected account inside a stage. Callbacks run on the stage's executor.</summary>
public interface IActor
{
    /// <summary>The runtime's handle for this actor, handed to the actor factory.</summary>
    IActorLink Link { get; }

    ValueTask OnCreate();

    /// <summary>Checks the authenticate packet and names the account.</summary>
    ValueTask<AuthenticateResult> OnAuthenticate(Packet packet);

    ValueTask OnPostAuthenticate();

    ValueTask OnDestroy();
}
