using System.Net;
using Microsoft.Extensions.Options;
using PlayHouse.Core.Runtime;
using PlayHouse.Transport.Tcp;

namespace PlayHouse.Hosting;

/// <summary>What a hosted play or API server shares: identity, mesh and shutdown. Bound from configuration.</summary>
public abstract class ServerHostOptions
{
    public string NodeId { get; set; } = string.Empty;

    /// <summary>The address every listener binds (clients and mesh).</summary>
    public string BindAddress { get; set; } = "127.0.0.1";

    /// <summary>The mesh port; 0 lets the OS pick one, -1 runs without a mesh.</summary>
    public int MeshPort { get; set; } = -1;

    /// <summary>Other servers by node id, as "host:port" of their mesh listener.</summary>
    public Dictionary<string, string> Peers { get; set; } = [];

    public TimeSpan RequestTimeout { get; set; } = TimeSpan.FromSeconds(30);

    public int MailboxCapacityMax { get; set; } = 10_000;

    /// <summary>How long a graceful stop waits for mailboxes, requests and send queues to drain.</summary>
    public TimeSpan DrainTimeout { get; set; } = TimeSpan.FromSeconds(10);

    /// <summary>Keeps a ledger of every pooled buffer (for tests; costs a lock per rent).</summary>
    public bool CheckedPool { get; set; }

    internal virtual ServerOptions ToServerOptions() => new()
    {
        MailboxCapacityMax = MailboxCapacityMax,
        RequestTimeout = RequestTimeout,
    };

    internal IPAddress ParseBindAddress() => IPAddress.Parse(BindAddress);

    internal IEnumerable<(string NodeId, IPEndPoint EndPoint)> ParsePeers() =>
        Peers.OrderBy(p => p.Key, StringComparer.Ordinal).Select(p => (p.Key, IPEndPoint.Parse(p.Value)));

    /// <summary>Every problem with these options, in a fixed order; empty when they are valid.</summary>
    internal virtual List<string> Problems()
    {
        var problems = new List<string>();
        if (string.IsNullOrWhiteSpace(NodeId))
        {
            problems.Add("NodeId is empty.");
        }

        if (!IPAddress.TryParse(BindAddress, out _))
        {
            problems.Add($"BindAddress '{BindAddress}' is not an IP address.");
        }

        if (MeshPort is < -1 or > IPEndPoint.MaxPort)
        {
            problems.Add($"MeshPort {MeshPort} is outside [-1, {IPEndPoint.MaxPort}].");
        }

        foreach (var (nodeId, address) in Peers.OrderBy(p => p.Key, StringComparer.Ordinal))
        {
            if (!IPEndPoint.TryParse(address, out var endPoint) || endPoint.Port == 0)
            {
                problems.Add($"Peers:{nodeId} '{address}' is not host:port.");
            }
        }

        if (DrainTimeout < TimeSpan.Zero)
        {
            problems.Add("DrainTimeout is negative.");
        }

        Try(problems, () => ToServerOptions().Validate());
        return problems;
    }

    internal static void Try(List<string> problems, Action validate)
    {
        try
        {
            validate();
        }
        catch (ArgumentException e)
        {
            problems.Add(e.Message);
        }
    }
}

/// <summary>Options of a hosted play server: its client listener and its stages' defaults.</summary>
public sealed class PlayServerHostOptions : ServerHostOptions
{
    public PlayServerHostOptions() => NodeId = "play-1";

    /// <summary>The client port; 0 lets the OS pick one.</summary>
    public int Port { get; set; }

    public string AuthenticateMsgId { get; set; } = "AuthenticateRequest";

    /// <summary>The stage type created when a client authenticates into an unknown stage id; null refuses.</summary>
    public string? DefaultStageType { get; set; }

    public int SendQueueBytesMax { get; set; } = 1024 * 1024;

    public TimeSpan IdleTimeout { get; set; } = TimeSpan.FromSeconds(30);

    public TimeSpan FrameTimeout { get; set; } = TimeSpan.FromSeconds(10);

    public int MaxConnections { get; set; } = 10_000;

    /// <summary>
    /// How long a client message may wait in its stage's mailbox before it is answered with RequestExpired (or dropped,
    /// one-way) instead of dispatched; null (the default) never sheds. See <see cref="ServerOptions.ClientMessageQueueTimeMax"/>.
    /// </summary>
    public TimeSpan? ClientMessageQueueTimeMax { get; set; }

    /// <summary>
    /// Whether the thread that received a client's messages runs an idle stage's turn for them itself (on by default).
    /// Turn it off when handlers block for long: a turn run there holds that connection's next receive until it ends.
    /// See <see cref="ServerOptions.RunClientTurnsOnReceiveThread"/>.
    /// </summary>
    public bool RunClientTurnsOnReceiveThread { get; set; } = true;

    internal override ServerOptions ToServerOptions() => base.ToServerOptions() with
    {
        AuthenticateMsgId = AuthenticateMsgId,
        DefaultStageType = DefaultStageType,
        ClientMessageQueueTimeMax = ClientMessageQueueTimeMax,
        RunClientTurnsOnReceiveThread = RunClientTurnsOnReceiveThread,
    };

    internal TcpTransportOptions ToTransportOptions() => new()
    {
        SendQueueBytesMax = SendQueueBytesMax,
        IdleTimeout = IdleTimeout,
        FrameTimeout = FrameTimeout,
        MaxConnections = MaxConnections,
    };

    internal override List<string> Problems()
    {
        var problems = base.Problems();
        if (Port is < 0 or > IPEndPoint.MaxPort)
        {
            problems.Add($"Port {Port} is outside [0, {IPEndPoint.MaxPort}].");
        }

        Try(problems, () => ToTransportOptions().Validate());
        return problems;
    }
}

/// <summary>Options of a hosted API server.</summary>
public sealed class ApiServerHostOptions : ServerHostOptions
{
    public ApiServerHostOptions()
    {
        NodeId = "api-1";
        MeshPort = 0;
    }
}

/// <summary>Validates host options when the host starts (ValidateOnStart), with every problem in the message.</summary>
internal sealed class ServerHostOptionsValidator<TOptions> : IValidateOptions<TOptions>
    where TOptions : ServerHostOptions
{
    public ValidateOptionsResult Validate(string? name, TOptions options)
    {
        var problems = options.Problems();
        return problems.Count == 0 ? ValidateOptionsResult.Success : ValidateOptionsResult.Fail(problems.Select(p => $"{typeof(TOptions).Name}: {p}"));
    }
}
