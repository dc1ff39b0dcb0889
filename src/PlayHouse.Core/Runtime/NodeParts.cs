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

    /// <summary>
    /// Makes the queue each stage keeps its mailbox entries in; null (the standard) keeps them in a ring of structs
    /// held inline in the stage, which allocates nothing per message.
    /// </summary>
    public Func<StageMailboxQueue>? MailboxQueue { get; init; }

    /// <summary>Serialises a mesh frame's <c>RouteHeader</c> into the frame; the standard writes it in place, at its exact size.</summary>
    public Mesh.IRouteHeaderWriter MeshHeaderWriter { get; init; } = Mesh.RouteHeaderWriter.ExactSize;

    /// <summary>
    /// Makes the storage of free buffers of the node's message pool, where the composition root builds the pool
    /// (<see cref="Pooling.MessagePoolOptions.Store"/>); null (the standard) keeps the pool's own two tiers.
    /// </summary>
    public Func<Pooling.MessagePool, Pooling.MessagePoolStore>? PoolStore { get; init; }

    /// <summary>True when every part is the standard one (hosts print the parts only when they differ).</summary>
    public bool IsStandard => Equals(Standard);
}
