namespace PlayHouse.Simulation.Checkers;

/// <summary>
/// A checker that follows node crashes. A crash ends everything the node's incarnation held at once, with none of
/// its usual endings: stages get no destroy, handlers in progress never exit, requests the node issued never
/// complete on it. A checker that keys state by node forgets that incarnation's state here, so a restarted node
/// starts clean and the lost state is not judged as a violation at quiescence.
/// </summary>
public interface INodeCrashAware
{
    /// <summary>The node crashed; its current incarnation is gone.</summary>
    void OnNodeCrashed(string nodeId);
}

/// <summary>
/// A checker that hears ownership faults of the pools it watches the moment a pool or handle detects them
/// (<see cref="PlayHouse.Core.Pooling.MessagePoolOptions.OnOwnershipFault"/>), before the exception is thrown. The
/// code that meets the exception may catch it, so the fault is recorded where it is detected.
/// </summary>
public interface IPoolFaultAware
{
    /// <summary>A pool (named as the cluster names it) or a handle to one of its buffers detected an ownership fault.</summary>
    void OnPoolOwnershipFault(string poolName, PlayHouse.Core.Pooling.PoolOwnershipException fault);
}
