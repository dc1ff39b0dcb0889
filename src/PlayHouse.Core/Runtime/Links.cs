using PlayHouse.Core.Pooling;
using PlayHouse.Core.Seams;

namespace PlayHouse.Core.Runtime;

/// <summary>What every handler can do: reply, send and request. Payloads passed in are moved to the runtime.</summary>
public interface ISenderLink
{
    /// <summary>The id of the server this link belongs to.</summary>
    string NodeId { get; }

    TimeProvider Time { get; }

    MessagePool Pool { get; }

    IRandomSource Random { get; }

    /// <summary>Replies with an error code only. Each request accepts exactly one reply.</summary>
    void Reply(in Packet request, ushort errorCode);

    /// <summary>Replies with a packet; ownership of <paramref name="payload"/> passes to the runtime.</summary>
    void Reply(in Packet request, string msgId, Payload payload, ushort errorCode = ErrorCodes.Success);

    /// <summary>One-way message to a stage on any server.</summary>
    void SendToStage(string nodeId, long stageId, string msgId, Payload payload);

    /// <summary>Request to a stage; completes once with the reply or an error such as a timeout.</summary>
    Task<Response> RequestToStage(string nodeId, long stageId, string msgId, Payload payload, TimeSpan? timeout = null);

    /// <summary>Request to a stage; the callback runs once, on the requesting stage when called from one.</summary>
    void RequestToStage(string nodeId, long stageId, string msgId, Payload payload, Action<Response> callback, TimeSpan? timeout = null);

    /// <summary>One-way message to an API server.</summary>
    void SendToApi(string nodeId, string msgId, Payload payload);

    /// <summary>Request to an API server.</summary>
    Task<Response> RequestToApi(string nodeId, string msgId, Payload payload, TimeSpan? timeout = null);

    /// <summary>Request to an API server with a callback.</summary>
    void RequestToApi(string nodeId, string msgId, Payload payload, Action<Response> callback, TimeSpan? timeout = null);
}

/// <summary>The handle a stage uses: sending, timers, the game loop, off-stage work and closing.</summary>
/// <remarks>Not thread-safe; call only from the stage's own callbacks.</remarks>
public interface IStageLink : ISenderLink
{
    long StageId { get; }

    string StageType { get; }

    /// <summary>Actors currently joined, in join order.</summary>
    IReadOnlyList<IActor> Actors { get; }

    /// <summary>Pushes a message to an actor's client (message sequence 0).</summary>
    void SendToClient(IActor actor, string msgId, Payload payload);

    /// <summary>Adds a timer that ticks every <paramref name="period"/> until cancelled; ids are scoped to this stage.</summary>
    long AddRepeatTimer(TimeSpan initialDelay, TimeSpan period, Action callback);

    /// <summary>Adds a timer whose callback runs exactly <paramref name="count"/> times.</summary>
    long AddCountTimer(TimeSpan initialDelay, TimeSpan period, int count, Action callback);

    bool CancelTimer(long timerId);

    bool HasTimer(long timerId);

    /// <summary>Starts a fixed-timestep loop; at most <c>catchUpStepsMax</c> steps run per tick, the rest are dropped and counted.</summary>
    void StartGameLoop(TimeSpan fixedStep, Action<GameLoopStep> callback, int catchUpStepsMax = 5);

    void StopGameLoop();

    bool IsGameLoopRunning { get; }

    /// <summary>Runs CPU work off the stage; the continuation runs back on the stage, exactly once, with the error if it threw.</summary>
    /// <exception cref="OffStageQueueFullException">The stage already has <see cref="ServerOptions.OffStageInFlightMax"/> work items whose
    /// continuations have not run; this work was not started and its continuation will not run.</exception>
    void RunOffStage<T>(Func<T> work, Action<OffStageResult<T>> continuation);

    /// <summary>Runs asynchronous I/O off the stage; the continuation runs back on the stage, exactly once.</summary>
    /// <exception cref="OffStageQueueFullException">As for <see cref="RunOffStage{T}"/>.</exception>
    void RunOffStageAsync<T>(Func<Task<T>> work, Action<OffStageResult<T>> continuation);

    /// <summary>Destroys every actor, then the stage, after the current handler.</summary>
    void CloseStage();
}

/// <summary>The handle an actor uses.</summary>
public interface IActorLink
{
    /// <summary>The account id set by a successful OnAuthenticate; 0 before.</summary>
    long AccountId { get; }

    /// <summary>The session currently bound to this actor; 0 when disconnected.</summary>
    long SessionId { get; }

    bool IsConnected { get; }

    IStageLink Stage { get; }

    /// <summary>Pushes a message to this actor's client; dropped and counted when disconnected.</summary>
    void SendToClient(string msgId, Payload payload);

    /// <summary>Removes the actor from the stage after the current handler (OnDestroy runs).</summary>
    void LeaveStage();
}

/// <summary>The handle an API handler uses: it can also create stages on play servers.</summary>
public interface IApiLink : ISenderLink
{
    /// <summary>Creates a stage; fails with <see cref="ErrorCodes.StageAlreadyExists"/> if the id is taken.</summary>
    Task<Response> CreateStage(string playNodeId, string stageType, long stageId, string msgId, Payload payload, TimeSpan? timeout = null);

    /// <summary>
    /// Creates a stage with a new id the play server picks (unique on that server by construction); the response's
    /// <see cref="Response.StageId"/> carries it.
    /// </summary>
    Task<Response> CreateStage(string playNodeId, string stageType, string msgId, Payload payload, TimeSpan? timeout = null);

    /// <summary>Creates the stage unless it exists; the response's msg id says which happened.</summary>
    Task<Response> GetOrCreateStage(string playNodeId, string stageType, long stageId, string msgId, Payload payload, TimeSpan? timeout = null);
}
