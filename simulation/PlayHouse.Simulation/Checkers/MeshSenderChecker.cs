using System.Globalization;

namespace PlayHouse.Simulation.Checkers;

/// <summary>
/// Mesh senders are recorded as who they are (B4): a frame's sender id, as the receiving node resolved it, is the node
/// that sent it (the simulated network knows the truth and the mesh transport reports a difference as it happens), so
/// replies go back to their requester; and at quiescence each node's sender-id cache holds no more entries than the
/// node has peers, so it neither grows without bound nor keeps one entry per frame.
/// </summary>
/// <remarks>Thread-safe through its violation log; the cache view is read at quiescence only.</remarks>
public sealed class MeshSenderChecker(CheckerContext context) : InvariantChecker(CheckerName, context)
{
    public const string CheckerName = "MeshSender";

    private Func<IEnumerable<(string NodeId, int CachedSenders, int Peers)>>? _caches;

    /// <summary>Frames whose recorded sender was wrong so far.</summary>
    public long WrongSenders => Interlocked.Read(ref _wrongSenders);

    private long _wrongSenders;

    /// <summary>Node <paramref name="nodeId"/> recorded a frame of <paramref name="trueSender"/> as sent by <paramref name="recordedSender"/>.</summary>
    public void OnWrongSender(string nodeId, string trueSender, string recordedSender)
    {
        Interlocked.Increment(ref _wrongSenders);
        Log.Record($"node {nodeId} recorded a mesh frame from {trueSender} as sent by {recordedSender}; its reply would go to {recordedSender}");
    }

    /// <summary>Lets the checker read each live node's sender-id cache size and peer count at quiescence.</summary>
    public void WatchSenderCaches(Func<IEnumerable<(string NodeId, int CachedSenders, int Peers)>> caches)
    {
        ArgumentNullException.ThrowIfNull(caches);
        _caches = caches;
    }

    public override void CheckQuiescent()
    {
        if (_caches is null)
        {
            return;
        }

        foreach (var (nodeId, cached, peers) in _caches())
        {
            if (cached > peers)
            {
                Log.Record(string.Create(CultureInfo.InvariantCulture, $"node {nodeId}: its sender-id cache holds {cached} entries for {peers} peers; it must hold at most one per peer"));
            }
        }
    }
}
