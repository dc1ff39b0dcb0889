using PlayHouse.Core.Codec;
using PlayHouse.Core.Runtime;
using PlayHouse.Core.Seams;
using PlayHouse.Fixtures.Workload;
using PlayHouse.Simulation.Metrics;
using PlayHouse.Simulation.Runs;
using PlayHouse.Transport.Tcp;

namespace PlayHouse.Sim.Tcp;

/// <summary>Connects one workload client to a play server (over TCP, TLS or WebSocket).</summary>
public delegate Task<TcpPlayClient> TcpClientConnector(string nodeId, TcpPlayClientOptions options);

/// <summary>
/// The benchmark client of the workload scenarios over real sockets: the TCP twin of <c>WorkloadDriver</c>.
/// Authenticate, then keep <c>InFlight</c> requests (or sends answered by pushes) going until the count is done,
/// reporting every request to the exactly-once checker with its nonce, every broadcast push to the FIFO checker,
/// and round trips to an <see cref="Simulation.Clients.RttTracker"/> (which fills the RTT histogram) whose every verdict the
/// <see cref="RttTrackerChecker"/> judges against the driver's own record of what is in flight, as the simulation's
/// driver does. Requests are correlated by the workload payload's own sequence and nonce.
/// </summary>
/// <remarks>
/// Thread-safe: replies arrive on I/O threads; one lock guards the driver's state, the tracker included (the
/// histogram's lock is taken inside it). All times are the checkers' clock in ticks, so the tracker, the
/// ground truth and the send sweep agree on what has timed out.
/// </remarks>
internal sealed class TcpWorkloadDriver
{
    private readonly TcpCluster _cluster;
    private readonly TcpClientConnector _connect;
    private readonly string _nodeId;
    private readonly string _requestMsgId;
    private readonly ScenarioContext _context;
    private readonly Lock _rttGate;
    private readonly Lock _gate = new();
    private readonly Simulation.Clients.RttTracker _tracker;
    private readonly RttTrackerChecker? _rttChecker;
    private readonly TimeSpan _timeout;

    // Ground truth for the RTT checker: when each request in flight was sent, and in which phase, by tracker key.
    private readonly Dictionary<ushort, (long SentTicks, bool Measured)> _requestsInFlight = [];

    // Tracker keys of sends that timed out, so a late push is still handed to the tracker under its own key.
    private readonly Dictionary<long, ushort> _expiredSendKeys = [];
    private ushort _lastTrackerKey;

    // Taking a sequence and sending it happen under one lock, so sequences leave in order even when a reply callback
    // and a reconnect pump at the same time (the stage's FIFO checker caught the race this closes).
    private readonly Lock _sendGate = new();
    private readonly IRandomSource _random;
    private readonly Dictionary<long, (long Nonce, long SentTicks, ushort TrackerKey)> _pending = [];
    private readonly int _target;
    private readonly string _trackerQueueName;
    private TcpPlayClient? _client;
    private long _nextSeq;
    private bool _authenticated;
    private bool _authenticating;
    private bool _wantConnected = true;
    private bool _stopped;
    private int _asyncLoops;

    public TcpWorkloadDriver(TcpCluster cluster, string nodeId, long clientId, long stageId, string requestMsgId, ScenarioContext context, LatencyHistogram rtt, Lock rttGate, RttTrackerChecker? rttChecker = null, TcpClientConnector? connect = null)
    {
        _cluster = cluster;
        _connect = connect ?? ((node, options) => cluster.ConnectClientAsync(node, options));
        _nodeId = nodeId;
        _requestMsgId = requestMsgId;
        _context = context;
        _rttGate = rttGate;
        _timeout = TimeSpan.FromMilliseconds(context.Options.RequestTimeoutMs);
        _tracker = new Simulation.Clients.RttTracker(context.Options.InFlight, rtt);
        _rttChecker = rttChecker;
        _rttChecker?.Register(clientId, _tracker, context.Options.InFlight);
        ClientId = clientId;
        StageId = stageId;
        _random = new Xoshiro256StarStar(context.Random.NextUInt64());
        _target = context.Options.WarmUpPerClient + context.Options.RequestsPerClient;
        _trackerQueueName = string.Create(System.Globalization.CultureInfo.InvariantCulture, $"rtt tracker of client {clientId}");
    }

    public long ClientId { get; }

    public long StageId { get; }

    public int Issued { get; private set; }

    public int Succeeded { get; private set; }

    public int Failed { get; private set; }

    public long BroadcastsReceived { get; private set; }

    /// <summary>
    /// True once everything issued was answered (or failed) and nothing more will be issued for now: the count is
    /// reached, or the client is disconnected (a fault step may reconnect it later, which makes it busy again).
    /// </summary>
    public bool IsDone
    {
        get
        {
            lock (_gate)
            {
                return !_authenticating && _pending.Count == 0 && _asyncLoops == 0 && (Issued >= _target || !_wantConnected || _stopped || _client is not { IsConnected: true });
            }
        }
    }

