using System.Globalization;
using System.Runtime.CompilerServices;
using PlayHouse.Core.Runtime;

namespace PlayHouse.Simulation.Checkers;

/// <summary>
/// Every queue stays within its cap (B15). Named queues (session and mesh send queues, client packet queues, RTT
/// trackers) are reported through <see cref="Observe(string, int, int)"/>; stage mailboxes through the
/// <see cref="OnMailboxPosted"/> hook against the caps registered for their node with
/// <see cref="WatchMailboxes(string, int, int)"/>: the messages from outside against <c>MailboxCapacityMax</c> exactly, and
/// the whole mailbox against that plus an allowance for the stage's own entries; the ticks each timer or game loop
/// has waiting through the <see cref="OnTickPosted"/> hook against <c>TimerPendingTicksMax</c>
/// (<see cref="WatchTimerTicks"/>). Records the high-water mark of every queue; a queue over its cap is one
/// violation, at the first overflow.
/// </summary>
/// <remarks>Thread-safe (one lock per observation). Watch nodes before the run: a mailbox takes its cap when first seen.</remarks>
public sealed class QueueCapChecker : RuntimeInvariantChecker
{
    public const string CheckerName = "QueueCap";

    private readonly Lock _gate = new();
    private readonly Dictionary<string, QueueState> _named = new(StringComparer.Ordinal);
    private readonly StageMap<MailboxState> _mailboxes = new(static (_, _) => new MailboxState());
    private readonly StageMap<QueueState> _ticks = new(static (_, _) => new QueueState());
    private readonly Dictionary<string, MailboxCap> _mailboxCaps = new(StringComparer.Ordinal);
    private readonly Dictionary<string, int> _tickCaps = new(StringComparer.Ordinal);

    public QueueCapChecker(CheckerContext context)
        : base(CheckerName, context)
    {
    }

    public QueueCapChecker(TimeProvider time)
        : this(new CheckerContext(time))
    {
    }

    /// <summary>Records the length of a named queue and checks it against <paramref name="cap"/>.</summary>
    public void Observe(string queueName, int length, int cap)
    {
        ArgumentException.ThrowIfNullOrEmpty(queueName);
        using (Context.Enter(_gate))
        {
            Observe(queueName, NamedStateOf(queueName), length, cap);
        }
    }

    /// <summary>
    /// A handle on the named queue, for a caller that observes it often: <see cref="Observe(NamedQueue, int, int)"/>
    /// then finds the queue without a lookup by name. The queue is listed from its first observation on, as with
    /// <see cref="Observe(string, int, int)"/>.
    /// </summary>
    public NamedQueue Queue(string queueName)
    {
        ArgumentException.ThrowIfNullOrEmpty(queueName);
        return new NamedQueue(queueName);
    }

    /// <summary>Records the length of the queue of <paramref name="queue"/> (from <see cref="Queue"/> of this checker) and checks it against <paramref name="cap"/>.</summary>
    public void Observe(NamedQueue queue, int length, int cap)
    {
        ArgumentNullException.ThrowIfNull(queue);
        using (Context.Enter(_gate))
        {
            Observe(queue.Name, queue.State ??= NamedStateOf(queue.Name), length, cap);
        }
    }

    private QueueState NamedStateOf(string queueName)
    {
        if (!_named.TryGetValue(queueName, out var state))
        {
            state = new QueueState();
            _named.Add(queueName, state);
        }

        return state;
    }

    private void Observe(string queueName, QueueState queue, int length, int cap)
    {
        queue.Cap = cap;
        if (length > queue.HighWater)
        {
            queue.HighWater = length;
        }

        if (length > cap && !queue.Exceeded)
        {
            queue.Exceeded = true;
            ReportQueueOverCap(queueName, length, cap);
        }
    }

    // Built out of line: a message's formatting state would otherwise widen the stack frame of every call.
    [MethodImpl(MethodImplOptions.NoInlining)]
    private void ReportQueueOverCap(string queueName, int length, int cap) =>
        Log.Record($"queue '{queueName}' held {length} entries, over its cap of {cap}");

