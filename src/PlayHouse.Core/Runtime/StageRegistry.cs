using System.Diagnostics.CodeAnalysis;

namespace PlayHouse.Core.Runtime;

/// <summary>Why a stage leaves the registry.</summary>
internal enum StageRemoval
{
    /// <summary>The stage was destroyed (closed by itself, a host or a test).</summary>
    Destroyed,

    /// <summary>The stage's create failed: it never ran, and its id is free again.</summary>
    CreateFailed,
}

/// <summary>
/// A play server's stages by id: the component <see cref="NodeParts.StageRegistry"/> builds, one per play server. The
/// server calls it under its registry lock. A stage is registered before its Create message is posted and stays
/// registered until it is destroyed or its create fails, so concurrent first joins find the stage being created and
/// queue behind its Create (B16: PlayHouse ran the create twice), and a failed create leaves no stage behind (B16: a
/// zombie that later joins reached).
/// </summary>
/// <remarks>Not thread-safe by itself; the play server holds its registry lock around every call.</remarks>
internal interface IStageRegistry
{
    int Count { get; }

    /// <summary>The registered stages, in no particular order.</summary>
    IEnumerable<StageHost> Stages { get; }

    bool TryGet(long stageId, [NotNullWhen(true)] out StageHost? stage);

    /// <summary>Registers a new stage whose id <see cref="TryGet"/> just did not find; its Create message is posted next.</summary>
    void Add(StageHost stage);

    /// <summary>The stage's create succeeded; it runs from now on.</summary>
    void OnCreated(StageHost stage);

    /// <summary>The stage is gone (destroyed, or its create failed); a later stage may take its id.</summary>
    void Remove(StageHost stage, StageRemoval why);
}

/// <summary>The standard registry: a dictionary that holds a stage from before its create until it is gone.</summary>
internal sealed class StageRegistry : IStageRegistry
{
    private readonly Dictionary<long, StageHost> _stages = [];

    public int Count => _stages.Count;

    public IEnumerable<StageHost> Stages => _stages.Values;

    public bool TryGet(long stageId, [NotNullWhen(true)] out StageHost? stage) => _stages.TryGetValue(stageId, out stage);

    public void Add(StageHost stage) => _stages.Add(stage.StageId, stage);

    public void OnCreated(StageHost stage)
    {
        // Registered before its create already, so that joins arriving meanwhile queue behind the Create message.
    }

    public void Remove(StageHost stage, StageRemoval why)
    {
        // Only this very stage: a later stage with the same id stays.
        if (_stages.TryGetValue(stage.StageId, out var current) && ReferenceEquals(current, stage))
        {
            _stages.Remove(stage.StageId);
        }
    }
}
