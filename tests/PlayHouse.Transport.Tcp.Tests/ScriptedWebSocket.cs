using System.Net.WebSockets;
using Microsoft.Extensions.Time.Testing;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;
using PlayHouse.Core.Seams;

namespace PlayHouse.Transport.Tcp.Tests;

/// <summary>
/// A WebSocket whose other end is the test: it hands the session the bytes the test feeds (no more than each receive
/// buffer holds), records every message the session sends, can hold sends unfinished (a client that does not read), and
/// answers the session's close only when told to (<see cref="AnswersClose"/>). Each completion runs on the test's thread, inside the call that
/// causes it, so a session served over it moves only when the test moves it.
/// </summary>
/// <remarks>Not thread-safe: one test thread drives it, as the listener's session drives the other side.</remarks>
internal sealed class ScriptedWebSocket : MemoryOnlyWebSocket
{
    private readonly Queue<(byte[] Bytes, WebSocketMessageType Type)> _incoming = new();
    private readonly List<TaskCompletionSource> _heldSends = [];
    private TaskCompletionSource<ValueWebSocketReceiveResult>? _pendingReceive;
    private Memory<byte> _pendingBuffer;
    private WebSocketState _state = WebSocketState.Open;

    /// <summary>The length of each buffer the session received into, in order.</summary>
    public List<int> ReceiveBufferLengths { get; } = [];

    /// <summary>Every binary message the session sent, in order.</summary>
    public List<byte[]> SentMessages { get; } = [];

    /// <summary>While true, each send stays unfinished until <see cref="CompleteHeldSends"/>.</summary>
    public bool HoldSends { get; set; }

    /// <summary>While true, the client answers the session's close message at once, as a well-behaved client does.</summary>
    public bool AnswersClose { get; set; }

    public bool CloseOutputSent { get; private set; }

    public bool Aborted { get; private set; }

    public override WebSocketCloseStatus? CloseStatus => CloseOutputSent ? WebSocketCloseStatus.NormalClosure : null;

    public override WebSocketState State => _state;

    /// <summary>Bytes from the client, handed to the session over as many receives as its buffer needs.</summary>
    public void Feed(byte[] bytes) => Feed(bytes, WebSocketMessageType.Binary);

    /// <summary>One message of the given type from the client (a close message carries no bytes).</summary>
    public void Feed(byte[] bytes, WebSocketMessageType type)
    {
        _incoming.Enqueue((bytes, type));
        DeliverPending();
    }

    /// <summary>Finishes every held send, as a client that starts reading again would.</summary>
    public void CompleteHeldSends()
    {
        var held = _heldSends.ToList();
        _heldSends.Clear();
        held.ForEach(s => s.SetResult());
    }

    public override ValueTask<ValueWebSocketReceiveResult> ReceiveAsync(Memory<byte> buffer, CancellationToken cancellationToken)
    {
        ReceiveBufferLengths.Add(buffer.Length);
        if (Aborted)
        {
            return ValueTask.FromException<ValueWebSocketReceiveResult>(new WebSocketException(WebSocketError.ConnectionClosedPrematurely));
        }

        if (_incoming.Count > 0)
        {
            return ValueTask.FromResult(Take(buffer));
        }

        _pendingBuffer = buffer;
        _pendingReceive = new TaskCompletionSource<ValueWebSocketReceiveResult>();
        return new ValueTask<ValueWebSocketReceiveResult>(_pendingReceive.Task);
    }

    public override ValueTask SendAsync(ReadOnlyMemory<byte> buffer, WebSocketMessageType messageType, bool endOfMessage, CancellationToken cancellationToken)
    {
        if (Aborted)
        {
            return ValueTask.FromException(new WebSocketException(WebSocketError.ConnectionClosedPrematurely));
        }

        Assert.Equal(WebSocketMessageType.Binary, messageType);
        Assert.True(endOfMessage);
        SentMessages.Add(buffer.ToArray());
        if (!HoldSends)
        {
            return ValueTask.CompletedTask;
        }

        var held = new TaskCompletionSource();
        _heldSends.Add(held);
        return new ValueTask(held.Task);
    }

