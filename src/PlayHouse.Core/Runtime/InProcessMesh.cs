using PlayHouse.Core.Seams;

namespace PlayHouse.Core.Runtime;

/// <summary>
/// A mesh for unit tests and single-process hosts: delivery is a work item on the executor, in send order
/// per peer, with no loss. The simulation and TCP transports replace it.
/// </summary>
/// <remarks>Thread-safe.</remarks>
public sealed class InProcessMesh : IMeshTransport
{
    private readonly Dictionary<string, IMeshEndpoint> _endpoints = new(StringComparer.Ordinal);
    private readonly Lock _gate = new();
    private readonly IExecutor _executor;

    public InProcessMesh(IExecutor executor)
    {
        ArgumentNullException.ThrowIfNull(executor);
        _executor = executor;
    }

    /// <summary>Messages handed to the mesh and not yet delivered.</summary>
    public int InFlightCount => Volatile.Read(ref _inFlight);

    private int _inFlight;

    /// <summary>Adds a server and points its mesh at this one.</summary>
    public InProcessMesh Join(ServerNode node)
    {
        ArgumentNullException.ThrowIfNull(node);
        lock (_gate)
        {
            _endpoints.Add(node.NodeId, node);
        }

        node.Mesh = this;
        return this;
    }

    public bool Send(string targetNodeId, in MeshMessage message)
    {
        IMeshEndpoint? target;
        lock (_gate)
        {
            _endpoints.TryGetValue(targetNodeId, out target);
        }

        if (target is null)
        {
            message.Payload.DisposeIfOwner();
            return false;
        }

        Interlocked.Increment(ref _inFlight);
        _executor.Schedule(new Delivery(this, target, message));
        return true;
    }

    private sealed class Delivery(InProcessMesh mesh, IMeshEndpoint target, MeshMessage message) : IThreadPoolWorkItem
    {
        public void Execute()
        {
            Interlocked.Decrement(ref mesh._inFlight);
            target.OnMeshMessage(message);
        }
    }
}
