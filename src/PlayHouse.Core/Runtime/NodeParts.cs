namespace PlayHouse.Core.Runtime;

/// <summary>
/// The replaceable components of a server node, next to <see cref="NodeSeams"/>. A node builds each of them
/// through the factory here, so that a test bed can plug a variant in where the standard part lives (the bug zoo's
/// flawed twins reintroduce PlayHouse's flaws this way, inside the component that had them). Only a composition
/// root picks parts; production code keeps <see cref="Standard"/>.
/// </summary>
public sealed record NodeParts
{
    /// <summary>Every part the node ships with.</summary>
    public static NodeParts Standard { get; } = new();

    /// <summary>What a stage's dispatcher does when a handler suspends at an await and when its work completes.</summary>
    internal IHandlerCompletion HandlerCompletion { get; init; } = StandardHandlerCompletion.Instance;

    /// <summary>How a link's send to a stage or API server puts the caller's payload into the outgoing message.</summary>
    internal IMeshSendPayloads MeshSendPayloads { get; init; } = OwningMeshSendPayloads.Instance;

    /// <summary>How an actor's push reaches its client's session.</summary>
    internal IClientPushes ClientPushes { get; init; } = OwningClientPushes.Instance;

    /// <summary>The order in which a play server applies the session protocol's rules to a client's frame.</summary>
    internal IClientFrameGate ClientFrameGate { get; init; } = StandardClientFrameGate.Instance;

    /// <summary>True when every part is the standard one (hosts print the parts only when they differ).</summary>
    public bool IsStandard => Equals(Standard);
}
