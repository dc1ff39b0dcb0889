namespace PlayHouse.Simulation.Checkers;

/// <summary>
/// Per-stage state of a checker fed by runtime hooks, which name a stage by node id and stage id. A hook used to
/// hash the node id string per call; here the node is found by reference first (a node passes the same string
/// instance to every hook) and small stage ids index an array, so the common lookup hashes nothing.
/// </summary>
/// <typeparam name="T">The state of one stage; a class, so that callers update it in place.</typeparam>
/// <remarks>Not thread-safe; the owning checker guards it with its lock. Entries are never removed.</remarks>
internal sealed class StageMap<T>(Func<string, long, T> create)
    where T : class
{
    // Stage ids below this index an array per node; larger ids go to the map only.
    private const long DenseStagesMax = 4_096;

    private readonly Dictionary<(string NodeId, long StageId), T> _all = [];
    private readonly Dictionary<string, NodeEntry> _nodes = new(StringComparer.Ordinal);
    private NodeEntry? _lastNode;

    /// <summary>Every stage seen, keyed by node id and stage id (in no particular order).</summary>
    public Dictionary<(string NodeId, long StageId), T> All => _all;

    /// <summary>The state of the stage, created on first sight; <paramref name="added"/> tells which.</summary>
    public T GetOrAdd(string nodeId, long stageId, out bool added)
    {
        var node = _lastNode;
        if (node is null || !ReferenceEquals(node.NodeId, nodeId))
        {
            node = NodeOf(nodeId);

            // The instance seen last is the one the next hook most likely passes again.
            node.NodeId = nodeId;
            _lastNode = node;
        }

        if ((ulong)stageId < (ulong)node.Dense.Length && node.Dense[stageId] is { } known)
        {
            added = false;
            return known;
        }

        return Slow(node, nodeId, stageId, out added);
    }

    /// <summary>The state of the stage, or null when it was never seen.</summary>
    public T? Find(string nodeId, long stageId) => _all.GetValueOrDefault((nodeId, stageId));

    private T Slow(NodeEntry node, string nodeId, long stageId, out bool added)
    {
        added = !_all.TryGetValue((nodeId, stageId), out var state);
        if (added)
        {
            state = create(nodeId, stageId);
            _all.Add((nodeId, stageId), state);
        }

        if (stageId >= 0 && stageId < DenseStagesMax)
        {
            if (stageId >= node.Dense.Length)
            {
                var length = Math.Max(8, node.Dense.Length);
                while (length <= stageId)
                {
                    length *= 2;
                }

                Array.Resize(ref node.Dense, (int)Math.Min(length, DenseStagesMax));
            }

            node.Dense[stageId] = state;
        }

        return state!;
    }

    private NodeEntry NodeOf(string nodeId)
    {
        if (!_nodes.TryGetValue(nodeId, out var node))
        {
            node = new NodeEntry(nodeId);
            _nodes.Add(nodeId, node);
        }

        return node;
    }

    private sealed class NodeEntry(string nodeId)
    {
        public string NodeId = nodeId;
        public T?[] Dense = [];
    }
}
