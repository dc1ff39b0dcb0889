namespace PlayHouse.Core.Runtime;

/// <summary>
/// Enters a node's internal lock, or nothing when the node runs single-threaded (<see cref="ServerOptions.SingleThreaded"/>,
/// whose gates are null). Use as <c>using (NodeLock.Enter(_gate)) { ... }</c> where a real node would write <c>lock (_gate)</c>.
/// </summary>
internal static class NodeLock
{
    /// <summary>A new gate for a node with <paramref name="options"/>: a lock, or null when the node is single-threaded.</summary>
    public static Lock? Create(ServerOptions options) => options.SingleThreaded ? null : new Lock();

    public static Scope Enter(Lock? gate)
    {
        gate?.Enter();
        return new Scope(gate);
    }

    /// <summary>Leaves the lock entered by <see cref="Enter"/>, if any.</summary>
    public readonly ref struct Scope
    {
        private readonly Lock? _gate;

        internal Scope(Lock? gate) => _gate = gate;

        public void Dispose() => _gate?.Exit();
    }
}