    public override Task CloseOutputAsync(WebSocketCloseStatus closeStatus, string? statusDescription, CancellationToken cancellationToken)
    {
        // The close is sent; unless the client answers it, the session's grace period decides.
        CloseOutputSent = true;
        _state = WebSocketState.CloseSent;
        if (AnswersClose)
        {
            _state = WebSocketState.Closed;
            Feed([], WebSocketMessageType.Close);
        }

        return Task.CompletedTask;
    }

    public override void Abort()
    {
        if (Aborted)
        {
            return;
        }

        Aborted = true;
        _state = WebSocketState.Aborted;
        var receive = _pendingReceive;
        _pendingReceive = null;
        receive?.SetException(new WebSocketException(WebSocketError.ConnectionClosedPrematurely));
        var held = _heldSends.ToList();
        _heldSends.Clear();
        held.ForEach(s => s.SetException(new WebSocketException(WebSocketError.ConnectionClosedPrematurely)));
    }

    private void DeliverPending()
    {
        if (_pendingReceive is null || _incoming.Count == 0)
        {
            return;
        }

        var receive = _pendingReceive;
        _pendingReceive = null;
        receive.SetResult(Take(_pendingBuffer));
    }

    private ValueWebSocketReceiveResult Take(Memory<byte> buffer)
    {
        var (next, type) = _incoming.Dequeue();
        var count = Math.Min(next.Length, buffer.Length);
        next.AsSpan(0, count).CopyTo(buffer.Span);
        if (count < next.Length)
        {
            // The rest waits for the next receive, at the front of the queue.
            var rest = next[count..];
            var later = _incoming.ToList();
            _incoming.Clear();
            _incoming.Enqueue((rest, type));
            later.ForEach(_incoming.Enqueue);
        }

        return new ValueWebSocketReceiveResult(count, type, endOfMessage: true);
    }
}

/// <summary>
/// A play server on a manual executor, and a client listener on a fake clock that serves <see cref="ScriptedWebSocket"/>s:
/// the sweep, the close grace and every timestamp follow <see cref="Time"/>, so a limit is met to the tick.
/// </summary>
internal sealed class WebSocketSessionBench : IDisposable
{
    private readonly SynchronizationContext? _testContext = SynchronizationContext.Current;

    public WebSocketSessionBench(TcpTransportOptions options)
    {
        // The test framework's context would send every continuation to the thread pool; without it, a completion the
        // test causes runs the session's loop on the test's thread before the call returns.
        SynchronizationContext.SetSynchronizationContext(null);
        Pool = new MessagePool(new MessagePoolOptions { CheckedMode = true, Name = "ws-bench" });
        Server = new PlayServer("play-1", new NodeSeams(Time, Executor, new Xoshiro256StarStar(3), Pool), new ServerOptions());
        Listener = new TcpClientListener(Server, options, logger: null, Time);
        Listener.SessionClosed += Closes.Add;
    }

    public FakeTimeProvider Time { get; } = new();

    public ManualExecutor Executor { get; } = new();

    public MessagePool Pool { get; }

    public PlayServer Server { get; }

    public TcpClientListener Listener { get; }

    public List<SessionClosedInfo> Closes { get; } = [];

    /// <summary>Serves a new scripted WebSocket; returns it with its session (null when the listener refused it).</summary>
    public (ScriptedWebSocket Socket, TcpClientSession? Session) Open()
    {
        var before = Listener.Sessions.Select(s => s.SessionId).ToHashSet();
        var socket = new ScriptedWebSocket();
        _ = Listener.ServeWebSocketAsync(socket, remoteEndPoint: null);
        return (socket, Listener.Sessions.SingleOrDefault(s => !before.Contains(s.SessionId)));
    }

    /// <summary>Closes every session and checks that every pooled buffer came back.</summary>
    public void Dispose()
    {
        Listener.Dispose();

        // A session closed by the server waits out its close grace for the client's answer, which never comes here.
        Time.Advance(Listener.Options.WebSocketCloseGrace);
        Executor.RunUntilIdle();
        Assert.True(Listener.WhenAllSessionsFinished().IsCompleted, $"{Listener.UnfinishedSessionCount} session(s) did not finish");
        Pool.ThrowIfLeaks();
        Server.Dispose();
        SynchronizationContext.SetSynchronizationContext(_testContext);
    }
}