    /// <summary>The pause before a refused authentication is tried again (the simulated driver's reconnect pause).</summary>
    private static readonly TimeSpan AuthenticationRetryDelay = TimeSpan.FromMilliseconds(500);

    private string Endpoint => "client-" + ClientId;

    private bool IsSend => _context.Options.Mode == WorkloadMode.Send;

    private long NowTicks => _context.Checkers.Context.NowTicks;

    public Task StartAsync()
    {
        _context.Checkers.Liveness.Register(ClientId, _context.Checkers.Context.NowTicks);
        return ConnectAndAuthenticateAsync();
    }

    /// <summary>A fault step cut this client off: disconnect and stay away until <see cref="ReconnectAsync"/>.</summary>
    public void HoldDisconnected()
    {
        TcpPlayClient? client;
        lock (_gate)
        {
            _wantConnected = false;
            client = _client;
        }

        _context.Checkers.Liveness.StopExpecting(ClientId);
        client?.Abort("disconnected by the fault plan");
    }

    public Task ReconnectAsync()
    {
        lock (_gate)
        {
            _wantConnected = true;
            if (_client is { IsConnected: true })
            {
                return Task.CompletedTask;
            }
        }

        _context.Checkers.Liveness.Register(ClientId, _context.Checkers.Context.NowTicks);
        return ConnectAndAuthenticateAsync();
    }

    /// <summary>Completes when the current client (if any) has closed and returned every buffer to the client pool.</summary>
    public Task ClientFinished
    {
        get
        {
            lock (_gate)
            {
                return _client?.Closed ?? Task.CompletedTask;
            }
        }
    }

    public void Stop()
    {
        TcpPlayClient? client;
        lock (_gate)
        {
            _stopped = true;
            _wantConnected = false;
            client = _client;

            // A request whose timeout fired holds its tracker slot until the tracker is told to expire it; the
            // connector's timer and the tracker read the same clock only approximately, so settle them here.
            _tracker.ExpireOlderThan(NowTicks, _timeout);
        }

        _context.Checkers.Liveness.StopExpecting(ClientId);
        client?.Dispose();
    }

    /// <summary>Fails sends whose push did not come back within the request timeout.</summary>
    public void SweepSends()
    {
        List<long> expired;
        lock (_gate)
        {
            var now = NowTicks;
            expired = [.. _pending.Where(p => now - p.Value.SentTicks >= _timeout.Ticks).Select(p => p.Key).Order()];
            foreach (var seq in expired)
            {
                _pending.Remove(seq, out var pending);
                _requestsInFlight.Remove(pending.TrackerKey);
                _expiredSendKeys[seq] = pending.TrackerKey;
                Failed++;
            }

            if (expired.Count > 0)
            {
                _tracker.ExpireOlderThan(now, _timeout);
            }
        }

        foreach (var seq in expired)
        {
            _context.Checkers.Requests.OnClientRequestFailed(ClientId, seq, ErrorCodes.RequestTimeout);
        }

        if (expired.Count > 0)
        {
            Pump();
        }
    }

    private async Task ConnectAndAuthenticateAsync()
    {
        lock (_gate)
        {
            _authenticated = false;
            _authenticating = true;
        }

        TcpPlayClient client;
        try
        {
            client = await _connect(_nodeId, new TcpPlayClientOptions { RequestTimeout = TimeSpan.FromMilliseconds(_context.Options.RequestTimeoutMs), InFlightMax = Math.Max(2, _context.Options.InFlight + 1) }).ConfigureAwait(false);
        }
        catch (Exception e) when (e is System.Net.Sockets.SocketException or System.Net.WebSockets.WebSocketException or System.Security.Authentication.AuthenticationException or IOException)
        {
            lock (_gate)
            {
                _authenticating = false;
            }

            return;
        }

        client.PushReceived = OnPush;
        client.Disconnected = (_, _, _) => OnDisconnected(client);
        lock (_gate)
        {
            _client = client;
        }

        var reply = await client.AuthenticateAsync(StageId, BitConverter.GetBytes(ClientId), WorkloadMsgIds.Authenticate).ConfigureAwait(false);
        bool retry;
        lock (_gate)
        {
            // A refused join (its room's create failed, say) is tried again after a pause while the client still has
            // work, as the simulated driver does; meanwhile the driver counts as authenticating, so the run waits.
            retry = !reply.IsSuccess && _wantConnected && !_stopped && Issued < _target;
            _authenticating = retry;
            _authenticated = reply.IsSuccess && !_stopped;
        }

        if (!reply.IsSuccess)
        {
            client.Disconnect("authentication failed: " + ErrorCodes.Describe(reply.ErrorCode));
            if (retry)
            {
                await Task.Delay(AuthenticationRetryDelay, _cluster.Time).ConfigureAwait(false);
                await ConnectAndAuthenticateAsync().ConfigureAwait(false);
            }

            return;
        }

        _context.Checkers.Liveness.OnProgress(ClientId, _context.Checkers.Context.NowTicks);
        Pump();
    }

