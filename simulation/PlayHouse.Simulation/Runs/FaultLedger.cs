using System.Globalization;
using PlayHouse.Simulation.Network;

namespace PlayHouse.Simulation.Runs;

/// <summary>
/// One kind of fault in a run: what the run's options and fault plan asked for and what the network or the cluster
/// did. A random kind (loss, duplication, reordering, splitting) is asked for as a probability per opportunity, so the
/// number injected is a sum of independent Bernoulli draws: it must lie within <see cref="FaultLedger.SigmaBound"/>
/// standard deviations (plus <see cref="FaultLedger.SlackCount"/> for small counts) of the expected number. A
/// deterministic kind (partition, disconnect, crash) is asked for by fault plan steps, and every one must happen.
/// </summary>
public sealed record FaultRealization
{
    /// <summary>The kind as the report names it: stream-loss, datagram-loss, duplicate, reorder, split, partition, disconnect, crash.</summary>
    public required string Kind { get; init; }

    public required bool IsRandom { get; init; }

    /// <summary>Random kinds: the sends or datagrams that came to the decision.</summary>
    public long Opportunities { get; init; }

    /// <summary>Random kinds: the sum over opportunities of the probability asked for.</summary>
    public double Expected { get; init; }

    /// <summary>Random kinds: the standard deviation of the number injected, from the probabilities asked for.</summary>
    public double StandardDeviation { get; init; }

    /// <summary>Deterministic kinds: the effects the plan's steps asked for (paths cut, clients disconnected, nodes crashed).</summary>
    public long Requested { get; init; }

    /// <summary>What was injected or took effect.</summary>
    public required long Realized { get; init; }

    /// <summary>The widest miss a random kind may show: <see cref="FaultLedger.SigmaBound"/> deviations plus <see cref="FaultLedger.SlackCount"/>.</summary>
    public double Allowed => (FaultLedger.SigmaBound * StandardDeviation) + FaultLedger.SlackCount;

    public bool Passed => IsRandom ? Math.Abs(Realized - Expected) <= Allowed : Realized == Requested;

    /// <summary>Whether the run asked for or got any of this kind (the report lists only those).</summary>
    public bool Relevant => Expected > 0 || Requested > 0 || Realized > 0;

    public override string ToString() => IsRandom
        ? string.Create(CultureInfo.InvariantCulture, $"asked {Expected:0.#} of {Opportunities} opportunities (mean rate {(Opportunities == 0 ? 0 : Expected / Opportunities):0.####}), injected {Realized}, allowed {Math.Max(0, Expected - Allowed):0.#}..{Expected + Allowed:0.#}")
        : string.Create(CultureInfo.InvariantCulture, $"asked {Requested}, took effect {Realized}");
}

/// <summary>
/// Keeps, for one run, the faults asked for against the faults realized. The network counts, per random kind, the
/// opportunities (sends and datagrams that came to the decision, whatever the setting) and the injections; the ledger
/// supplies the probabilities from the run's options and, for loss, from each window of the fault plan's loss bursts
/// (the fault applier reports each change before it makes it). So a network, a mapping of options or a propagation of
/// new settings that silently drops a setting shows as faults asked for and not injected, and one that injects faults
/// nobody asked for shows too. Deterministic steps are checked by their effect right after the step.
/// </summary>
/// <remarks>Not thread-safe; runs on the simulation thread.</remarks>
public sealed class FaultLedger
{
    /// <summary>
    /// Six standard deviations: every simulated run checks its faults, thousands per test run across kinds, and a
    /// correct network must not fail by chance (about two in a billion per check); a network that ignores a setting
    /// still fails once some 45 injections are expected.
    /// </summary>
    public const double SigmaBound = 6;

    /// <summary>An allowance in whole faults for small expected counts, where the normal approximation is poor.</summary>
    public const double SlackCount = 3;

    private readonly NetworkCounters _counters;
    private readonly SimOptions _options;
    private readonly long[] _requested = new long[3];
    private readonly long[] _realized = new long[3];