    [MethodImpl(MethodImplOptions.NoInlining)]
    private void ReportMailboxOverCap(string nodeId, long stageId, int mailboxLength, int mailboxCap)
    {
        var cap = _mailboxCaps[nodeId];
        Log.Record($"mailbox of stage {nodeId}/{stageId} held {mailboxLength} messages, over its cap of {mailboxCap} (MailboxCapacityMax {cap.CapacityMax} + {cap.InternalAllowance} internal entries)");
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private void ReportExternalOverCap(string nodeId, long stageId, int externalLength, int externalCap) =>
        Log.Record($"mailbox of stage {nodeId}/{stageId} held {externalLength} messages from outside, over MailboxCapacityMax {externalCap}: overload was queued instead of refused");

    [MethodImpl(MethodImplOptions.NoInlining)]
    private void ReportTicksOverCap(string nodeId, long stageId, int pendingTicks, int ticksCap) =>
        Log.Record($"a timer of stage {nodeId}/{stageId} had {pendingTicks} ticks waiting in the mailbox, over TimerPendingTicksMax {ticksCap}: ticks were queued instead of coalesced");

    /// <summary>
    /// Checks the mailboxes of a node's stages against <paramref name="mailboxCapacityMax"/> plus
    /// <paramref name="internalEntriesAllowance"/>.
    /// </summary>
    /// <remarks>
    /// Why an allowance: <c>MailboxCapacityMax</c> caps only external messages (from clients and other stages).
    /// The stage's own completions (timer and game-loop ticks, reply callbacks, off-stage results) and the
    /// runtime's lifecycle entries (create, connection changes, leave, destroy) bypass that cap in
    /// <c>StageHost.Post</c>, because each stands for work that is capped where it starts (pending ticks per
    /// timer, off-stage work in flight, pending requests). The mailbox may therefore legitimately hold more
    /// than <c>MailboxCapacityMax</c>; the allowance is how many such internal entries the scenario expects at
    /// most, and anything beyond it is a queue growing without a bound.
    /// </remarks>
    public void WatchMailboxes(string nodeId, int mailboxCapacityMax, int internalEntriesAllowance)
    {
        ArgumentException.ThrowIfNullOrEmpty(nodeId);
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(mailboxCapacityMax);
        ArgumentOutOfRangeException.ThrowIfNegative(internalEntriesAllowance);
        using (Context.Enter(_gate))
        {
            _mailboxCaps[nodeId] = new MailboxCap(mailboxCapacityMax, internalEntriesAllowance);
        }
    }

    /// <summary>Checks the ticks each timer or game loop of a node's stages has waiting against <paramref name="timerPendingTicksMax"/>.</summary>
    public void WatchTimerTicks(string nodeId, int timerPendingTicksMax)
    {
        ArgumentException.ThrowIfNullOrEmpty(nodeId);
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(timerPendingTicksMax);
        using (Context.Enter(_gate))
        {
            _tickCaps[nodeId] = timerPendingTicksMax;
        }
    }

    /// <summary>Watches a node's mailboxes and timer ticks with the caps from its <see cref="ServerOptions"/>.</summary>
    public void WatchMailboxes(ServerNode node, int internalEntriesAllowance)
    {
        ArgumentNullException.ThrowIfNull(node);
        WatchMailboxes(node.NodeId, node.Options.MailboxCapacityMax, internalEntriesAllowance);
        WatchTimerTicks(node.NodeId, node.Options.TimerPendingTicksMax);
    }

    public override void OnMailboxPosted(string nodeId, long stageId, int mailboxLength, int externalLength)
    {
        using (Context.Enter(_gate))
        {
            var mailbox = _mailboxes.GetOrAdd(nodeId, stageId, out var added);
            if (added)
            {
                // An unwatched node's mailboxes are recorded but uncapped.
                var watched = _mailboxCaps.TryGetValue(nodeId, out var cap);
                mailbox.Cap = watched ? cap.Total : int.MaxValue;
                mailbox.ExternalCap = watched ? cap.CapacityMax : int.MaxValue;
            }

            if (mailboxLength > mailbox.HighWater)
            {
                mailbox.HighWater = mailboxLength;
            }

            if (externalLength > mailbox.ExternalHighWater)
            {
                mailbox.ExternalHighWater = externalLength;
            }

            if (externalLength > mailbox.ExternalCap && !mailbox.ExternalExceeded)
            {
                mailbox.ExternalExceeded = true;
                ReportExternalOverCap(nodeId, stageId, externalLength, mailbox.ExternalCap);
            }

            if (mailboxLength > mailbox.Cap && !mailbox.Exceeded)
            {
                mailbox.Exceeded = true;
                ReportMailboxOverCap(nodeId, stageId, mailboxLength, mailbox.Cap);
            }
        }
    }

    public override void OnTickPosted(string nodeId, long stageId, int pendingTicks)
    {
        using (Context.Enter(_gate))
        {
            var ticks = _ticks.GetOrAdd(nodeId, stageId, out var added);
            if (added)
            {
                ticks.Cap = _tickCaps.TryGetValue(nodeId, out var cap) ? cap : int.MaxValue;
            }

            if (pendingTicks > ticks.HighWater)
            {
                ticks.HighWater = pendingTicks;
            }

            if (pendingTicks > ticks.Cap && !ticks.Exceeded)
            {
                ticks.Exceeded = true;
                ReportTicksOverCap(nodeId, stageId, pendingTicks, ticks.Cap);
            }
        }
    }

    /// <summary>
    /// The high-water mark of every queue seen: named queues by name (ordinal), then mailboxes by node id
    /// (ordinal) and stage id, each as a whole and its messages from outside, then the ticks waiting per timer of
    /// each stage that had any. A cap of <see cref="int.MaxValue"/> means no cap was registered.
    /// </summary>
    public IReadOnlyList<QueueHighWater> GetHighWaters()
    {
        using (Context.Enter(_gate))
        {
            var named = new List<QueueHighWater>(_named.Count);
            foreach (var pair in _named)
            {
                named.Add(new QueueHighWater(pair.Key, pair.Value.HighWater, pair.Value.Cap));
            }

            named.Sort(static (a, b) => string.CompareOrdinal(a.Name, b.Name));

            foreach (var key in SortedKeys(_mailboxes.All.Keys))
            {
                var mailbox = _mailboxes.All[key];
                named.Add(new QueueHighWater(MailboxName(key.NodeId, key.StageId), mailbox.HighWater, mailbox.Cap));
                named.Add(new QueueHighWater(MailboxExternalName(key.NodeId, key.StageId), mailbox.ExternalHighWater, mailbox.ExternalCap));
            }

            foreach (var key in SortedKeys(_ticks.All.Keys))
            {
                var ticks = _ticks.All[key];
                named.Add(new QueueHighWater(TicksName(key.NodeId, key.StageId), ticks.HighWater, ticks.Cap));
            }

            return named;
        }
    }

    private static List<(string NodeId, long StageId)> SortedKeys(IEnumerable<(string NodeId, long StageId)> keys)
    {
        var sorted = new List<(string NodeId, long StageId)>(keys);
        sorted.Sort(static (a, b) =>
        {
            var byNode = string.CompareOrdinal(a.NodeId, b.NodeId);
            return byNode != 0 ? byNode : a.StageId.CompareTo(b.StageId);
        });
        return sorted;
    }

    /// <summary>The name a mailbox has in <see cref="GetHighWaters"/>.</summary>
    public static string MailboxName(string nodeId, long stageId) => string.Create(CultureInfo.InvariantCulture, $"mailbox {nodeId}/{stageId}");

    /// <summary>The name the messages from outside of a mailbox have in <see cref="GetHighWaters"/>.</summary>
    public static string MailboxExternalName(string nodeId, long stageId) => string.Create(CultureInfo.InvariantCulture, $"mailbox {nodeId}/{stageId} from outside");

    /// <summary>The name the ticks waiting per timer of a stage have in <see cref="GetHighWaters"/>.</summary>
    public static string TicksName(string nodeId, long stageId) => string.Create(CultureInfo.InvariantCulture, $"ticks per timer of stage {nodeId}/{stageId}");

    internal class QueueState
    {
        public int HighWater;
        public int Cap;
        public bool Exceeded;
    }

    private sealed class MailboxState : QueueState
    {
        public int ExternalHighWater;
        public int ExternalCap;
        public bool ExternalExceeded;
    }

    private readonly record struct MailboxCap(int CapacityMax, int InternalAllowance)
    {
        public int Total => (int)Math.Min(int.MaxValue, (long)CapacityMax + InternalAllowance);
    }
}

/// <summary>A named queue of a <see cref="QueueCapChecker"/>, found once and observed often.</summary>
/// <remarks>Not thread-safe on its own; the checker guards it with its lock.</remarks>
public sealed class NamedQueue
{
    internal NamedQueue(string name) => Name = name;

    public string Name { get; }

    // Bound at the first observation, so a queue never observed is never listed.
    internal QueueCapChecker.QueueState? State { get; set; }
}

/// <summary>The most entries a queue held, and its cap (<see cref="int.MaxValue"/>: none registered).</summary>
public readonly record struct QueueHighWater(string Name, int HighWater, int Cap)
{
    public override string ToString() =>
        Cap == int.MaxValue
            ? string.Create(CultureInfo.InvariantCulture, $"{Name}: high-water {HighWater} (uncapped)")
            : string.Create(CultureInfo.InvariantCulture, $"{Name}: high-water {HighWater} of cap {Cap}");
}