    private void OnDisconnected(TcpPlayClient client)
    {
        lock (_gate)
        {
            if (!ReferenceEquals(client, _client))
            {
                return;
            }

            _authenticated = false;
        }
    }

    private void Pump()
    {
        if (_context.Options.Mode == WorkloadMode.RequestAsync)
        {
            StartAsyncLoops();
            return;
        }

        while (true)
        {
            long seq;
            bool sent;
            lock (_sendGate)
            {
                TcpPlayClient client;
                long nonce;
                byte[] body;
                lock (_gate)
                {
                    var outstanding = _pending.Count;
                    if (!_authenticated || _client is null || Issued >= _target || outstanding >= _context.Options.InFlight)
                    {
                        break;
                    }

                    client = _client;
                    if (!TryIssue(out seq, out nonce, out body))
                    {
                        break;
                    }
                }

                ObserveTracker();
                _context.Checkers.Requests.OnClientRequestSent(ClientId, seq, nonce);
                sent = IsSend
                    ? client.Send(_requestMsgId, StageId, body)
                    : client.Request(_requestMsgId, StageId, body, OnReply, new RequestState(this, seq)) != 0;
            }

            if (!sent)
            {
                // Refused locally (disconnected meanwhile): a failure the checker hears about, not a silent drop.
                bool removed;
                lock (_gate)
                {
                    removed = _pending.Remove(seq, out var pending);
                    if (removed)
                    {
                        // Never sent, so no reply will come: the tracker hears of it as a reply now, like any failure.
                        Failed++;
                        TrackReply(pending.TrackerKey);
                    }
                }

                if (removed)
                {
                    _context.Checkers.Requests.OnClientRequestFailed(ClientId, seq, TcpPlayClient.DisconnectedErrorCode);
                }

                break;
            }
        }
    }

    /// <summary>The request-async mode: up to InFlight loops, each awaiting its reply before the next request.</summary>
    private void StartAsyncLoops()
    {
        while (true)
        {
            lock (_gate)
            {
                if (!_authenticated || _asyncLoops >= _context.Options.InFlight || Issued >= _target)
                {
                    return;
                }

                _asyncLoops++;
            }

            _ = RunAsyncLoop();
        }
    }

    private async Task RunAsyncLoop()
    {
        try
        {
            while (true)
            {
                long seq;
                Task<TcpReply> request;
                lock (_sendGate)
                {
                    TcpPlayClient client;
                    long nonce;
                    byte[] body;
                    lock (_gate)
                    {
                        if (!_authenticated || _client is null || Issued >= _target)
                        {
                            return;
                        }

                        client = _client;
                        if (!TryIssue(out seq, out nonce, out body))
                        {
                            return;
                        }
                    }

                    ObserveTracker();
                    _context.Checkers.Requests.OnClientRequestSent(ClientId, seq, nonce);
                    request = client.RequestAsync(_requestMsgId, StageId, body);
                }

                var reply = await request.ConfigureAwait(false);
                Complete(seq, reply.IsSuccess, reply.ErrorCode, reply.TimedOut, reply.Payload);
            }
        }
        finally
        {
            lock (_gate)
            {
                _asyncLoops--;
            }
        }
    }

    private static void OnReply(TcpPlayClient client, in ClientReply reply)
    {
        var state = (RequestState)reply.State!;
        state.Driver.Complete(state.Seq, reply.IsSuccess, reply.ErrorCode, reply.TimedOut, reply.Payload.Span);
        state.Driver.Pump();
    }

    private void Complete(long seq, bool isSuccess, ushort errorCode, bool timedOut, ReadOnlySpan<byte> payload)
    {
        lock (_gate)
        {
            if (!_pending.Remove(seq, out var pending))
            {
                return;
            }

            if (!isSuccess || !WorkloadPayload.TryRead(payload, out var body) || body.SenderId != ClientId)
            {
                Failed++;
            }
            else
            {
                Succeeded++;
            }

            if (timedOut)
            {
                // As in simulation: a timeout releases the request from the tracker as lost, not as a round trip.
                _requestsInFlight.Remove(pending.TrackerKey);
                _tracker.ExpireOlderThan(NowTicks, _timeout);
            }
            else
            {
                // Any reply, an error reply and a disconnect's too, answers its request: the tracker releases it as a round trip.
                TrackReply(pending.TrackerKey);
            }
        }

        if (!isSuccess)
        {
            _context.Checkers.Requests.OnClientRequestFailed(ClientId, seq, timedOut ? ErrorCodes.RequestTimeout : errorCode);
        }
        else
        {
            var ok = WorkloadPayload.TryRead(payload, out var body) && body.SenderId == ClientId;
            _context.Checkers.Requests.OnClientRequestCompleted(ClientId, seq, ok ? body.Nonce : long.MinValue);
            if (ok)
            {
                _context.Checkers.Liveness.OnProgress(ClientId, _context.Checkers.Context.NowTicks);
            }
        }
    }