    // The loss probability asked for now, and the opportunities counted when it was asked for.
    private double _lossProbability;
    private long _streamLossMark;
    private long _datagramLossMark;
    private double _streamLossExpected;
    private double _streamLossVariance;
    private double _datagramLossExpected;
    private double _datagramLossVariance;

    public FaultLedger(NetworkCounters counters, SimOptions options)
    {
        ArgumentNullException.ThrowIfNull(counters);
        ArgumentNullException.ThrowIfNull(options);
        _counters = counters;
        _options = options;
        _lossProbability = options.LossPercent / 100;
        _streamLossMark = counters.StreamLossOpportunities;
        _datagramLossMark = counters.DatagramLossOpportunities;
    }

    /// <summary>The loss probability the run asks of the network from now on (a loss burst's start or end).</summary>
    public void LossRequested(double probability)
    {
        CloseLossWindow();
        _lossProbability = probability;
    }

    /// <summary>A partition step: <paramref name="requested"/> directed paths to cut, <paramref name="realized"/> found cut after it.</summary>
    public void Partitioned(int requested, int realized) => Add(0, requested, realized);

    /// <summary>A disconnect step: connected clients it named, and those of them disconnected after it.</summary>
    public void Disconnected(int requested, int realized) => Add(1, requested, realized);

    /// <summary>A crash step: 1 when its node was up, and whether the node was down after it.</summary>
    public void Crashed(int requested, int realized) => Add(2, requested, realized);

    /// <summary>Every kind, asked for against realized, as of now.</summary>
    public IReadOnlyList<FaultRealization> Realizations()
    {
        CloseLossWindow();
        var c = _counters;
        return
        [
            Random("stream-loss", c.StreamLossOpportunities, _streamLossExpected, _streamLossVariance, c.StreamRetransmits + c.StreamLossResets),
            Random("datagram-loss", c.DatagramLossOpportunities, _datagramLossExpected, _datagramLossVariance, c.DatagramsLost),
            Constant("duplicate", c.DatagramsAdmitted, _options.DuplicatePercent / 100, c.DatagramsDuplicated),
            Constant("reorder", c.DatagramsAdmitted, _options.ReorderPercent / 100, c.DatagramsDelayed),
            Constant("split", c.StreamSplitOpportunities, _options.SplitPercent / 100, c.StreamSegmentsSplit),
            Deterministic("partition", 0),
            Deterministic("disconnect", 1),
            Deterministic("crash", 2),
        ];
    }

    private void CloseLossWindow()
    {
        var p = _lossProbability;
        var stream = _counters.StreamLossOpportunities - _streamLossMark;
        var datagram = _counters.DatagramLossOpportunities - _datagramLossMark;
        _streamLossExpected += stream * p;
        _streamLossVariance += stream * p * (1 - p);
        _datagramLossExpected += datagram * p;
        _datagramLossVariance += datagram * p * (1 - p);
        _streamLossMark = _counters.StreamLossOpportunities;
        _datagramLossMark = _counters.DatagramLossOpportunities;
    }

    private void Add(int kind, int requested, int realized)
    {
        _requested[kind] += requested;
        _realized[kind] += realized;
    }

    private static FaultRealization Random(string kind, long opportunities, double expected, double variance, long realized) => new()
    {
        Kind = kind,
        IsRandom = true,
        Opportunities = opportunities,
        Expected = expected,
        StandardDeviation = Math.Sqrt(Math.Max(0, variance)),
        Realized = realized,
    };

    private static FaultRealization Constant(string kind, long opportunities, double probability, long realized) =>
        Random(kind, opportunities, opportunities * probability, opportunities * probability * (1 - probability), realized);

    private FaultRealization Deterministic(string kind, int index) => new()
    {
        Kind = kind,
        IsRandom = false,
        Requested = _requested[index],
        Realized = _realized[index],
    };
}