    private void OnPush(TcpPlayClient client, in ServerFrame push)
    {
        if (!WorkloadPayload.TryRead(push.Payload.Span, out var body))
        {
            _context.Checkers.Requests.OnClientRequestCompleted(ClientId, -1, long.MinValue);
            return;
        }

        if (push.MsgId == WorkloadMsgIds.Broadcast)
        {
            lock (_gate)
            {
                BroadcastsReceived++;
            }

            _context.Checkers.Fifo.OnDelivered(Endpoint, push.StageId, body.SenderId, body.Seq);
            if (body.SenderId != ClientId)
            {
                return;
            }
        }

        lock (_gate)
        {
            if (!_pending.Remove(body.Seq, out var pending))
            {
                // A push for a send that already timed out: late, counted by the tracker, never re-paired.
                if (_expiredSendKeys.Remove(body.Seq, out var expiredKey))
                {
                    TrackReply(expiredKey);
                }

                return;
            }

            TrackReply(pending.TrackerKey);
            Succeeded++;
        }

        _context.Checkers.Requests.OnClientRequestCompleted(ClientId, body.Seq, body.Nonce);
        _context.Checkers.Liveness.OnProgress(ClientId, _context.Checkers.Context.NowTicks);
        Pump();
    }

    /// <summary>
    /// Takes the next sequence and a tracker slot for it and records it as pending; false (nothing taken) when the
    /// tracker's window is full. Call under <see cref="_gate"/>.
    /// </summary>
    private bool TryIssue(out long seq, out long nonce, out byte[] body)
    {
        var now = NowTicks;
        if (Issued == _context.Options.WarmUpPerClient && !_tracker.IsMeasuring)
        {
            _tracker.BeginMeasuredPhase();
        }

        if (BeginTracked(now) is not { } trackerKey)
        {
            seq = 0;
            nonce = 0;
            body = [];
            return false;
        }

        seq = ++_nextSeq;
        nonce = (long)(_random.NextUInt64() >> 1);
        body = new byte[WorkloadPayload.LengthFor(_context.Options.MessageBytes)];
        new WorkloadPayload(ClientId, seq, nonce).Write(body);
        _pending[seq] = (nonce, now, trackerKey);
        Issued++;
        return true;
    }

    /// <summary>
    /// Registers a request with the tracker under the next free key (the tracker refuses a key whose slot still
    /// holds an older request, and the client then tries the next); null when the window is full.
    /// </summary>
    private ushort? BeginTracked(long now)
    {
        for (var attempt = 0; attempt < ushort.MaxValue; attempt++)
        {
            _lastTrackerKey = (ushort)(_lastTrackerKey == ushort.MaxValue ? 1 : _lastTrackerKey + 1);
            if (_tracker.TryBeginRequest(_lastTrackerKey, now))
            {
                _requestsInFlight[_lastTrackerKey] = (now, _tracker.IsMeasuring);
                _rttChecker?.OnBegin(ClientId);
                return _lastTrackerKey;
            }

            if (_tracker.IsWindowFull)
            {
                return null;
            }
        }

        return null;
    }

    /// <summary>The tracker's queue against its cap (the in-flight window), for the queue-cap checker.</summary>
    private void ObserveTracker()
    {
        int inFlight;
        lock (_gate)
        {
            inFlight = _tracker.InFlight;
        }

        _context.Checkers.Queues.Observe(_trackerQueueName, inFlight, _context.Options.InFlight);
    }

    /// <summary>Hands a reply to the tracker and has its verdict judged against the driver's own record. Call under <see cref="_gate"/>.</summary>
    private void TrackReply(ushort trackerKey)
    {
        var now = NowTicks;
        (long SentTicks, bool Measured)? truth = _requestsInFlight.Remove(trackerKey, out var sent) ? sent : null;
        Simulation.Clients.RttOutcome outcome;
        long rttTicks;

        // The tracker records measured round trips into the run's histogram, which the runner reads under this lock.
        lock (_rttGate)
        {
            outcome = _tracker.OnReply(trackerKey, now, out rttTicks);
        }

        _rttChecker?.OnReply(ClientId, trackerKey, outcome, rttTicks, truth is { } t ? now - t.SentTicks : null, truth?.Measured ?? false);
    }

    private sealed record RequestState(TcpWorkloadDriver Driver, long Seq);
}
